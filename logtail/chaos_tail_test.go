package logtail_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/logtail"
)

// The log tail chaos suite: concurrent writers, each with its own Account,
// Table and Logs (as separate processes would have), append entries to a
// few shared log partitions, one of them a sharded stream, and read them
// back with Latest, Page and Window, through a fault-injecting pipeline
// whose faults may outlast the SDK's retries.
//
// Invariants:
//   - every read returns entries newest first (RowKeys strictly ascending,
//     times not increasing, each writer's entries of a partition in the
//     reverse of the order it appended them), each entry once, each one an
//     entry some writer appended, intact, in its partition (and, sharded,
//     in the bucket its RowKey names);
//   - a read holds every entry acknowledged before it started that falls
//     in what it covers: for Latest and a Page walk, every such entry newer
//     than the oldest entry returned (all of them when the read reached the
//     end of the log); for Window, every such entry in the time range;
//   - afterwards, every acknowledged entry is stored exactly once, under
//     the RowKey Append returned; an entry whose Append failed is not
//     stored; one whose outcome is unknown is stored at most once. Latest,
//     a Page walk and Window over the whole log return the same entries,
//     and the table holds nothing else.
//
// Duplicates: the design allows none (an Append inserts one entity under a
// key unique to that call), so a duplicate is a violation; the test counts
// them anyway.

// chaosEvent is the entry the suite appends. ID names the writer and its
// sequence number; Msg is derived from ID, so a corrupted entry shows.
type chaosEvent struct {
	logtail.Entry
	ID  string `table:"ID"`
	W   int    `table:"W"`
	N   int    `table:"N"`
	Msg string `table:"Msg"`
}

// tailPayload is the message of entry id: characters that need escaping in
// OData JSON and keys ('"\/#?), non-ASCII and a hash of id.
func tailPayload(id string) string {
	sum := sha256.Sum256([]byte(id))
	return id + " 'quoted' \"dq\" \\ / # ? ü€ \t" + hex.EncodeToString(sum[:8])
}

// tailShards is the shard count of the sharded stream.
const tailShards = 4

// tailPartitions are the logical partitions the writers share: two plain
// log partitions and one sharded stream, whose name holds characters a
// compound key would escape ('.', ' ', '!'): it is stored under
// keys.ShardedKey as it is.
var tailPartitions = []struct {
	name    string
	sharded bool
}{{"L0", false}, {"L1", false}, {"S.0 !s", true}}

func tailSharded(pk string) bool {
	for _, p := range tailPartitions {
		if p.name == pk {
			return p.sharded
		}
	}
	panic("unknown partition " + pk)
}

// monoClock is one writer's clock: wall time truncated to the millisecond
// (so that many appends share a tick and the sequence numbers order them),
// never going back.
type monoClock struct {
	mu   sync.Mutex
	last time.Time
}

func (c *monoClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := time.Now().UTC().Truncate(time.Millisecond)
	if t.Before(c.last) {
		t = c.last
	}
	c.last = t
	return t
}

// ackedEntry is an entry whose Append was acknowledged.
type ackedEntry struct {
	id, rk string
	t      time.Time
}

// tailRegistry is what the writers appended and what they were told, shared
// by the writers so that each read can be checked as it returns.
type tailRegistry struct {
	mu        sync.Mutex
	attempted map[string]chaosEvent   // by ID: every entry an Append was called with
	acked     map[string][]ackedEntry // by logical partition, in order of acknowledgement
	ackedByID map[string]ackedEntry
}

func newTailRegistry() *tailRegistry {
	return &tailRegistry{attempted: map[string]chaosEvent{}, acked: map[string][]ackedEntry{}, ackedByID: map[string]ackedEntry{}}
}

func (r *tailRegistry) attempt(e chaosEvent) {
	r.mu.Lock()
	r.attempted[e.ID] = e
	r.mu.Unlock()
}

func (r *tailRegistry) ack(pk string, e chaosEvent) {
	a := ackedEntry{id: e.ID, rk: e.RowKey, t: e.Time()}
	r.mu.Lock()
	r.acked[pk] = append(r.acked[pk], a)
	r.ackedByID[e.ID] = a
	r.mu.Unlock()
}

// snapshot returns the entries of pk acknowledged so far.
func (r *tailRegistry) snapshot(pk string) []ackedEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.acked[pk])
}

