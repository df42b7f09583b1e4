package archive

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
)

func testWorker(t *testing.T, o *WorkerOptions) *Worker {
	t.Helper()
	q, _ := azqueue.NewQueueClientWithNoCredential("http://127.0.0.1:1/acct/work", nil)
	p, _ := azqueue.NewQueueClientWithNoCredential("http://127.0.0.1:1/acct/work-poison", nil)
	if o == nil {
		o = &WorkerOptions{}
	}
	w, err := newWorker("archive.OpenWorker", q, p, nil, HandlerFunc(func(context.Context, *Message) error { return nil }), o, slog.New(slog.DiscardHandler), tracing.Provider{})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// The worker's concurrency: halved by a throttled handler (once per
// generation), grown by one after a run of as many successes as the
// limit, never below 1 nor above the maximum.
func TestLimiter(t *testing.T) {
	w := testWorker(t, &WorkerOptions{Concurrency: 8})
	l := &limiter{w: w, max: 8, limit: 8}
	throttled := func(gen uint64) { l.settle(settled{gen: gen, result: resultThrottled}) }
	ok := func(n int) {
		for range n {
			l.settle(settled{gen: l.gen, result: resultOK})
		}
	}
	g0 := l.gen
	throttled(g0)
	if l.limit != 4 {
		t.Fatalf("after a throttled handler: limit %d, want 4", l.limit)
	}
	throttled(g0) // started before the cut: no second cut
	throttled(g0)
	if l.limit != 4 {
		t.Fatalf("throttled handlers of the old generation cut again: limit %d", l.limit)
	}
	l.settle(settled{gen: l.gen, result: resultOther}) // other failures change nothing
	if l.limit != 4 {
		t.Fatalf("a failure that is not throttling changed the limit to %d", l.limit)
	}
	throttled(l.gen)
	throttled(l.gen)
	throttled(l.gen)
	if l.limit != 1 {
		t.Fatalf("after three more cuts: limit %d, want 1 (never below)", l.limit)
	}
	if got := w.Stats().Concurrency; got != 1 {
		t.Errorf("Stats.Concurrency = %d, want 1", got)
	}
	// Additive increase: 1 success 1->2, 2 successes 2->3, ...
	ok(1)
	if l.limit != 2 {
		t.Fatalf("after 1 success at 1: limit %d, want 2", l.limit)
	}
	ok(1)
	if l.limit != 2 {
		t.Fatalf("after 1 success at 2: limit %d, want 2", l.limit)
	}
	ok(1)
	if l.limit != 3 {
		t.Fatalf("after 2 successes at 2: limit %d, want 3", l.limit)
	}
	ok(3 + 4 + 5 + 6 + 7)
	if l.limit != 8 {
		t.Fatalf("after a run of successes: limit %d, want 8", l.limit)
	}
	ok(100)
	if l.limit != 8 || w.Stats().Concurrency != 8 {
		t.Fatalf("limit %d (Stats %d) above the maximum 8", l.limit, w.Stats().Concurrency)
	}
}

// WorkerOptions.Retry: no back-off by default (visible again at once), an
// exponential one from BaseDelay up to MaxDelay, randomised by default.
func TestWorkerBackoff(t *testing.T) {
	if d := testWorker(t, nil).backoff(1); d != 0 {
		t.Errorf("default back-off %v, want 0", d)
	}
	w := testWorker(t, &WorkerOptions{Retry: tablekit.RetryPolicy{BaseDelay: time.Second, MaxDelay: 5 * time.Second}})
	for attempt, want := range map[int64]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 50: 5 * time.Second} {
		if d := w.backoff(attempt); d <= 0 || d > want {
			t.Errorf("back-off after attempt %d: %v, want a random time up to %v", attempt, d, want)
		}
	}
	if w.maxDequeue != int64(defaultRetry.MaxAttempts) {
		t.Errorf("MaxAttempts %d, want the default %d", w.maxDequeue, defaultRetry.MaxAttempts)
	}
	w = testWorker(t, &WorkerOptions{Retry: tablekit.RetryPolicy{BaseDelay: 10 * time.Second}})
	for range 100 {
		if d := w.backoff(1); d <= 0 || d > 10*time.Second {
			t.Fatalf("jittered back-off %v outside (0, 10s]", d)
		}
	}
	if w := testWorker(t, &WorkerOptions{Retry: tablekit.RetryPolicy{MaxAttempts: 1}}); w.maxDequeue != 1 {
		t.Errorf("NoRetries: %d attempts, want 1", w.maxDequeue)
	}
}

// Stats.QueueAge is the oldest wait of the latest dequeue by the worker's
// Clock, 0 after an empty one; MaxQueueAge keeps the longest.
func TestQueueAgeStats(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	w := testWorker(t, nil)
	w.clock = func() time.Time { return now }
	w.recordQueueAge([]dequeuedMessage{{inserted: now.Add(-3 * time.Second)}, {inserted: now.Add(-7 * time.Second)}})
	if s := w.Stats(); s.QueueAge != 7*time.Second || s.MaxQueueAge != 7*time.Second {
		t.Errorf("after a dequeue: %v / %v, want 7s / 7s", s.QueueAge, s.MaxQueueAge)
	}
	w.recordQueueAge([]dequeuedMessage{{inserted: now.Add(-2 * time.Second)}})
	if s := w.Stats(); s.QueueAge != 2*time.Second || s.MaxQueueAge != 7*time.Second {
		t.Errorf("after a second dequeue: %v / %v, want 2s / 7s", s.QueueAge, s.MaxQueueAge)
	}
	w.recordQueueAge(nil)
	if s := w.Stats(); s.QueueAge != 0 || s.MaxQueueAge != 7*time.Second {
		t.Errorf("after an empty dequeue: %v / %v, want 0 / 7s", s.QueueAge, s.MaxQueueAge)
	}
	w.recordQueueAge([]dequeuedMessage{{inserted: now.Add(time.Second)}}) // service clock ahead
	if s := w.Stats(); s.QueueAge != 0 {
		t.Errorf("a message inserted after the worker's now: age %v, want 0", s.QueueAge)
	}
}
