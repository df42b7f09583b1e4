package index_test

import (
	"errors"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// Regression tests for outcomes the chaos suites (chaos_*_test.go) showed
// could be settled, or were left wrong, under lost answers and failures.

// policyFunc is an azcore per-retry policy.
type policyFunc func(req *policy.Request) (*http.Response, error)

func (f policyFunc) Do(req *policy.Request) (*http.Response, error) { return f(req) }

// errReset is a broken connection after the request was sent.
var errReset = &net.OpError{Op: "read", Net: "tcp", Err: errors.New("injected: connection reset by peer")}

// loseAnswer returns a policy that, while armed, lets the first request
// match accepts reach the service, then drops the answer and reports a
// broken connection (the SDK retries it); it disarms itself.
func loseAnswer(armed *atomic.Bool, match func(*http.Request) bool) policy.Policy {
	return policyFunc(func(req *policy.Request) (*http.Response, error) {
		if !match(req.Raw()) || !armed.CompareAndSwap(true, false) {
			return req.Next()
		}
		resp, err := req.Next()
		if err == nil {
			resp.Body.Close()
		}
		return nil, errReset
	})
}

// fastRetries are the SDK's retries without their long waits.
var fastRetries = policy.RetryOptions{MaxRetries: 3, RetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond}

// An EntityList update whose answer is lost, and whose SDK retry then
// meets the change its first try made (the index entity created, changed
// or deleted), settles by reading the list again: Add and Remove are
// idempotent, so the id being there (or not) is the answer. It used to
// report tablekit.ErrOutcomeUnknown.
func TestEntityListLostAnswerSettles(t *testing.T) {
	ctx := testCtx(t)
	setup := testenv.Account(t, nil)
	name := newTable(t, setup)
	var armed atomic.Bool
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{Retry: fastRetries, PerRetryPolicies: []policy.Policy{
		loseAnswer(&armed, func(r *http.Request) bool {
			return (isWrite(r) || r.Method == http.MethodPost) && strings.Contains(r.URL.Path, "/"+name)
		}),
	}}})
	l, err := index.NewEntityList(mustNewTable[tablekit.Entity](t, acct, name), nil)
	if err != nil {
		t.Fatal(err)
	}
	key := index.ListKey{Index: "lastname", Value: "O'Neil"}
	a, b := index.ID{PartitionKey: "Sales", RowKey: "000223"}, index.ID{PartitionKey: "Sales", RowKey: "000224"}
	steps := []struct {
		what string
		do   func() error
		want []index.ID
	}{
		{"Add creating the index entity", func() error { return l.Add(ctx, key, a) }, []index.ID{a}},
		{"Add changing it", func() error { return l.Add(ctx, key, b) }, []index.ID{a, b}},
		{"Remove changing it", func() error { return l.Remove(ctx, key, a) }, []index.ID{b}},
		{"Remove deleting it", func() error { return l.Remove(ctx, key, b) }, nil},
	}
	for _, s := range steps {
		armed.Store(true)
		if err := s.do(); err != nil {
			t.Errorf("%s, its answer lost: %v", s.what, err)
		}
		if armed.Load() {
			t.Fatalf("%s: no answer was lost", s.what)
		}
		got, err := l.IDs(ctx, key)
		if err != nil || !slices.Equal(got, s.want) {
			t.Errorf("after %s: %v (%v), want %v", s.what, got, err, s.want)
		}
	}
}

// A CrossPartition DeleteIfExists whose answer is lost, and whose SDK retry then
// finds the entity gone, succeeds: the entity is gone either way, and
// deleting a missing entity is not an error (it reports false: it cannot
// tell whether this call deleted it). It used to report
// tablekit.ErrOutcomeUnknown.
func TestInterDeleteLostAnswerSettles(t *testing.T) {
	ctx := testCtx(t)
	r := newInterRigWith(t, &interRig{queued: true, lastNameOnly: true})
	stop := r.worker(t, r.acct, r.ix, nil)
	defer stop()
	e := staff()[0]
	if _, err := r.ix.Upsert(ctx, e); err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	armed.Store(true)
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{Retry: fastRetries, PerRetryPolicies: []policy.Policy{
		loseAnswer(&armed, func(req *http.Request) bool {
			return req.Method == http.MethodDelete && strings.Contains(req.URL.Path, "/"+r.employees+"(")
		}),
	}}})
	if _, err := r.build(t, acct).DeleteIfExists(ctx, e.Department, e.ID); err != nil {
		t.Errorf("DeleteIfExists, its answer lost: %v", err)
	}
	if armed.Load() {
		t.Fatal("no answer was lost")
	}
	r.drain(t, ctx)
	if stored := r.check(t, ctx); len(stored) != 0 {
		t.Errorf("stored %v, want nothing", stored)
	}
}

