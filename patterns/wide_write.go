package patterns

import (
	"context"
	"errors"
	"maps"

	"github.com/tablekit/tablekit"
)

// This file holds the writes of a wide entity: each reads the entity,
// plans one transaction that includes part 0 (see plan), and starts again
// when a concurrent writer got there first.

// Insert writes a new logical entity in one entity group transaction, and
// nothing else: it fails with an error matching tablekit.ErrAlreadyExists
// when the logical entity exists.
func (w *Wide[T]) Insert(ctx context.Context, v T) error {
	pk, rk, want, err := w.encode(v)
	if err != nil {
		return err
	}
	actions, err := w.plan(pk, rk, nil, want)
	if err != nil {
		return err
	}
	_, err = w.table.Transaction(ctx, actions...)
	if w.settled(ctx, pk, rk, actions, err) {
		return nil
	}
	return err
}

// settled reports whether a transaction that failed with err (an error
// matching tablekit.ErrOutcomeUnknown: a try's answer was lost and the
// SDK's retry met a conflict that try may have caused) was applied after
// all: part 0 carries the write's stamp. The stamp is random and new to
// this write, so no other write can have stored it. When part 0 carries
// another stamp the write may still have been applied and replaced since,
// and the outcome stays unknown.
func (w *Wide[T]) settled(ctx context.Context, pk, rk string, actions []tablekit.Action[tablekit.Entity], err error) bool {
	if !errors.Is(err, tablekit.ErrOutcomeUnknown) {
		return false
	}
	rk0, kerr := WidePartKey(rk, 0)
	if kerr != nil {
		return false
	}
	var stamp string
	for _, a := range actions {
		if a.Value.RowKey == rk0 && a.Kind != tablekit.ActionDelete {
			stamp, _ = a.Value.Properties[WideStampProperty].(string)
		}
	}
	if stamp == "" {
		return false
	}
	parts, _, rerr := w.read(ctx, pk, rk)
	return rerr == nil && len(parts) > 0 && parts[0].index == 0 && parts[0].stamp == stamp
}

// Put stores v as the whole logical entity, inserting or replacing it:
// properties v does not have are removed. It reads the current parts (one
// query) and then writes, in one transaction, part 0 and the parts whose
// properties change; properties that stay keep their place.
func (w *Wide[T]) Put(ctx context.Context, v T) error {
	pk, rk, want, err := w.encode(v)
	if err != nil {
		return err
	}
	return w.write(ctx, pk, rk, func(_ []*widePart, _ map[string]any) (map[string]any, error) {
		return want, nil
	})
}

// Merge changes some properties of the logical entity, creating it if it
// does not exist: a nil value removes the property. Part 0 and the
// physical entities holding changed properties are written (nothing when
// nothing changes). For a wide map entry, name the property with
// PropertyName.
func (w *Wide[T]) Merge(ctx context.Context, pk, rk string, changes map[string]any) error {
	return w.write(ctx, pk, rk, func(_ []*widePart, current map[string]any) (map[string]any, error) {
		want := maps.Clone(current)
		for name, val := range changes {
			if val == nil {
				delete(want, name)
			} else {
				want[name] = normalizeValue(val)
			}
		}
		return want, nil
	})
}

// Update reads the logical entity, lets fn change it, and writes part 0
// and the parts whose properties changed, in one transaction conditional
// on the version fn saw. When another writer changed the entity in
// between, it reads again and calls fn again, so fn must only change *v.
// fn must not change the keys. Update fails with an error matching
// tablekit.ErrNotFound when the entity does not exist, and returns fn's
// error as is.
func (w *Wide[T]) Update(ctx context.Context, pk, rk string, fn func(v *T) error) error {
	return w.write(ctx, pk, rk, func(parts []*widePart, current map[string]any) (map[string]any, error) {
		if len(parts) == 0 {
			return nil, notFound("wide entity", pk, rk)
		}
		_, ts := assemble(parts)
		v, err := w.decode(pk, rk, ts, current)
		if err != nil {
			return nil, err
		}
		if err := fn(&v); err != nil {
			return nil, err
		}
		npk, nrk, want, err := w.encode(v)
		if err != nil {
			return nil, err
		}
		if npk != pk || nrk != rk {
			return nil, &tablekit.ValidationError{Entity: pk + "/" + rk, Detail: "Update's function changed the keys", Err: tablekit.ErrInvalidKey}
		}
		return want, nil
	})
}

// write runs the read-plan-write loop: read one version of the parts,
// compute the wanted properties, write the difference in one transaction
// conditional on that version, start again on a conflict or when the read
// straddled a concurrent write.
func (w *Wide[T]) write(ctx context.Context, pk, rk string, want func(parts []*widePart, current map[string]any) (map[string]any, error)) error {
	var last error
	for range w.retry.Attempts(ctx) {
		parts, ok, err := w.read(ctx, pk, rk)
		if err != nil {
			return err
		}
		if !ok {
			last = w.unsettled(pk, rk)
			continue
		}
		current, _ := assemble(parts)
		props, err := want(parts, current)
		if err != nil {
			return err
		}
		actions, err := w.plan(pk, rk, parts, props)
		if err != nil {
			return err
		}
		if len(actions) == 0 {
			return nil
		}
		_, last = w.table.Transaction(ctx, actions...)
		if w.settled(ctx, pk, rk, actions, last) {
			return nil
		}
		if last == nil || !isConflict(last) {
			return last
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return last
}

// Delete deletes every part of the logical entity in one transaction,
// conditional on the version it read, and reports whether it existed.
func (w *Wide[T]) Delete(ctx context.Context, pk, rk string) (bool, error) {
	var last error
	for range w.retry.Attempts(ctx) {
		parts, ok, err := w.read(ctx, pk, rk)
		if err != nil {
			return false, err
		}
		if !ok {
			last = w.unsettled(pk, rk)
			continue
		}
		if len(parts) == 0 {
			return false, nil
		}
		actions := make([]tablekit.Action[tablekit.Entity], 0, len(parts))
		for _, p := range parts {
			prk, err := WidePartKey(rk, p.index)
			if err != nil {
				return false, err
			}
			actions = append(actions, tablekit.DeleteAction(tablekit.Entity{PartitionKey: pk, RowKey: prk}, p.etag))
		}
		_, last = w.table.Transaction(ctx, actions...)
		if last == nil || !isConflict(last) {
			return last == nil, last
		}
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return false, last
}
