package chaos_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/internal/wire"
)

type item struct {
	PK string `table:",pk"`
	RK string `table:",rk"`
	N  int    `table:"N"`
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// setup returns an Injector for seed and cfg, an Account with it, and a
// new table on that account, made while the Injector was disabled. The
// Injector is disabled again before the test's cleanups run.
func setup(t *testing.T, seed int64, cfg *chaos.Config) (*chaos.Injector, *tablekit.Account, *tablekit.Table[item]) {
	t.Helper()
	inj, err := chaos.New(seed, cfg)
	if err != nil {
		t.Fatal(err)
	}
	acct := inj.Account(t, nil)
	inj.SetEnabled(false)
	tbl, err := tablekit.OpenTable[item](acct, testenv.CreateTable(t, acct), nil)
	if err != nil {
		t.Fatal(err)
	}
	inj.SetEnabled(true)
	t.Cleanup(func() { inj.SetEnabled(false) })
	return inj, acct, tbl
}

// newQueue and newContainer make a queue or container while inj is
// disabled, and delete it at the end while inj is disabled.
func newQueue(t *testing.T, inj *chaos.Injector, acct *tablekit.Account) *azqueue.QueueClient {
	inj.SetEnabled(false)
	defer inj.SetEnabled(true)
	q := testenv.NewQueue(t, acct)
	t.Cleanup(func() { inj.SetEnabled(false) })
	return q
}

func newContainer(t *testing.T, inj *chaos.Injector, acct *tablekit.Account) *container.Client {
	inj.SetEnabled(false)
	defer inj.SetEnabled(true)
	c := testenv.NewContainer(t, acct)
	t.Cleanup(func() { inj.SetEnabled(false) })
	return c
}

// An InsertEntity whose answer is lost is applied; the SDK's retry then
// meets the entity and comes back EntityAlreadyExists, which tablekit
// reports as an unknown outcome (ErrOutcomeUnknown), not as the conflict.
func TestAnswerLostInsertIsUnknown(t *testing.T) {
	ctx := testCtx(t)
	inj, acct, tbl := setup(t, 1, &chaos.Config{AnswerLost: 1, Operations: []string{"InsertEntity"}, MaxConsecutive: 1})
	before := acct.Meter().Snapshot()
	h, err := chaos.RunWriters(ctx, 1, 1, func(ctx context.Context, w *chaos.Writer) error {
		w.Do(ctx, "Insert", "p/r", 1, func(ctx context.Context) (any, error) {
			_, err := tbl.Insert(ctx, item{PK: "p", RK: "r", N: 1})
			return nil, err
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	op := h.Ops()[0]
	if !errors.Is(op.Err, tablekit.ErrOutcomeUnknown) || errors.Is(op.Err, tablekit.ErrAlreadyExists) || op.Outcome != chaos.Unknown || !op.AnswerLost() ||
		!slices.Equal(op.Faults, []chaos.Kind{chaos.AnswerLost}) {
		t.Fatalf("insert: %v", op)
	}
	got, err := tbl.Get(ctx, "p", "r")
	if err != nil || got.N != 1 {
		t.Fatalf("stored entity: %+v, %v", got, err)
	}
	// Both tries reached the service; the second drew a fault too, held
	// back by MaxConsecutive.
	if n := acct.Meter().Snapshot().Sub(before).Count("table", "InsertEntity"); n != 2 {
		t.Errorf("Meter counted %d InsertEntity, want 2", n)
	}
	st := inj.Stats()
	if st.Count(chaos.AnswerLost, "table", "InsertEntity") != 1 || st.Faults() != 1 || st.HeldBack() != 1 ||
		st.Eligible("table", "InsertEntity") != 2 || st.Eligible("table", "GetEntity") != 0 {
		t.Errorf("stats: %v", st)
	}
	ev := inj.Events()
	if len(ev) != 1 || ev[0].Kind != chaos.AnswerLost || ev[0].Seen != 0 || ev[0].Operation != "InsertEntity" {
		t.Errorf("events: %v", ev)
	}
}

// A ServerBusy on every try of GetMessages outlasts the SDK's retries and
// surfaces as tablekit.ErrThrottled, with Azure's code and status.
func TestServerBusyOutlastingRetriesIsThrottled(t *testing.T) {
	ctx := testCtx(t)
	inj, acct, _ := setup(t, 1, &chaos.Config{ServerBusy: 1, Services: []string{"queue"}, Operations: []string{"GetMessages"}, MaxConsecutive: -1})
	q := newQueue(t, inj, acct)
	before := acct.Meter().Snapshot()
	if _, err := q.EnqueueMessage(ctx, "m", nil); err != nil {
		t.Fatal(err)
	}
	_, err := q.DequeueMessages(ctx, nil)
	err = wire.Wrap("GetMessages", "", "", "", err)
	var re *azcore.ResponseError
	if !errors.Is(err, tablekit.ErrThrottled) || !errors.As(err, &re) || re.StatusCode != 503 || re.ErrorCode != "ServerBusy" {
		t.Fatalf("DequeueMessages: %v", err)
	}
	if chaos.OutcomeOf(err) != chaos.Failed {
		t.Errorf("OutcomeOf = %v, want failed", chaos.OutcomeOf(err))
	}
	d := acct.Meter().Snapshot().Sub(before)
	if d.Count("queue", "GetMessages") != 0 || d.Count("queue", "PutMessage") != 1 {
		t.Errorf("Meter: %v, want no GetMessages sent", d)
	}
	if n := inj.Stats().Count(chaos.ServerBusy, "queue", "GetMessages"); n != 4 {
		t.Errorf("%d ServerBusy injected, want 4 (1 try + 3 SDK retries)", n)
	}
	// The message is still there for a try without faults.
	resp, err := q.DequeueMessages(chaos.NoFaults(ctx), nil)
	if err != nil || len(resp.Messages) != 1 {
		t.Errorf("dequeue without faults: %v, %v", resp, err)
	}
}

// ServerBusy on a table read: tablekit reports ErrThrottled.
func TestServerBusyOnTableRead(t *testing.T) {
	ctx := testCtx(t)
	_, _, tbl := setup(t, 1, &chaos.Config{ServerBusy: 1, Operations: []string{"GetEntity"}, MaxConsecutive: -1})
	_, err := tbl.Get(ctx, "p", "r")
	var re *azcore.ResponseError
	if !errors.Is(err, tablekit.ErrThrottled) || !errors.As(err, &re) || re.ErrorCode != "ServerBusy" {
		t.Fatalf("Get: %v", err)
	}
}

// OperationTimedOut after the service applied the request: the retry
// then succeeds (an upsert is idempotent). Before: nothing is stored.
func TestOperationTimedOut(t *testing.T) {
	ctx := testCtx(t)
	t.Run("after", func(t *testing.T) {
		inj, acct, tbl := setup(t, 1, &chaos.Config{TimeoutAfter: 1, Operations: []string{"UpdateEntity"}, MaxConsecutive: 1})
		before := acct.Meter().Snapshot()
		if _, err := tbl.Upsert(ctx, item{PK: "p", RK: "r", N: 2}); err != nil {
			t.Fatal(err)
		}
		if got, err := tbl.Get(ctx, "p", "r"); err != nil || got.N != 2 {
			t.Fatalf("stored: %+v, %v", got, err)
		}
		if n := acct.Meter().Snapshot().Sub(before).Count("table", "UpdateEntity"); n != 2 {
			t.Errorf("Meter: %d UpdateEntity, want 2", n)
		}
		if n := inj.Stats().Count(chaos.TimeoutAfter, "table", "UpdateEntity"); n != 1 {
			t.Errorf("%d timeouts injected, want 1", n)
		}
	})
	t.Run("before", func(t *testing.T) {
		inj, acct, tbl := setup(t, 1, &chaos.Config{TimeoutBefore: 1, Operations: []string{"UpdateEntity"}, MaxConsecutive: -1})
		before := acct.Meter().Snapshot()
		_, err := tbl.Upsert(ctx, item{PK: "p", RK: "r", N: 2})
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != 500 || re.ErrorCode != "OperationTimedOut" || chaos.OutcomeOf(err) != chaos.Unknown {
			t.Fatalf("Upsert: %v", err)
		}
		if _, err := tbl.Get(ctx, "p", "r"); !errors.Is(err, tablekit.ErrNotFound) {
			t.Errorf("Get after a timeout before sending: %v, want ErrNotFound", err)
		}
		if n := acct.Meter().Snapshot().Sub(before).Count("table", "UpdateEntity"); n != 0 {
			t.Errorf("Meter: %d UpdateEntity sent, want 0", n)
		}
		if n := inj.Stats().Count(chaos.TimeoutBefore, "table", "UpdateEntity"); n != 4 {
			t.Errorf("%d timeouts injected, want 4", n)
		}
	})
}

// A reset on every try outlasts the retries: the caller gets the transport
// error, an Unknown outcome, and nothing was stored.
func TestResetOutlastingRetries(t *testing.T) {
	ctx := testCtx(t)
	inj, _, tbl := setup(t, 1, &chaos.Config{Reset: 1, MaxConsecutive: -1})
	_, err := tbl.Upsert(ctx, item{PK: "p", RK: "r"})
	var fe *chaos.FaultError
	if !errors.As(err, &fe) || fe.Kind != chaos.Reset || !errors.Is(err, syscall.ECONNRESET) || chaos.OutcomeOf(err) != chaos.Unknown {
		t.Fatalf("Upsert: %v", err)
	}
	if _, err := tbl.Get(chaos.NoFaults(ctx), "p", "r"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Get: %v, want ErrNotFound", err)
	}
	if n := inj.Stats().Count(chaos.Reset, "", ""); n != 4 {
		t.Errorf("%d resets, want 4", n)
	}
}

// With the default MaxConsecutive (2), even a fault on every try lets the
// SDK's third try through: every operation succeeds.
func TestMaxConsecutiveLetsRetriesThrough(t *testing.T) {
	ctx := testCtx(t)
	inj, _, tbl := setup(t, 1, &chaos.Config{Reset: 0.5, ServerBusy: 0.5})
	for i := range 10 {
		if _, err := tbl.Upsert(ctx, item{PK: "p", RK: fmt.Sprint(i), N: i}); err != nil {
			t.Fatalf("upsert %d: %v", i, err)
		}
	}
	st := inj.Stats()
	if st.Faults() != 20 || st.HeldBack() != 10 || st.Eligible("", "") != 30 || st.FaultRate() < 0.66 {
		t.Errorf("stats: %v", st)
	}
}

// Identical requests made at once by several callers share an identity,
// but the cap on faults in a row counts per call: with every try faulted,
// each of 8 concurrent reads of one entity still gets its third try
// through, so none outlasts the SDK's retries.
func TestMaxConsecutiveCountsPerCall(t *testing.T) {
	ctx := testCtx(t)
	inj, _, tbl := setup(t, 1, &chaos.Config{ServerBusy: 1})
	inj.SetEnabled(false)
	if _, err := tbl.Insert(ctx, item{PK: "p", RK: "r", N: 1}); err != nil {
		t.Fatal(err)
	}
	inj.SetEnabled(true)
	const readers = 8
	errs := make(chan error, readers)
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			_, err := tbl.Get(ctx, "p", "r")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a read failed although each call may fail only 2 tries in a row: %v", err)
		}
	}
	if st := inj.Stats(); st.Faults() != 2*readers || st.HeldBack() != readers {
		t.Errorf("stats: %v; want %d faults and %d held back", st, 2*readers, readers)
	}
}

// A delay honours the request's context.
func TestDelayHonoursContext(t *testing.T) {
	inj, _, tbl := setup(t, 1, &chaos.Config{Delay: 1, MaxDelay: time.Hour})
	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	_, err := tbl.Get(ctx, "p", "r")
	if !errors.Is(err, context.DeadlineExceeded) || chaos.OutcomeOf(err) != chaos.Unknown {
		t.Fatalf("Get: %v, want DeadlineExceeded", err)
	}
	if n := inj.Stats().Count(chaos.Delay, "table", "GetEntity"); n != 1 {
		t.Errorf("%d delays, want 1", n)
	}
}

// NoFaults and SetEnabled(false) let requests through and do not count
// them as eligible.
func TestNoFaultsAndDisabled(t *testing.T) {
	ctx := testCtx(t)
	inj, _, tbl := setup(t, 1, &chaos.Config{Reset: 1, MaxConsecutive: -1})
	if _, err := tbl.Upsert(chaos.NoFaults(ctx), item{PK: "p", RK: "a"}); err != nil {
		t.Errorf("with NoFaults: %v", err)
	}
	inj.SetEnabled(false)
	if _, err := tbl.Upsert(ctx, item{PK: "p", RK: "b"}); err != nil {
		t.Errorf("disabled: %v", err)
	}
	inj.SetEnabled(true)
	if _, err := tbl.Upsert(ctx, item{PK: "p", RK: "c"}); err == nil {
		t.Errorf("enabled: no error")
	}
	if st := inj.Stats(); st.Eligible("", "") != 4 || st.Faults() != 4 {
		t.Errorf("stats: %v", st)
	}
}

// Filters by service and operation.
func TestFilters(t *testing.T) {
	ctx := testCtx(t)
	t.Run("service", func(t *testing.T) {
		inj, acct, tbl := setup(t, 3, &chaos.Config{Reset: 0.5, Services: []string{"queue"}})
		q := newQueue(t, inj, acct)
		for i := range 10 {
			if _, err := tbl.Upsert(ctx, item{PK: "p", RK: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
			if _, err := q.EnqueueMessage(ctx, fmt.Sprint(i), nil); err != nil {
				t.Fatal(err)
			}
		}
		st := inj.Stats()
		if st.Eligible("table", "") != 0 || st.Tries("table", "UpdateEntity") != 10 || st.Count(chaos.Reset, "table", "") != 0 ||
			st.Count(chaos.Reset, "queue", "PutMessage") == 0 {
			t.Errorf("stats: %v", st)
		}
	})
	t.Run("operation", func(t *testing.T) {
		inj, acct, _ := setup(t, 3, &chaos.Config{Reset: 0.5, Operations: []string{"PutMessage"}})
		q := newQueue(t, inj, acct)
		for i := range 10 {
			if _, err := q.EnqueueMessage(ctx, fmt.Sprint(i), nil); err != nil {
				t.Fatal(err)
			}
			if _, err := q.PeekMessages(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		st := inj.Stats()
		if st.Eligible("queue", "PeekMessages") != 0 || st.Tries("queue", "PeekMessages") != 10 ||
			st.Count(chaos.Reset, "queue", "PutMessage") == 0 || st.Eligible("", "") != st.Eligible("queue", "PutMessage") {
			t.Errorf("stats: %v", st)
		}
	})
}

// workload runs a fixed sequence of requests of every service: upserts,
// transactions, queue messages and blobs. Names of resources are random,
// as in every test.
func workload(t *testing.T, seed int64, cfg *chaos.Config) (*chaos.Injector, *tablekit.Account) {
	ctx := testCtx(t)
	inj, acct, tbl := setup(t, seed, cfg)
	q := newQueue(t, inj, acct)
	c := newContainer(t, inj, acct)
	for i := range 30 {
		tbl.Merge(ctx, item{PK: "p", RK: fmt.Sprint(i), N: i}, "")
	}
	for i := range 15 {
		var actions []tablekit.Action[item]
		for j := range 4 {
			actions = append(actions, tablekit.UpsertAction(item{PK: fmt.Sprint("tx", i), RK: fmt.Sprint(j), N: i * j}))
		}
		tbl.Transaction(ctx, actions...)
	}
	for i := range 10 {
		q.EnqueueMessage(ctx, fmt.Sprint("message ", i), nil)
	}
	for i := range 10 {
		c.NewBlockBlobClient(fmt.Sprintf("dir/%d.txt", i)).UploadBuffer(ctx, bytes.Repeat([]byte{byte(i)}, 100), nil)
	}
	return inj, acct
}

// The same seed injects the same faults into the same sequence of
// requests; another seed injects others.
func TestSameSeedSameFaults(t *testing.T) {
	cfg := chaos.Mixed(0.3)
	a, acct := workload(t, 7, cfg)
	b, _ := workload(t, 7, cfg)
	c, _ := workload(t, 8, cfg)
	ea, eb, ec := a.Events(), b.Events(), c.Events()
	if !slices.Equal(ea, eb) {
		t.Errorf("seed 7 twice: %d and %d faults\n%v\n%v", len(ea), len(eb), ea, eb)
	}
	if slices.Equal(ea, ec) {
		t.Errorf("seeds 7 and 8 injected the same faults: %v", ea)
	}
	for _, op := range []string{"UpdateEntity", "MergeEntity", "Transaction", "PutMessage", "PutBlob"} {
		if !slices.ContainsFunc(ea, func(e chaos.Event) bool { return e.Operation == op }) && a.Stats().Eligible("", op) > 0 {
			t.Errorf("no fault in %s: the workload does not show replay of it", op)
		}
	}
	// The counts agree with the events, and with the Meter: every try
	// reached the service but those failed before sending.
	st := a.Stats()
	for _, k := range chaos.Kinds() {
		n := 0
		for _, e := range ea {
			if e.Kind == k {
				n++
			}
		}
		if int64(n) != st.Count(k, "", "") {
			t.Errorf("%s: %d events, Stats says %d", k, n, st.Count(k, "", ""))
		}
	}
	notSent := st.Count(chaos.Reset, "", "") + st.Count(chaos.ServerBusy, "", "") + st.Count(chaos.TimeoutBefore, "", "")
	if sent := acct.Meter().Snapshot().Total(); sent != st.Tries("", "")-notSent {
		t.Errorf("Meter counted %d requests; the Injector saw %d tries, %d failed before sending", sent, st.Tries("", ""), notSent)
	}
	if rate := st.FaultRate(); rate < 0.2 || rate > 0.4 {
		t.Errorf("fault rate %.2f at Mixed(0.3)", rate)
	}
	t.Logf("seed 7: %v", st)
}

// Concurrent writers on their own keys: the same seed injects the same
// faults whatever the interleaving.
func TestSameSeedSameFaultsConcurrently(t *testing.T) {
	run := func(seed int64) []string {
		ctx := testCtx(t)
		inj, _, tbl := setup(t, seed, chaos.Mixed(0.3))
		h, err := chaos.RunWriters(ctx, seed, 4, func(ctx context.Context, w *chaos.Writer) error {
			for range 15 {
				v := item{PK: fmt.Sprint("w", w.Index), RK: fmt.Sprint(w.Rand.IntN(5)), N: w.Rand.IntN(100)}
				w.Do(ctx, "Upsert", v.PK+"/"+v.RK, v.N, func(ctx context.Context) (any, error) {
					_, err := tbl.Upsert(ctx, v)
					return nil, err
				})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if h.Count(chaos.OK) != 60 {
			t.Errorf("history: %v", h)
		}
		var events []string
		for _, e := range inj.Events() {
			events = append(events, e.String())
		}
		slices.Sort(events)
		return events
	}
	a, b := run(11), run(11)
	if !slices.Equal(a, b) || len(a) == 0 {
		t.Errorf("seed 11 twice:\n%s\n--\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}

// Open keeps the caller's retry options and policies.
func TestOpenKeepsOptions(t *testing.T) {
	inj, err := chaos.New(1, &chaos.Config{ServerBusy: 1, MaxConsecutive: -1})
	if err != nil {
		t.Fatal(err)
	}
	var seen int
	counter := policyFunc(func(req *policy.Request) error { seen++; return nil })
	acct, err := inj.Open(testenv.ConnectionString(t), &tablekit.Options{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: 1, RetryDelay: time.Millisecond}, PerRetryPolicies: []policy.Policy{counter}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = acct.Tables().NewClient("nothing").GetEntity(testCtx(t), "p", "r", nil)
	if !errors.Is(wire.Wrap("Get", "", "", "", err), tablekit.ErrThrottled) || seen != 2 || inj.Stats().Faults() != 2 {
		t.Errorf("err %v, caller's policy saw %d tries, %d faults; want 2 tries (MaxRetries 1)", err, seen, inj.Stats().Faults())
	}
}

type policyFunc func(*policy.Request) error

func (f policyFunc) Do(req *policy.Request) (*http.Response, error) {
	if err := f(req); err != nil {
		return nil, err
	}
	return req.Next()
}
