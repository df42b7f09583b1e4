package tablekit

import (
	"context"
	"errors"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/wire"
)

// A write whose answer is lost (a broken connection, a 500 timeout) is
// retried by the SDK. If the first try was applied, the retry meets its
// effect and fails: an insert finds the entity, an If-Match update finds a
// new ETag, a delete finds nothing. tablekit then reports an error matching
// ErrOutcomeUnknown instead of the conflict, because nothing the service
// keeps tells whether this write was applied: reading the entity does not
// settle it either, since another writer may have stored the very same
// content (two increments of a counter that read the same value write the
// same number), and a success reported on that evidence would lose a write
// (the chaos suite of patterns.Series found it).

// retryConflict reports whether a failure with this error code may be the
// effect of an earlier try of the same write.
func retryConflict(code string) bool {
	switch code {
	case "EntityAlreadyExists", "UpdateConditionNotSatisfied", "ConditionNotMet", "ResourceNotFound":
		return true
	}
	return false
}

// readIfExists reads one entity's JSON as the service sent it and its
// ETag; found is false when there is no such entity (a missing table is
// an error).
func (t *Table[T]) readIfExists(ctx context.Context, op, pk, rk string) (e wire.Entity, found bool, err error) {
	e, err = t.read(ctx, op, pk, rk, "")
	var se *ServiceError
	if errors.As(err, &se) && errors.Is(err, ErrNotFound) && se.Code != "TableNotFound" {
		return e, false, nil
	}
	return e, err == nil, err
}

// unsettledTransaction is the error of a transaction whose retry failed
// with a conflict its own first try may have caused: the outcome is
// unknown.
func unsettledTransaction(terr *TransactionError) error {
	if se, ok := terr.Err.(*ServiceError); ok {
		wire.Unsettled(se)
	}
	return terr
}

// settleWrite settles a single-entity write that failed with err: when an
// earlier try may have been applied and the failure is the conflict that
// try would cause, the error matches ErrOutcomeUnknown instead.
func (t *Table[T]) settleWrite(op string, a *wire.BatchAction, err error, att *attempts) (azcore.ETag, error) {
	werr := t.wrapWrite(op, a.PK, a.RK, err, att)
	var se *ServiceError
	if att.maybeApplied.Load() && errors.As(werr, &se) && retryConflict(se.Code) {
		wire.Unsettled(se)
	}
	return "", werr
}
