package coord_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_000_000, 0)} }
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newLease(t *testing.T, tbl *tablekit.Table[tablekit.Entity], holder string, clock *fakeClock) *coord.Lease {
	t.Helper()
	l, err := coord.NewLease(tbl, "leases", "job", holder, &coord.LeaseOptions{Duration: 10 * time.Second, DriftMargin: time.Second, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLeaseLifecycle(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	ca, cb := newFakeClock(), newFakeClock()
	a, b := newLease(t, tbl, "a", ca), newLease(t, tbl, "b", cb)
	m := acct.Meter()

	before := m.Snapshot()
	term, err := a.Acquire(ctx)
	if err != nil || term != 1 {
		t.Fatalf("a.Acquire = %d, %v; want 1, nil", term, err)
	}
	if c := m.Snapshot().Sub(before); c.Total() != 2 {
		t.Errorf("Acquire of an absent lease cost %d transactions (%v), want 2", c.Total(), c)
	}
	if got, ok := a.Held(); !ok || got != 1 {
		t.Errorf("a.Held() = %d, %v", got, ok)
	}
	if _, err := b.Acquire(ctx); !errors.Is(err, coord.ErrHeld) {
		t.Fatalf("b.Acquire while a holds: %v, want ErrHeld", err)
	} else if got, want := err.Error(), "coord: Lease.Acquire: lease held by another holder"; got != want {
		t.Errorf("b.Acquire while a holds says %q, want %q (the package named once)", got, want)
	}
	before = m.Snapshot()
	if err := a.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if c := m.Snapshot().Sub(before); c.Total() != 1 {
		t.Errorf("Renew cost %d transactions (%v), want 1", c.Total(), c)
	}
	// b sees the renewed version: it must wait a whole Duration from now.
	cb.Add(9 * time.Second)
	if _, err := b.Acquire(ctx); !errors.Is(err, coord.ErrHeld) {
		t.Fatalf("b.Acquire after a renewal: %v, want ErrHeld", err)
	}
	cb.Add(9 * time.Second)
	if _, err := b.Acquire(ctx); !errors.Is(err, coord.ErrHeld) {
		t.Fatalf("b.Acquire 9 s after first seeing the renewal: %v, want ErrHeld", err)
	}
	// a's own clock: its claim ends at Duration - DriftMargin after the renewal.
	ca.Add(9 * time.Second)
	if _, ok := a.Held(); ok {
		t.Error("a still holds 9 s after its renewal (Duration 10 s, DriftMargin 1 s)")
	}
	cb.Add(1*time.Second + time.Millisecond)
	before = m.Snapshot()
	term, err = b.Acquire(ctx)
	if err != nil || term != 2 {
		t.Fatalf("b.Acquire after Duration unchanged = %d, %v; want 2, nil", term, err)
	}
	if c := m.Snapshot().Sub(before); c.Total() != 2 {
		t.Errorf("takeover cost %d transactions (%v), want 2", c.Total(), c)
	}
	if err := a.Renew(ctx); !errors.Is(err, coord.ErrLost) {
		t.Fatalf("a.Renew after takeover: %v, want ErrLost", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Held(); ok {
		t.Error("b holds after Release")
	}
	term, err = a.Acquire(ctx)
	if err != nil || term != 3 {
		t.Fatalf("a.Acquire after release = %d, %v; want 3, nil (released: free at once, term kept)", term, err)
	}
}

// TestLeaseAnswerLost: an acquisition and a renewal whose answers are
// lost are settled by reading the lease back, not reported as
// ErrOutcomeUnknown.
func TestLeaseAnswerLost(t *testing.T) {
	ctx := context.Background()
	inj, err := chaos.New(1, &chaos.Config{AnswerLost: 1, Operations: []string{"InsertEntity", "UpdateEntity"}, MaxConsecutive: 3})
	if err != nil {
		t.Fatal(err)
	}
	acct := inj.Account(t, nil)
	tbl := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	a := newLease(t, tbl, "a", newFakeClock())
	before := acct.Meter().Snapshot()
	term, err := a.Acquire(ctx)
	if err != nil || term != 1 {
		t.Fatalf("Acquire with every write's answer lost = %d, %v; want 1, nil", term, err)
	}
	if err := a.Renew(ctx); err != nil {
		t.Fatalf("Renew with every write's answer lost: %v", err)
	}
	if got := inj.Stats().Count(chaos.AnswerLost, "", ""); got < 2 {
		t.Fatalf("%d answers lost, want >= 2", got)
	}
	c := acct.Meter().Snapshot().Sub(before)
	t.Logf("cost with lost answers: %v", c)
	if _, ok := a.Held(); !ok {
		t.Error("not held after settled renewal")
	}
}

func TestLeaseZeroAndBadInput(t *testing.T) {
	ctx := context.Background()
	var l coord.Lease
	if _, err := l.Acquire(ctx); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("zero Lease Acquire: %v", err)
	}
	if err := l.Renew(ctx); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("zero Lease Renew: %v", err)
	}
	if err := l.Release(ctx); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("zero Lease Release: %v", err)
	}
	if err := l.Lead(ctx, func(context.Context, int64) error { return nil }, nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("zero Lease Lead: %v", err)
	}
	if _, ok := l.Held(); ok {
		t.Error("zero Lease held")
	}
	var nl *coord.Lease
	if _, err := nl.Acquire(ctx); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("nil Lease Acquire: %v", err)
	}
	var w coord.Writer[tablekit.Entity]
	if _, err := w.Transaction(ctx, coord.Write{}, tablekit.InsertAction(tablekit.Entity{PartitionKey: "p", RowKey: "r"})); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("zero Writer: %v", err)
	}
	if err := w.Fence(ctx, "p", 1); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("zero Writer Fence: %v", err)
	}
	if _, err := coord.NewLease(nil, "p", "r", "h", nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("NewLease(nil): %v", err)
	}
	acct := testenv.Account(t, nil)
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, "NotCreated", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pk, rk, holder string
		o              *coord.LeaseOptions
	}{
		{"p", "r", "", nil},
		{"p", "r", "h", &coord.LeaseOptions{Duration: -1}},
		{"p", "r", "h", &coord.LeaseOptions{Duration: time.Second, DriftMargin: time.Second}},
		{"p", "r", "h", &coord.LeaseOptions{Retry: tablekit.RetryPolicy{MaxAttempts: -1}}},
	} {
		_, err := coord.NewLease(tbl, c.pk, c.rk, c.holder, c.o)
		if !errors.Is(err, tablekit.ErrInvalidInput) && !errors.Is(err, tablekit.ErrInvalidKey) {
			t.Errorf("NewLease(%q, %q, %q, %+v) = %v, want invalid input", c.pk, c.rk, c.holder, c.o, err)
		} else {
			t.Logf("%v", err)
		}
	}
	if _, err := coord.NewLease(tbl, "p/x", "r", "h", nil); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("NewLease with key p/x: %v, want ErrInvalidKey", err)
	}
	if _, err := coord.NewLease(tbl, "p", "r", strings.Repeat("h", 40000), nil); !errors.Is(err, tablekit.ErrTooLarge) {
		t.Errorf("NewLease with a holder id of 80,000 bytes of UTF-16: %v, want ErrTooLarge", err)
	}
	l2, err := coord.NewLease(tbl, "p", "r", "h", &coord.LeaseOptions{Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := l2.Lead(ctx, func(context.Context, int64) error { return nil }, &coord.LeadOptions{RetryPeriod: time.Second}); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("Lead with RetryPeriod >= RenewDeadline: %v", err)
	}
	if err := l2.Lead(ctx, nil, nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("Lead(nil fn): %v", err)
	}
}

