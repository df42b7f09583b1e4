package feed_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/stream"
)

// clock is a settable clock for a relay's lag.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func lagOf(t *testing.T, r *feed.Relay) map[string]time.Duration {
	t.Helper()
	return r.Stats().Lag
}

// TestLag: a subscription's Lag is the time since the start of the latest
// round that caught it up. Absent before the first round; a subscription
// whose Handle fails keeps the start of its last good round, and so does
// one whose Handle hangs, while Stats answers at once; the others move on.
func TestLag(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := &clock{t: t0}
	a, b := newRecorder(), newRecorder()
	var mu sync.Mutex
	var fail error
	hang := make(chan chan struct{}, 1) // a round's b: send to hang, then release
	b.fail = func(feed.Change) error {
		mu.Lock()
		defer mu.Unlock()
		return fail
	}
	r := relay(t, e.f, feed.Subscription{Name: "a", Handle: a.handle}, feed.Subscription{Name: "b", Handle: func(ctx context.Context, c feed.Change) error {
		select {
		case held := <-hang:
			<-held
		default:
		}
		return b.handle(ctx, c)
	}})
	feed.SetClock(r, clk.now)
	if lag := lagOf(t, r); len(lag) != 0 {
		t.Errorf("before any round: %v, want none", lag)
	}

	id := stream.ID{PartitionKey: "s"}
	e.append(t, id, 0, "e1")
	round(t, r, 0)
	clk.set(t0.Add(5 * time.Second))
	if lag := lagOf(t, r); lag["a"] != 5*time.Second || lag["b"] != 5*time.Second || len(lag) != 2 {
		t.Errorf("5 s after a good round: %v, want a and b 5s", lag)
	}

	// b fails: its lag counts from t0 still, a's from the new round.
	boom := errors.New("boom")
	mu.Lock()
	fail = boom
	mu.Unlock()
	e.append(t, id, 1, "e2")
	t1 := t0.Add(10 * time.Second)
	clk.set(t1)
	if _, err := r.Round(ctx, 0); !errors.Is(err, boom) {
		t.Fatalf("round with b failing: %v", err)
	}
	clk.set(t1.Add(2 * time.Second))
	if lag := lagOf(t, r); lag["a"] != 2*time.Second || lag["b"] != 12*time.Second {
		t.Errorf("after b failed: %v, want a 2s, b 12s", lag)
	}
	// A round with nothing new for a and b still failing: same.
	t2 := t1.Add(20 * time.Second)
	clk.set(t2)
	if _, err := r.Round(ctx, 0); !errors.Is(err, boom) {
		t.Fatalf("round with b failing: %v", err)
	}
	if lag := lagOf(t, r); lag["a"] != 0 || lag["b"] != 30*time.Second {
		t.Errorf("after b failed again: %v, want a 0s, b 30s", lag)
	}

	// b recovers, but hangs in the round: Stats answers meanwhile, b's
	// lag still counting from t0.
	mu.Lock()
	fail = nil
	mu.Unlock()
	held := make(chan struct{})
	hang <- held
	t3 := t2.Add(time.Minute)
	clk.set(t3)
	done := make(chan error, 1)
	go func() {
		_, err := r.Round(ctx, 0)
		done <- err
	}()
	for len(hang) > 0 { // b took it: the round is held in b
		time.Sleep(time.Millisecond)
	}
	clk.set(t3.Add(time.Second))
	if lag := lagOf(t, r); lag["a"] != time.Minute+time.Second || lag["b"] != 91*time.Second {
		t.Errorf("during a held round: %v, want a 1m1s, b 1m31s", lag)
	}
	close(held)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if lag := lagOf(t, r); lag["a"] != time.Second || lag["b"] != time.Second {
		t.Errorf("after the round caught b up: %v, want both 1s", lag)
	}
	if got := b.tags(id); got != "[e1 e2]" {
		t.Errorf("b handed %s", got)
	}
}

// TestLagOnlyWhileLeading: a relay's Stats report a lag only while it
// leads: a standby reports none, and the leader none once Run returned.
func TestLagOnlyWhileLeading(t *testing.T) {
	e := newEnv(t, nil)
	id := stream.ID{PartitionKey: "s"}
	e.append(t, id, 0, "e1")
	handed := make(chan struct{}, 1)
	sub := func(context.Context, feed.Change) error {
		select {
		case handed <- struct{}{}:
		default:
		}
		return nil
	}
	opts := &feed.RelayOptions{Interval: 10 * time.Millisecond}
	leader, err := e.f.NewRelay([]feed.Subscription{{Name: "v", Handle: sub}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	standby, err := e.f.NewRelay([]feed.Subscription{{Name: "v", Handle: sub}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	l1, err := coord.NewLease(e.ft, "lease", "relay", "one", nil)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := coord.NewLease(e.ft, "lease", "relay", "two", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- leader.Run(ctx, l1) }()
	<-handed // leader leads: the standby campaigns in vain
	sctx, scancel := context.WithCancel(context.Background())
	serrc := make(chan error, 1)
	go func() { serrc <- standby.Run(sctx, l2) }()
	for range 20 {
		if lag := standby.Stats().Lag; len(lag) != 0 {
			t.Fatalf("the standby reports %v", lag)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if lag, ok := leader.Stats().Lag["v"]; !ok || lag < 0 {
		t.Errorf("the leader reports %v, %v; want a lag", lag, ok)
	}
	scancel()
	<-serrc
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
	if lag := leader.Stats().Lag; len(lag) != 0 {
		t.Errorf("after Run returned: %v, want none", lag)
	}
}

// TestLagFromTheFirstReport: a relay that just started, with a backlog
// of 200 events waiting, reports a Lag at least the age of the oldest of
// them from its first report on (the oldest mark its first round read),
// not the time since it started; once a round has caught up, the Lag
// counts from that round's start. The test's age of the oldest append is
// taken after its acknowledgement, so it is at most its true age.
func TestLagFromTheFirstReport(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	var acked time.Time
	for i := range 20 {
		id := stream.ID{PartitionKey: fmt.Sprintf("s%d", i%4)}
		tags := make([]string, 10)
		for k := range tags {
			tags[k] = fmt.Sprintf("e%d-%d", i, k)
		}
		e.append(t, id, int64(i/4*10), tags...)
		if i == 0 {
			acked = time.Now()
		}
	}
	held, in := make(chan struct{}), make(chan struct{}, 1)
	r := relay(t, e.f, feed.Subscription{Name: "v", Handle: func(ctx context.Context, c feed.Change) error {
		select {
		case in <- struct{}{}:
		default:
		}
		select {
		case <-held:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	if lag := r.Stats().Lag; len(lag) != 0 {
		t.Fatalf("before any round: %v, want none", lag)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Round(ctx, 0)
		done <- err
	}()
	reported := false
	for !reported {
		age := time.Since(acked)
		lag, ok := r.Stats().Lag["v"]
		if ok {
			reported = true
			if lag < age {
				t.Errorf("first report: lag %v, but the oldest append was acknowledged %v ago", lag, age)
			}
			continue
		}
		select {
		case <-in: // the round hands changes over: it has read the directory
			if _, ok := r.Stats().Lag["v"]; !ok {
				t.Fatal("the round hands changes over, and the subscription is not reported")
			}
		case err := <-done:
			t.Fatalf("the round ended (%v) before the subscription was reported", err)
		default:
			time.Sleep(time.Millisecond)
		}
	}
	close(held)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if lag, age := r.Stats().Lag["v"], time.Since(acked); lag >= age {
		t.Errorf("after the round caught up: lag %v, want less than the time since the first append (%v)", lag, age)
	}
}