// tailRead is what one read returned and what it covers.
type tailRead struct {
	what    string
	pk      string
	entries []chaosEvent
	// The read covers every entry with RowKey <= bound (all when complete),
	// or, for a window, the entries whose time is in [from, to).
	complete bool
	window   bool
	from, to time.Time
}

// checkRead checks one read against the entries acknowledged before it
// started (before) and everything appended (the registry).
func (r *tailRegistry) checkRead(rd tailRead, before []ackedEntry, v *chaos.Violations) {
	r.mu.Lock()
	attempted := maps.Clone(r.attempted)
	ackedByID := maps.Clone(r.ackedByID)
	r.mu.Unlock()
	checkEntries(rd, attempted, ackedByID, v)
	got := map[string]bool{}
	for _, e := range rd.entries {
		got[e.ID] = true
	}
	bound := ""
	if n := len(rd.entries); n > 0 {
		bound = rd.entries[n-1].RowKey
	}
	for _, a := range before {
		covered := rd.complete || (bound != "" && a.rk <= bound)
		if rd.window {
			covered = (rd.from.IsZero() || !a.t.Before(rd.from)) && (rd.to.IsZero() || a.t.Before(rd.to))
		}
		if covered && !got[a.id] {
			v.Addf("%s of %s: entry %s (RowKey %s, %v), acknowledged before the read started, is missing (%d entries returned, oldest RowKey %q, complete=%v)",
				rd.what, rd.pk, a.id, a.rk, a.t, len(rd.entries), bound, rd.complete)
		}
	}
}

// checkEntries checks what any read returns: newest first, each entry
// once, each one appended by some writer, intact and in its partition.
func checkEntries(rd tailRead, attempted map[string]chaosEvent, ackedByID map[string]ackedEntry, v *chaos.Violations) {
	seen := map[string]int{}
	lastN := map[int]int{}
	for i, e := range rd.entries {
		if i > 0 {
			prev := rd.entries[i-1]
			if prev.RowKey >= e.RowKey {
				v.Addf("%s of %s: entries %d and %d out of order: RowKey %q then %q", rd.what, rd.pk, i-1, i, prev.RowKey, e.RowKey)
			}
			if prev.Time().Before(e.Time()) {
				v.Addf("%s of %s: entry %d (%v) is older than entry %d (%v)", rd.what, rd.pk, i-1, prev.Time(), i, e.Time())
			}
		}
		if rd.window && ((!rd.from.IsZero() && e.Time().Before(rd.from)) || (!rd.to.IsZero() && !e.Time().Before(rd.to))) {
			v.Addf("%s of %s [%v, %v): entry %s at %v is outside the window", rd.what, rd.pk, rd.from, rd.to, e.ID, e.Time())
		}
		seen[e.ID]++
		if seen[e.ID] == 2 {
			v.Addf("%s of %s: entry %s returned more than once", rd.what, rd.pk, e.ID)
		}
		want, ok := attempted[e.ID]
		if !ok {
			v.Addf("%s of %s: entry %+v was appended by no writer", rd.what, rd.pk, e)
			continue
		}
		if e.W != want.W || e.N != want.N || e.Msg != want.Msg {
			v.Addf("%s of %s: entry %s is %+v, want W=%d N=%d Msg=%q", rd.what, rd.pk, e.ID, e, want.W, want.N, want.Msg)
		}
		if a, ok := ackedByID[e.ID]; ok && a.rk != e.RowKey {
			v.Addf("%s of %s: entry %s has RowKey %q, Append returned %q", rd.what, rd.pk, e.ID, e.RowKey, a.rk)
		}
		if want.PartitionKey != rd.pk {
			v.Addf("%s of %s: entry %s was appended to partition %s", rd.what, rd.pk, e.ID, want.PartitionKey)
		}
		spk := rd.pk
		if tailSharded(rd.pk) {
			b, err := keys.Shard(e.RowKey, tailShards)
			if err == nil {
				spk, err = keys.ShardedKey(b, tailShards, rd.pk)
			}
			if err != nil {
				v.Addf("%s of %s: entry %s: %v", rd.what, rd.pk, e.ID, err)
			}
		}
		if e.PartitionKey != spk {
			v.Addf("%s of %s: entry %s is stored in partition %q, want %q", rd.what, rd.pk, e.ID, e.PartitionKey, spk)
		}
		// One writer's entries of one partition: the later appended first.
		if n, ok := lastN[e.W]; ok && e.N >= n {
			v.Addf("%s of %s: writer %d's entry %d comes before its entry %d, which it appended later", rd.what, rd.pk, e.W, n, e.N)
		}
		lastN[e.W] = e.N
	}
}

