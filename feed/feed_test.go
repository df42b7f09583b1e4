package feed_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/stream"
)

// Tagged is the event of the tests: Tag names it.
type Tagged struct {
	PK  string `table:",pk"`
	RK  string `table:",rk"`
	Tag string `table:"Tag"`
}

func registry(t testing.TB) *tablekit.Registry {
	reg := &tablekit.Registry{}
	if err := tablekit.Register[Tagged](reg, "Tagged", 1); err != nil {
		t.Fatal(err)
	}
	return reg
}

// newRegistry is registry for a relay process, which has no testing.TB
// (Register cannot fail for Tagged: TestMarkAndClear's registry would).
func newRegistry() *tablekit.Registry {
	reg := &tablekit.Registry{}
	_ = tablekit.Register[Tagged](reg, "Tagged", 1)
	return reg
}

// env is a feed on two fresh tables (streams, feed) of one Account.
type env struct {
	acct  *tablekit.Account
	store *stream.Store
	st    *tablekit.Table[tablekit.Entity] // the streams'
	ft    *tablekit.Table[tablekit.Entity]
	f     *feed.Feed
}

func newEnv(t *testing.T, opts *feed.Options) *env {
	acct := testenv.Account(t, nil)
	st := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	ft := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	store, err := stream.NewStore(st, registry(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := feed.New(store, ft, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &env{acct: acct, store: store, st: st, ft: ft, f: f}
}

func (e *env) append(t *testing.T, id stream.ID, expected int64, tags ...string) stream.Result {
	t.Helper()
	evs := make([]stream.Event, len(tags))
	for i, tag := range tags {
		evs[i] = stream.Event{ID: tag, Data: Tagged{Tag: tag}}
	}
	r, err := e.f.Append(context.Background(), id, expected, evs)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// marks returns the targets of stream id's pending marks.
func (e *env) marks(t *testing.T, id stream.ID) []int64 {
	t.Helper()
	m, err := feed.Marks(context.Background(), e.f)
	if err != nil {
		t.Fatal(err)
	}
	return m[id]
}

// allMarks returns the targets of every stream's pending marks.
func (e *env) allMarks(t *testing.T) map[stream.ID][]int64 {
	t.Helper()
	m, err := feed.Marks(context.Background(), e.f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkpoint returns subscription sub's stored checkpoint of stream id.
func (e *env) checkpoint(t *testing.T, sub string, id stream.ID) int64 {
	t.Helper()
	pk, rk := feed.CheckpointKey(sub, id)
	row, err := e.ft.Get(context.Background(), pk, rk)
	if errors.Is(err, tablekit.ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	v, _ := row.Properties["Version"].(int64)
	return v
}

// recorder is a subscription that records what it is handed.
type recorder struct {
	mu   sync.Mutex
	got  map[stream.ID][]string // tags, in the order handed
	vers map[stream.ID][]int64
	fail func(c feed.Change) error // nil: never fails
}

func newRecorder() *recorder {
	return &recorder{got: map[stream.ID][]string{}, vers: map[stream.ID][]int64{}}
}

func (r *recorder) handle(_ context.Context, c feed.Change) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		if err := r.fail(c); err != nil {
			return err
		}
	}
	r.got[c.Stream] = append(r.got[c.Stream], c.Data.(Tagged).Tag)
	r.vers[c.Stream] = append(r.vers[c.Stream], c.Version)
	return nil
}

func (r *recorder) tags(id stream.ID) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.got[id])
}

func relay(t *testing.T, f *feed.Feed, subs ...feed.Subscription) *feed.Relay {
	t.Helper()
	r, err := f.NewRelay(subs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func round(t *testing.T, r *feed.Relay, term int64) feed.RoundResult {
	t.Helper()
	res, err := r.Round(context.Background(), term)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestMarkAndClear: each append marks its stream with a pending mark of
// its own, whose target is the append's first version; a round hands the
// events over in order, stores the checkpoint and deletes the marks; a
// round with nothing marked reads only the directory.
func TestMarkAndClear(t *testing.T) {
	e := newEnv(t, &feed.Options{Shards: 2})
	a, b := stream.ID{PartitionKey: "a"}, stream.ID{PartitionKey: "b", Prefix: "x"}
	e.append(t, a, 0, "a1", "a2")
	e.append(t, a, 2, "a3")
	e.append(t, b, 0, "b1")
	if m := fmt.Sprint(e.marks(t, a), e.marks(t, b)); m != "[1 3] [1]" {
		t.Fatalf("marks of a and b: %s, want [1 3] [1]", m)
	}
	rec := newRecorder()
	r := relay(t, e.f, feed.Subscription{Name: "rec", Handle: rec.handle})
	res := round(t, r, 0)
	if res.Streams != 2 || res.Delivered != 4 || res.Cleared != 3 {
		t.Errorf("round: %+v, want 2 streams, 4 delivered, 3 marks cleared", res)
	}
	if got := rec.tags(a); got != "[a1 a2 a3]" {
		t.Errorf("a: %s", got)
	}
	if got := rec.tags(b); got != "[b1]" {
		t.Errorf("b: %s", got)
	}
	if m := e.allMarks(t); len(m) != 0 {
		t.Errorf("marks after the round: %v", m)
	}
	if v := e.checkpoint(t, "rec", a); v != 3 {
		t.Errorf("checkpoint of a: %d, want 3", v)
	}
	m := e.acct.Meter()
	before := m.Snapshot()
	res = round(t, r, 0)
	if c := m.Snapshot().Sub(before); res != (feed.RoundResult{}) || c.Total() != 2 || c.Count("table", "QueryEntities") != 2 {
		t.Errorf("idle round: %+v, cost %v; want nothing done, 2 queries (1 per shard)", res, c)
	}
	var streams []stream.ID
	for id, err := range e.f.Streams(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, id)
	}
	if len(streams) != 2 {
		t.Errorf("Streams: %v, want a and b", streams)
	}
}

// TestMarkDuringCatchUp: a mark written while a relay catches its stream
// up is not one the round read, so it stays for the next round; the
// round clears the mark it read.
func TestMarkDuringCatchUp(t *testing.T) {
	e := newEnv(t, nil)
	id := stream.ID{PartitionKey: "s"}
	e.append(t, id, 0, "e1")
	rec := newRecorder()
	once := sync.Once{}
	rec.fail = func(c feed.Change) error {
		once.Do(func() { e.append(t, id, 1, "e2") })
		return nil
	}
	r := relay(t, e.f, feed.Subscription{Name: "rec", Handle: rec.handle})
	res := round(t, r, 0)
	if res.Cleared != 1 {
		t.Errorf("round: %+v, want e1's mark cleared", res)
	}
	if m := e.marks(t, id); fmt.Sprint(m) != "[2]" {
		t.Fatalf("marks after the round: %v, want e2's ([2])", m)
	}
	res = round(t, r, 0)
	if res.Cleared != 1 {
		t.Errorf("second round: %+v, want the mark cleared", res)
	}
	if m := e.allMarks(t); len(m) != 0 {
		t.Errorf("marks after the second round: %v", m)
	}
	if got := rec.tags(id); got != "[e1 e2]" {
		t.Errorf("handed %s, want [e1 e2]", got)
	}
}

// TestMarkBeforeItsAppendLands: a mark whose append has not landed when a
// relay reads the stream is not cleared (the stream is short of the mark's
// target), so the append landing after the catch-up is handed over at the
// next round. Clearing on the ETag alone would lose it until the stream's
// next append.
func TestMarkBeforeItsAppendLands(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id := stream.ID{PartitionKey: "s"}
	if err := feed.Mark(ctx, e.f, id, 1); err != nil { // the writer marked, and pauses
		t.Fatal(err)
	}
	rec := newRecorder()
	r := relay(t, e.f, feed.Subscription{Name: "rec", Handle: rec.handle})
	if res := round(t, r, 0); res.Cleared != 0 || res.Delivered != 0 {
		t.Fatalf("round before the append: %+v, want the mark kept", res)
	}
	if _, err := e.store.Append(ctx, id, 0, []stream.Event{{Data: Tagged{Tag: "late"}}}); err != nil { // it lands now
		t.Fatal(err)
	}
	if res := round(t, r, 0); res.Cleared != 1 || res.Delivered != 1 {
		t.Errorf("round after the append: %+v, want it delivered and the mark cleared", res)
	}
	if got := rec.tags(id); got != "[late]" {
		t.Errorf("handed %s", got)
	}
	// Marks are rows of their own: a round clears those its stream has
	// reached, and keeps the others.
	if err := feed.Mark(ctx, e.f, id, 5); err != nil {
		t.Fatal(err)
	}
	if err := feed.Mark(ctx, e.f, id, 2); err != nil {
		t.Fatal(err)
	}
	if res := round(t, r, 0); res.Cleared != 0 || res.Streams != 1 {
		t.Errorf("round with the stream at 1: %+v, want both marks kept", res)
	}
	if _, err := e.store.Append(ctx, id, 1, []stream.Event{{Data: Tagged{Tag: "second"}}}); err != nil {
		t.Fatal(err)
	}
	if res := round(t, r, 0); res.Cleared != 1 || res.Delivered != 1 {
		t.Errorf("round with the stream at 2: %+v, want the mark at 2 cleared", res)
	}
	if m := e.marks(t, id); fmt.Sprint(m) != "[5]" {
		t.Errorf("marks left: %v, want [5]", m)
	}
}

// TestCheckpoints: a relay made anew (a new process) goes on from the
// stored checkpoints; nothing handled is handed over again.
func TestCheckpoints(t *testing.T) {
	e := newEnv(t, nil)
	id := stream.ID{PartitionKey: "s"}
	e.append(t, id, 0, "e1", "e2")
	rec := newRecorder()
	round(t, relay(t, e.f, feed.Subscription{Name: "rec", Handle: rec.handle}), 0)
	e.append(t, id, 2, "e3")
	round(t, relay(t, e.f, feed.Subscription{Name: "rec", Handle: rec.handle}), 0)
	if got := rec.tags(id); got != "[e1 e2 e3]" {
		t.Errorf("handed %s, want [e1 e2 e3]", got)
	}
	if v := e.checkpoint(t, "rec", id); v != 3 {
		t.Errorf("checkpoint %d, want 3", v)
	}
}

// TestSubscriberError: a subscription's error stops that stream for it
// until the next round; the other subscription and the other streams go
// on; the stream stays dirty; order per stream holds across rounds.
func TestSubscriberError(t *testing.T) {
	e := newEnv(t, nil)
	a, b := stream.ID{PartitionKey: "a"}, stream.ID{PartitionKey: "b"}
	e.append(t, a, 0, "a1", "a2", "a3")
	e.append(t, b, 0, "b1")
	flaky, steady := newRecorder(), newRecorder()
	boom := errors.New("boom")
	failed := false
	flaky.fail = func(c feed.Change) error {
		if c.Stream == a && c.Version == 2 && !failed {
			failed = true
			return boom
		}
		return nil
	}
	r := relay(t, e.f, feed.Subscription{Name: "flaky", Handle: flaky.handle}, feed.Subscription{Name: "steady", Handle: steady.handle})
	res, err := r.Round(context.Background(), 0)
	if !errors.Is(err, boom) {
		t.Errorf("round: %v, want the subscription's error", err)
	}
	if res.Cleared != 1 || res.Delivered != 1+3+1+1 {
		t.Errorf("round: %+v, want b cleared, 6 delivered", res)
	}
	if got := flaky.tags(a); got != "[a1]" {
		t.Errorf("flaky on a after its error: %s", got)
	}
	if got := steady.tags(a) + flaky.tags(b); got != "[a1 a2 a3][b1]" {
		t.Errorf("the others: %s", got)
	}
	if m := e.marks(t, a); len(m) != 1 {
		t.Error("a's mark cleared although flaky has not caught up")
	}
	if v := e.checkpoint(t, "flaky", a); v != 1 {
		t.Errorf("flaky's checkpoint on a: %d, want 1", v)
	}
	res = round(t, r, 0)
	if res.Cleared != 1 || res.Delivered != 2 {
		t.Errorf("second round: %+v, want a cleared, 2 delivered", res)
	}
	if got := flaky.tags(a) + steady.tags(a); got != "[a1 a2 a3][a1 a2 a3]" {
		t.Errorf("after the second round: %s", got)
	}
}

// TestFencing: once a relay of a later term has run, a relay of an
// earlier term (a paused leader) is refused its checkpoint writes with
// coord.ErrFenced, and the checkpoint does not move backwards.
func TestFencing(t *testing.T) {
	e := newEnv(t, nil)
	id := stream.ID{PartitionKey: "s"}
	e.append(t, id, 0, "e1")
	old, cur := newRecorder(), newRecorder()
	r1 := relay(t, e.f, feed.Subscription{Name: "v", Handle: old.handle})
	r2 := relay(t, e.f, feed.Subscription{Name: "v", Handle: cur.handle})
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := &clock{t: t0}
	feed.SetClock(r1, clk.now)
	round(t, r1, 1)
	e.append(t, id, 1, "e2", "e3")
	round(t, r2, 2)
	if v := e.checkpoint(t, "v", id); v != 3 {
		t.Fatalf("checkpoint %d, want 3", v)
	}
	// The old relay, cached at 1, hands e2 and e3 again and tries to store
	// 3 again; then, after one more append, 4: both refused.
	e.append(t, id, 3, "e4")
	clk.set(t0.Add(time.Minute))
	_, err := r1.Round(context.Background(), 1)
	if !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("round of term 1 after term 2: %v, want ErrFenced", err)
	}
	// The fenced round did not catch the subscription up: its lag counts
	// from the first round still.
	clk.set(t0.Add(2 * time.Minute))
	if lag := r1.Stats().Lag["v"]; lag != 2*time.Minute {
		t.Errorf("lag after the fenced round: %v, want 2m0s (since the last good round)", lag)
	}
	if v := e.checkpoint(t, "v", id); v != 3 {
		t.Errorf("checkpoint %d after the fenced round, want 3", v)
	}
	round(t, r2, 2)
	if v := e.checkpoint(t, "v", id); v != 4 {
		t.Errorf("checkpoint %d, want 4", v)
	}
}

// TestRunLeads: Run elects itself by the lease and relays until its
// context ends.
func TestRunLeads(t *testing.T) {
	e := newEnv(t, nil)
	id := stream.ID{PartitionKey: "s"}
	e.append(t, id, 0, "e1", "e2")
	done := make(chan struct{})
	rec := newRecorder()
	rec.fail = func(c feed.Change) error {
		if c.Version == 2 {
			close(done)
		}
		return nil
	}
	r, err := e.f.NewRelay([]feed.Subscription{{Name: "rec", Handle: rec.handle}}, &feed.RelayOptions{Interval: 10 * 1e6})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := coord.NewLease(e.ft, "lease", "relay", "me", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx, lease) }()
	<-done
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v, want context.Canceled", err)
	}
	if got := rec.tags(id); got != "[e1 e2]" {
		t.Errorf("handed %s", got)
	}
}

// TestAppendCosts: the mark's cost with the Meter: 1 write and no read
// (an EGT with the stream's directory row the first time this Feed
// appends to the stream, a plain upsert after); the append itself 1
// transaction. An append that appends nothing deletes its mark (1
// write).
func TestAppendCosts(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	m := e.acct.Meter()
	id := stream.ID{PartitionKey: "s"}
	cost := func(f func()) tablekit.MeterSnapshot {
		before := m.Snapshot()
		f()
		return m.Snapshot().Sub(before)
	}
	if c := cost(func() { e.append(t, id, 0, "e1") }); c.Total() != 2 || c.Count("table", "Transaction") != 2 {
		t.Errorf("first append: %v, want 2 transactions (the mark with the directory row, the append)", c)
	}
	if c := cost(func() { e.append(t, id, 1, "e2") }); c.Total() != 2 || c.Count("table", "UpdateEntity") != 1 || c.Count("table", "Transaction") != 1 {
		t.Errorf("second append: %v, want 1 upsert (the mark: UpdateEntity), 1 transaction", c)
	}
	// Another Feed (another process) writes the directory row again, once.
	f2, err := feed.New(e.store, e.ft, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int64{2, 1} {
		v := int64(2 + i)
		if c := cost(func() {
			if _, err := f2.Append(ctx, id, v, []stream.Event{{Data: Tagged{Tag: "f2"}}}); err != nil {
				t.Fatal(err)
			}
		}); c.Total() != 2 || c.Count("table", "Transaction") != want {
			t.Errorf("another Feed's append %d: %v, want %d transactions and %d upserts", i+1, c, want, 2-want)
		}
	}
	// A conflict deletes its mark.
	var ce *stream.ConflictError
	if c := cost(func() {
		if _, err := e.f.Append(ctx, id, 1, []stream.Event{{Data: Tagged{Tag: "stale"}}}); !errors.As(err, &ce) {
			t.Errorf("stale append: %v", err)
		}
	}); c.Count("table", "UpdateEntity") != 1 || c.Count("table", "DeleteEntity") != 1 {
		t.Errorf("a stale append: %v, want its mark upserted and deleted", c)
	}
	if got := fmt.Sprint(e.marks(t, id)); got != "[1 2 3 4]" {
		t.Errorf("marks: %s, want those of the 4 appends", got)
	}
	// Bad input is refused before anything is sent, the mark included.
	if c := cost(func() {
		if _, err := e.f.Append(ctx, id, 0, nil); !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("no events: %v", err)
		}
		if _, err := e.f.Append(ctx, stream.ID{PartitionKey: "p", Prefix: "a~b"}, 0, []stream.Event{{Data: Tagged{}}}); !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("prefix with ~: %v", err)
		}
		var ve *tablekit.ValidationError
		if _, err := e.f.Append(ctx, id, stream.AnyVersion, make([]stream.Event, 99)); !errors.Is(err, tablekit.ErrTooLarge) || !errors.As(err, &ve) || ve.Op != "feed.Feed.Append" {
			t.Errorf("99 events at AnyVersion (101 actions): %v", err)
		}
		other := tablekit.InsertAction(tablekit.Entity{PartitionKey: "elsewhere", RowKey: "r"})
		if _, err := e.f.Append(ctx, id, 4, []stream.Event{{Data: Tagged{}}}, other); !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("an extra action in another partition: %v", err)
		}
		// A partition key the stream takes, too long for the directory
		// row's RowKey ("s~" + partition + "~" + prefix), at AnyVersion
		// too (whose version read would come first).
		long := stream.ID{PartitionKey: strings.Repeat("k", 510)}
		for _, v := range []int64{0, stream.AnyVersion} {
			if _, err := e.f.Append(ctx, long, v, []stream.Event{{Data: Tagged{}}}); !errors.Is(err, tablekit.ErrInvalidKey) || !errors.As(err, &ve) || ve.Op != "feed.Feed.Append" {
				t.Errorf("a stream too long for the directory, at %d: %v", v, err)
			}
		}
	}); c.Total() != 0 {
		t.Errorf("refused appends sent %v", c)
	}
}

