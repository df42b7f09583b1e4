package patterns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/tablekit/tablekit/internal/spans"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/internal/wire"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/tablekit/tablekit"
)

// This file holds the writes of a large entity. Each writes new blobs
// (under new, random names) before the entity that references them, and
// deletes the blobs of the version it replaced or removed only after the
// entity write, so that no entity ever references a missing blob.

// Upsert stores v, inserting its entity or replacing whatever version is
// stored, and returns the entity's new ETag. It reads the references of
// the version it replaces, writes v's large properties to new blobs
// (concurrently), then the entity, conditional on that version, then
// deletes that version's blobs. When another writer changed the entity in
// between, it reads the references again and writes again (the Table's
// TableOptions.Retry; its blobs stay). A write whose answer was lost is
// settled by reading the references back (the blob names are random and
// its own): its own blobs mean it was applied; otherwise the error matches
// tablekit.ErrOutcomeUnknown and its blobs are left for Sweep.
//
// Upsert sends its entity write within half the grace period
// (LargeOptions.Grace, by its Clock) of starting to write the blobs, so
// that Sweep cannot have removed one; when the blobs took longer, it
// writes no entity, deletes its blobs and fails with an error matching
// context.DeadlineExceeded. The package doc says more.
//
// Cost: one point query (the references), one blob write per large
// property, one entity write, one blob delete per blob of the version
// replaced; a conflict costs one more point query and entity write.
func (l *Large[T]) Upsert(ctx context.Context, v T) (azcore.ETag, error) {
	const op = "patterns.Large.Upsert"
	if err := l.usable(op); err != nil {
		return "", err
	}
	e, err := l.toEntity(v)
	if err != nil {
		return "", withOp(op, err)
	}
	e.ETag = ""
	oldRefs, etag, err := l.readRefs(ctx, e.PartitionKey, e.RowKey)
	if err != nil && !errors.Is(err, tablekit.ErrNotFound) {
		return "", withOp(op, err)
	}
	return l.write(ctx, op, e, oldRefs, etag, modeUpsert)
}

// writeMode says what an entity write may do besides replacing the version
// whose references it read.
type writeMode uint8

const (
	// modeUpsert inserts when there is no entity, and after a conflict
	// reads the references again and writes again.
	modeUpsert writeMode = iota
	// modeInsert only inserts: a conflict is the caller's
	// ErrAlreadyExists.
	modeInsert
	// modeUpdate only replaces the version read: a conflict is the
	// caller's ErrPreconditionFailed (or ErrNotFound).
	modeUpdate
	// modeUpdateAny replaces whatever version is stored, never inserts:
	// after a conflict it reads the references again, and an entity found
	// gone is ErrNotFound.
	modeUpdateAny
)

