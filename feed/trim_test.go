package feed_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/stream"
)

// orderCheck is a subscription that checks what it is handed: per
// stream, never version v before v-1 (at least once each, in order).
type orderCheck struct {
	mu   sync.Mutex
	last map[stream.ID]int64
	tags map[stream.ID]map[string]bool
	bad  []string
}

func newOrderCheck() *orderCheck {
	return &orderCheck{last: map[stream.ID]int64{}, tags: map[stream.ID]map[string]bool{}}
}

func (o *orderCheck) handle(_ context.Context, c feed.Change) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c.Version > o.last[c.Stream]+1 {
		o.bad = append(o.bad, fmt.Sprintf("%v: version %d handed, the highest before %d", c.Stream, c.Version, o.last[c.Stream]))
	}
	o.last[c.Stream] = max(o.last[c.Stream], c.Version)
	if o.tags[c.Stream] == nil {
		o.tags[c.Stream] = map[string]bool{}
	}
	o.tags[c.Stream][c.Data.(Tagged).Tag] = true
	return nil
}

// openFeed opens e's feed anew with an Account of its own, as another
// process would.
func openFeed(t *testing.T, e *env, opts *stream.Options) (*stream.Store, *feed.Feed) {
	t.Helper()
	acct := testenv.Account(t, nil)
	st, err := tablekit.OpenTable[tablekit.Entity](acct, e.st.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ft, err := tablekit.OpenTable[tablekit.Entity](acct, e.ft.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	store, err := stream.NewStore(st, registry(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	f, err := feed.New(store, ft, &feed.Options{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	return store, f
}

// TestTrimWhileAppending: the relay trims the streams RelayOptions.Trim
// chooses (two outbox streams; a third stream is kept whole) while 8
// appenders, each with an Account of its own, append to all three at
// stream.AnyVersion, and a third subscription is replayed again and again
// by Relay.Replay in Run's term. Nothing is lost that a subscription has
// not been handed: each subscription is handed every event of every
// stream at least once, in version order per stream; a monitor never sees
// a stream start past the lowest stored checkpoint + 1; once caught up,
// an outbox stream starts past its last version (every event dropped: no
// event row left but the tombstone), and the kept stream at 1.
func TestTrimWhileAppending(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &feed.Options{Shards: 2})
	outboxes := []stream.ID{{PartitionKey: "c1", Prefix: "outbox"}, {PartitionKey: "c2", Prefix: "outbox"}}
	streams := append(outboxes[:2:2], stream.ID{PartitionKey: "c1"})
	const appenders, perAppender = 8, 12

	checks := map[string]*orderCheck{"a": newOrderCheck(), "b": newOrderCheck(), "late": newOrderCheck()}
	var subs []feed.Subscription
	for _, name := range []string{"a", "b", "late"} {
		subs = append(subs, feed.Subscription{Name: name, Handle: checks[name].handle})
	}
	logs := &lastLines{n: 50}
	r, err := e.f.NewRelay(subs, &feed.RelayOptions{Interval: 20 * time.Millisecond, Logger: logs.logger(),
		Trim: func(id stream.ID) bool { return id.Prefix == "outbox" }})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := coord.NewLease(e.ft, "lease", "relay", "relay", nil)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	go func() { runErr <- r.Run(runCtx, lease) }()

	var mu sync.Mutex
	var bad []string
	violate := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		bad = append(bad, fmt.Sprintf(format, args...))
	}
	appended := map[stream.ID]map[string]bool{}
	// Half way, each appender waits until both outboxes were trimmed, so
	// that the trims and the appends interleave.
	trimmed := make(chan struct{})
	var appending sync.WaitGroup
	for w := range appenders {
		_, f := openFeed(t, e, nil)
		rng := rand.New(rand.NewPCG(uint64(w), 7))
		appending.Go(func() {
			for j := range perAppender {
				if j == perAppender/2 {
					<-trimmed
				}
				id := streams[rng.IntN(len(streams))]
				tag := fmt.Sprintf("w%d-%d", w, j)
				for {
					if _, err := f.Append(ctx, id, stream.AnyVersion, []stream.Event{{ID: tag, Data: Tagged{Tag: tag}}}); err == nil {
						break
					}
				}
				mu.Lock()
				if appended[id] == nil {
					appended[id] = map[string]bool{}
				}
				appended[id][tag] = true
				mu.Unlock()
			}
		})
	}
	done := make(chan struct{})
	go func() { appending.Wait(); close(done) }()

	// The monitor: a stream's start is never past the lowest stored
	// checkpoint + 1 (the start read first: checkpoints only grow).
	monStore, _ := openFeed(t, e, nil)
	trimmedAt := map[stream.ID]int64{} // the first start past 1 seen
	monitor := func() {
		for _, id := range outboxes {
			start, err := monStore.Start(ctx, id)
			if err != nil {
				continue
			}
			if start > 1 && trimmedAt[id] == 0 {
				if trimmedAt[id] = start; len(trimmedAt) == len(outboxes) {
					close(trimmed)
				}
			}
			for _, name := range []string{"a", "b", "late"} {
				if cp := e.checkpoint(t, name, id); start > cp+1 {
					violate("%v starts at %d, and %s's checkpoint is %d", id, start, name, cp)
				}
			}
		}
	}
	// Replays of "late" in Run's term, while the appends go on.
	replays := 0
	for waiting, begin := true, time.Now(); waiting; {
		select {
		case <-done:
			waiting = false
		default:
			if len(trimmedAt) < len(outboxes) && time.Since(begin) > 2*time.Minute {
				t.Fatalf("the outboxes not trimmed 2 minutes after the appends began (%v); the relay's last errors:\n%s", trimmedAt, logs)
			}
			if _, err := r.Replay(ctx, "late"); err == nil {
				replays++
			} else if !errors.Is(err, coord.ErrLost) { // (before Run leads)
				violate("Replay: %v", err)
			}
			monitor()
			time.Sleep(5 * time.Millisecond)
		}
	}

	// Caught up: every checkpoint at its stream's version, the outboxes
	// trimmed past it.
	versions := map[stream.ID]int64{}
	for _, id := range streams {
		v, err := e.store.Version(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		versions[id] = v
	}
	// How long that takes depends on the machine's load: it fails when
	// no checkpoint or start moved for 2 minutes, not after a fixed time.
	if waited, ok := chaos.WaitProgress(2*time.Minute, 20*time.Millisecond, func() (int64, bool) {
		monitor()
		progress, ok := int64(0), true
		for _, id := range streams {
			for _, name := range []string{"a", "b", "late"} {
				cp := e.checkpoint(t, name, id)
				progress += cp
				ok = ok && cp == versions[id]
			}
			start, err := e.store.Start(ctx, id)
			if err != nil {
				return math.MinInt64, false // no progress seen
			}
			progress += start
			ok = ok && (id.Prefix == "outbox") == (start == versions[id]+1)
		}
		return progress, ok
	}); !ok {
		t.Fatalf("not caught up and trimmed, nothing moved for 2 minutes (%v in all); the relay's last errors:\n%s", waited.Round(time.Second), logs)
	}
	stopRun()
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}

	for _, b := range bad {
		t.Error(b)
	}
	total := 0
	for _, id := range streams {
		total += len(appended[id])
		if int64(len(appended[id])) != versions[id] {
			t.Errorf("%v: %d events appended, version %d", id, len(appended[id]), versions[id])
		}
		for name, c := range checks {
			c.mu.Lock()
			if c.last[id] != versions[id] || len(c.tags[id]) != len(appended[id]) {
				t.Errorf("%s handed %v up to version %d, %d events; want %d, %d", name, id, c.last[id], len(c.tags[id]), versions[id], len(appended[id]))
			}
			for tag := range appended[id] {
				if !c.tags[id][tag] {
					t.Errorf("%s was never handed %s of %v", name, tag, id)
				}
			}
			c.mu.Unlock()
		}
	}
	for name, c := range checks {
		for _, b := range c.bad {
			t.Errorf("%s: %s", name, b)
		}
	}
	// What is left of an outbox stream's events: the tombstone of version 1.
	for _, id := range outboxes {
		n, err := e.st.Count(ctx, tablekit.RowKeyRange(id.PartitionKey, id.Prefix+"~ev~", id.Prefix+"~ev~~"))
		if err != nil || n != 1 {
			t.Errorf("%v: %d event rows left (%v), want 1 (the tombstone)", id, n, err)
		}
	}
	if strings.Contains(logs.String(), "trimmed") {
		t.Errorf("the relay logged a trimmed read:\n%s", logs)
	}
	t.Logf("%d appenders appended %d events to 3 streams (versions %v); the outboxes first seen trimmed below %v, half way; %d replays of a subscription during the appends", appenders, total, versions, trimmedAt, replays)
}

// TestTrimmedStreamBelowStart: a subscription whose checkpoint is below
// a trimmed stream's start (a subscription added after the trim) fails
// that stream, in rounds and in Replay, with an error matching
// stream.ErrTrimmed that names it, the stream and its start, and is
// handed none of it; the others go on, a FromStart one from the start.
// The stream is not trimmed further while one is behind.
func TestTrimmedStreamBelowStart(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	id := stream.ID{PartitionKey: "c1", Prefix: "outbox"}
	e.append(t, id, 0, "m1", "m2", "m3", "m4", "m5")
	trim := &feed.RelayOptions{Trim: func(id stream.ID) bool { return id.Prefix == "outbox" }}
	a := newRecorder()
	r1, err := e.f.NewRelay([]feed.Subscription{{Name: "a", Handle: a.handle}}, trim)
	if err != nil {
		t.Fatal(err)
	}
	if res := round(t, r1, 1); res.Trimmed != 1 || res.Delivered != 5 {
		t.Errorf("round: %+v, want 5 changes, 1 stream trimmed", res)
	}
	if start, err := e.store.Start(ctx, id); err != nil || start != 6 {
		t.Fatalf("start after the round: %d, %v; want 6", start, err)
	}
	if res := round(t, r1, 1); res.Trimmed != 0 || res.Streams != 0 {
		t.Errorf("idle round: %+v, want nothing read or trimmed", res)
	}
	e.append(t, id, 5, "m6", "m7")

	late, fresh := newRecorder(), newRecorder()
	r2, err := e.f.NewRelay([]feed.Subscription{{Name: "a", Handle: a.handle}, {Name: "late", Handle: late.handle}, {Name: "fresh", Handle: fresh.handle, FromStart: true}}, trim)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		res, err := r2.Round(ctx, 2)
		if !errors.Is(err, stream.ErrTrimmed) || !strings.Contains(err.Error(), `"late"`) || !strings.Contains(err.Error(), `"c1/outbox"`) || !strings.Contains(err.Error(), "start, version 6") {
			t.Errorf("round with a subscription behind the start: %v, want an error matching stream.ErrTrimmed naming late, the stream and its start", err)
		}
		if res.Trimmed != 0 {
			t.Errorf("round with a subscription behind the start: %+v, want no trim", res)
		}
	}
	if got := a.tags(id) + fresh.tags(id) + late.tags(id); got != "[m1 m2 m3 m4 m5 m6 m7][m6 m7][]" {
		t.Errorf("handed: %s", got)
	}
	for sub, want := range map[string]int64{"a": 7, "fresh": 7, "late": 0} {
		if v := e.checkpoint(t, sub, id); v != want {
			t.Errorf("checkpoint of %s: %d, want %d", sub, v, want)
		}
	}
	if start, err := e.store.Start(ctx, id); err != nil || start != 6 {
		t.Errorf("start: %d, %v; want 6 still", start, err)
	}
	if m := e.marks(t, id); len(m) != 1 {
		t.Errorf("marks: %v, want the append's kept (late has not caught up)", m)
	}
	if _, err := r2.Replay(ctx, "late"); !errors.Is(err, stream.ErrTrimmed) {
		t.Errorf("Replay of late: %v, want stream.ErrTrimmed", err)
	}
}
