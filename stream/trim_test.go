package stream_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/stream"
)

// readUntil reads seq and returns the versions it yielded and the error
// that ended it (nil when none did).
func readUntil(seq func(func(stream.RecordedEvent, error) bool)) ([]int64, error) {
	var got []int64
	for ev, err := range seq {
		if err != nil {
			return got, err
		}
		got = append(got, ev.Version)
	}
	return got, nil
}

// wantTrimmed checks that err is a *TrimmedError of id with from and
// start, matching ErrTrimmed.
func wantTrimmed(t testing.TB, what string, err error, id stream.ID, from, start int64) {
	t.Helper()
	var te *stream.TrimmedError
	if !errors.Is(err, stream.ErrTrimmed) || !errors.As(err, &te) || te.Stream != id || te.From != from || te.Start != start {
		t.Fatalf("%s: %v (%+v), want a TrimmedError from %d, start %d", what, err, te, from, start)
	}
}

// rawRows returns the RowKeys of partition pk that start with prefix.
func rawRows(t testing.TB, tbl *tablekit.Table[tablekit.Entity], pk, prefix string) []string {
	t.Helper()
	rows, err := tablekit.Collect(tbl.Query(context.Background(), tablekit.RowKeyPrefix(pk, prefix), &tablekit.QueryOptions{Select: []string{"Version"}}), 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.RowKey
	}
	slices.Sort(out) // Cosmos DB answers in no key order
	return out
}

