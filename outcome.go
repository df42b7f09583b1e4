package tablekit

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// A write whose answer is lost (a broken connection, a 500 timeout) is
// retried by the SDK. If the first try was applied, the retry meets its
// effect and fails: an insert finds the entity, an If-Match update finds a
// new ETag, a delete finds nothing. tablekit then reads the entities the
// write addressed once; when they hold exactly what the write stored it
// reports success, otherwise an error matching ErrOutcomeUnknown, because
// the write may have been applied and then changed by another writer.

// retryConflict reports whether a failure with this error code may be the
// effect of an earlier try of the same write.
func retryConflict(code string) bool {
	switch code {
	case "EntityAlreadyExists", "UpdateConditionNotSatisfied", "ConditionNotMet", "ResourceNotFound":
		return true
	}
	return false
}

// verifyConcurrency bounds the reads of one verification.
const verifyConcurrency = 8

// verify reads the entities of acts and reports whether they show that the
// write was applied: each holds the effect of its action, and at least one
// action is not a delete (an absent entity does not tell a delete that was
// applied from one that found nothing; an atomic transaction's other
// effects do). If so it returns their ETags ("" for deletes).
func (t *Table[T]) verify(ctx context.Context, acts []encodedAction) ([]azcore.ETag, bool) {
	if !slices.ContainsFunc(acts, func(a encodedAction) bool { return a.kind != ActionDelete }) {
		return nil, false
	}
	ctx = context.WithValue(ctx, wireKey{}, (*wireCall)(nil)) // plain reads
	etags := make([]azcore.ETag, len(acts))
	ok := make([]bool, len(acts))
	sem := make(chan struct{}, verifyConcurrency)
	var wg sync.WaitGroup
	for i := range acts {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			etags[i], ok[i] = t.holdsEffect(ctx, &acts[i])
		})
	}
	wg.Wait()
	for _, o := range ok {
		if !o {
			return nil, false
		}
	}
	return etags, true
}

// holdsEffect reads a's entity and reports whether it holds a's effect.
func (t *Table[T]) holdsEffect(ctx context.Context, a *encodedAction) (azcore.ETag, bool) {
	body, etag, found, err := t.readRaw(ctx, a.pk, a.rk)
	if err != nil {
		return "", false
	}
	if a.kind == ActionDelete {
		return "", !found
	}
	if !found {
		return "", false
	}
	var stored, wrote Entity
	d := decodeState{table: t.name}
	if decodeEntity(body, &stored, &d) != nil || decodeEntity(a.body, &wrote, &d) != nil {
		return "", false
	}
	if a.mode == Merge && a.kind != ActionInsert {
		return etag, containsProperties(stored.Properties, wrote.Properties)
	}
	return etag, len(stored.Properties) == len(wrote.Properties) && containsProperties(stored.Properties, wrote.Properties)
}

// containsProperties reports whether every property of sub is in all with
// the same type and value.
func containsProperties(all, sub map[string]any) bool {
	for name, v := range sub {
		w, ok := all[name]
		if !ok || !sameValue(v, w) {
			return false
		}
	}
	return true
}

// sameValue compares two decoded property values, type included.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	}
	return a == b
}

// readRaw reads one entity's JSON as the service sent it. found is false
// when it does not exist.
func (t *Table[T]) readRaw(ctx context.Context, pk, rk string) (body []byte, etag azcore.ETag, found bool, err error) {
	if pk == "" || rk == "" {
		// GetEntity cannot address an empty key; a point query can.
		q := &query{filter: pointFilter(pk, rk)}
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

// verifyTransaction settles a transaction whose retry failed with a
// conflict its own first try may have caused.
func (t *Table[T]) verifyTransaction(ctx context.Context, enc []encodedAction, terr *TransactionError) ([]azcore.ETag, error) {
	if etags, ok := t.verify(ctx, enc); ok {
		return etags, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if se, ok := terr.Err.(*ServiceError); ok {
		se.sentinel = ErrOutcomeUnknown
	}
	return nil, terr
}

// settleWrite settles a single-entity write that failed with err: when an
// earlier try may have been applied and the failure is the conflict that
// try would cause, it reads the entity and returns its ETag if it holds
// a's effect, else an error matching ErrOutcomeUnknown.
func (t *Table[T]) settleWrite(ctx context.Context, op string, a *encodedAction, err error, att *attempts) (azcore.ETag, error) {
	werr := t.wrapWrite(op, a.pk, a.rk, err, att)
	var se *ServiceError
	if !att.maybeApplied.Load() || !errors.As(werr, &se) || !retryConflict(se.Code) {
		return "", werr
	}
	if etags, ok := t.verify(ctx, []encodedAction{*a}); ok {
		return etags[0], nil
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	se.sentinel = ErrOutcomeUnknown
	return "", se
}