// TestLead: two contenders; the leader's function runs with its term; when
// it returns the lease is released and the other leads with a higher term;
// a leader whose lease is taken over sees its context end.
func TestLead(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	opts := &coord.LeaseOptions{Duration: 600 * time.Millisecond, DriftMargin: 60 * time.Millisecond}
	a, _ := coord.NewLease(tbl, "leases", "lead", "a", opts)
	b, _ := coord.NewLease(tbl, "leases", "lead", "b", opts)
	lo := &coord.LeadOptions{RetryPeriod: 80 * time.Millisecond}

	var ran atomic.Int64
	err := a.Lead(ctx, func(ctx context.Context, term int64) error {
		ran.Store(term)
		time.Sleep(300 * time.Millisecond) // longer than a RetryPeriod: renewed meanwhile
		return errors.New("done")
	}, lo)
	if err == nil || err.Error() != "done" || ran.Load() != 1 {
		t.Fatalf("a.Lead = %v, term %d; want fn's error, term 1", err, ran.Load())
	}
	start := time.Now()
	err = b.Lead(ctx, func(ctx context.Context, term int64) error {
		ran.Store(term)
		return nil
	}, lo)
	if err != nil || ran.Load() != 2 {
		t.Fatalf("b.Lead = %v, term %d; want nil, term 2", err, ran.Load())
	}
	if d := time.Since(start); d > 400*time.Millisecond {
		t.Logf("b waited %v for a released lease", d)
	}

	// A leader that cannot renew (another holder took over) sees its
	// context end with ErrLost.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	started := make(chan int64, 1)
	res := make(chan error, 1)
	go func() {
		res <- a.Lead(cctx, func(ctx context.Context, term int64) error {
			started <- term
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), coord.ErrLost) {
				return errors.New("context ended without ErrLost as its cause")
			}
			return nil
		}, lo)
	}()
	term := <-started
	// Steal: a third contender sees the lease, but cannot take it while a
	// renews; force it by writing the lease ourselves with a higher term.
	e, err := tbl.Get(ctx, "leases", "lead")
	if err != nil {
		t.Fatal(err)
	}
	e.Properties["Holder"], e.Properties["Term"] = "thief", term+1
	if _, err := tbl.Update(ctx, e, e.ETag); err != nil {
		t.Fatal(err)
	}
	if err := <-res; !errors.Is(err, coord.ErrLost) {
		t.Fatalf("Lead after takeover = %v, want ErrLost", err)
	}
}