// TestCheckpointInLongCatchUp: a long catch-up stores the checkpoint every
// 32 changes, so a relay that dies (or loses its lease) at change 40 hands
// at most the changes since the last one again.
func TestCheckpointInLongCatchUp(t *testing.T) {
	e := newEnv(t, nil)
	id := stream.ID{PartitionKey: "s"}
	tags := make([]string, 45)
	for i := range tags {
		tags[i] = fmt.Sprint("e", i+1)
	}
	e.append(t, id, 0, tags...)
	rec := newRecorder()
	boom := errors.New("boom")
	var stored int64
	rec.fail = func(c feed.Change) error {
		if c.Version == 40 { // (in a goroutine of the round: no t.Fatal)
			pk, rk := feed.CheckpointKey("rec", id)
			row, err := e.ft.Get(context.Background(), pk, rk) // as a relay dying now would leave it
			stored, _ = row.Properties["Version"].(int64)
			return errors.Join(boom, err)
		}
		return nil
	}
	r := relay(t, e.f, feed.Subscription{Name: "rec", Handle: rec.handle})
	if _, err := r.Round(context.Background(), 1); !errors.Is(err, boom) {
		t.Fatalf("round: %v", err)
	}
	if stored != 32 {
		t.Errorf("checkpoint stored when change 40 was handed: %d, want 32", stored)
	}
	if v := e.checkpoint(t, "rec", id); v != 39 {
		t.Errorf("checkpoint after the failure at 40: %d, want 39", v)
	}
	rec.fail = nil
	if res := round(t, r, 1); res.Delivered != 45-39 || res.Cleared != 1 {
		t.Errorf("second round: %+v, want 6 delivered, cleared", res)
	}
}

