package transfer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
)

// PurgeOptions configures [Purge]. A nil *PurgeOptions means defaults,
// which purge the whole table: set Scope.
type PurgeOptions struct {
	JobOptions
	// Budget, when positive, is how long the call may run: no new page is
	// listed after it (transactions of the page in hand finish), the
	// checkpoint is saved and the result says Complete false.
	Budget time.Duration
	// AnyETag deletes whatever version of a listed entity is stored.
	// Without it (the default) each entity is deleted only if its ETag is
	// still the one it was listed with: an entity written since is left
	// alone and counted in Changed.
	AnyETag bool
	// Transactions is how many delete transactions are in flight at once
	// over all ranges (default 16).
	Transactions int
	// MaxReported bounds the keys listed in PurgeResult.ChangedKeys
	// (default 1000).
	MaxReported int
	// Clock measures the Budget; nil means time.Now.
	Clock tablekit.Clock
}

// EntityKey names an entity.
type EntityKey struct {
	PartitionKey, RowKey string
}

// PurgeResult reports a purge. Counts are over all runs of a resumed purge
// except those marked "this run".
type PurgeResult struct {
	// Listed counts the entities listed; Deleted those deleted.
	Listed, Deleted int64
	// Changed counts the entities left alone because they were written
	// after they were listed (their ETag no longer matched); ChangedKeys
	// names those of this run, up to MaxReported.
	Changed     int64
	ChangedKeys []EntityKey
	// Gone counts the entities that were deleted by someone else between
	// listing and deleting.
	Gone int64
	// Pages counts this run's listing requests (Meter's QueryEntities
	// when a Meter is given), Probes the key-sampling requests among them.
	Pages, Probes int64
	// DeleteTransactions counts this run's entity group transactions sent
	// (each up to 100 deletes); Transactions all storage transactions of
	// this run (Meter, or pages + deletes without one).
	DeleteTransactions, Transactions int64
	// Ranges and RangesDone count the key ranges and those finished.
	Ranges, RangesDone int
	// Complete is true when every range is done: nothing listed in the
	// scope is left but what Changed counts.
	Complete bool
	// Elapsed is the time this run took.
	Elapsed time.Duration
}

// Purge deletes every entity in opts.Scope. It lists the scope keys-only
// ($select=PartitionKey,RowKey, which still gives each entity's ETag) in
// parallel ranges and deletes what it lists in entity group transactions of
// up to 100 entities of one partition, carrying a partition's last partial
// transaction over to the next page of the range, so that a partition of n
// entities costs ceil(n/100) transactions.
//
// Nothing outside the listing is deleted, and each delete is conditional on
// the ETag the entity was listed with (unless AnyETag): an entity written
// after it was listed is left alone and reported in Changed. An entity
// deleted by someone else meanwhile is counted in Gone.
//
// A purge stops when ctx ends, when Budget is spent, or at the first error
// that is not an entity's own; it then saves its checkpoint (each range
// resumes at the first page with an entity not yet deleted) and returns
// Complete false. Call it again with Resume and the same Checkpoint and
// Scope to go on: re-listing is safe, as deleted entities are gone.
func Purge(ctx context.Context, t *tablekit.Table[tablekit.Entity], opts *PurgeOptions) (PurgeResult, error) {
	const op = "transfer.Purge"
	if opts == nil {
		opts = &PurgeOptions{}
	}
	o := *opts
	if o.Budget < 0 || o.Transactions < 0 || o.MaxReported < 0 {
		return PurgeResult{}, validation(op, "Budget, Transactions and MaxReported must not be negative")
	}
	if o.Transactions == 0 {
		o.Transactions = 16
	}
	if o.MaxReported == 0 {
		o.MaxReported = 1000
	}
	j, err := newJob(ctx, o.config("purge", t, keysOnly))
	if err != nil {
		return PurgeResult{}, err
	}
	p := &purger{j: j, o: o, sem: make(chan struct{}, o.Transactions), carries: map[*rangeState]*carry{}}
	start := o.Clock.Now()
	var stop func() bool
	if o.Budget > 0 {
		stop = func() bool { return o.Clock.Now().Sub(start) >= o.Budget }
	}
	rep := startReporter(ctx, o.OnProgress, o.ProgressEvery, func() Progress { return j.progress(true) })
	err = j.run(ctx, stop, p.page)
	rep.finish()

	res := PurgeResult{Elapsed: time.Since(j.started), ChangedKeys: p.changedKeys, DeleteTransactions: p.deletes.Load(), Probes: j.probe}
	j.mu.Lock()
	c := j.state.Counts
	res.Listed, res.Deleted, res.Changed, res.Gone = c.Read, c.Written, c.Changed, c.Skipped-c.Changed
	res.Ranges, res.Complete = len(j.state.Ranges), j.state.Complete
	for _, r := range j.state.Ranges {
		if r.Done {
			res.RangesDone++
		}
	}
	j.mu.Unlock()
	res.Transactions = j.transactions() + res.DeleteTransactions
	res.Pages = j.requests.Load()
	if o.Meter != nil {
		d := o.Meter.Snapshot().Sub(j.meterStart)
		res.Transactions = d.Service(tablekit.ServiceTable)
		res.Pages = d.Count(tablekit.ServiceTable, "QueryEntities")
	}
	return res, err
}