// TestZeroTables: a zero (not opened) Table gives errors matching
// ErrInvalidInput, never a panic.
func TestZeroTables(t *testing.T) {
	ctx := context.Background()
	w, err := coord.NewWriter(&tablekit.Table[Order]{}, nil)
	if err == nil {
		_, err = w.Transaction(ctx, coord.Write{Key: "k"}, tablekit.InsertAction(Order{Shop: "s", ID: "1"}))
	}
	if !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("Writer on a zero Table: %v", err)
	}
	l, err := coord.NewLease(&tablekit.Table[tablekit.Entity]{}, "p", "r", "h", nil)
	if err == nil {
		_, err = l.Acquire(ctx)
	}
	if !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("Lease on a zero Table: %v", err)
	}
	if _, err := coord.Sweep(ctx, &tablekit.Table[tablekit.Entity]{}, time.Now(), nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("Sweep of a zero Table: %v", err)
	}
}

// TestLeaseConcurrentRenewals: renewals of one Lease from several
// goroutines at once keep the lease (each writes on the ETag the last
// one left), rather than refusing each other.
func TestLeaseConcurrentRenewals(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	l := newLease(t, tbl, "a", newFakeClock())
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for range 8 {
		wg.Go(func() {
			for range 5 {
				errs <- l.Renew(ctx)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Renew: %v", err)
		}
	}
	if _, ok := l.Held(); !ok {
		t.Error("lease lost after concurrent renewals")
	}
}

// leadWithin runs l.Lead with a context that has no deadline and returns
// its error, failing the test when Lead has not returned within a
// generous watchdog (a campaign that never ends).
func leadWithin(t *testing.T, l *coord.Lease, opts *coord.LeadOptions) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- l.Lead(ctx, func(context.Context, int64) error { return errors.New("led") }, opts)
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		cancel()
		<-done
		t.Fatal("Lead still campaigning after a minute")
		return nil
	}
}