// TestRoundCosts: a round's cost with the Meter, as the doc says: 1 query
// per shard; per marked stream 1 read of each subscription's checkpoint
// (then cached), the stream's read, 1 write per subscription that
// advanced; 1 delete of the marks cleared (an EGT for several);
// a new term's fence: 1 read + 1 write per subscription.
func TestRoundCosts(t *testing.T) {
	e := newEnv(t, &feed.Options{Shards: 4})
	id := stream.ID{PartitionKey: "s"}
	e.append(t, id, 0, "e1", "e2")
	h := func(context.Context, feed.Change) error { return nil }
	r := relay(t, e.f, feed.Subscription{Name: "a", Handle: h}, feed.Subscription{Name: "b", Handle: h})
	m := e.acct.Meter()
	// queries reports whether c holds want queries (Azure may cut a query
	// into more pages), and returns the rest of c's count.
	queries := func(c tablekit.MeterSnapshot, want int64) (bool, int64) {
		q := c.Count("table", "QueryEntities")
		return q >= want && (q == want || testenv.PagesAsAzure()), c.Total() - q
	}
	before := m.Snapshot()
	round(t, r, 0)
	c := m.Snapshot().Sub(before)
	if ok, rest := queries(c, 4+1); !ok || c.Count("table", "GetEntity") != 2 || c.Count("table", "Transaction") != 2 || c.Count("table", "DeleteEntity") != 1 || rest != 5 {
		t.Errorf("round of 1 marked stream, 2 subscriptions: %v; want 5 queries (4 shards, the stream), 2 checkpoint reads, 2 checkpoint writes, 1 delete (the mark)", c)
	}
	e.append(t, id, 2, "e3")
	before = m.Snapshot()
	round(t, r, 0)
	c = m.Snapshot().Sub(before)
	if ok, rest := queries(c, 5); !ok || rest != 3 || c.Count("table", "GetEntity") != 0 {
		t.Errorf("second round: %v; want the checkpoints cached: 5 queries, 2 writes, 1 delete", c)
	}
	for v := range int64(3) {
		e.append(t, id, 3+v, fmt.Sprint("e", 4+v))
	}
	before = m.Snapshot()
	if res := round(t, r, 0); res.Cleared != 3 {
		t.Errorf("round of 3 marks: %+v, want 3 cleared", res)
	}
	c = m.Snapshot().Sub(before)
	if ok, rest := queries(c, 5); !ok || c.Count("table", "Transaction") != 3 || c.Count("table", "DeleteEntity") != 0 || rest != 3 {
		t.Errorf("round of a stream with 3 marks: %v; want 5 queries, 2 checkpoint writes, 1 EGT of the 3 deletes", c)
	}
	before = m.Snapshot()
	round(t, r, 7)
	c = m.Snapshot().Sub(before)
	if ok, rest := queries(c, 4); !ok || rest != 2+2 {
		t.Errorf("idle round of a new term: %v; want 4 queries + the fence of 2 partitions (1 read + 1 write each)", c)
	}
}

