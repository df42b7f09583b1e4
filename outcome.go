package tablekit

import (
	"bytes"
	"context"
	"errors"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
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

// readRaw reads one entity's JSON as the service sent it. found is false
// when it does not exist.
func (t *Table[T]) readRaw(ctx context.Context, pk, rk string) (body []byte, etag azcore.ETag, found bool, err error) {
	if pk == "" || rk == "" {
		// GetEntity cannot address an empty key; a point query can.
		q := &query{op: "Get", filter: pointFilter(pk, rk)}
		var objs [][]byte
		if err := t.fetchRaw(ctx, q, 1, func(obj []byte) error { objs = append(objs, bytes.Clone(obj)); return nil }); err != nil {
			return nil, "", false, err
		}
		if len(objs) == 0 {
			return nil, "", false, nil
		}
		var e Entity
		if err := decodeEntity(objs[0], &e, &decodeState{table: t.name}); err != nil {
			return nil, "", false, err
		}
		return objs[0], e.ETag, true, nil
	}
	var resp *http.Response
	rctx := policy.WithCaptureResponse(ctx, &resp)
	var rc *readCall
	if t.wire {
		rc = &readCall{empty: "{}"}
		rctx = context.WithValue(rctx, readKey{}, rc)
	}
	r, err := t.client.GetEntity(rctx, pk, rk, nil)
	if err != nil {
		err = t.wrap("Get", pk, rk, err)
		if errors.Is(err, ErrNotFound) {
			return nil, "", false, nil
		}
		return nil, "", false, err
	}
	body = r.Value
	if rc != nil && rc.ok {
		return rc.body, r.ETag, true, nil
	}
	if resp != nil {
		if raw, perr := runtime.Payload(resp); perr == nil {
			body = raw
		}
	}
	return body, r.ETag, true, nil
}

// unsettledTransaction is the error of a transaction whose retry failed
// with a conflict its own first try may have caused: the outcome is
// unknown.
func unsettledTransaction(terr *TransactionError) error {
	if se, ok := terr.Err.(*ServiceError); ok {
		se.sentinel = ErrOutcomeUnknown
	}
	return terr
}

// settleWrite settles a single-entity write that failed with err: when an
// earlier try may have been applied and the failure is the conflict that
// try would cause, the error matches ErrOutcomeUnknown instead.
func (t *Table[T]) settleWrite(op string, a *encodedAction, err error, att *attempts) (azcore.ETag, error) {
	werr := t.wrapWrite(op, a.pk, a.rk, err, att)
	var se *ServiceError
	if att.maybeApplied.Load() && errors.As(werr, &se) && retryConflict(se.Code) {
		se.sentinel = ErrOutcomeUnknown
	}
	return "", werr
}