// carry is the start of a partition a range listed but did not delete yet:
// fewer than 100 entities at the end of a page, kept to fill a transaction
// with the next page.
type carry struct {
	items []tablekit.Entity
	// start is the continuation token of the page the first carried
	// entity came from: where the range resumes after a stop.
	start string
}

type purger struct {
	j       *job
	o       PurgeOptions
	sem     chan struct{}
	deletes atomic.Int64

	mu          sync.Mutex
	carries     map[*rangeState]*carry
	changedKeys []EntityKey
}

// page deletes what a listing page holds (and the carry of the range).
func (p *purger) page(ctx context.Context, r *rangeState, start string, page tablekit.Page[tablekit.Entity]) error {
	p.mu.Lock()
	c := p.carries[r]
	if c == nil {
		c = &carry{}
		p.carries[r] = c
	}
	p.mu.Unlock()
	items := append(c.items, page.Items...)
	old := len(c.items)
	last := page.Continuation == ""
	// Cut into partitions (contiguous in a listing) and those into
	// transactions of 100; keep the last partition's tail unless the range
	// is done.
	var chunks [][]tablekit.Entity
	keep := 0
	for i := 0; i < len(items); {
		j := i
		for j < len(items) && items[j].PartitionKey == items[i].PartitionKey {
			j++
		}
		part := items[i:j]
		if j == len(items) && !last {
			keep = len(part) % tablekit.MaxTransactionActions
			part = part[:len(part)-keep]
		}
		for len(part) > 0 {
			n := min(len(part), tablekit.MaxTransactionActions)
			chunks = append(chunks, part[:n])
			part = part[n:]
		}
		i = j
	}
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
		sum   outcome
	)
	for _, ch := range chunks {
		select {
		case p.sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-p.sem }()
			out, err := p.deleteChunk(ctx, ch)
			errMu.Lock()
			defer errMu.Unlock()
			sum.add(out)
			if err != nil && first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	// Record what was deleted even when a chunk failed: the range does
	// not move on, so its entities are listed again on resume.
	p.mu.Lock()
	for _, k := range sum.changedKeys {
		if len(p.changedKeys) < p.o.MaxReported {
			p.changedKeys = append(p.changedKeys, k)
		}
	}
	p.mu.Unlock()
	p.j.mu.Lock()
	p.j.state.Counts.Written += sum.deleted
	p.j.state.Counts.Skipped += sum.changed + sum.gone
	p.j.state.Counts.Changed += sum.changed
	p.j.mu.Unlock()
	if first != nil {
		return first
	}
	tail := items[len(items)-keep:]
	resume := page.Continuation
	if keep > 0 {
		if keep > len(items)-old {
			resume = c.start // the tail still holds entities of an older page
		} else {
			resume = start
		}
	}
	c.items = append([]tablekit.Entity(nil), tail...)
	c.start = resume
	p.j.commit(r, resume, last, int64(len(page.Items)), nil)
	return nil
}

// outcome sums what delete transactions did.
type outcome struct {
	deleted, changed, gone int64
	changedKeys            []EntityKey
}

func (o *outcome) add(x outcome) {
	o.deleted += x.deleted
	o.changed += x.changed
	o.gone += x.gone
	o.changedKeys = append(o.changedKeys, x.changedKeys...)
}

// deleteChunk deletes up to 100 entities of one partition in one
// transaction; an entity the service refuses (changed: 412, gone: 404) is
// taken out and the rest sent again.
func (p *purger) deleteChunk(ctx context.Context, chunk []tablekit.Entity) (outcome, error) {
	var out outcome
	actions := make([]tablekit.Action[tablekit.Entity], len(chunk))
	for i, e := range chunk {
		etag := e.ETag
		if p.o.AnyETag || etag == "" {
			// No ETag in the listing (never seen from Azure or Azurite):
			// without one the delete could not be conditional.
			if !p.o.AnyETag {
				return out, fmt.Errorf("transfer: purge: the listing gave no ETag for %q/%q; refusing an unconditional delete (set AnyETag to allow it)", e.PartitionKey, e.RowKey)
			}
			etag = azcore.ETagAny
		}
		actions[i] = tablekit.Action[tablekit.Entity]{Kind: tablekit.ActionDelete, Value: tablekit.Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey}, ETag: etag}
	}
	throttled := 0
	for len(actions) > 0 {
		p.deletes.Add(1)
		_, err := p.j.t.Transaction(ctx, actions...)
		if err == nil {
			out.deleted += int64(len(actions))
			return out, nil
		}
		var te *tablekit.TransactionError
		refused := errors.As(err, &te) && te.Index >= 0 && te.Index < len(actions) && !errors.Is(err, tablekit.ErrOutcomeUnknown)
		switch {
		case ctx.Err() != nil:
			return out, ctx.Err()
		case refused && errors.Is(err, tablekit.ErrPreconditionFailed):
			v := actions[te.Index].Value
			out.changed++
			out.changedKeys = append(out.changedKeys, EntityKey{v.PartitionKey, v.RowKey})
		case refused && errors.Is(err, tablekit.ErrNotFound):
			out.gone++
		case errors.Is(err, tablekit.ErrThrottled):
			throttled++
			retry := p.j.scan.Retry
			if throttled >= retry.MaxAttempts || !tablekit.Sleep(ctx, retry.Delay(throttled+1)) {
				return out, err
			}
			continue
		default:
			return out, err
		}
		actions = append(actions[:te.Index], actions[te.Index+1:]...)
	}
	return out, nil
}