// TestRoundConcurrent: a round catches up different dirty streams
// concurrently, 16 at once and never more, each in version order; the
// directory's shards are all read. The Handle holds every stream until 16
// are in it at once (a sequential round would hold the first for good:
// the Handles give up after 30 s and fail the round).
func TestRoundConcurrent(t *testing.T) {
	e := newEnv(t, &feed.Options{Shards: 4})
	const streams, inFlight = 20, 16
	ids := make([]stream.ID, streams)
	for i := range ids {
		ids[i] = stream.ID{PartitionKey: fmt.Sprintf("s%02d", i)}
		e.append(t, ids[i], 0, "e1", "e2")
	}
	var mu sync.Mutex
	in, most, filled := 0, 0, false
	full := make(chan struct{}) // closed once inFlight Handles ran at once
	giveUp, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec := newRecorder()
	r := relay(t, e.f, feed.Subscription{Name: "rec", Handle: func(ctx context.Context, c feed.Change) error {
		mu.Lock()
		in++
		most = max(most, in)
		if in == inFlight && !filled {
			filled = true
			close(full)
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			in--
			mu.Unlock()
		}()
		select {
		case <-full:
		case <-giveUp.Done():
			return errors.New("the streams were not handled concurrently")
		}
		return rec.handle(ctx, c)
	}})
	res := round(t, r, 0)
	if res.Streams != streams || res.Delivered != 2*streams || res.Cleared != streams {
		t.Errorf("round: %+v, want %d streams, %d delivered, %d cleared", res, streams, 2*streams, streams)
	}
	if most != inFlight {
		t.Errorf("%d Handles at once at most, want %d", most, inFlight)
	}
	for _, id := range ids {
		if got := rec.tags(id); got != "[e1 e2]" {
			t.Errorf("%v handed %s, want [e1 e2]", id, got)
		}
	}
}