// TestLeaseRefusedKeys: NewLease refuses keys the service would (the
// RowKey "relay/orders", a control character, over 1 KiB) with a
// ValidationError matching ErrInvalidKey; were one accepted, Lead must end
// at once with ErrInvalidKey rather than campaign forever.
func TestLeaseRefusedKeys(t *testing.T) {
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	for _, k := range [][2]string{{"leases", "relay/orders"}, {"p#", "r"}, {"leases", "tab\there"}, {"leases", strings.Repeat("x", 1025)}} {
		l, err := coord.NewLease(tbl, k[0], k[1], "h", nil)
		var ve *tablekit.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, tablekit.ErrInvalidKey) {
			t.Errorf("NewLease(%q, %.20q): %v, want a ValidationError matching ErrInvalidKey", k[0], k[1], err)
		} else {
			t.Log(err)
		}
		if err == nil {
			if err := leadWithin(t, l, nil); !errors.Is(err, tablekit.ErrInvalidKey) {
				t.Errorf("Lead on %q/%.20q: %v, want ErrInvalidKey", k[0], k[1], err)
			}
		}
	}
}

// TestLeadEndsOnServiceRefusal: on a Cosmos DB table NewLease refuses a
// RowKey over Cosmos DB's 255 bytes; on a Cosmos DB endpoint the Account
// does not know for one yet (a proxy, an emulator, an Account that has
// sent nothing), NewLease cannot tell, and Lead ends at once with the
// refusal (the service's, or the client's once an answer showed Cosmos
// DB) instead of campaigning forever.
func TestLeadEndsOnServiceRefusal(t *testing.T) {
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Seed: 3}})
	long := strings.Repeat("r", 300)
	open := func(svc tablekit.Service) *tablekit.Table[tablekit.Entity] {
		a, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Service: svc})
		if err != nil {
			t.Fatal(err)
		}
		ct, err := tablekit.OpenTable[tablekit.Entity](a, "leasekeys", nil)
		if err != nil {
			t.Fatal(err)
		}
		return ct
	}
	if err := open(tablekit.ServiceCosmosDB).CreateIfNotExists(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := coord.NewLease(open(tablekit.ServiceCosmosDB), "leases", long, "h", nil); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("NewLease with a 300-byte RowKey on a Cosmos DB table: %v, want ErrInvalidKey", err)
	}
	// An Account that has sent nothing yet does not know its endpoint is
	// Cosmos DB.
	l, err := coord.NewLease(open(tablekit.ServiceAuto), "leases", long, "h", nil)
	if err != nil {
		t.Fatalf("NewLease with a 300-byte RowKey (the Account does not know Cosmos DB): %v", err)
	}
	err = leadWithin(t, l, &coord.LeadOptions{RetryPeriod: 50 * time.Millisecond})
	if !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("Lead on a RowKey the service refuses: %v, want its ErrInvalidKey", err)
	} else {
		t.Log(err)
	}
}

// TestLeadRetryPeriodMinimum: a RetryPeriod that would make a tight loop
// of requests is refused.
func TestLeadRetryPeriodMinimum(t *testing.T) {
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	l, err := coord.NewLease(tbl, "leases", "tight", "h", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{time.Nanosecond, time.Millisecond, coord.MinRetryPeriod - 1} {
		if err := leadWithin(t, l, &coord.LeadOptions{RetryPeriod: d}); !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("Lead with RetryPeriod %v: %v, want ErrInvalidInput", d, err)
		}
	}
	if err := leadWithin(t, l, &coord.LeadOptions{RetryPeriod: coord.MinRetryPeriod}); err == nil || err.Error() != "led" {
		t.Errorf("Lead with RetryPeriod %v: %v, want fn's error", coord.MinRetryPeriod, err)
	}
}
