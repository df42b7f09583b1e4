package tablekit

import (
	"context"
	"errors"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// Modify changes the entity with keys pk and rk by a function, the
// read-modify-write of optimistic concurrency: it reads the entity (a zero
// value with the keys set when there is none), calls fn with it, and
// stores what fn left conditionally on the version it read (an Update with
// the ETag read, which replaces the entity, or an Insert when there was
// none). When another writer changed the entity in between, it reads again
// and calls fn again, as [TableOptions].Retry says; after the last try it
// returns the conflict (matching ErrPreconditionFailed or
// ErrAlreadyExists). fn may run several times: it must only change v. An
// error from fn stops Modify and is returned as it is; nothing is written.
// Modify returns the value stored, with its new ETag when T has an etag
// field.
//
// A write whose outcome is unknown (ErrOutcomeUnknown) is not tried again,
// since it may have been applied.
func (t *Table[T]) Modify(ctx context.Context, pk, rk string, fn func(v *T) error) (T, error) {
	var zero T
	if fn == nil {
		return zero, &ValidationError{Op: "Modify", Entity: describeKeys(t.name, pk, rk), Detail: "nil fn", Err: ErrInvalidInput}
	}
	if err := t.usable(); err != nil {
		return zero, withOp("Modify", err)
	}
	if err := t.checkKeys(pk, rk); err != nil {
		return zero, withOp("Modify", err)
	}
	var err error
	for range t.retry.attempts(ctx) {
		// One read gives the value and the ETag it is conditional on.
		e, found, rerr := t.readIfExists(ctx, "Modify", pk, rk)
		if rerr != nil {
			return zero, rerr
		}
		etag := e.ETag
		v := t.withKeys(pk, rk)
		if found {
			if err := t.decode("Modify", e.Body, &v); err != nil {
				return zero, err
			}
			t.setETag(&v, etag)
		}
		if err := fn(&v); err != nil {
			return zero, err
		}
		if gotPK, gotRK := t.keysOf(&v); gotPK != pk || gotRK != rk {
			return zero, &ValidationError{Op: "Modify", Entity: describeKeys(t.name, pk, rk), Detail: "fn changed the entity's keys", Err: ErrInvalidInput}
		}
		var newETag azcore.ETag
		if etag == "" {
			newETag, err = t.Insert(ctx, v)
		} else {
			newETag, err = t.Update(ctx, v, etag)
		}
		if err == nil {
			t.setETag(&v, newETag)
			return v, nil
		}
		if !errors.Is(err, ErrPreconditionFailed) && !errors.Is(err, ErrAlreadyExists) && !errors.Is(err, ErrNotFound) {
			return zero, err
		}
	}
	if ctx.Err() != nil {
		return zero, ctx.Err()
	}
	return zero, err
}

// withKeys returns a zero T with its keys set.
func (t *Table[T]) withKeys(pk, rk string) T { return t.codec.WithKeys(pk, rk) }
