package index

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
)

// direct runs do, the write of the entity, then Sync: the direct mode. It
// returns the ETag do returns.
func (ix *CrossPartition[T]) direct(ctx context.Context, id ID, do func(ctx context.Context) (azcore.ETag, error)) (azcore.ETag, error) {
	etag, err := do(ctx)
	if err != nil {
		return "", err
	}
	if err := ix.Sync(ctx, id.PartitionKey, id.RowKey); err != nil {
		return etag, fmt.Errorf("index: %s was written but its indexes were not brought up to date (run Sync to repair): %w", id, err)
	}
	return etag, nil
}

// storedVersion returns the ETag of the stored entity id, "" when there is
// none. Cost: 1 transaction.
func (ix *CrossPartition[T]) storedVersion(ctx context.Context, id ID) (azcore.ETag, error) {
	e, err := ix.raw.GetSelect(ctx, id.PartitionKey, id.RowKey)
	if errors.Is(err, tablekit.ErrNotFound) {
		return "", nil
	}
	return e.ETag, err
}

// guarded runs a write of the entity id in queued mode: version gives the
// version to replace ("" = the entity does not exist), then the safety
// net naming that version is enqueued, then do writes the entity
// conditional on it, then a request visible at once is enqueued. A delete
// (deletes) of a missing entity writes nothing and only enqueues the
// request visible at once, which removes any entries left. With
// retryConflicts, a write that lost a race to another writer starts again
// (with a new version and a new safety net), as CrossPartitionOptions.Retry says.
// It returns the ETag do returns: the entity's new one.
func (ix *CrossPartition[T]) guarded(ctx context.Context, id ID, version func(context.Context, ID) (azcore.ETag, error), retryConflicts, deletes bool, do func(ctx context.Context, pre azcore.ETag) (azcore.ETag, error)) (azcore.ETag, error) {
	req := syncRequest{PartitionKey: id.PartitionKey, RowKey: id.RowKey}
	var etag azcore.ETag
	err := retry(ctx, ix.retry, id, func() (bool, error) {
		pre, err := version(ctx, id)
		if err != nil {
			return false, err
		}
		if pre == "" && deletes {
			if _, err := ix.queue.Enqueue(ctx, ix.kind, req, nil); err != nil {
				return false, fmt.Errorf("index: %s: requesting index maintenance: %w", id, err)
			}
			return false, nil
		}
		guard := req
		guard.Guard = &writeGuard{ETag: pre, Waited: ix.delay}
		// No try of the write may start after the safety net becomes
		// visible: the safety net of an insert counts on it, and that of
		// an update would fence the version the write is conditional on.
		// The first try of the safety net may reach the queue at once, so
		// the write's time is counted from before it is sent.
		deadline := time.Now().Add(ix.delay)
		if _, err := ix.queue.Enqueue(ctx, ix.kind, guard, &archive.EnqueueOptions{Delay: ix.delay}); err != nil {
			return false, fmt.Errorf("index: %s: requesting index maintenance (nothing was written): %w", id, err)
		}
		if !time.Now().Before(deadline) {
			return false, fmt.Errorf("index: %s: requesting index maintenance took longer than CrossPartitionOptions.Delay (%v), which leaves no time for the write: nothing was written", id, ix.delay)
		}
		wctx, cancel := context.WithDeadline(ctx, deadline)
		etag, err = do(wctx, pre)
		late := errors.Is(wctx.Err(), context.DeadlineExceeded)
		cancel()
		if err != nil {
			if ctx.Err() == nil && late {
				err = fmt.Errorf("index: %s: the write took longer than CrossPartitionOptions.Delay (%v); it may still be applied, and its safety net will then bring the indexes up to date: %w", id, ix.delay, err)
			}
			return retryConflicts && isConflict(err), err
		}
		if _, err := ix.queue.Enqueue(ctx, ix.kind, req, nil); err != nil {
			return false, fmt.Errorf("index: %s was written; its indexes will be brought up to date after the safety delay (%v): %w", id, ix.delay, err)
		}
		return false, nil
	})
	return etag, err
}

// repair runs the safety net of one write (see [CrossPartition]): it makes sure the
// write is either visible to the Sync it then runs or can never be applied.
func (ix *CrossPartition[T]) repair(ctx context.Context, req syncRequest) error {
	pk, rk, g := req.PartitionKey, req.RowKey, req.Guard
	if g.ETag != "" {
		// The fence: a Merge of no properties, conditional on the version
		// the write replaces. If the entity is still at that version, it
		// gets a new ETag, and the write, conditional on the old one,
		// fails whenever it reaches the service. If not, the write has
		// been applied or can never be (an ETag never comes back).
		fence := tablekit.Entity{PartitionKey: pk, RowKey: rk}
		if _, err := ix.raw.Merge(ctx, fence, g.ETag); err != nil && !isConflict(err) {
			return err
		}
		return ix.Sync(ctx, pk, rk)
	}
	// An insert cannot be fenced: nothing makes a later insert fail but
	// the entity's existence. Sync what is there, and while the entity is
	// missing look again later, until the insert can no longer arrive.
	if err := ix.Sync(ctx, pk, rk); err != nil {
		return err
	}
	pre, err := ix.storedVersion(ctx, ID{pk, rk})
	if err != nil || pre != "" || g.Waited >= ix.delay+ix.horizon {
		return err
	}
	next := req
	next.Guard = &writeGuard{Waited: 2 * g.Waited}
	_, err = ix.queue.Enqueue(ctx, ix.kind, next, &archive.EnqueueOptions{Delay: g.Waited})
	return err
}
