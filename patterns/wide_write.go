package patterns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/timing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
)

// This file holds the writes of a wide entity: each reads the entity,
// plans one transaction that includes part 0 (see plan), and starts again
// when a concurrent writer got there first. Every write returns part 0's
// new ETag, the logical entity's version, from the per-action ETags of the
// transaction: no read after the write.

// WithKey returns a copy of w whose writes carry the idempotency key key:
// each write's one entity group transaction also inserts the key's record
// in the logical entity's partition (the RowKey
// coord.ReservedPrefix+"key~"+key), so a write repeated with the same key,
// by a retry or by the caller, is not applied again. The copy shares
// everything else with w; w is unchanged.
//
// A key names one write: use one WithKey copy per logical write (a
// message id, say). The record keeps a fingerprint of what the caller
// wrote (the verb, the keys and the value given; for Delete,
// DeleteIfExists and Modify, whose function computes the value, the verb
// and the keys), not of the parts derived from it. Within the record's
// life (24 h, coord's default KeyTTL; coord.Sweep deletes expired
// records) a repeat writes nothing: with the same fingerprint it returns
// a nil error (an empty version from Insert, Upsert, Update and Merge,
// false from DeleteIfExists, and from Modify the entity as read after the
// replay, 1 range query more); with another value it fails with an error
// matching coord.ErrKeyReused. A keyed write never ends in
// tablekit.ErrOutcomeUnknown after a lost answer: it reads the record (1
// read) and writes again only when nothing was applied; applied, it
// returns a nil error and an empty version (Modify: the value it wrote,
// without its version). Only when every read that settles it fails is the
// outcome unknown.
//
// Costs are the unkeyed write's: the record joins its one transaction,
// taking one of its 100 actions (a write that would need more is refused,
// tablekit.ErrTooLarge); a keyed write with nothing to change (a Merge
// that changes nothing, a DeleteIfExists of nothing) sends the record
// alone (1 transaction); an Update, Merge or Delete that finds the entity
// missing or at another version reads the record (1 read) to tell a
// replay (nil error) from a refusal; a repeat that reaches its
// transaction costs it (refused) and 1 read of the record. An empty key,
// or one that makes an
// invalid RowKey, is refused by every write (tablekit.ErrInvalidInput,
// tablekit.ErrInvalidKey), and so is a logical RowKey starting with
// coord.ReservedPrefix. WithKey on a zero Wide returns one that refuses
// every call.
func (w *Wide[T]) WithKey(key string) *Wide[T] {
	if w == nil {
		return nil
	}
	c := *w
	c.keyed, c.key = true, key
	return &c
}

// keyTx returns the keyed part of op's write of the logical entity
// in.PartitionKey/in.RowKey: nil for a Wide that WithKey did not make. in
// holds the properties the caller wrote (none for a delete, or Modify's
// write, which a function computes), whose fingerprint the key's record
// keeps.
func (w *Wide[T]) keyTx(op string, in tablekit.Entity) (*coord.KeyedTx, error) {
	if !w.keyed {
		return nil, nil
	}
	pk, rk := in.PartitionKey, in.RowKey
	if err := codec.WithOp(op, coord.CheckKey(w.table, w.key)); err != nil {
		return nil, err
	}
	if strings.HasPrefix(rk, coord.ReservedPrefix) {
		return nil, &tablekit.ValidationError{Op: op, Entity: pk + "/" + rk, Property: "RowKey", Detail: fmt.Sprintf("RowKeys starting with %q are reserved for tablekit's own rows", coord.ReservedPrefix), Err: tablekit.ErrInvalidKey}
	}
	return coord.NewKeyedTx(w.table, pk, w.key, coord.FingerprintWrite(w.table, op, in), &coord.KeyedTxOptions{Retry: w.retry}), nil
}

// send sends actions as one transaction, with kx's record when keyed
// (kx.Send's outcomes); unkeyed, the outcome is coord.Applied on success.
func (w *Wide[T]) send(ctx context.Context, kx *coord.KeyedTx, actions []tablekit.Action[tablekit.Entity]) ([]azcore.ETag, coord.Outcome, error) {
	if kx == nil {
		etags, err := w.table.Transaction(ctx, actions...)
		if err != nil {
			return nil, 0, err
		}
		return etags, coord.Applied, nil
	}
	if len(actions) > coord.MaxKeyedActions {
		e := actions[0].Value()
		return nil, 0, &tablekit.ValidationError{Entity: e.PartitionKey + "/" + e.RowKey, Limit: "<= 100 actions per entity group transaction, one of them the idempotency record of WithKey", Size: len(actions) + 1, Unit: "actions", Detail: fmt.Sprintf("the write takes %d physical entities and the record", len(actions)), Err: tablekit.ErrTooLarge}
	}
	return kx.Send(ctx, actions...)
}

