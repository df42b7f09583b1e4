package stream_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testenv"
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
	if c := m.Snapshot().Sub(before); c.Total() != 6 || c.Count("table", "Transaction") != 2 {
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
		from     int64 // a Forward below the start ...
		upTo     int64 // ... yields from..upTo, then ErrTrimmed
		leftover int   // event rows left below the start after the kill
	}{
		{"killed after the tombstone", "a", 1, 120, 100, 118, 117},
		{"killed among the deletes", "b", 2, 1, 105, 118, 17},
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
			// Below the start, the events still there, then the error:
			// never past the start.
			got, err = readUntil(s.Forward(ctx, id, c.from))
			wantTrimmed(t, fmt.Sprintf("Forward(%d)", c.from), err, id, c.upTo+1, 120)
			if int64(len(got)) != c.upTo-c.from+1 || got[0] != c.from || got[len(got)-1] != c.upTo {
				t.Fatalf("Forward(%d) yielded %v before the error, want %d..%d", c.from, got, c.from, c.upTo)
			}
			wantVersions(t, "Backward(0)", collect(t, s.Backward(ctx, id, 0)), 150, 120)
			wantNone(t, "Backward(110)", collect(t, s.Backward(ctx, id, 110)))

			if err := s.Trim(ctx, id, c.resume); err != nil {
				t.Fatal(err)
			}
			if evs := rawRows(t, tbl, "p", c.prefix+"~ev~"); len(evs) != 32 || evs[1] != c.prefix+"~ev~0000000120" {
				t.Fatalf("event rows after the Trim ran again: %d, from %v", len(evs), evs[:2])
			}
			got, err = readUntil(s.Forward(ctx, id, c.from))
			wantTrimmed(t, "Forward after the Trim ran again", err, id, c.from, 120)
			if len(got) != 0 {
				t.Fatalf("Forward(%d) yielded %v", c.from, got)
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
	if c := m.Snapshot().Sub(before); c.Total() != 8 || c.Count("table", "Transaction") != 3 {
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
