package stream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/stream"
)

// The events of the tests: an order's life. An event type needs no key
// fields (Placed, as in the package doc); one that has them (Shipped) gets
// its row's keys on reads.
type Placed struct {
	Item  string `table:"Item"`
	Count int    `table:"Count"`
}

type Shipped struct {
	PK      string    `table:",pk"`
	RK      string    `table:",rk"`
	Carrier string    `table:"Carrier"`
	At      time.Time `table:"At"`
}

// Snapshot is an extra row written with an append.
type Snapshot struct {
	PK      string `table:",pk"`
	RK      string `table:",rk"`
	Version int64  `table:"Version"`
}

func registry(t testing.TB) *tablekit.Registry {
	t.Helper()
	reg := &tablekit.Registry{}
	if err := tablekit.Register[Placed](reg, "Placed", 1); err != nil {
		t.Fatal(err)
	}
	if err := tablekit.Register[Shipped](reg, "Shipped", 1); err != nil {
		t.Fatal(err)
	}
	return reg
}

// newStore returns a Store on a new table of acct, and the table.
func newStore(t testing.TB, acct *tablekit.Account, opts *stream.Options) (*stream.Store, *tablekit.Table[tablekit.Entity]) {
	t.Helper()
	tbl := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	s, err := stream.NewStore(tbl, registry(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, tbl
}

func placed(n int) []stream.Event {
	evs := make([]stream.Event, n)
	for i := range evs {
		evs[i] = stream.Event{Data: Placed{Item: fmt.Sprintf("item%d", i), Count: i}}
	}
	return evs
}

func withIDs(evs []stream.Event, prefix string) []stream.Event {
	for i := range evs {
		evs[i].ID = fmt.Sprintf("%s-%d", prefix, i)
	}
	return evs
}

func collect(t testing.TB, seq func(func(stream.RecordedEvent, error) bool)) []stream.RecordedEvent {
	t.Helper()
	var out []stream.RecordedEvent
	for ev, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func versions(evs []stream.RecordedEvent) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.Version
	}
	return out
}

func wantVersions(t testing.TB, what string, got []stream.RecordedEvent, lo, hi int64) {
	t.Helper()
	step := int64(1)
	if lo > hi {
		step = -1
	}
	var want []int64
	for v := lo; v != hi+step; v += step {
		want = append(want, v)
	}
	if fmt.Sprint(versions(got)) != fmt.Sprint(want) {
		t.Fatalf("%s: versions %v, want %v", what, versions(got), want)
	}
}

func wantNone(t testing.TB, what string, got []stream.RecordedEvent) {
	t.Helper()
	if len(got) != 0 {
		t.Fatalf("%s: versions %v, want none", what, versions(got))
	}
}

// TestAppendAndRead appends to a new stream and reads it forward and
// backward, paged, with the events decoded to their registered types.
func TestAppendAndRead(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	s, _ := newStore(t, acct, &stream.Options{PageSize: 7})
	id := stream.ID{PartitionKey: "order-1"}
	if v, err := s.Version(ctx, id); err != nil || v != 0 {
		t.Fatalf("Version of a new stream: %d, %v", v, err)
	}
	r, err := s.Append(ctx, id, 0, placed(20))
	if err != nil || r.First != 1 || r.Last != 20 || r.Replayed {
		t.Fatalf("first append: %+v, %v", r, err)
	}
	at := time.Now()
	r, err = s.Append(ctx, id, 20, []stream.Event{{Data: Shipped{Carrier: "DHL", At: at.UTC().Truncate(time.Millisecond)}}, {Data: Placed{Item: "late"}}})
	if err != nil || r.First != 21 || r.Last != 22 {
		t.Fatalf("second append: %+v, %v", r, err)
	}
	if v, err := s.Version(ctx, id); err != nil || v != 22 {
		t.Fatalf("Version: %d, %v", v, err)
	}
	all := collect(t, s.Forward(ctx, id, 0))
	wantVersions(t, "Forward(0)", all, 1, 22)
	if p, ok := all[3].Data.(Placed); !ok || p.Item != "item3" || p.Count != 3 {
		t.Fatalf("event 4: %#v", all[3].Data)
	}
	if sh, ok := all[20].Data.(Shipped); !ok || sh.Carrier != "DHL" || !sh.At.Equal(at.UTC().Truncate(time.Millisecond)) || sh.PK != "order-1" || sh.RK != "~ev~0000000021" {
		t.Fatalf("event 21: %#v", all[20].Data)
	}
	if all[3].Kind != "Placed" || all[20].Kind != "Shipped" {
		t.Fatalf("kinds of events 4 and 21: %q, %q", all[3].Kind, all[20].Kind)
	}
	if all[0].Time.IsZero() || all[0].ID != "" {
		t.Fatalf("event 1: time %v, id %q", all[0].Time, all[0].ID)
	}
	wantVersions(t, "Forward(15)", collect(t, s.Forward(ctx, id, 15)), 15, 22)
	wantNone(t, "Forward(23)", collect(t, s.Forward(ctx, id, 23)))
	wantVersions(t, "Backward(0)", collect(t, s.Backward(ctx, id, 0)), 22, 1)
	wantVersions(t, "Backward(9)", collect(t, s.Backward(ctx, id, 9)), 9, 1)
	wantVersions(t, "Backward(500)", collect(t, s.Backward(ctx, id, 500)), 22, 1)
	wantVersions(t, "Backward(23)", collect(t, s.Backward(ctx, id, 23)), 22, 1)
	// Stop early: a paged read stops where the loop does.
	n := 0
	for _, err := range s.Forward(ctx, id, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 10 {
			break
		}
	}
	// Other streams are empty.
	wantNone(t, "other stream", collect(t, s.Forward(ctx, stream.ID{PartitionKey: "order-2"}, 1)))
	wantNone(t, "other stream backward", collect(t, s.Backward(ctx, stream.ID{PartitionKey: "order-2"}, 0)))
}

// TestConflict: a wrong expected version is refused with the current
// version, and nothing is written.
func TestConflict(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	s, _ := newStore(t, acct, nil)
	id := stream.ID{PartitionKey: "p", Prefix: "order-7"}
	if _, err := s.Append(ctx, id, 0, placed(3)); err != nil {
		t.Fatal(err)
	}
	for _, expected := range []int64{0, 1, 2, 4, 10} {
		_, err := s.Append(ctx, id, expected, placed(2))
		var ce *stream.ConflictError
		if !errors.As(err, &ce) || !errors.Is(err, tablekit.ErrPreconditionFailed) {
			t.Fatalf("expected %d: %v, want a *ConflictError", expected, err)
		}
		if ce.Expected != expected || ce.Current != 3 || ce.Stream != id {
			t.Fatalf("expected %d: %+v", expected, ce)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("expected version %d, current 3", expected)) {
			t.Errorf("message: %v", err)
		}
	}
	wantVersions(t, "after conflicts", collect(t, s.Forward(ctx, id, 1)), 1, 3)
	if r, err := s.Append(ctx, id, 3, placed(1)); err != nil || r.Last != 4 {
		t.Fatalf("append at the current version: %+v, %v", r, err)
	}
}

// TestIdempotentAppend: an append repeated with the same ids returns the
// first result, whatever version it expects; partly recorded ids are
// refused; an id may not repeat in one append.
func TestIdempotentAppend(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	s, _ := newStore(t, acct, nil)
	id := stream.ID{PartitionKey: "p"}
	first, err := s.Append(ctx, id, 0, withIDs(placed(3), "cmd1"))
	if err != nil || first.First != 1 || first.Last != 3 || first.Replayed {
		t.Fatalf("first: %+v, %v", first, err)
	}
	if _, err := s.Append(ctx, id, 3, withIDs(placed(2), "cmd2")); err != nil {
		t.Fatal(err)
	}
	m := acct.Meter()
	for _, expected := range []int64{0, 3, 5, 9} {
		before := m.Snapshot()
		r, err := s.Append(ctx, id, expected, withIDs(placed(3), "cmd1"))
		if err != nil || r.First != 1 || r.Last != 3 || !r.Replayed {
			t.Fatalf("repeat expecting %d: %+v, %v", expected, r, err)
		}
		// 1 refused transaction + 1 read of the first id + 1 range read
		// (Azure may cut the read into more pages).
		if c := m.Snapshot().Sub(before); c.Total() < 3 || (c.Total() != 3 && !testenv.PagesAsAzure()) {
			t.Errorf("a repeat cost %d transactions (%v), want 3", c.Total(), c)
		}
	}
	// A prefix of an append is a repeat of those events.
	if r, err := s.Append(ctx, id, 5, withIDs(placed(2), "cmd1")); err != nil || r.First != 1 || r.Last != 2 || !r.Replayed {
		t.Fatalf("prefix repeat: %+v, %v", r, err)
	}
	// Partly recorded: cmd1-0 is recorded, cmd9-1 is not.
	partly := []stream.Event{{ID: "cmd1-0", Data: Placed{}}, {ID: "cmd9-1", Data: Placed{}}}
	if _, err := s.Append(ctx, id, 5, partly); !errors.Is(err, stream.ErrPartlyApplied) {
		t.Fatalf("partly applied (first recorded): %v", err)
	}
	partly = []stream.Event{{ID: "cmd9-0", Data: Placed{}}, {ID: "cmd1-1", Data: Placed{}}}
	if _, err := s.Append(ctx, id, 5, partly); !errors.Is(err, stream.ErrPartlyApplied) || !strings.Contains(err.Error(), `"cmd1-1" is recorded`) {
		t.Fatalf("partly applied (second recorded): %v", err)
	}
	// Out of order: both recorded, not in this order.
	swapped := []stream.Event{{ID: "cmd1-1", Data: Placed{}}, {ID: "cmd1-0", Data: Placed{}}}
	if _, err := s.Append(ctx, id, 5, swapped); !errors.Is(err, stream.ErrPartlyApplied) {
		t.Fatalf("swapped: %v", err)
	}
	// Across appends: cmd1-2 then cmd2-0 are consecutive but two appends'.
	across := []stream.Event{{ID: "cmd1-2", Data: Placed{}}, {ID: "cmd2-0", Data: Placed{}}}
	if r, err := s.Append(ctx, id, 5, across); err != nil || r.First != 3 || r.Last != 4 || !r.Replayed {
		// Both ids are recorded, consecutively and in this order: every
		// event of the append is there, which is what a repeat means.
		t.Fatalf("across appends: %+v, %v", r, err)
	}
	wantVersions(t, "stream", collect(t, s.Forward(ctx, id, 1)), 1, 5)
	evs := collect(t, s.Forward(ctx, id, 1))
	for i, want := range []string{"cmd1-0", "cmd1-1", "cmd1-2", "cmd2-0", "cmd2-1"} {
		if evs[i].ID != want {
			t.Errorf("version %d: id %q, want %q", i+1, evs[i].ID, want)
		}
	}
	// Refused before sending.
	before := m.Snapshot()
	for name, evs := range map[string][]stream.Event{
		"duplicate id": {{ID: "x", Data: Placed{}}, {ID: "x", Data: Placed{}}},
		"some ids":     {{ID: "x", Data: Placed{}}, {Data: Placed{}}},
		"ids after":    {{Data: Placed{}}, {ID: "x", Data: Placed{}}},
		"no data":      {{ID: "x"}},
		"unregistered": {{Data: struct{ A string }{"a"}}},
		"none":         nil,
	} {
		if _, err := s.Append(ctx, id, 5, evs); !errors.Is(err, tablekit.ErrInvalidInput) || !strings.HasPrefix(err.Error(), "stream: Store.Append: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if c := m.Snapshot().Sub(before); c.Total() != 0 {
		t.Errorf("refused appends sent %d requests (%v)", c.Total(), c)
	}
}

// TestExtraActions: extra actions join the append's transaction, return
// their ETags, fail it atomically, and are checked before sending.
func TestExtraActions(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	s, tbl := newStore(t, acct, nil)
	id := stream.ID{PartitionKey: "p", Prefix: "a"}
	snap := func(v int64) tablekit.Entity {
		e, err := tablekit.ToEntity(Snapshot{PK: "p", RK: "a-snapshot", Version: v})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	r, err := s.Append(ctx, id, 0, placed(2), tablekit.InsertAction(snap(2)))
	if err != nil || len(r.ETags) != 1 || r.ETags[0] == "" {
		t.Fatalf("append with a snapshot: %+v, %v", r, err)
	}
	// A snapshot update conditional on its ETag, in the same transaction.
	r, err = s.Append(ctx, id, 2, placed(1), tablekit.UpdateAction(snap(3), r.ETags[0]))
	if err != nil || r.Last != 3 {
		t.Fatalf("append updating the snapshot: %+v, %v", r, err)
	}
	// A stale snapshot ETag fails the whole append: the events are not
	// written, and the error's Index counts the extra actions.
	_, err = s.Append(ctx, id, 3, placed(1), tablekit.UpsertAction(snap(9)), tablekit.UpdateAction(tablekit.Entity{PartitionKey: "p", RowKey: "other"}, azcore.ETagAny))
	var te *tablekit.TransactionError
	if !errors.As(err, &te) || te.Index != 1 || !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("refused extra action: %v", err)
	}
	if v, _ := s.Version(ctx, id); v != 3 {
		t.Fatalf("version after a refused extra action: %d, want 3", v)
	}
	got, err := tbl.Get(ctx, "p", "a-snapshot")
	if err != nil || got.Properties["Version"] != int64(3) {
		t.Fatalf("snapshot: %v, %v", got.Properties, err)
	}
	m := acct.Meter()
	before := m.Snapshot()
	for name, a := range map[string]tablekit.Action[tablekit.Entity]{
		"other partition": tablekit.UpsertAction(tablekit.Entity{PartitionKey: "q", RowKey: "x"}),
		"stream's row":    tablekit.UpsertAction(tablekit.Entity{PartitionKey: "p", RowKey: "a~ev~0000000001"}),
		"other stream's":  tablekit.DeleteAction(tablekit.Entity{PartitionKey: "p", RowKey: "b~head~0000000001"}, azcore.ETagAny),
		"partition's":     tablekit.UpsertAction(tablekit.Entity{PartitionKey: "p", RowKey: "~id~x"}),
		"zero action":     {},
	} {
		if _, err := s.Append(ctx, id, 3, placed(1), a); !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if c := m.Snapshot().Sub(before); c.Total() != 0 {
		t.Errorf("refused appends sent %d requests (%v)", c.Total(), c)
	}
}

// TestLimits: appends over a transaction's limits are refused before
// anything is sent, with an error naming the limit.
func TestLimits(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	s, _ := newStore(t, acct, nil)
	id := stream.ID{PartitionKey: "p"}
	m := acct.Meter()
	before := m.Snapshot()
	big := strings.Repeat("x", 30_000) // 60,000 bytes of UTF-16
	huge := make([]stream.Event, 80)
	for i := range huge { // 80 × 90,000 bytes of JSON
		huge[i] = stream.Event{Data: tablekit.Entity{Properties: map[string]any{"A": big, "B": big, "C": big}}}
	}
	txLimit := "<= 4 MiB per transaction"
	if testenv.Service() == tablekit.ServiceCosmosDB {
		txLimit = "<= 2 MB per transaction"
	}
	for _, c := range []struct {
		name, limit string
		expected    int64
		events      []stream.Event
		sentinel    error
	}{
		{"99 events on a new stream", "<= 100 actions", 0, placed(100), tablekit.ErrTooLarge},
		{"99 events on a stream", "<= 100 actions", 1, placed(99), tablekit.ErrTooLarge},
		{"50 events with ids", "<= 100 actions", 0, withIDs(placed(50), "x"), tablekit.ErrTooLarge},
		{"4 MiB", txLimit, 0, huge, tablekit.ErrTooLarge},
		{"one entity over 1 MiB", "1 MiB", 0, []stream.Event{{Data: tablekit.Entity{Properties: map[string]any{
			"A": big, "B": big, "C": big, "D": big, "E": big, "F": big, "G": big, "H": big, "I": big, "J": big, "K": big, "L": big, "M": big, "N": big, "O": big, "P": big, "Q": big, "R": big}}}}, tablekit.ErrTooLarge},
		{"last version", "versions <= 9,999,999,999", 9_999_999_999, placed(1), tablekit.ErrTooLarge},
		{"bad prefix", "", 0, placed(1), tablekit.ErrInvalidInput},
	} {
		sid := id
		if c.name == "bad prefix" {
			sid.Prefix = "a~b"
		}
		_, err := s.Append(ctx, sid, c.expected, c.events)
		if !errors.Is(err, c.sentinel) || !strings.Contains(err.Error(), c.limit) {
			t.Errorf("%s: %v, want %v naming %q", c.name, err, c.sentinel, c.limit)
		}
	}
	if c := m.Snapshot().Sub(before); c.Total() != 0 {
		t.Errorf("refused appends sent %d requests (%v)", c.Total(), c)
	}
	// At capacity: 99 events on a new stream, 98 after, 49 with ids.
	if r, err := s.Append(ctx, id, 0, placed(99)); err != nil || r.Last != 99 {
		t.Fatalf("99 events: %+v, %v", r, err)
	}
	if r, err := s.Append(ctx, id, 99, placed(98)); err != nil || r.Last != 197 {
		t.Fatalf("98 events: %+v, %v", r, err)
	}
	if r, err := s.Append(ctx, id, 197, withIDs(placed(49), "y")); err != nil || r.Last != 246 {
		t.Fatalf("49 events with ids: %+v, %v", r, err)
	}
	wantVersions(t, "stream", collect(t, s.Forward(ctx, id, 1)), 1, 246)
}

// TestVirtualPartitions: streams sharing a partition under prefixes (one
// of them the empty prefix) never see each other's events, and one
// transaction can append to one while writing a row of another's view.
func TestVirtualPartitions(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	s, _ := newStore(t, acct, &stream.Options{PageSize: 3})
	ids := []stream.ID{{PartitionKey: "p"}, {PartitionKey: "p", Prefix: "a"}, {PartitionKey: "p", Prefix: "ab"}, {PartitionKey: "p", Prefix: "b"}}
	for round := range 3 {
		for i, id := range ids {
			n := i + 1
			evs := withIDs(placed(n), fmt.Sprintf("r%d", round)) // the same ids in every stream
			if _, err := s.Append(ctx, id, int64(round*n), evs); err != nil {
				t.Fatalf("%v round %d: %v", id, round, err)
			}
		}
	}
	for i, id := range ids {
		n := int64(3 * (i + 1))
		wantVersions(t, fmt.Sprint(id), collect(t, s.Forward(ctx, id, 1)), 1, n)
		wantVersions(t, fmt.Sprint(id)+" backward", collect(t, s.Backward(ctx, id, 0)), n, 1)
		if v, err := s.Version(ctx, id); err != nil || v != n {
			t.Errorf("%v: version %d, %v", id, v, err)
		}
	}
}

// TestAppendCost: an append is 1 transaction, with or without ids, and
// with extra actions; reads cost one query per PageSize versions.
func TestAppendCost(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	s, _ := newStore(t, acct, &stream.Options{PageSize: 10})
	m := acct.Meter()
	measure := func(what string, want int64, fn func() error) {
		t.Helper()
		before := m.Snapshot()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		c := m.Snapshot().Sub(before)
		t.Logf("%-44s %d (%v)", what, c.Total(), c)
		// A service that pages as Azure does may answer a query in more
		// pages than its results fill: only the queries may be more.
		if c.Total() != want && (!testenv.PagesAsAzure() || c.Total() < want || c.Total()-c.Count("table", "QueryEntities") > want) {
			t.Errorf("%s cost %d transactions (%v), want %d", what, c.Total(), c, want)
		}
	}
	id := stream.ID{PartitionKey: "p"}
	measure("Append, new stream, 99 events", 1, func() error { _, err := s.Append(ctx, id, 0, placed(99)); return err })
	measure("Append, 49 events with ids + 0 extra", 1, func() error { _, err := s.Append(ctx, id, 99, withIDs(placed(49), "a")); return err })
	measure("Append, 1 event + 1 extra", 1, func() error {
		_, err := s.Append(ctx, id, 148, placed(1), tablekit.UpsertAction(tablekit.Entity{PartitionKey: "p", RowKey: "view"}))
		return err
	})
	measure("Append, conflict (+1 head query)", 2, func() error {
		_, err := s.Append(ctx, id, 3, placed(1))
		if errors.Is(err, tablekit.ErrPreconditionFailed) {
			return nil
		}
		return fmt.Errorf("want a conflict: %v", err)
	})
	measure("Append at AnyVersion (+1 head query)", 2, func() error {
		r, err := s.Append(ctx, id, stream.AnyVersion, placed(2))
		if err == nil && (r.First != 150 || r.Last != 151) {
			return fmt.Errorf("appended at %d..%d, want 150..151", r.First, r.Last)
		}
		return err
	})
	measure("Check, and Append refused by it", 0, func() error {
		if err := s.Check(id, stream.AnyVersion, placed(2)); err != nil {
			return fmt.Errorf("Check of a valid append: %v", err)
		}
		if err := s.Check(id, stream.AnyVersion, placed(99)); !errors.Is(err, tablekit.ErrTooLarge) {
			return fmt.Errorf("Check of 99 events at AnyVersion (2 head actions): %v, want ErrTooLarge", err)
		}
		if _, err := s.Append(ctx, id, stream.AnyVersion, placed(99)); !errors.Is(err, tablekit.ErrTooLarge) {
			return fmt.Errorf("99 events at AnyVersion: %v, want ErrTooLarge", err)
		}
		if err := s.Check(id, -2, placed(1)); !errors.Is(err, tablekit.ErrInvalidInput) {
			return fmt.Errorf("Check of version -2: %v, want ErrInvalidInput", err)
		}
		return nil
	})
	measure("Version", 1, func() error { _, err := s.Version(ctx, id); return err })
	measure("Start", 1, func() error {
		if start, err := s.Start(ctx, id); err != nil || start != 1 {
			return fmt.Errorf("start %d, %v", start, err)
		}
		return nil
	})
	measure("Forward over 151 events, 10 per page", 16, func() error {
		for _, err := range s.Forward(ctx, id, 1) {
			if err != nil {
				return err
			}
		}
		return nil
	})
	measure("Backward from the end, 10 per page", 17, func() error {
		for _, err := range s.Backward(ctx, id, 0) {
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// TestNewStore refuses what it cannot work with.
func TestNewStore(t *testing.T) {
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	reg := registry(t)
	for name, err := range map[string]error{
		"nil table":    second(stream.NewStore(nil, reg, nil)),
		"nil registry": second(stream.NewStore(tbl, nil, nil)),
		"kind in key":  second(stream.NewStore(tbl, &tablekit.Registry{KindInRowKey: true}, nil)),
		"page size":    second(stream.NewStore(tbl, reg, &stream.Options{PageSize: 1001})),
		"retry":        second(stream.NewStore(tbl, reg, &stream.Options{Retry: tablekit.RetryPolicy{MaxAttempts: -1}})),
	} {
		if !errors.Is(err, tablekit.ErrInvalidInput) || !strings.HasPrefix(err.Error(), "stream: NewStore: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestMissingRow: a stream one of whose event rows was deleted outside the
// Store is reported as such (a *tablekit.DecodeError naming the version),
// not read past.
func TestMissingRow(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	s, tbl := newStore(t, acct, &stream.Options{PageSize: 10})
	id := stream.ID{PartitionKey: "p", Prefix: "s"}
	if _, err := s.Append(ctx, id, 0, placed(5)); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Delete(ctx, "p", "s~ev~0000000003", azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	for name, seq := range map[string]func(func(stream.RecordedEvent, error) bool){
		"Forward": s.Forward(ctx, id, 1), "Backward": s.Backward(ctx, id, 0),
	} {
		var got []int64
		var de *tablekit.DecodeError
		for ev, err := range seq {
			if err != nil {
				if !errors.As(err, &de) || !strings.Contains(err.Error(), "version 3 is missing") {
					t.Errorf("%s: %v", name, err)
				}
				break
			}
			got = append(got, ev.Version)
		}
		if de == nil || len(got) != 2 {
			t.Errorf("%s read %v and no error naming version 3", name, got)
		}
	}
}