// A Sync that created an index entry and then failed must not leave the
// entry behind when a newer Sync removed it meanwhile (and recorded the
// entity as synced without it): here Sync A, for the version named Jones,
// adds the id to the Jones list just after Sync B, for the version named
// Hall, finished, and A's next request fails. A retries the pass and takes
// the id out again; it used to return the error, and the redelivered Sync
// found the entity synced and left the id in the Jones list for good.
func TestInterSyncFailureAfterLostRace(t *testing.T) {
	ctx := testCtx(t)
	r := newInterRigWith(t, &interRig{lastNameOnly: true}) // direct mode: Sync is called here
	e := staff()[0]
	e.LastName = "Jones"
	if _, err := r.employeeTable.Insert(ctx, e); err != nil { // not synced yet
		t.Fatal(err)
	}
	var raced, failNext atomic.Bool
	var once sync.Once
	var bErr error
	p := policyFunc(func(req *policy.Request) (*http.Response, error) {
		raw := req.Raw()
		if raw.Method == http.MethodPost && strings.HasSuffix(raw.URL.Path, "/"+r.lists) {
			// A is about to create the Jones list: the employee is
			// renamed and Sync B runs to the end first.
			once.Do(func() {
				cur, err := r.employeeTable.Get(ctx, e.Department, e.ID)
				if err == nil {
					cur.LastName = "Hall"
					_, err = r.employeeTable.Update(ctx, cur, cur.ETag)
				}
				if err == nil {
					err = r.ix.Sync(ctx, e.Department, e.ID)
				}
				bErr = err
				raced.Store(true)
				failNext.Store(true)
			})
			return req.Next()
		}
		if failNext.Load() && isWrite(raw) && strings.Contains(raw.URL.Path, "/"+r.employees+"(") {
			failNext.Store(false)
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("injected: connection refused")}
		}
		return req.Next()
	})
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}, PerRetryPolicies: []policy.Policy{p}}})
	errA := r.build(t, acct).Sync(ctx, e.Department, e.ID)
	if !raced.Load() || bErr != nil {
		t.Fatalf("the race was not set up: raced %v, Sync B: %v", raced.Load(), bErr)
	}
	t.Logf("Sync A: %v", errA)
	if errA != nil {
		// As the worker would: the request is handled again.
		if err := r.ix.Sync(ctx, e.Department, e.ID); err != nil {
			t.Fatal(err)
		}
	}
	r.check(t, ctx)
	if ids, err := r.ix.IDs(ctx, e.Department, "lastname", "Jones"); err != nil || len(ids) != 0 {
		t.Errorf("the Jones list holds %v (%v), want nothing", ids, err)
	}
}

// A queued write refused at once (a stale ETag) does not claim that it
// took longer than CrossPartitionOptions.Delay and may still be applied: that
// message is for a write cut off by the Delay. Every refused write used to
// carry it.
func TestInterRefusedWriteIsNotLate(t *testing.T) {
	ctx := testCtx(t)
	r := newInterRigWith(t, &interRig{queued: true, lastNameOnly: true})
	e := staff()[0]
	if _, err := r.ix.Upsert(ctx, e); err != nil {
		t.Fatal(err)
	}
	prev, err := r.ix.Get(ctx, e.Department, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ix.Upsert(ctx, e); err != nil { // a new version
		t.Fatal(err)
	}
	_, err = r.ix.Update(ctx, e, prev.ETag)
	if !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Fatalf("Update with a stale ETag: %v, want ErrPreconditionFailed", err)
	}
	if strings.Contains(err.Error(), "longer than") {
		t.Errorf("Update refused at once says: %v", err)
	}
}

// The write of a queued Update starts no try after its safety net can be
// visible, however long sending the safety net took: here the safety
// net's first try reaches the queue at once but its answer takes longer
// than Delay, and a worker runs the safety net (which fences the version)
// meanwhile. The Update used to be sent anyway and refused as a conflict
// (ErrPreconditionFailed) though no one else had written the entity: its
// Delay was counted from the end of the slow request instead of its start.
func TestInterSlowSafetyNetIsNoConflict(t *testing.T) {
	ctx := testCtx(t)
	r := newInterRigWith(t, &interRig{queued: true, lastNameOnly: true})
	stop := r.worker(t, r.acct, r.ix, nil)
	defer stop()
	e := staff()[0]
	if _, err := r.ix.Upsert(ctx, e); err != nil {
		t.Fatal(err)
	}
	prev, err := r.ix.Get(ctx, e.Department, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	armed.Store(true)
	slow := policyFunc(func(req *policy.Request) (*http.Response, error) {
		raw := req.Raw()
		if raw.Method != http.MethodPost || !strings.Contains(raw.URL.RawQuery, "visibilitytimeout") || !armed.CompareAndSwap(true, false) {
			return req.Next()
		}
		resp, err := req.Next()
		time.Sleep(2500 * time.Millisecond) // Delay is 1 s; the worker polls every 200 ms at most
		return resp, err
	})
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{slow}}})
	next := e
	next.LastName = "Hall"
	_, err = r.build(t, acct).Update(ctx, next, prev.ETag)
	if armed.Load() {
		t.Fatal("the safety net was not slowed down")
	}
	t.Logf("Update: %v", err)
	if errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Errorf("Update refused as a conflict, but no one else wrote the entity: %v", err)
	}
	r.drain(t, ctx)
	r.check(t, ctx)
}
