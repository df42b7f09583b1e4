package stream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
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
	_ = azcore.ETagAny
}