// write puts e (see put) and starts again with new blobs when an insert
// may have been applied and then deleted.
func (l *Large[T]) write(ctx context.Context, op string, e tablekit.Entity, oldRefs map[string]blobRef, etag azcore.ETag, mode writeMode) (azcore.ETag, error) {
	var last error
	for range timing.Policy(l.retry).Attempts(ctx) {
		newETag, err := l.put(ctx, op, e, oldRefs, etag, mode)
		var again *restartPut
		if !errors.As(err, &again) {
			return newETag, withOp(op, err)
		}
		// The insert may have been applied and then deleted, with its
		// blobs: write again, with new blobs (the old ones are left for
		// Sweep).
		last, oldRefs, etag = again.err, nil, ""
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return "", withOp(op, last)
}

// Insert stores v as a new entity and returns its ETag; it fails with an
// error matching tablekit.ErrAlreadyExists when an entity with v's keys
// exists, and then deletes the blobs it wrote. It writes the blobs first,
// then the entity, as Upsert does (its deadline, lost answers and
// inserts sent without the SDK's retries included), but reads nothing
// before. Cost: one blob write per large property and one entity insert.
func (l *Large[T]) Insert(ctx context.Context, v T) (azcore.ETag, error) {
	const op = "patterns.Large.Insert"
	if err := l.usable(op); err != nil {
		return "", err
	}
	e, err := l.toEntity(v)
	if err != nil {
		return "", withOp(op, err)
	}
	e.ETag = ""
	return l.write(ctx, op, e, nil, "", modeInsert)
}

// Update replaces the stored entity with v if its ETag (which Get puts in
// T's etag field) is still etag, and returns the new ETag;
// azcore.ETagAny replaces whatever version is stored. It reads the
// references of the stored version (one point query), and fails at once
// with an error matching tablekit.ErrPreconditionFailed when that version
// is no longer etag, or tablekit.ErrNotFound when there is none: then no
// blob is written. Otherwise it writes v's blobs, then the entity
// conditional on that version, then deletes the blobs of the version it
// replaced, as Upsert does. When another writer changed or deleted the
// entity in between, Update fails (ErrPreconditionFailed, ErrNotFound) and
// deletes its new blobs; with azcore.ETagAny it reads the references again
// and writes again, as Upsert does, but never inserts. An empty etag is
// refused before anything is sent. Cost: as Upsert's.
func (l *Large[T]) Update(ctx context.Context, v T, etag azcore.ETag) (azcore.ETag, error) {
	const op = "patterns.Large.Update"
	if err := l.usable(op); err != nil {
		return "", err
	}
	e, err := l.toEntity(v)
	if err != nil {
		return "", withOp(op, err)
	}
	if etag == "" {
		return "", &tablekit.ValidationError{Op: op, Entity: e.PartitionKey + "/" + e.RowKey, Detail: "Update needs the ETag read with the entity (or azcore.ETagAny to replace any version)", Err: tablekit.ErrInvalidInput}
	}
	e.ETag = ""
	oldRefs, current, err := l.readRefs(ctx, e.PartitionKey, e.RowKey)
	if err != nil {
		return "", withOp(op, err)
	}
	if err := checkLargeVersion(e.PartitionKey, e.RowKey, current, etag); err != nil {
		return "", withOp(op, err)
	}
	mode := modeUpdate
	if etag == azcore.ETagAny {
		mode = modeUpdateAny
	}
	return l.write(ctx, op, e, oldRefs, current, mode)
}

// checkLargeVersion fails with an error matching
// tablekit.ErrPreconditionFailed when the stored version, current, is not
// the one the caller asked for (azcore.ETagAny: any).
func checkLargeVersion(pk, rk string, current, want azcore.ETag) error {
	if want == azcore.ETagAny || current == want {
		return nil
	}
	return fmt.Errorf("large entity %s/%s is at version %s, not %s: %w", pk, rk, current, want, tablekit.ErrPreconditionFailed)
}

// Modify changes the entity by a function, the read-modify-write of
// optimistic concurrency: it reads the entity with its blob properties
// (a zero T with the keys set when there is none, as tablekit.Table.Modify
// does), lets fn change it, and writes it as Update does, conditional on
// the version fn saw (as Insert does for a new entity). When another
// writer changed the entity in between, it reads again and calls fn again
// (the Table's TableOptions.Retry), so fn must only change *v; fn must not change the
// keys. An error from fn stops Modify and is returned as it is; nothing is
// written. A write whose outcome is unknown (tablekit.ErrOutcomeUnknown)
// is not tried again, since it may have been applied. Modify returns the
// value stored, with its new ETag in T's etag field when T has one. Cost:
// a Get (one point query and one blob read per large property) and an
// Update's writes; a conflict costs both again.
func (l *Large[T]) Modify(ctx context.Context, pk, rk string, fn func(v *T) error) (T, error) {
	const op = "patterns.Large.Modify"
	var zero T
	if err := l.usable(op); err != nil {
		return zero, err
	}
	if fn == nil {
		return zero, invalid(op, "nil function")
	}
	var last error
	for range timing.Policy(l.retry).Attempts(ctx) {
		stored, oldRefs, found, err := l.readForModify(ctx, pk, rk)
		if errors.Is(err, errEntityGone) || errors.Is(err, errChangedWhileRead) {
			last = err
			continue
		}
		if err != nil {
			return zero, withOp(op, err)
		}
		v, err := l.fromEntity(stored)
		if err != nil {
			return zero, withOp(op, err)
		}
		if err := fn(&v); err != nil {
			return zero, err
		}
		e, err := l.toEntity(v)
		if err != nil {
			return zero, withOp(op, err)
		}
		if e.PartitionKey != pk || e.RowKey != rk {
			return zero, &tablekit.ValidationError{Op: op, Entity: pk + "/" + rk, Detail: "Modify's function changed the keys", Err: tablekit.ErrInvalidKey}
		}
		e.ETag = ""
		mode := modeUpdate
		if !found {
			mode = modeInsert
		}
		newETag, err := l.write(ctx, op, e, oldRefs, stored.ETag, mode)
		if err == nil {
			e.ETag = newETag
			v, err = l.fromEntity(e)
			return v, withOp(op, err)
		}
		if !isConflict(err) { // ErrOutcomeUnknown included: it may have been applied
			return zero, err
		}
		last = err
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	return zero, withOp(op, last)
}

// readForModify reads the entity pk/rk with its blob properties restored
// and the references of the version read (ETag in the entity), or an
// Entity with only the keys when there is none (found false). It fails
// with an error matching errEntityGone or errChangedWhileRead when a read
// of a blob found the entity removed or replaced: Modify then reads again.
func (l *Large[T]) readForModify(ctx context.Context, pk, rk string) (_ tablekit.Entity, refs map[string]blobRef, found bool, err error) {
	e, err := l.table.Get(ctx, pk, rk)
	if errors.Is(err, tablekit.ErrNotFound) {
		return tablekit.Entity{PartitionKey: pk, RowKey: rk}, nil, false, nil
	}
	if err != nil {
		return e, nil, false, err
	}
	if refs, err = l.refs(&e); err != nil {
		return e, nil, false, err
	}
	out, err := l.load(ctx, e, nil)
	if err != nil {
		return out, nil, false, err
	}
	if out.ETag != e.ETag {
		// load found a blob gone and read a newer version, whose
		// references this read does not hold: read again.
		return out, nil, false, fmt.Errorf("%s/%s: %w", pk, rk, errChangedWhileRead)
	}
	return out, refs, true, nil
}

// errChangedWhileRead marks readForModify's error when the entity was
// replaced while its blobs were read. It matches
// tablekit.ErrPreconditionFailed, so that Modify's last error says a
// conflict when every read met one.
var errChangedWhileRead = fmt.Errorf("the entity changed while it was read: %w", tablekit.ErrPreconditionFailed)

// Delete deletes the entity if its ETag is still etag (azcore.ETagAny: any
// version), then its blobs. It fails with an error matching
// tablekit.ErrNotFound when there is no such entity and
// tablekit.ErrPreconditionFailed when its version is no longer etag; an
// empty etag is refused before anything is sent. Like DeleteIfExists it
// reads the references first, and deletes the entity conditional on the
// version whose references it read, so it deletes exactly that version's
// blobs. Cost: as DeleteIfExists's.
func (l *Large[T]) Delete(ctx context.Context, pk, rk string, etag azcore.ETag) error {
	const op = "patterns.Large.Delete"
	if err := l.usable(op); err != nil {
		return err
	}
	if etag == "" {
		return &tablekit.ValidationError{Op: op, Entity: pk + "/" + rk, Detail: "Delete needs the ETag read with the entity (or azcore.ETagAny to delete any version)", Err: tablekit.ErrInvalidInput}
	}
	_, err := l.remove(ctx, pk, rk, etag)
	return withOp(op, err)
}

// DeleteIfExists deletes the entity, whatever its version, then its
// blobs, and reports whether the entity existed; a missing entity is not
// an error. The entity delete is conditional on the version whose
// references were read (starting again when another writer changed it in
// between, see the Table's TableOptions.Retry), so a concurrent Upsert's blobs are
// found too. Cost: one point query (the references), one entity delete,
// one blob delete per blob; a conflict costs one more query and delete.
func (l *Large[T]) DeleteIfExists(ctx context.Context, pk, rk string) (existed bool, err error) {
	const op = "patterns.Large.DeleteIfExists"
	if err := l.usable(op); err != nil {
		return false, err
	}
	existed, err = l.remove(ctx, pk, rk, "")
	return existed, withOp(op, err)
}

// remove deletes the entity and then its blobs: the version etag, any
// version for azcore.ETagAny (starting again after a conflict,
// ErrNotFound when absent), or, for "", whatever exists (reporting
// whether anything did).
func (l *Large[T]) remove(ctx context.Context, pk, rk string, etag azcore.ETag) (existed bool, err error) {
	fixed := etag != "" && etag != azcore.ETagAny
	var last error
	for range timing.Policy(l.retry).Attempts(ctx) {
		refs, current, err := l.readRefs(ctx, pk, rk)
		if errors.Is(err, tablekit.ErrNotFound) && etag == "" {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if fixed {
			if err := checkLargeVersion(pk, rk, current, etag); err != nil {
				return false, err
			}
		}
		err = l.table.Delete(ctx, pk, rk, current)
		if err == nil {
			for _, name := range refNames(refs) {
				if err := l.deleteBlob(ctx, name); err != nil {
					return true, fmt.Errorf("entity deleted, its blob %s not (Sweep removes it): %w", name, err)
				}
			}
			return true, nil
		}
		if !isConflict(err) || fixed {
			return false, err
		}
		last = err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return false, last
}

// restartPut is put's error when its insert may have been applied and the
// entity is now absent: the write must start again with new blobs.
type restartPut struct{ err error }

func (r *restartPut) Error() string { return r.err.Error() }
func (r *restartPut) Unwrap() error { return r.err }

// put writes e's blobs under new names, then e conditional on the version
// whose references (oldRefs, etag) were read, as mode allows, then deletes
// the blobs of the version it replaced. It returns the entity's new ETag.
func (l *Large[T]) put(ctx context.Context, op string, e tablekit.Entity, oldRefs map[string]blobRef, etag azcore.ETag, mode writeMode) (azcore.ETag, error) {
	e.Properties = maps.Clone(e.Properties) // split moves the large ones out
	blobs, err := l.split(&e)
	if err != nil {
		return "", err
	}
	start := timing.Now(l.clock)
	err = forEach(ctx, len(blobs), l.conc, func(ctx context.Context, i int) error {
		return l.upload(ctx, blobs[i])
	})
	if err != nil {
		if refused(err) {
			l.deleteBlobs(context.WithoutCancel(ctx), spilledNames(blobs))
		}
		return "", err
	}
	wctx := ctx
	if len(blobs) > 0 {
		left := l.grace/2 - timing.Now(l.clock).Sub(start)
		if left <= 0 {
			l.deleteBlobs(context.WithoutCancel(ctx), spilledNames(blobs))
			return "", fmt.Errorf("%s/%s: writing its blobs took longer than half the grace period (%v); no entity was written: %w", e.PartitionKey, e.RowKey, l.grace/2, context.DeadlineExceeded)
		}
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, left)
		defer cancel()
	}
	newETag, oldRefs, unreferenced, err := l.writeEntity(wctx, e, blobs, oldRefs, etag, mode)
	if err != nil {
		if unreferenced {
			l.deleteBlobs(context.WithoutCancel(ctx), spilledNames(blobs))
		}
		return "", err
	}
	l.deleteBlobs(ctx, refNames(oldRefs))
	return newETag, nil
}

// writeEntity writes e conditional on the version whose references
// (oldRefs, etag; etag "" when there was none) were read, reading them
// again after a conflict when mode allows, and returns the entity's new
// ETag and the references of the version it replaced. On error, unreferenced tells
// whether no entity can reference the new blobs (the service refused every
// write, or a later read showed another version), so that they may be
// deleted.
func (l *Large[T]) writeEntity(ctx context.Context, e tablekit.Entity, blobs []*spilled, oldRefs map[string]blobRef, etag azcore.ETag, mode writeMode) (newETag azcore.ETag, replaced map[string]blobRef, unreferenced bool, err error) {
	for range timing.Policy(l.retry).Attempts(ctx) {
		if etag == "" && len(blobs) > 0 {
			again, done, tag, ierr := l.insert(ctx, e, blobs)
			switch {
			case done:
				return tag, oldRefs, false, ierr
			case again:
				err = ierr
				continue
			}
			err = ierr
		} else if etag == "" {
			newETag, err = l.table.Insert(ctx, e)
		} else {
			newETag, err = l.table.Update(ctx, e, etag)
		}
		if err == nil {
			return newETag, oldRefs, false, nil
		}
		if errors.Is(err, tablekit.ErrOutcomeUnknown) {
			// A try whose answer was lost may have been applied (the
			// SDK's retry then met its effect). The blob names are new
			// and random, so an entity referencing exactly them holds
			// this write, which replaced the version it was conditional
			// on. Otherwise the write may still have been applied (and
			// replaced since): its blobs stay, for Sweep.
			refs, tag, rerr := l.readRefs(ctx, e.PartitionKey, e.RowKey)
			if rerr == nil && len(blobs) > 0 && ownRefs(refs, blobs) {
				return tag, oldRefs, false, nil
			}
			return "", nil, false, err
		}
		if !isConflict(err) {
			return "", nil, refused(err), err
		}
		if mode == modeInsert || mode == modeUpdate {
			// The service refused this very write (a lost answer would
			// have come back as ErrOutcomeUnknown): nothing is stored.
			return "", nil, true, err
		}
		refs, tag, rerr := l.readRefs(ctx, e.PartitionKey, e.RowKey)
		switch {
		case errors.Is(rerr, tablekit.ErrNotFound) && mode == modeUpdateAny:
			return "", nil, true, rerr
		case errors.Is(rerr, tablekit.ErrNotFound):
			refs, tag = nil, ""
		case rerr != nil:
			return "", nil, false, rerr // the conflict may have been our own write
		}
		if len(blobs) > 0 && ownRefs(refs, blobs) {
			// This very write, applied in a try whose answer was lost
			// (the SDK's retry then conflicted with it): done. Which
			// version it replaced is unknown; Sweep removes its blobs.
			return tag, nil, false, nil
		}
		oldRefs, etag = refs, tag
	}
	if cerr := ctx.Err(); cerr != nil {
		return "", nil, false, cerr
	}
	return "", nil, true, err // every write conflicted and none is stored
}

// noSDKRetries makes a request of one try: the Azure SDK does not retry it.
var noSDKRetries = policy.RetryOptions{MaxRetries: -1}

// insert inserts e, whose large properties are in blobs, in one try. The
// SDK does not retry it: a retried insert whose first try was applied (its
// answer lost) succeeds again when a delete removed the entity in between,
// and so brings the entity back referencing the blobs that delete removed.
// insert reports done with the outcome when it is settled (nil: inserted,
// with the entity's ETag), again when the insert certainly did not happen
// and may be tried again (the service throttled it, or it was never sent),
// and otherwise err for writeEntity to handle (a conflict, or a refusal).
// When the try may have been applied, insert reads the references: its own
// blobs mean it was applied; no entity means it may have been applied and
// deleted since, and the Upsert must start again with new blobs (a
// *restartPut); another entity leaves the outcome unknown
// (tablekit.ErrOutcomeUnknown), the blobs for Sweep.
func (l *Large[T]) insert(ctx context.Context, e tablekit.Entity, blobs []*spilled) (again, done bool, etag azcore.ETag, err error) {
	etag, err = l.table.Insert(policy.WithRetryOptions(ctx, noSDKRetries), e)
	var rqe *tablekit.RequestError
	switch {
	case err == nil:
		return false, true, etag, nil
	case errors.Is(err, tablekit.ErrOutcomeUnknown):
		refs, tag, rerr := l.readRefs(ctx, e.PartitionKey, e.RowKey)
		switch {
		case rerr == nil && ownRefs(refs, blobs):
			return false, true, tag, nil
		case errors.Is(rerr, tablekit.ErrNotFound):
			return false, true, "", &restartPut{err: err}
		}
		return false, true, "", err
	case errors.Is(err, tablekit.ErrThrottled), errors.As(err, &rqe):
		return true, false, "", err
	}
	return false, false, "", err
}

// ownRefs reports whether refs are exactly the references of blobs.
func ownRefs(refs map[string]blobRef, blobs []*spilled) bool {
	if len(refs) != len(blobs) {
		return false
	}
	for _, s := range blobs {
		if refs[s.name] != s.ref {
			return false
		}
	}
	return true
}

// refused reports whether err certainly means that nothing was written:
// input refused before sending, or a 4xx answer of the service.
func refused(err error) bool {
	if errors.Is(err, tablekit.ErrOutcomeUnknown) {
		return false // a 4xx answer to a retry of a try that may have been applied
	}
	var ve *tablekit.ValidationError
	if errors.As(err, &ve) {
		return true
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode >= 400 && re.StatusCode < 500 && re.StatusCode != http.StatusRequestTimeout
	}
	return false
}

func spilledNames(s []*spilled) []string {
	names := make([]string, len(s))
	for i, x := range s {
		names[i] = x.ref.Blob
	}
	return names
}

func refNames(refs map[string]blobRef) []string {
	names := make([]string, 0, len(refs))
	for _, r := range refs {
		names = append(names, r.Blob)
	}
	slices.Sort(names)
	return names
}

// upload writes one blob, create-only: a blob name is never reused.
func (l *Large[T]) upload(ctx context.Context, s *spilled) (err error) {
	ctx, end := spans.Start(ctx, spans.NewTracer(l.table.Account().TracingProvider(), spans.TableNamespace(l.table.Account().Service() == tablekit.ServiceCosmosDB)), "Large.Spill",
		tracing.Attribute{Key: "tablekit.property", Value: s.name},
		tracing.Attribute{Key: "tablekit.blob", Value: s.ref.Blob},
		tracing.Attribute{Key: "tablekit.bytes", Value: len(s.data)})
	defer func() { end(err) }()
	ct := "text/plain; charset=utf-8"
	if s.ref.Binary {
		ct = "application/octet-stream"
	}
	_, err = l.container.NewBlockBlobClient(s.ref.Blob).Upload(ctx, streaming.NopCloser(bytes.NewReader(s.data)), &blockblob.UploadOptions{
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr(ct)},
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{
			IfNoneMatch: to.Ptr(azcore.ETagAny),
		}},
	})
	err = wire.Wrap("PutBlob", "", "", "", err)
	if errors.Is(err, tablekit.ErrAlreadyExists) {
		// The name is new and random: only this upload can have created
		// it, in a try whose answer was lost before the SDK retried.
		return nil
	}
	if err != nil {
		return fmt.Errorf("write blob %s for property %s: %w", s.ref.Blob, s.name, err)
	}
	return nil
}

// deleteBlobs deletes blobs, best effort: Sweep removes what is left.
func (l *Large[T]) deleteBlobs(ctx context.Context, names []string) {
	_ = forEach(ctx, len(names), l.conc, func(ctx context.Context, i int) error {
		_ = l.deleteBlob(ctx, names[i])
		return nil
	})
}

// deleteBlob deletes one blob; a missing blob is not an error.
func (l *Large[T]) deleteBlob(ctx context.Context, name string) error {
	_, err := l.container.NewBlobClient(name).Delete(ctx, nil)
	if err = wire.Wrap("DeleteBlob", "", "", "", err); errors.Is(err, tablekit.ErrNotFound) {
		return nil
	}
	return err
}