// TestTableWrites: plain Table writes join the feed as extra actions of
// appends at stream.AnyVersion to their partition's log stream. Writers
// with Accounts of their own write at once; every acknowledged write is
// stored with its change, the changes are handed over once each in the
// log's order, a refused write leaves neither, and a write repeated with
// its event id is Replayed without being written again.
func TestTableWrites(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	log := stream.ID{PartitionKey: "customer-7", Prefix: "changes"}
	const writers, perWriter = 6, 8
	write := func(f *feed.Feed, tag string) (stream.Result, error) {
		row := tablekit.InsertAction(tablekit.Entity{PartitionKey: log.PartitionKey, RowKey: "order-" + tag, Properties: map[string]any{"Tag": tag}})
		return f.Append(ctx, log, stream.AnyVersion, []stream.Event{{ID: tag, Data: Tagged{Tag: tag}}}, row)
	}

	// An uncontended write: the version's query, the mark (an EGT with
	// the directory row, the first time), the EGT.
	before := e.acct.Meter().Snapshot()
	if r, err := write(e.f, "first"); err != nil || r.First != 1 {
		t.Fatalf("first write: %+v, %v", r, err)
	}
	if c := e.acct.Meter().Snapshot().Sub(before); c.Total() != 3 || c.Count("table", "Transaction") != 2 {
		t.Errorf("an uncontended write costs %v, want 3 (1 query, 2 transactions)", c)
	}

	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter)
	for w := range writers {
		// Each writer has its own Account, Store and Feed, as a process would.
		acct := testenv.Account(t, nil)
		st, err := tablekit.OpenTable[tablekit.Entity](acct, e.st.Name(), nil)
		if err != nil {
			t.Fatal(err)
		}
		store, err := stream.NewStore(st, registry(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		ft, err := tablekit.OpenTable[tablekit.Entity](acct, e.ft.Name(), nil)
		if err != nil {
			t.Fatal(err)
		}
		f, err := feed.New(store, ft, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for j := range perWriter {
				if _, err := write(f, fmt.Sprintf("w%d-%d", w, j)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a write: %v", err)
	}

	// A write repeated with its event id finds it recorded: Replayed, its
	// insert not sent again (it would fail: the row exists).
	if r, err := write(e.f, "w0-0"); err != nil || !r.Replayed {
		t.Errorf("w0-0 written again: %+v, %v; want a Replayed result", r, err)
	}
	// A refused write (its row exists) refuses its change too.
	var te *tablekit.TransactionError
	if r, err := e.f.Append(ctx, log, stream.AnyVersion, []stream.Event{{ID: "dup", Data: Tagged{Tag: "dup"}}},
		tablekit.InsertAction(tablekit.Entity{PartitionKey: log.PartitionKey, RowKey: "order-first"})); !errors.As(err, &te) || !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Errorf("a write of an existing row: %+v, %v; want a TransactionError (ErrAlreadyExists)", r, err)
	}

	rec := newRecorder()
	r := relay(t, e.f, feed.Subscription{Name: "orders", Handle: rec.handle})
	round(t, r, 1)
	want := 1 + writers*perWriter
	rec.mu.Lock()
	got, vers := rec.got[log], rec.vers[log]
	rec.mu.Unlock()
	if len(got) != want {
		t.Fatalf("%d changes handed over, want %d: %v", len(got), want, got)
	}
	seen := map[string]bool{}
	for i, tag := range got {
		if vers[i] != int64(i+1) || seen[tag] || tag == "dup" {
			t.Errorf("change %d: version %d, tag %s (seen before: %v)", i, vers[i], tag, seen[tag])
		}
		seen[tag] = true
		if row, err := e.st.Get(ctx, log.PartitionKey, "order-"+tag); err != nil || row.Properties["Tag"] != tag {
			t.Errorf("change %s handed over, its row: %v, %v", tag, row.Properties, err)
		}
	}
	n, err := e.st.Count(ctx, tablekit.RowKeyPrefix(log.PartitionKey, "order-"))
	if err != nil || n != want {
		t.Errorf("%d rows written (%v), want %d", n, err, want)
	}
}

// TestRelayLogsToItsAccount: a relay made with no Logger logs its rounds'
// failures to the Logger of the Account of the feed's table, as
// everything made from an Account does (a relay whose subscription fails
// on every change, as an outbox's whose queue does not exist).
func TestRelayLogsToItsAccount(t *testing.T) {
	records := &lastLines{n: 200}
	acct := testenv.Account(t, &tablekit.Options{Logger: records.logger()})
	store, err := stream.NewStore(testenv.OpenTable[tablekit.Entity](t, acct, nil), registry(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ft := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	f, err := feed.New(store, ft, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Append(context.Background(), stream.ID{PartitionKey: "s"}, 0, []stream.Event{{Data: Tagged{Tag: "e1"}}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls := 0
	third := make(chan struct{})
	r, err := f.NewRelay([]feed.Subscription{{Name: "v", Handle: func(context.Context, feed.Change) error {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls == 3 {
			close(third) // the rounds before have returned, and Run logged their errors
		}
		return errors.New("the queue does not exist")
	}}}, &feed.RelayOptions{Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := coord.NewLease(ft, "lease", "relay", "me", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx, lease) }()
	<-third
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
	if got := records.String(); !strings.Contains(got, "feed: relay round") || !strings.Contains(got, "the queue does not exist") {
		t.Errorf("the Account's Logger got:\n%s\nwant the rounds' failures", got)
	}
}

// TestRunRefusesNilLease: Run with a nil lease is refused by Run itself,
// naming it, before anything is sent.
func TestRunRefusesNilLease(t *testing.T) {
	e := newEnv(t, nil)
	r := relay(t, e.f, feed.Subscription{Name: "v", Handle: func(context.Context, feed.Change) error { return nil }})
	before := e.acct.Meter().Snapshot()
	err := r.Run(context.Background(), nil)
	if !errors.Is(err, tablekit.ErrInvalidInput) || !strings.HasPrefix(fmt.Sprint(err), "feed: Relay.Run") {
		t.Errorf("Run(ctx, nil): %v, want an error matching ErrInvalidInput naming feed's Relay.Run", err)
	}
	if c := e.acct.Meter().Snapshot().Sub(before); c.Total() != 0 {
		t.Errorf("sent %v", c)
	}
}

// TestReplayInRunsTerm: Replay, called while Run leads, runs in the term
// Run holds: once a later term has fenced the checkpoints (another relay
// took over), its checkpoint writes are refused with coord.ErrFenced and
// no checkpoint moves. A Relay that does not lead (no Run leading, no
// Round called) refuses to replay, sending nothing.
func TestReplayInRunsTerm(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	ids := []stream.ID{{PartitionKey: "a"}, {PartitionKey: "b"}}
	for _, id := range ids {
		e.append(t, id, 0, "e1", "e2")
	}
	h := func(context.Context, feed.Change) error { return nil }
	round(t, relay(t, e.f, feed.Subscription{Name: "v1", Handle: h}), 0) // the marks cleared

	subs := []feed.Subscription{{Name: "v1", Handle: h}, {Name: "v2", Handle: h}, {Name: "v3", Handle: h}}
	idle := relay(t, e.f, subs...)
	before := e.acct.Meter().Snapshot()
	if _, err := idle.Replay(ctx, "v2"); !errors.Is(err, coord.ErrLost) {
		t.Errorf("Replay on a Relay that does not lead: %v, want an error matching coord.ErrLost", err)
	}
	if c := e.acct.Meter().Snapshot().Sub(before); c.Total() != 0 {
		t.Errorf("the refused Replay sent %v", c)
	}

	// A leader that runs one round an hour: its term stays the one Run holds.
	r, err := e.f.NewRelay(subs, &feed.RelayOptions{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := coord.NewLease(e.ft, "lease", "relay", "leader", nil)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- r.Run(runCtx, lease) }()
	defer func() {
		stop()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}()
	for len(r.Stats().Lag) == 0 { // Run's first round has read the directory
		time.Sleep(5 * time.Millisecond)
	}
	term, ok := lease.Held()
	if !ok {
		t.Fatal("Run leads, and its lease is not held")
	}
	if res, err := r.Replay(ctx, "v2"); err != nil || res.Delivered != 4 {
		t.Fatalf("Replay while Run leads: %+v, %v; want 4 changes", res, err)
	}
	for _, id := range ids {
		if v := e.checkpoint(t, "v2", id); v != 2 {
			t.Errorf("v2's checkpoint of %v: %d, want 2", id, v)
		}
	}
	// Another relay takes over with a later term (its round fences the
	// checkpoints): the leader's Replay is a stale term's, and refused.
	round(t, relay(t, e.f, subs...), term+1000)
	if _, err := r.Replay(ctx, "v3"); !errors.Is(err, coord.ErrFenced) {
		t.Errorf("Replay in Run's term after a later term fenced: %v, want coord.ErrFenced", err)
	}
	for _, id := range ids {
		if v := e.checkpoint(t, "v3", id); v != 0 {
			t.Errorf("v3's checkpoint of %v moved to %d by a fenced Replay", id, v)
		}
	}
}