// keyRefused returns what a keyed write refused for what is stored (err: the
// entity missing, or at another version) comes to: replayed when the
// key's record exists (an earlier call applied it: 1 read), an error
// matching coord.ErrKeyReused when that call's write was another, else
// err.
func keyRefused(ctx context.Context, kx *coord.KeyedTx, err error) (replayed bool, _ error) {
	if kx == nil || !(errors.Is(err, tablekit.ErrNotFound) || errors.Is(err, tablekit.ErrPreconditionFailed)) {
		return false, err
	}
	o, serr := kx.Settle(ctx)
	switch {
	case errors.Is(serr, coord.ErrKeyReused):
		return false, serr
	case serr == nil && o != coord.NotApplied:
		return true, nil
	}
	return false, err
}

// Insert writes a new logical entity in one entity group transaction, and
// nothing else: it fails with an error matching tablekit.ErrAlreadyExists
// when the logical entity exists. It returns the new version (part 0's
// ETag). Cost: one entity group transaction.
func (w *Wide[T]) Insert(ctx context.Context, v T) (azcore.ETag, error) {
	const op = "patterns.Wide.Insert"
	if err := w.usable(op); err != nil {
		return "", err
	}
	pk, rk, want, err := w.encode(v)
	if err != nil {
		return "", withOp(op, err)
	}
	actions, err := w.plan(pk, rk, nil, want)
	if err != nil {
		return "", withOp(op, err)
	}
	kx, err := w.keyTx(op, tablekit.Entity{PartitionKey: pk, RowKey: rk, Properties: want})
	if err != nil {
		return "", err
	}
	if kx != nil {
		for range timing.Policy(w.retry).Attempts(ctx) {
			etags, o, err := w.send(ctx, kx, actions)
			switch {
			case o == coord.NotApplied:
				continue // nothing was applied: send again
			case err != nil:
				return "", withOp(op, err)
			}
			return part0ETag(rk, actions, etags), nil // "" when replayed or settled
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
		return "", withOp(op, fmt.Errorf("not applied: gave up after %d tries whose answers were lost", w.retry.MaxAttempts))
	}
	etags, err := w.table.Transaction(ctx, actions...)
	if err == nil {
		return part0ETag(rk, actions, etags), nil
	}
	if etag, ok := w.settled(ctx, pk, rk, actions, err); ok {
		return etag, nil
	}
	return "", withOp(op, err)
}

// part0ETag returns the ETag the transaction of actions gave part 0 of the
// logical entity rk ("" when it did not write part 0).
func part0ETag(rk string, actions []tablekit.Action[tablekit.Entity], etags []azcore.ETag) azcore.ETag {
	rk0, err := widePartKey(rk, 0)
	if err != nil || len(etags) != len(actions) {
		return ""
	}
	for i, a := range actions {
		if a.Value().RowKey == rk0 && a.Verb() != "Delete" {
			return etags[i]
		}
	}
	return ""
}

// settled reports whether a transaction that failed with err (an error
// matching tablekit.ErrOutcomeUnknown: a try's answer was lost and the
// SDK's retry met a conflict that try may have caused) was applied after
// all: part 0 carries the write's stamp. The stamp is random and new to
// this write, so no other write can have stored it, and part 0's ETag is
// then this write's version. When part 0 carries another stamp the write
// may still have been applied and replaced since, and the outcome stays
// unknown.
func (w *Wide[T]) settled(ctx context.Context, pk, rk string, actions []tablekit.Action[tablekit.Entity], err error) (azcore.ETag, bool) {
	if !errors.Is(err, tablekit.ErrOutcomeUnknown) {
		return "", false
	}
	rk0, kerr := widePartKey(rk, 0)
	if kerr != nil {
		return "", false
	}
	var stamp string
	for _, a := range actions {
		if a.Value().RowKey == rk0 && a.Verb() != "Delete" {
			stamp, _ = a.Value().Properties[wideStampProperty].(string)
		}
	}
	if stamp == "" {
		return "", false
	}
	parts, _, rerr := w.read(ctx, pk, rk)
	if rerr == nil && len(parts) > 0 && parts[0].index == 0 && parts[0].stamp == stamp {
		return parts[0].etag, true
	}
	return "", false
}

// Upsert stores v as the whole logical entity, inserting it or replacing
// whatever version is stored: properties v does not have are removed. It
// reads the current parts (one range query) and then writes, in one
// transaction conditional on the version read, part 0 and the parts whose
// properties change; properties that stay keep their place. When another
// writer got there in between, it reads and writes again (the Table's TableOptions.Retry).
// It returns the new version (part 0's ETag). Cost: one range query and
// one entity group transaction, and one more of each per conflict.
func (w *Wide[T]) Upsert(ctx context.Context, v T) (azcore.ETag, error) {
	const op = "patterns.Wide.Upsert"
	if err := w.usable(op); err != nil {
		return "", err
	}
	pk, rk, want, err := w.encode(v)
	if err != nil {
		return "", withOp(op, err)
	}
	res, err := w.write(ctx, op, tablekit.Entity{PartitionKey: pk, RowKey: rk, Properties: want}, true, func(_ []*widePart, _ map[string]any) (map[string]any, error) {
		return want, nil
	})
	return res.etag, withOp(op, err)
}

// Update replaces the stored logical entity with v if its version (part
// 0's ETag, which Get puts in T's etag field) is still etag; azcore.ETagAny
// replaces any version. Like Upsert, it reads the parts (one range query),
// then writes part 0 and the parts whose properties change in one
// transaction conditional on that version. It fails with an error matching
// tablekit.ErrNotFound when the entity does not exist and
// tablekit.ErrPreconditionFailed when its version is no longer etag (then
// nothing is written); an empty etag is refused before anything is sent.
// It returns the new version. Cost: one range query and one entity group
// transaction (none when the version read is not etag).
func (w *Wide[T]) Update(ctx context.Context, v T, etag azcore.ETag) (azcore.ETag, error) {
	const op = "patterns.Wide.Update"
	if err := w.usable(op); err != nil {
		return "", err
	}
	pk, rk, want, err := w.encode(v)
	if err != nil {
		return "", withOp(op, err)
	}
	if etag == "" {
		return "", &tablekit.ValidationError{Op: op, Entity: pk + "/" + rk, Detail: "Update needs the ETag read with the entity (or azcore.ETagAny to replace any version)", Err: tablekit.ErrInvalidInput}
	}
	res, err := w.write(ctx, op, tablekit.Entity{PartitionKey: pk, RowKey: rk, Properties: want}, etag == azcore.ETagAny, func(parts []*widePart, _ map[string]any) (map[string]any, error) {
		if err := checkVersion(pk, rk, parts, etag); err != nil {
			return nil, err
		}
		return want, nil
	})
	return res.etag, withOp(op, err)
}

// checkVersion checks that the parts read are the version etag (any
// version for azcore.ETagAny) of an existing logical entity.
func checkVersion(pk, rk string, parts []*widePart, etag azcore.ETag) error {
	if len(parts) == 0 {
		return notFound("wide entity", pk, rk)
	}
	if etag != azcore.ETagAny && parts[0].etag != etag {
		return fmt.Errorf("wide entity %s/%s is at version %s, not %s: %w", pk, rk, parts[0].etag, etag, tablekit.ErrPreconditionFailed)
	}
	return nil
}

// Merge merges v's properties into the stored logical entity, as
// tablekit.Table.Merge does: the properties v has (for a struct, its fields,
// and its wide map's entries) are added or overwritten, the others are kept.
// etag "" inserts v when there is no entity (insert-or-merge), retrying
// conflicts; azcore.ETagAny requires an entity (tablekit.ErrNotFound
// otherwise), retrying conflicts; any other etag requires that version
// (tablekit.ErrPreconditionFailed otherwise). Part 0 and the parts holding
// changed properties are written in one transaction (nothing when nothing
// changes). It returns the new version. Cost: one range query and one
// entity group transaction, and one more of each per conflict.
func (w *Wide[T]) Merge(ctx context.Context, v T, etag azcore.ETag) (azcore.ETag, error) {
	const op = "patterns.Wide.Merge"
	if err := w.usable(op); err != nil {
		return "", err
	}
	pk, rk, changes, err := w.encode(v)
	if err != nil {
		return "", withOp(op, err)
	}
	retry := etag == "" || etag == azcore.ETagAny
	res, err := w.write(ctx, op, tablekit.Entity{PartitionKey: pk, RowKey: rk, Properties: changes}, retry, func(parts []*widePart, current map[string]any) (map[string]any, error) {
		if etag != "" {
			if err := checkVersion(pk, rk, parts, etag); err != nil {
				return nil, err
			}
		}
		want := maps.Clone(current)
		maps.Copy(want, changes)
		return want, nil
	})
	return res.etag, withOp(op, err)
}

// Modify changes the logical entity by a function, the read-modify-write
// of optimistic concurrency: it reads the entity (a zero T with the keys
// set when there is none, as tablekit.Table.Modify does), lets fn change
// it, and writes part 0 and the parts whose properties changed in one
// transaction conditional on the version fn saw (an insert for a new
// entity). When another writer changed the entity in between, it reads
// again and calls fn again (the Table's TableOptions.Retry), so fn must only change *v.
// fn must not change the keys. An error from fn stops Modify and is
// returned as it is; nothing is written. Modify returns the value stored,
// with its new version in T's etag field when T has one. Cost: one range
// query and one entity group transaction, and one more of each per
// conflict.
func (w *Wide[T]) Modify(ctx context.Context, pk, rk string, fn func(v *T) error) (T, error) {
	const op = "patterns.Wide.Modify"
	var zero T
	if err := w.usable(op); err != nil {
		return zero, err
	}
	if fn == nil {
		return zero, invalid(op, "nil function")
	}
	res, err := w.write(ctx, op, tablekit.Entity{PartitionKey: pk, RowKey: rk}, true, func(parts []*widePart, current map[string]any) (map[string]any, error) {
		_, ts := assemble(parts)
		var etag azcore.ETag
		if len(parts) > 0 {
			etag = parts[0].etag
		}
		v, err := w.decode(pk, rk, ts, etag, current)
		if err != nil {
			return nil, err
		}
		if err := fn(&v); err != nil {
			return nil, &fnError{err}
		}
		npk, nrk, want, err := w.encode(v)
		if err != nil {
			return nil, err
		}
		if npk != pk || nrk != rk {
			return nil, &tablekit.ValidationError{Op: op, Entity: pk + "/" + rk, Detail: "Modify's function changed the keys", Err: tablekit.ErrInvalidKey}
		}
		return want, nil
	})
	var fe *fnError
	if errors.As(err, &fe) {
		return zero, fe.err
	}
	if err != nil {
		return zero, withOp(op, err)
	}
	if res.replayed {
		// Nothing was written by this call: return what is stored.
		return w.Get(ctx, pk, rk)
	}
	v, err := w.decode(pk, rk, res.ts, res.etag, res.props)
	return v, withOp(op, err)
}

// fnError carries the error of a caller's function through write, so that
// it is returned as it is.
type fnError struct{ err error }

func (f *fnError) Error() string { return f.err.Error() }
func (f *fnError) Unwrap() error { return f.err }

// wideWritten is what a write stored: the new version and the logical
// entity's properties.
type wideWritten struct {
	etag     azcore.ETag
	props    map[string]any
	ts       time.Time // the latest Timestamp of the parts read
	replayed bool      // a keyed write's key was applied before: nothing written
}

// write runs the read-plan-write loop of the logical entity
// in.PartitionKey/in.RowKey: read one version of the parts, compute the
// wanted properties, write the difference in one transaction conditional
// on that version, and start again when the read straddled a concurrent
// write or, if retry, on a conflict. A WithKey copy's write carries its
// key's record (see WithKey), with the fingerprint of in (what the caller
// wrote).
func (w *Wide[T]) write(ctx context.Context, op string, in tablekit.Entity, retry bool, want func(parts []*widePart, current map[string]any) (map[string]any, error)) (wideWritten, error) {
	pk, rk := in.PartitionKey, in.RowKey
	kx, err := w.keyTx(op, in)
	if err != nil {
		return wideWritten{}, err
	}
	var last error
	for range timing.Policy(w.retry).Attempts(ctx) {
		parts, ok, err := w.read(ctx, pk, rk)
		if err != nil {
			return wideWritten{}, err
		}
		if !ok {
			last = w.unsettled(pk, rk)
			continue
		}
		current, ts := assemble(parts)
		props, err := want(parts, current)
		if err != nil {
			var fe *fnError
			if errors.As(err, &fe) {
				return wideWritten{}, err
			}
			replayed, err := keyRefused(ctx, kx, err)
			return wideWritten{replayed: replayed}, err
		}
		actions, err := w.plan(pk, rk, parts, props)
		if err != nil {
			return wideWritten{}, err
		}
		if len(actions) == 0 && kx == nil {
			return wideWritten{etag: parts[0].etag, props: props, ts: ts}, nil
		}
		etags, o, err := w.send(ctx, kx, actions)
		last = err
		switch {
		case o == coord.Replayed:
			return wideWritten{replayed: true}, nil
		case o == coord.NotApplied:
			continue // nothing was applied: read and write again
		case err == nil && len(actions) == 0:
			return wideWritten{etag: parts[0].etag, props: props, ts: ts}, nil // the record alone
		case err == nil:
			return wideWritten{etag: part0ETag(rk, actions, etags), props: props, ts: ts}, nil // "" when settled
		}
		if kx == nil {
			if etag, ok := w.settled(ctx, pk, rk, actions, last); ok {
				return wideWritten{etag: etag, props: props, ts: ts}, nil
			}
		}
		if !retry || !isConflict(last) {
			return wideWritten{}, last
		}
	}
	if err := ctx.Err(); err != nil {
		return wideWritten{}, err
	}
	return wideWritten{}, last
}

// Delete deletes every part of the logical entity in one transaction if
// its version (part 0's ETag) is still etag; azcore.ETagAny deletes any
// version. It fails with an error matching tablekit.ErrNotFound when the
// entity does not exist and tablekit.ErrPreconditionFailed when its
// version is no longer etag; an empty etag is refused before anything is
// sent. Cost: one range query (to find the parts) and one entity group
// transaction.
func (w *Wide[T]) Delete(ctx context.Context, pk, rk string, etag azcore.ETag) error {
	const op = "patterns.Wide.Delete"
	if err := w.usable(op); err != nil {
		return err
	}
	if etag == "" {
		return &tablekit.ValidationError{Op: op, Entity: pk + "/" + rk, Detail: "Delete needs the ETag read with the entity (or azcore.ETagAny to delete any version)", Err: tablekit.ErrInvalidInput}
	}
	_, err := w.remove(ctx, op, pk, rk, etag)
	return withOp(op, err)
}

// DeleteIfExists deletes every part of the logical entity, whatever its
// version, in one transaction conditional on the version it read (starting
// again when a concurrent writer changed it), and reports whether it
// existed. A missing entity is not an error. Cost: one range query and,
// when the entity exists, one entity group transaction.
func (w *Wide[T]) DeleteIfExists(ctx context.Context, pk, rk string) (existed bool, err error) {
	const op = "patterns.Wide.DeleteIfExists"
	if err := w.usable(op); err != nil {
		return false, err
	}
	existed, err = w.remove(ctx, op, pk, rk, "")
	return existed, withOp(op, err)
}

// remove deletes the logical entity: the version etag, any version for
// azcore.ETagAny (retrying conflicts, ErrNotFound when absent), or, for
// "", whatever exists (reporting whether anything did). A WithKey copy's
// remove carries its key's record (a repeat reports false).
func (w *Wide[T]) remove(ctx context.Context, op, pk, rk string, etag azcore.ETag) (bool, error) {
	kx, err := w.keyTx(op, tablekit.Entity{PartitionKey: pk, RowKey: rk})
	if err != nil {
		return false, err
	}
	var last error
	for range timing.Policy(w.retry).Attempts(ctx) {
		parts, ok, err := w.read(ctx, pk, rk)
		if err != nil {
			return false, err
		}
		if !ok {
			last = w.unsettled(pk, rk)
			continue
		}
		if etag == "" && len(parts) == 0 && kx == nil {
			return false, nil
		}
		if etag != "" {
			if err := checkVersion(pk, rk, parts, etag); err != nil {
				_, err := keyRefused(ctx, kx, err)
				return false, err
			}
		}
		actions := make([]tablekit.Action[tablekit.Entity], 0, len(parts))
		for _, p := range parts {
			prk, err := widePartKey(rk, p.index)
			if err != nil {
				return false, err
			}
			actions = append(actions, tablekit.DeleteAction(tablekit.Entity{PartitionKey: pk, RowKey: prk}, p.etag))
		}
		_, o, err := w.send(ctx, kx, actions)
		last = err
		switch {
		case o == coord.Replayed:
			return false, nil
		case o == coord.NotApplied:
			continue // nothing was applied: read and delete again
		case err == nil:
			return len(parts) > 0, nil
		}
		if !isConflict(last) || etag != "" && etag != azcore.ETagAny {
			return false, last
		}
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return false, last
}