// tailWriter is one writer of the suite.
type tailWriter struct {
	w     *chaos.Writer
	clock *monoClock                          // the times of its appends
	logs  map[string]*logtail.Log[chaosEvent] // by logical partition
	reg   *tailRegistry
	v     *chaos.Violations
	n     int
	mine  map[string][]ackedEntry // this writer's acknowledged entries, by partition
}

func (tw *tailWriter) append(ctx context.Context, pk string) {
	id := fmt.Sprintf("w%02d-%d", tw.w.Index, tw.n)
	e := chaosEvent{ID: id, W: tw.w.Index, N: tw.n, Msg: tailPayload(id)}
	tw.n++
	reg := e
	reg.PartitionKey = pk // the logical partition, for the checks
	tw.reg.attempt(reg)
	// Some appends run under a short deadline (a caller that gives up):
	// they end with an unknown outcome when it passes mid-request.
	var limit time.Duration
	if tw.w.Rand.IntN(8) == 0 {
		limit = time.Duration(2+tw.w.Rand.IntN(25)) * time.Millisecond
	}
	op := tw.w.Do(ctx, "Append", pk, id, func(ctx context.Context) (any, error) {
		if limit > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, limit)
			defer cancel()
		}
		return tw.logs[pk].AppendAt(ctx, pk, tw.clock.Now(), e)
	})
	var se *tablekit.ServiceError
	if errors.As(op.Err, &se) && se.Code == "EntityAlreadyExists" {
		// Its RowKey is its own: Log.AppendAt documents that a conflict
		// met by a retry is its own insert, reported as success.
		tw.v.Addf("writer %d: Append reported a conflict on its own key: %s", tw.w.Index, op)
	}
	if op.Outcome != chaos.OK {
		return
	}
	got := op.Result.(chaosEvent)
	if got.ID != id || got.RowKey == "" {
		tw.v.Addf("writer %d: Append of %s returned %+v", tw.w.Index, id, got)
		return
	}
	tw.reg.ack(pk, got)
	tw.mine[pk] = append(tw.mine[pk], ackedEntry{id: id, rk: got.RowKey, t: got.Time()})
}

// read runs one read of pk (Latest, a Page walk or a Window) and checks it.
func (tw *tailWriter) read(ctx context.Context, pk string) {
	l := tw.logs[pk]
	before := tw.reg.snapshot(pk)
	rd := tailRead{pk: pk}
	var call func(ctx context.Context) (any, error)
	read := tw.w.Rand.IntN(3)
	if onCosmos() {
		read = 2 // Latest and Page are refused on Cosmos DB: Window only
	}
	switch read {
	case 0:
		n := 1 + tw.w.Rand.IntN(25)
		rd.what = fmt.Sprintf("Latest(%d)", n)
		call = func(ctx context.Context) (any, error) {
			es, err := l.Latest(ctx, pk, n)
			rd.entries, rd.complete = es, len(es) < n
			return len(es), err
		}
	case 1:
		size, pages := 1+tw.w.Rand.IntN(12), 1+tw.w.Rand.IntN(4)
		rd.what = fmt.Sprintf("Page walk (size %d, %d pages)", size, pages)
		call = func(ctx context.Context) (any, error) {
			tok := ""
			for i := range pages {
				p, err := l.Page(ctx, pk, &logtail.PageOptions{PageSize: size, Continuation: tok})
				if err != nil {
					return i, err
				}
				if len(p.Items) < size && p.Continuation != "" || len(p.Items) == size && p.Continuation == "" {
					tw.v.Addf("writer %d: page %d of %s: %d entries of %d with continuation %q", tw.w.Index, i, pk, len(p.Items), size, p.Continuation)
				}
				rd.entries = append(rd.entries, p.Items...)
				if tok = p.Continuation; tok == "" {
					rd.complete = true
					break
				}
			}
			return len(rd.entries), nil
		}
	default:
		rd.window = true
		if m := tw.mine[pk]; len(m) > 0 {
			rd.from = m[tw.w.Rand.IntN(len(m))].t
		}
		if tw.w.Rand.IntN(2) == 0 {
			rd.to = rd.from.Add(time.Duration(1+tw.w.Rand.IntN(40)) * time.Millisecond)
			if rd.from.IsZero() {
				rd.to = time.Now()
			}
		}
		rd.what = "Window"
		call = func(ctx context.Context) (any, error) {
			for e, err := range l.Window(ctx, pk, rd.from, rd.to) {
				if err != nil {
					return len(rd.entries), err
				}
				rd.entries = append(rd.entries, e)
			}
			return len(rd.entries), nil
		}
	}
	op := tw.w.Do(ctx, rd.what, pk, nil, call)
	if op.Outcome == chaos.OK {
		rd.what = fmt.Sprintf("writer %d: %s", tw.w.Index, rd.what)
		tw.reg.checkRead(rd, before, tw.v)
	}
}