// TestTrim: Trim drops a stream's events below a version; reads say where
// the stream starts (Forward from below it ends in ErrTrimmed before any
// event, Backward stops there), the stream goes on (Version, Append), an
// append expecting version 0 is still refused, and a repeat of an append
// whose events were trimmed is still Replayed, by its id rows.
func TestTrim(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	s, tbl := newStore(t, acct, &stream.Options{PageSize: 30})
	id := stream.ID{PartitionKey: "p", Prefix: "s"}
	other := stream.ID{PartitionKey: "p", Prefix: "t"} // shares the partition, never trimmed
	var v int64
	for i := range 6 { // 6 appends of 40 events with ids: versions 1..240
		r, err := s.Append(ctx, id, v, withIDs(placed(40), fmt.Sprintf("a%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		v = r.Last
		if _, err := s.Append(ctx, other, int64(i), placed(1)); err != nil {
			t.Fatal(err)
		}
	}
	if start, err := s.Start(ctx, id); err != nil || start != 1 {
		t.Fatalf("Start of an untrimmed stream: %d, %v", start, err)
	}
	m := acct.Meter()
	before := m.Snapshot()
	if err := s.Trim(ctx, id, 100); err != nil {
		t.Fatal(err)
	}
	// 1 query (version) + 1 read (row 1) + 1 write (tombstone) + 1 query
	// (98 keys) + 1 query (none left) + 1 transaction (98 deletes).
	if c := m.Snapshot().Sub(before); c.Count("table", "Transaction") != 2 || c.Total() < 6 || (c.Total() != 6 && !testenv.PagesAsAzure()) {
		t.Errorf("Trim of 99 events cost %v, want 6 requests, 2 of them transactions", c)
	}
	if start, err := s.Start(ctx, id); err != nil || start != 100 {
		t.Fatalf("Start after Trim(100): %d, %v", start, err)
	}
	if v, err := s.Version(ctx, id); err != nil || v != 240 {
		t.Fatalf("Version after Trim: %d, %v", v, err)
	}
	// Rows: the tombstone and events 100..240; every id row stays.
	if evs := rawRows(t, tbl, "p", "s~ev~"); len(evs) != 142 || evs[0] != "s~ev~0000000001" || evs[1] != "s~ev~0000000100" {
		t.Fatalf("event rows after Trim: %d, from %v", len(evs), evs[:2])
	}
	if ids := rawRows(t, tbl, "p", "s~id~"); len(ids) != 240 {
		t.Fatalf("id rows after Trim: %d, want 240", len(ids))
	}
	// Forward from below the start: ErrTrimmed before any event, from the
	// tombstone (from 1) or a gap (from 2..99).
	for _, from := range []int64{-3, 1, 2, 50, 70, 99} {
		got, err := readUntil(s.Forward(ctx, id, from))
		wantTrimmed(t, fmt.Sprintf("Forward(%d)", from), err, id, max(from, 1), 100)
		if len(got) != 0 {
			t.Fatalf("Forward(%d) yielded %v before the error", from, got)
		}
	}
	wantVersions(t, "Forward(100)", collect(t, s.Forward(ctx, id, 100)), 100, 240)
	wantVersions(t, "Forward(200)", collect(t, s.Forward(ctx, id, 200)), 200, 240)
	// Backward stops at the start, without an error.
	wantVersions(t, "Backward(0)", collect(t, s.Backward(ctx, id, 0)), 240, 100)
	wantVersions(t, "Backward(120)", collect(t, s.Backward(ctx, id, 120)), 120, 100)
	wantNone(t, "Backward(99)", collect(t, s.Backward(ctx, id, 99)))
	wantNone(t, "Backward(10)", collect(t, s.Backward(ctx, id, 10)))
	wantVersions(t, "other stream", collect(t, s.Forward(ctx, other, 1)), 1, 6)

	// An append expecting 0 finds the tombstone: a conflict.
	var ce *stream.ConflictError
	if _, err := s.Append(ctx, id, 0, placed(1)); !errors.As(err, &ce) || ce.Current != 240 {
		t.Fatalf("append at 0 to a trimmed stream: %v", err)
	}
	// Repeats of appends whose events are gone (a0: 1..40, all trimmed;
	// a2: 81..120, trimmed up to 99) come back Replayed with their
	// versions, at an explicit version and at AnyVersion.
	for _, c := range []struct {
		prefix      string
		first, last int64
	}{{"a0", 1, 40}, {"a2", 81, 120}, {"a4", 161, 200}} {
		for _, expected := range []int64{0, 240, stream.AnyVersion} {
			r, err := s.Append(ctx, id, expected, withIDs(placed(40), c.prefix))
			if err != nil || !r.Replayed || r.First != c.first || r.Last != c.last {
				t.Fatalf("repeat of %s expecting %d: %+v, %v, want %d..%d replayed", c.prefix, expected, r, err, c.first, c.last)
			}
		}
	}
	// Ids recorded otherwise, below the start, are still refused.
	mixed := []stream.Event{{ID: "a0-1", Data: Placed{}}, {ID: "a0-0", Data: Placed{}}}
	if _, err := s.Append(ctx, id, 240, mixed); !errors.Is(err, stream.ErrPartlyApplied) {
		t.Fatalf("ids of trimmed events in another order: %v", err)
	}
	if v, _ := s.Version(ctx, id); v != 240 {
		t.Fatalf("version after the repeats: %d", v)
	}

	// The start only moves up; Trim is refused beyond the end and below 1.
	if err := s.Trim(ctx, id, 50); err != nil {
		t.Fatal(err)
	}
	if start, _ := s.Start(ctx, id); start != 100 {
		t.Fatalf("Trim(50) after Trim(100) moved the start to %d", start)
	}
	before = m.Snapshot()
	for _, b := range []int64{0, -1, 242, 10_000_000_001} {
		if err := s.Trim(ctx, id, b); !errors.Is(err, tablekit.ErrInvalidInput) || !strings.HasPrefix(err.Error(), "stream: Store.Trim: ") {
			t.Errorf("Trim(%d): %v, want ErrInvalidInput", b, err)
		}
	}
	// Only Trim(242) sent a request: the version read that refuses it.
	if c := m.Snapshot().Sub(before); c.Total() != c.Count("table", "QueryEntities") || c.Total() < 1 || (c.Total() != 1 && !testenv.PagesAsAzure()) {
		t.Errorf("refused Trims sent %v, want the version query of Trim(242)", c)
	}
	if start, _ := s.Start(ctx, id); start != 100 {
		t.Fatalf("refused Trims moved the start to %d", start)
	}
	// Every event: the stream is empty from 241 on, and goes on there.
	if err := s.Trim(ctx, id, 241); err != nil {
		t.Fatal(err)
	}
	got, err := readUntil(s.Forward(ctx, id, 200))
	wantTrimmed(t, "Forward(200) after Trim(241)", err, id, 200, 241)
	wantNone(t, "Forward(241)", collect(t, s.Forward(ctx, id, 241)))
	wantNone(t, "Backward(0) after Trim(241)", collect(t, s.Backward(ctx, id, 0)))
	if len(got) != 0 {
		t.Fatalf("Forward(200) yielded %v", got)
	}
	if r, err := s.Append(ctx, id, 240, withIDs(placed(3), "b")); err != nil || r.First != 241 {
		t.Fatalf("append after trimming every event: %+v, %v", r, err)
	}
	wantVersions(t, "Forward(241) after an append", collect(t, s.Forward(ctx, id, 241)), 241, 243)
	wantVersions(t, "Backward(0) after an append", collect(t, s.Backward(ctx, id, 0)), 243, 241)
	if evs := rawRows(t, tbl, "p", "s~ev~"); len(evs) != 4 {
		t.Fatalf("event rows: %v, want the tombstone and 241..243", evs)
	}
	// A new stream and a stream without events: Trim(1) is nothing to do.
	if err := s.Trim(ctx, stream.ID{PartitionKey: "q"}, 1); err != nil {
		t.Fatalf("Trim(1) of an empty stream: %v", err)
	}
	if err := s.Trim(ctx, stream.ID{PartitionKey: "q"}, 2); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Fatalf("Trim(2) of an empty stream: %v", err)
	}
}

// killWrites fails every write after the first `after` transactions
// ($batch requests), as if the process died there.
type killWrites struct {
	after int32
	seen  atomic.Int32
}

func (k *killWrites) Do(req *policy.Request) (*http.Response, error) {
	r := req.Raw()
	if r.Method != http.MethodGet && (!strings.HasSuffix(r.URL.Path, "$batch") || k.seen.Add(1) > k.after) {
		return nil, errors.New("killed")
	}
	return req.Next()
}

// TestTrimResume: a Trim killed after its first transaction (the
// tombstone with the delete of the version below the start) or among its
// deletes leaves a stream that reads correctly (a read from below the
// start never reaches the start: it ends in ErrTrimmed after the events
// still there, and Backward stops at the start), and running Trim again,
// from another Store (another process), with the same before or 1,
// finishes the deletes.
func TestTrimResume(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	s, tbl := newStore(t, acct, &stream.Options{PageSize: 25})
	for _, c := range []struct {
		name     string
		prefix   string
		after    int32 // transactions Trim sends before it is killed
		resume   int64 // the before of the Trim run again
		leftover int   // event rows left below the start after the kill
	}{
		{"killed after the tombstone", "a", 1, 120, 117},   // 2..118 left
		{"killed among the deletes", "b", 2, 1, 117 - 100}, // which 17, Cosmos DB's order says
	} {
		t.Run(c.name, func(t *testing.T) {
			id := stream.ID{PartitionKey: "p", Prefix: c.prefix}
			var v int64
			for i := range 3 { // versions 1..150, with ids but the last 3
				r, err := s.Append(ctx, id, v, withIDs(placed(49), fmt.Sprintf("a%d", i)))
				if err != nil {
					t.Fatal(err)
				}
				v = r.Last
			}
			if r, err := s.Append(ctx, id, v, placed(3)); err != nil || r.Last != 150 {
				t.Fatalf("append: %+v, %v", r, err)
			}
			// The process that dies: its own Account, whose writes fail
			// after c.after transactions.
			kill := &killWrites{after: c.after}
			dyingAcct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{
				PerRetryPolicies: []policy.Policy{kill}, Retry: policy.RetryOptions{MaxRetries: -1}}})
			dyingTbl, err := tablekit.OpenTable[tablekit.Entity](dyingAcct, tbl.Name(), nil)
			if err != nil {
				t.Fatal(err)
			}
			dying, err := stream.NewStore(dyingTbl, registry(t), &stream.Options{Retry: tablekit.RetryPolicy{MaxAttempts: 1}})
			if err != nil {
				t.Fatal(err)
			}
			if err := dying.Trim(ctx, id, 120); err == nil {
				t.Fatal("the killed Trim returned no error")
			}
			if start, err := s.Start(ctx, id); err != nil || start != 120 {
				t.Fatalf("Start: %d, %v", start, err)
			}
			if evs := rawRows(t, tbl, "p", c.prefix+"~ev~"); len(evs) != 1+c.leftover+31 {
				t.Fatalf("event rows after the kill: %d, want the tombstone, %d below the start and 31", len(evs), c.leftover)
			}
			got, err := readUntil(s.Forward(ctx, id, 1))
			wantTrimmed(t, "Forward(1)", err, id, 1, 120)
			if len(got) != 0 {
				t.Fatalf("Forward(1) yielded %v", got)
			}
			// Below the start, the events still there, in order, then the
			// error (or the read ends short of the gone ones): never past
			// the start.
			for _, from := range []int64{2, 50, 100, 110, 118} {
				got, err = readUntil(s.Forward(ctx, id, from))
				for i, v := range got {
					if v != from+int64(i) || v >= 120 {
						t.Fatalf("Forward(%d) yielded %v", from, got)
					}
				}
				if err != nil {
					wantTrimmed(t, fmt.Sprintf("Forward(%d)", from), err, id, from+int64(len(got)), 120)
				}
				if c.after == 1 && (err == nil || int64(len(got)) != 119-from) {
					t.Fatalf("Forward(%d) with every event below the start there but 119: %v, %v, want %d..118 and ErrTrimmed", from, got, err, from)
				}
			}
			wantVersions(t, "Backward(0)", collect(t, s.Backward(ctx, id, 0)), 150, 120)
			wantNone(t, "Backward(110)", collect(t, s.Backward(ctx, id, 110)))

			if err := s.Trim(ctx, id, c.resume); err != nil {
				t.Fatal(err)
			}
			if evs := rawRows(t, tbl, "p", c.prefix+"~ev~"); len(evs) != 32 || evs[1] != c.prefix+"~ev~0000000120" {
				t.Fatalf("event rows after the Trim ran again: %d, from %v", len(evs), evs[:2])
			}
			got, err = readUntil(s.Forward(ctx, id, 110))
			wantTrimmed(t, "Forward after the Trim ran again", err, id, 110, 120)
			if len(got) != 0 {
				t.Fatalf("Forward(110) yielded %v", got)
			}
			wantVersions(t, "Forward(120)", collect(t, s.Forward(ctx, id, 120)), 120, 150)
			if ids := rawRows(t, tbl, "p", c.prefix+"~id~"); len(ids) != 147 {
				t.Fatalf("id rows: %d, want 147", len(ids))
			}
		})
	}
}