func TestChaosLogTail(t *testing.T) {
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		inj, err := chaos.New(seed, &chaos.Config{
			Reset: 0.05, AnswerLost: 0.07, ServerBusy: 0.04, TimeoutBefore: 0.02, TimeoutAfter: 0.03, Delay: 0.05,
			Services: []string{"table"},
			// Faults may outlast the SDK's retries: appends then fail, or
			// end with an unknown outcome.
			MaxConsecutive: -1,
		})
		if err != nil {
			t.Fatal(err)
		}
		setup := inj.Account(t, nil)
		inj.SetEnabled(false)
		name := testenv.TableName(t)
		if _, err := setup.Tables().NewClient(name).CreateTable(ctx, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { setup.Tables().NewClient(name).Delete(context.Background(), nil) })
		inj.SetEnabled(true)

		reg := newTailRegistry()
		var v chaos.Violations
		writers, perWriter := chaos.Size(8, 16), chaos.Size(30, 60)
		h, err := chaos.RunWriters(ctx, seed, writers, func(ctx context.Context, w *chaos.Writer) error {
			acct, err := inj.Open(testenv.ConnectionString(t), nil)
			if err != nil {
				return err
			}
			tbl, err := tablekit.OpenTable[chaosEvent](acct, name, nil)
			if err != nil {
				return err
			}
			clock := &monoClock{}
			pageSize := 1 + w.Rand.IntN(8) // short pages: reads need several
			plain, err := logtail.New(tbl, &logtail.Options{PageSize: pageSize})
			if err != nil {
				return err
			}
			sharded, err := logtail.New(tbl, &logtail.Options{Shards: tailShards, PageSize: pageSize})
			if err != nil {
				return err
			}
			tw := &tailWriter{w: w, clock: clock, reg: reg, v: &v, mine: map[string][]ackedEntry{}, logs: map[string]*logtail.Log[chaosEvent]{}}
			for _, p := range tailPartitions {
				tw.logs[p.name] = plain
				if p.sharded {
					tw.logs[p.name] = sharded
				}
			}
			for range perWriter {
				pk := tailPartitions[w.Rand.IntN(len(tailPartitions))].name
				if w.Rand.IntN(4) == 0 {
					tw.read(ctx, pk)
				} else {
					tw.append(ctx, pk)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		inj.SetEnabled(false)
		st := inj.Stats()
		appends := map[chaos.Outcome]int{}
		reads := map[chaos.Outcome]int{}
		failed := map[string]int{}
		for _, op := range h.Ops() {
			if op.Name == "Append" {
				appends[op.Outcome]++
				if op.Outcome != chaos.OK {
					failed[fmt.Sprintf("%s: %s", op.Outcome, tailReason(op.Err))]++
				}
			} else {
				reads[op.Outcome]++
			}
		}
		t.Logf("%d ops (%d ok, %d failed, %d unknown): appends %d ok, %d failed, %d unknown; reads %d ok, %d failed, %d unknown; faults: %s",
			h.Len(), h.Count(chaos.OK), h.Count(chaos.Failed), h.Count(chaos.Unknown),
			appends[chaos.OK], appends[chaos.Failed], appends[chaos.Unknown], reads[chaos.OK], reads[chaos.Failed], reads[chaos.Unknown], st.ByKind())
		t.Logf("appends not acknowledged, by reason: %v", failed)
		if rate := st.FaultRate(); rate < 0.15 {
			t.Errorf("only %.1f%% of requests faulted, want at least 15%%", 100*rate)
		}
		checkTailFinal(t, chaos.NoFaults(ctx), setup, name, h, reg, &v)
		if h.Len() < 300 && chaos.Full() {
			v.Addf("only %d operations ran, want at least 300", h.Len())
		}
		v.Report(t)
	})
}

// checkTailFinal reads every partition without faults through each read
// API and checks the stored log against the history.
func checkTailFinal(t *testing.T, ctx context.Context, acct *tablekit.Account, name string, h *chaos.History, reg *tailRegistry, v *chaos.Violations) {
	t.Helper()
	tbl, err := tablekit.OpenTable[chaosEvent](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := logtail.New(tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	sharded, err := logtail.New(tbl, &logtail.Options{Shards: tailShards})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int{} // entries per ID over all partitions
	total := 0
	for _, p := range tailPartitions {
		l := plain
		if p.sharded {
			l = sharded
		}
		latest, err := newest(t, ctx, l, p.name, 100_000)
		if err != nil {
			t.Fatal(err)
		}
		walk, _, err := pageThrough(t, ctx, l, p.name, 7)
		if err != nil {
			t.Fatal(err)
		}
		var window []chaosEvent
		for e, err := range l.Window(ctx, p.name, time.Time{}, time.Time{}) {
			if err != nil {
				t.Fatal(err)
			}
			window = append(window, e)
		}
		ids := func(es []chaosEvent) []string {
			out := make([]string, len(es))
			for i, e := range es {
				out[i] = e.ID + "@" + e.RowKey
			}
			return out
		}
		if !slices.Equal(ids(walk), ids(latest)) {
			v.Addf("%s: a Page walk returned %d entries, Latest %d, not the same list", p.name, len(walk), len(latest))
		}
		if !slices.Equal(ids(window), ids(latest)) {
			v.Addf("%s: Window returned %d entries, Latest %d, not the same list", p.name, len(window), len(latest))
		}
		if len(latest) > 0 {
			// Since the time of a middle entry: a suffix of the newest-first list.
			mid := latest[len(latest)/2].Time()
			var since []chaosEvent
			for e, err := range l.Window(ctx, p.name, mid, time.Time{}) {
				if err != nil {
					t.Fatal(err)
				}
				since = append(since, e)
			}
			var want []chaosEvent
			for _, e := range latest {
				if !e.Time().Before(mid) {
					want = append(want, e)
				}
			}
			if !slices.Equal(ids(since), ids(want)) {
				v.Addf("%s: Since(%v) returned %d entries, want the %d of Latest at or after it", p.name, mid, len(since), len(want))
			}
		}
		reg.checkRead(tailRead{what: "final Latest", pk: p.name, entries: latest, complete: true}, reg.snapshot(p.name), v)
		for _, e := range latest {
			stored[e.ID]++
		}
		total += len(latest)
	}
	// Nothing else in the table (an entry in a partition no read covers).
	raw := 0
	for _, err := range tbl.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		raw++
	}
	if raw != total {
		v.Addf("the table holds %d entities, the logs' reads %d", raw, total)
	}
	var unknownStored, unknownAbsent, failedLost int
	for _, op := range h.Ops() {
		if op.Name != "Append" {
			continue
		}
		id := op.Value.(string)
		if op.Outcome == chaos.Failed && op.AnswerLost() {
			// A try was applied, its answer lost, and the last try
			// refused (503 ServerBusy): Append settles that by reading its
			// key, so a failure here means it found nothing. Counted; the
			// entry must not be stored.
			failedLost++
		}
		switch n := stored[id]; {
		case op.Outcome == chaos.OK && n != 1:
			v.Addf("acknowledged entry %s is stored %d times, want once: %s", id, n, op)
		case op.Outcome == chaos.Failed && n != 0:
			v.Addf("entry %s is stored %d times, but its Append failed: %s", id, n, op)
		case op.Outcome == chaos.Unknown && n > 1:
			v.Addf("entry %s (outcome unknown) is stored %d times, want at most once: %s", id, n, op)
		case op.Outcome == chaos.Unknown && n == 1:
			unknownStored++
		case op.Outcome == chaos.Unknown:
			unknownAbsent++
		}
	}
	dups := 0
	for _, n := range stored {
		if n > 1 {
			dups += n - 1
		}
	}
	t.Logf("final: %d entries stored in %d partitions; appends with unknown outcome: %d stored, %d not; appends failed after a lost answer: %d; duplicates: %d",
		total, len(tailPartitions), unknownStored, unknownAbsent, failedLost, dups)
}

// tailReason sorts the error of an append that was not acknowledged.
func tailReason(err error) string {
	var se *tablekit.ServiceError
	var re *tablekit.RequestError
	switch {
	case errors.As(err, &se):
		return se.Code
	case errors.As(err, &re):
		return "no answer"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "context"
	}
	s := fmt.Sprintf("%T", err)
	if i := strings.LastIndex(s, "."); i >= 0 {
		s = s[i+1:]
	}
	return s
}