// TestTrimDropIDs: with Options.DropTrimmedIDs, Trim deletes the id rows
// of the events it drops, in their events' transactions: nothing is left
// per trimmed event, and a repeat of a trimmed append is no longer
// recognised (the documented price).
func TestTrimDropIDs(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	s, tbl := newStore(t, acct, &stream.Options{DropTrimmedIDs: true})
	id := stream.ID{PartitionKey: "p", Prefix: "o"}
	var v int64
	for i := range 4 { // versions 1..120, ids "a<i>-<k>"
		r, err := s.Append(ctx, id, v, withIDs(placed(30), fmt.Sprintf("a%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		v = r.Last
	}
	m := acct.Meter()
	before := m.Snapshot()
	if err := s.Trim(ctx, id, 91); err != nil {
		t.Fatal(err)
	}
	// 1 query (version) + 1 read (row 1) + 1 read (row 90, for its id) + 1
	// transaction (tombstone, event 90 and 2 id rows) + 1 query (88 keys)
	// + 2 transactions (176 deletes) + 1 query (none left).
	if c := m.Snapshot().Sub(before); c.Count("table", "Transaction") != 3 || c.Total() < 8 || (c.Total() != 8 && !testenv.PagesAsAzure()) {
		t.Errorf("Trim of 90 events and their ids cost %v, want 8 requests, 3 of them transactions", c)
	}
	ids := rawRows(t, tbl, "p", "o~id~")
	if len(ids) != 30 {
		t.Fatalf("id rows after Trim(91): %d (%v...), want 30 (versions 91..120)", len(ids), ids[:min(3, len(ids))])
	}
	for _, rk := range ids {
		e, err := tbl.Get(ctx, "p", rk)
		if err != nil || e.Properties["Version"].(int64) < 91 {
			t.Fatalf("id row %s: %v, %v", rk, e.Properties, err)
		}
	}
	if evs := rawRows(t, tbl, "p", "o~ev~"); len(evs) != 31 {
		t.Fatalf("event rows: %d, want the tombstone and 91..120", len(evs))
	}
	// A repeat of an append at or above the start is still recognised; one
	// whose ids were dropped is not: at an old version it conflicts, at the
	// current one it is appended again; one the start cuts through is
	// refused.
	if r, err := s.Append(ctx, id, 0, withIDs(placed(30), "a3")); err != nil || !r.Replayed || r.First != 91 {
		t.Fatalf("repeat of a3 (91..120): %+v, %v", r, err)
	}
	if err := s.Trim(ctx, id, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, id, 0, withIDs(placed(30), "a3")); !errors.Is(err, stream.ErrPartlyApplied) {
		t.Fatalf("repeat of a3 after Trim(100) dropped the ids of 91..99: %v, want ErrPartlyApplied", err)
	}
	var ce *stream.ConflictError
	if _, err := s.Append(ctx, id, 30, withIDs(placed(30), "a1")); !errors.As(err, &ce) {
		t.Fatalf("repeat of a1 at its version after its ids were dropped: %v, want a conflict", err)
	}
	if r, err := s.Append(ctx, id, stream.AnyVersion, withIDs(placed(30), "a1")); err != nil || r.Replayed || r.First != 121 {
		t.Fatalf("repeat of a1 at AnyVersion after its ids were dropped: %+v, %v, want it appended again", r, err)
	}
}

// TestTrimWhileReading: a read that meets rows Trim deleted after it
// started ends in ErrTrimmed (Forward, at the first version gone) or at
// the start (Backward), after the versions it read, in order.
func TestTrimWhileReading(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	s, _ := newStore(t, acct, &stream.Options{PageSize: 10})
	id := stream.ID{PartitionKey: "p"}
	if _, err := s.Append(ctx, id, 0, placed(60)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, id, 60, placed(40)); err != nil {
		t.Fatal(err)
	}
	var got []int64
	var end error
	for ev, err := range s.Forward(ctx, id, 1) {
		if err != nil {
			end = err
			break
		}
		got = append(got, ev.Version)
		if ev.Version == 5 {
			if err := s.Trim(ctx, id, 50); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantTrimmed(t, "Forward across a Trim", end, id, 11, 50)
	if fmt.Sprint(got) != fmt.Sprint([]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
		t.Fatalf("Forward across a Trim read %v, want 1..10 (its first range)", got)
	}
	got = nil
	for ev, err := range s.Backward(ctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Version)
		if ev.Version == 95 {
			if err := s.Trim(ctx, id, 93); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(got) != 10 || got[0] != 100 || got[9] != 91 {
		t.Fatalf("Backward across a Trim read %v, want 100..91 (its first range)", got)
	}
}

// TestTrimWhileAppending: 8 appenders (each its own Account and Store, as
// separate processes) append events with ids to one stream, a fifth of
// their acknowledged appends sent again, while a trimmer repeatedly trims
// the stream to a point moving behind its version (sometimes every event)
// and 2 readers read it forward from their last version (one at the
// stream's pace, one slower, which the trims overtake). Every event at
// or above the final start is there exactly once, at the version its
// append was acknowledged at; every acknowledged event below it left its
// id row with its version; repeats come back Replayed with the first
// versions, trimmed or not; readers see versions in order or ErrTrimmed
// (and go on from its Start), never another error; the start never moves
// back; the rows are the tombstone and the events from the start.
func TestTrimWhileAppending(t *testing.T) {
	ctx := context.Background()
	name := testenv.CreateTable(t, testenv.Account(t, nil))
	open := func() *stream.Store {
		tbl, err := tablekit.OpenTable[tablekit.Entity](testenv.Account(t, nil), name, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := stream.NewStore(tbl, registry(t), &stream.Options{PageSize: 10})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	id := stream.ID{PartitionKey: "p", Prefix: "s"}
	const appenders, perAppender = 8, 20
	var mu sync.Mutex
	acked := map[string]int64{} // event id -> version
	var bad []string
	violate := func(format string, args ...any) {
		mu.Lock()
		bad = append(bad, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	var appending sync.WaitGroup
	for w := range appenders {
		s := open()
		appending.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 37))
			for j := range perAppender {
				evs := make([]stream.Event, 1+rnd.IntN(3))
				for k := range evs {
					evs[k] = stream.Event{ID: fmt.Sprintf("w%d-%d-%d", w, j, k), Data: Placed{Item: fmt.Sprintf("w%d-%d-%d", w, j, k)}}
				}
				expected, err := s.Version(ctx, id)
				if err != nil {
					violate("w%d: Version: %v", w, err)
					return
				}
				var r stream.Result
				for {
					r, err = s.Append(ctx, id, expected, evs)
					var ce *stream.ConflictError
					if errors.As(err, &ce) && ce.Current >= 0 {
						expected = ce.Current
						continue
					}
					break
				}
				if err != nil || r.Replayed || int(r.Last-r.First+1) != len(evs) {
					violate("w%d-%d: %+v, %v", w, j, r, err)
					return
				}
				mu.Lock()
				for k, ev := range evs {
					acked[ev.ID] = r.First + int64(k)
				}
				mu.Unlock()
				if rnd.IntN(5) == 0 { // the acknowledgement was lost: send it again
					again := stream.AnyVersion
					if rnd.IntN(2) == 0 {
						again = expected
					}
					if r2, err := s.Append(ctx, id, again, evs); err != nil || !r2.Replayed || r2.First != r.First || r2.Last != r.Last {
						violate("w%d-%d sent again at %d: %+v, %v; first acknowledged as %d..%d", w, j, again, r2, err, r.First, r.Last)
					}
				}
			}
		})
	}
	done := make(chan struct{})
	trimmed := make(chan struct{}, 1) // a Trim returned
	var others sync.WaitGroup
	trims, maxBefore := 0, int64(1)
	trimmer := open()
	others.Go(func() {
		rnd := rand.New(rand.NewPCG(99, 37))
		for {
			select {
			case <-done:
				return
			default:
			}
			v, err := trimmer.Version(ctx, id)
			if err != nil {
				violate("trimmer: Version: %v", err)
				return
			}
			before := max(1, v+1-int64(rnd.IntN(8)))
			if err := trimmer.Trim(ctx, id, before); err != nil {
				violate("trimmer: Trim(%d) at version %d: %v", before, v, err)
				return
			}
			start, err := trimmer.Start(ctx, id)
			if err != nil || start < before || start < maxBefore {
				violate("trimmer: Start after Trim(%d): %d, %v (highest before so far %d)", before, start, err, maxBefore)
			}
			mu.Lock()
			trims++
			maxBefore = max(maxBefore, before)
			mu.Unlock()
			select {
			case trimmed <- struct{}{}:
			default:
			}
		}
	})
	reads, trimmedReads := 0, 0
	for r := range 2 {
		rs := open()
		others.Go(func() {
			next := int64(1)
			for {
				if r == 1 { // the slow reader reads after each Trim
					select {
					case <-done:
						return
					case <-trimmed:
					}
				}
				select {
				case <-done:
					return
				default:
				}
				n := 0
				for ev, err := range rs.Forward(ctx, id, next) {
					if n++; r == 1 && n > 3 {
						break // the slow reader: 3 events per Trim, so the trims overtake it
					}
					var te *stream.TrimmedError
					switch {
					case errors.As(err, &te):
						if te.From != next || te.Start <= next {
							violate("reader %d: %v at version %d", r, err, next)
						}
						mu.Lock()
						trimmedReads++
						mu.Unlock()
						next = te.Start
					case err != nil:
						violate("reader %d: %v", r, err)
						return
					case ev.Version != next:
						violate("reader %d: version %d, want %d", r, ev.Version, next)
						return
					default:
						next++
						continue
					}
					break
				}
				mu.Lock()
				reads++
				mu.Unlock()
			}
		})
	}
	appending.Wait()
	close(done)
	others.Wait()
	for _, b := range bad {
		t.Error(b)
	}
	if t.Failed() {
		return
	}
	// The final state.
	s := open()
	tbl := s.Table()
	n, err := s.Version(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	start, err := s.Start(ctx, id)
	if err != nil || start < maxBefore {
		t.Fatalf("final start %d (%v), below the highest Trim's %d", start, err, maxBefore)
	}
	evs := collect(t, s.Forward(ctx, id, start))
	wantVersions(t, "Forward from the start", evs, start, n)
	wantVersions(t, "Backward", collect(t, s.Backward(ctx, id, 0)), n, start)
	seen := map[string]int64{}
	for _, ev := range evs {
		if ev.ID != ev.Data.(Placed).Item {
			t.Errorf("version %d: id %s holds event %s", ev.Version, ev.ID, ev.Data.(Placed).Item)
		}
		if w, dup := seen[ev.ID]; dup {
			t.Errorf("event %s at versions %d and %d", ev.ID, w, ev.Version)
		}
		seen[ev.ID] = ev.Version
	}
	idRows, err := tablekit.Collect(tbl.Query(ctx, tablekit.RowKeyPrefix("p", "s~id~"), &tablekit.QueryOptions{Select: []string{"Version"}}), 0)
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]int64{}
	for _, e := range idRows {
		recorded[strings.TrimPrefix(e.RowKey, "s~id~")] = e.Properties["Version"].(int64)
	}
	if int64(len(acked)) != n || len(recorded) != len(acked) {
		t.Errorf("%d events acknowledged, %d id rows, stream at version %d", len(acked), len(recorded), n)
	}
	for eid, v := range acked {
		if recorded[eid] != v {
			t.Errorf("event %s acknowledged at version %d, its id row says %d", eid, v, recorded[eid])
		}
		if got, ok := seen[eid]; v >= start && (!ok || got != v) {
			t.Errorf("event %s acknowledged at version %d (start %d): found at %d (%v)", eid, v, start, got, ok)
		}
	}
	if rows := rawRows(t, tbl, "p", "s~ev~"); int64(len(rows)) != n-start+2 {
		t.Errorf("%d event rows, want the tombstone and versions %d..%d", len(rows), start, n)
	}
	t.Logf("%d appenders × %d appends: %d events, start %d after %d trims; %d forward reads alongside, %d ended in ErrTrimmed", appenders, perAppender, n, start, trims, reads, trimmedReads)
}
