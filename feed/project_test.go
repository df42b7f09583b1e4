package feed_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/stream"
)

// tagView is the tests' projection: one view row per stream partition
// ("orders"/<stream partition>), whose Tags property is the tags of its
// streams' events joined in fold order, and Count their number.
func tagView(t *testing.T, vt *tablekit.Table[tablekit.Entity]) *feed.Projector[tablekit.Entity] {
	t.Helper()
	p, err := feed.NewProjector(vt,
		func(c feed.Change) []feed.Row {
			return []feed.Row{{PartitionKey: "orders", RowKey: c.Stream.PartitionKey}}
		},
		func(v *tablekit.Entity, c feed.Change) error {
			s, _ := v.Properties["Tags"].(string)
			n, _ := v.Properties["Count"].(int64)
			v.Properties["Tags"] = strings.TrimPrefix(s+" "+c.Data.(Tagged).Tag, " ")
			v.Properties["Count"] = n + 1
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func viewRows(t *testing.T, vt *tablekit.Table[tablekit.Entity]) map[string]string {
	t.Helper()
	rows := map[string]string{}
	for e, err := range vt.Query(context.Background(), tablekit.Filter{}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		rows[e.RowKey] = fmt.Sprintf("%v (%v) %v", e.Properties["Tags"], e.Properties["Count"], e.Properties[feed.FoldedProperty])
	}
	return rows
}

// perStream renders viewRows' rows with each row's tags grouped by the
// stream they name ("<stream>-<n>"), in their order within the stream.
func perStream(rows map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		tags, rest, _ := strings.Cut(rows[k], " (")
		byStream := map[string][]string{}
		for tag := range strings.FieldsSeq(tags) {
			s, _, _ := strings.Cut(tag, "-")
			byStream[s] = append(byStream[s], tag)
		}
		fmt.Fprintf(&b, "%s: ", k)
		for _, s := range slices.Sorted(maps.Keys(byStream)) {
			fmt.Fprintf(&b, "%v ", byStream[s])
		}
		fmt.Fprintf(&b, "(%s\n", rest)
	}
	return b.String()
}

// TestProjectorSkipsByVersion: a change at or below the version the view
// row folded of its stream is skipped (a redelivery); two streams fold
// into one row, each with its own version.
func TestProjectorSkipsByVersion(t *testing.T) {
	acct := testenv.Account(t, nil)
	vt := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	p := tagView(t, vt)
	ctx := context.Background()
	a, b := stream.ID{PartitionKey: "o1"}, stream.ID{PartitionKey: "o1", Prefix: "x"}
	ch := func(id stream.ID, v int64, tag string) feed.Change {
		return feed.Change{Stream: id, Version: v, Data: Tagged{Tag: tag}}
	}
	for _, c := range []feed.Change{ch(a, 1, "a1"), ch(a, 2, "a2"), ch(a, 1, "a1"), ch(b, 1, "b1"), ch(a, 2, "a2"), ch(b, 1, "b1"), ch(a, 3, "a3")} {
		if err := p.Handle(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	want := `a1 a2 b1 a3 (4) {"s~o1~":3,"s~o1~x":1}`
	if got := viewRows(t, vt)["o1"]; got != want {
		t.Errorf("view row: %s, want %s", got, want)
	}
	m := acct.Meter()
	before := m.Snapshot()
	if err := p.Handle(ctx, ch(a, 2, "a2")); err != nil {
		t.Fatal(err)
	}
	if c := m.Snapshot().Sub(before); c.Total() != 1 || c.Count("table", "GetEntity") != 1 {
		t.Errorf("a skipped change cost %v, want 1 read", c)
	}
	before = m.Snapshot()
	if err := p.Handle(ctx, ch(a, 4, "a4")); err != nil {
		t.Fatal(err)
	}
	if c := m.Snapshot().Sub(before); c.Total() != 2 || c.Count("table", "UpdateEntity") != 1 {
		t.Errorf("a folded change cost %v, want 1 read + 1 update", c)
	}
	// A fold's error is the Handle's, and nothing is written.
	boom := errors.New("boom")
	pf, err := feed.NewProjector(vt, func(feed.Change) []feed.Row { return []feed.Row{{PartitionKey: "orders", RowKey: "o1"}} },
		func(*tablekit.Entity, feed.Change) error { return boom })
	if err != nil {
		t.Fatal(err)
	}
	if err := pf.Handle(ctx, ch(a, 5, "a5")); !errors.Is(err, boom) {
		t.Errorf("failing fold: %v", err)
	}
	// A fold that moves the row is refused.
	pm, err := feed.NewProjector(vt, func(feed.Change) []feed.Row { return []feed.Row{{PartitionKey: "orders", RowKey: "o1"}} },
		func(v *tablekit.Entity, _ feed.Change) error { v.RowKey = "elsewhere"; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Handle(ctx, ch(a, 5, "a5")); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("fold that changes the keys: %v", err)
	}
	if got := viewRows(t, vt)["o1"]; !strings.HasPrefix(got, "a1 a2 b1 a3 a4 (5)") {
		t.Errorf("view row after refused folds: %s", got)
	}
}

// TestRebuild: a view built from zero into a new table by a new
// subscription and Relay.Replay equals the view maintained all along,
// although the streams were clean (no marks) when it started.
func TestRebuild(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	v1 := testenv.OpenTable[tablekit.Entity](t, e.acct, nil)
	r1 := relay(t, e.f, feed.Subscription{Name: "view1", Handle: tagView(t, v1).Handle})
	ids := []stream.ID{{PartitionKey: "o1"}, {PartitionKey: "o1", Prefix: "x"}, {PartitionKey: "o2"}}
	for i, id := range ids {
		e.append(t, id, 0, fmt.Sprintf("%d-1", i), fmt.Sprintf("%d-2", i))
		round(t, r1, 1)
		e.append(t, id, 2, fmt.Sprintf("%d-3", i))
	}
	round(t, r1, 1)
	if m := e.allMarks(t); len(m) != 0 {
		t.Fatalf("marks left: %v", m)
	}
	v2 := testenv.OpenTable[tablekit.Entity](t, e.acct, nil)
	r2 := relay(t, e.f, feed.Subscription{Name: "view1", Handle: tagView(t, v1).Handle}, feed.Subscription{Name: "view2", Handle: tagView(t, v2).Handle})
	if res := round(t, r2, 2); res.Streams != 0 {
		t.Fatalf("round with nothing dirty: %+v", res)
	}
	res, err := r2.Replay(ctx, "view2") // in the term of r2's latest round

	if err != nil {
		t.Fatal(err)
	}
	if res.Streams != 3 || res.Delivered != 9 {
		t.Errorf("replay: %+v, want 3 streams, 9 changes", res)
	}
	// The rows equal, but for the order across streams (the relay keeps
	// none: a row folding two streams may interleave them otherwise).
	w, g := viewRows(t, v1), viewRows(t, v2)
	if perStream(w) != perStream(g) || len(w) != 2 {
		t.Errorf("rebuilt view:\n%v\nwant\n%v", g, w)
	}
	// Replay again: nothing new, nothing handed over.
	if res, err := r2.Replay(ctx, "view2"); err != nil || res.Delivered != 0 {
		t.Errorf("second replay: %+v, %v", res, err)
	}
	if _, err := r2.Replay(ctx, "nope"); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("replay of an unknown subscription: %v", err)
	}
}

// TestProjectorMovesBetweenRows: a change routed to two view rows (a
// rename in a view by last name takes the employee out of the old name's
// row and into the new one's) is folded into each once, although the fold
// fails for the second row the first time: the relay hands the change
// over again in its next round, the first row skips it, the second folds
// it. Costs are per row; a change with no row is not for the view, and a
// row without a PartitionKey is refused before anything is sent.
func TestProjectorMovesBetweenRows(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	vt := testenv.OpenTable[tablekit.Entity](t, e.acct, nil)
	// Tags: "hire <name>" or "rename <old> <new>".
	key := func(c feed.Change) []feed.Row {
		f := strings.Fields(c.Data.(Tagged).Tag)
		rows := []feed.Row{}
		for _, last := range f[1:] {
			rows = append(rows, feed.Row{PartitionKey: "bylast", RowKey: last})
		}
		return rows
	}
	boom := errors.New("boom")
	var mu sync.Mutex
	failed := false
	fold := func(v *tablekit.Entity, c feed.Change) error {
		f := strings.Fields(c.Data.(Tagged).Tag)
		members, _ := v.Properties["Members"].(string)
		folds, _ := v.Properties["Folds"].(int64)
		switch {
		case f[0] == "hire" || v.RowKey == f[2]:
			mu.Lock()
			fail := f[0] == "rename" && !failed
			failed = failed || f[0] == "rename"
			mu.Unlock()
			if fail {
				return boom // the second row, the first time
			}
			members = strings.TrimSpace(members + " " + c.Stream.PartitionKey)
		default: // the old name's row
			members = strings.Join(slices.DeleteFunc(strings.Fields(members), func(m string) bool { return m == c.Stream.PartitionKey }), " ")
		}
		v.Properties["Members"], v.Properties["Folds"] = members, folds+1
		return nil
	}
	p, err := feed.NewProjector(vt, key, fold)
	if err != nil {
		t.Fatal(err)
	}
	var srcMu sync.Mutex
	var src string // the changes' Source: the streams' table (Handle runs concurrently for the two streams)
	r := relay(t, e.f, feed.Subscription{Name: "bylast", Handle: func(ctx context.Context, c feed.Change) error {
		srcMu.Lock()
		src = c.Source
		srcMu.Unlock()
		return p.Handle(ctx, c)
	}})
	lisa, jon := stream.ID{PartitionKey: "lisa"}, stream.ID{PartitionKey: "jon"}
	e.append(t, lisa, 0, "hire Jones", "rename Jones Smith")
	e.append(t, jon, 0, "hire Jones")
	rows := func() map[string]string {
		t.Helper()
		got := map[string]string{}
		for row, err := range vt.Query(ctx, tablekit.Filter{}, nil) {
			if err != nil {
				t.Fatal(err)
			}
			got[row.RowKey] = fmt.Sprintf("%v (%v folds) %v", row.Properties["Members"], row.Properties["Folds"], row.Properties[feed.FoldedProperty])
		}
		return got
	}
	if _, err := r.Round(ctx, 1); !errors.Is(err, boom) {
		t.Fatalf("round with the fold failing on the second row: %v", err)
	}
	folded := func(format string) string { return strings.ReplaceAll(format, "S/", src+"/") }
	want := map[string]string{"Jones": folded(`jon (3 folds) {"S/s~jon~":1,"S/s~lisa~":2}`)}
	if got := rows(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the failure halfway:\n%v\nwant\n%v", got, want)
	}
	if v := e.checkpoint(t, "bylast", lisa); v != 1 {
		t.Errorf("checkpoint of lisa %d, want 1 (the rename not handled)", v)
	}
	if res := round(t, r, 1); res.Delivered != 1 || res.Cleared != 1 {
		t.Errorf("second round: %+v, want the rename delivered, lisa cleared", res)
	}
	want["Smith"] = folded(`lisa (1 folds) {"S/s~lisa~":2}`)
	if got := rows(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the retry (each row folded once):\n%v\nwant\n%v", got, want)
	}

	m := e.acct.Meter()
	cost := func(c feed.Change) (tablekit.MeterSnapshot, error) {
		before := m.Snapshot()
		err := p.Handle(ctx, c)
		return m.Snapshot().Sub(before), err
	}
	rename := feed.Change{Source: src, Stream: jon, Version: 2, Data: Tagged{Tag: "rename Jones Brown"}}
	if c, err := cost(rename); err != nil || c.Total() != 4 || c.Count("table", "GetEntity") != 2 || c.Count("table", "UpdateEntity") != 1 || c.Count("table", "InsertEntity") != 1 {
		t.Errorf("a change to 2 rows: %v, %v; want 2 reads, 1 update, 1 insert", c, err)
	}
	if c, err := cost(rename); err != nil || c.Total() != 2 || c.Count("table", "GetEntity") != 2 {
		t.Errorf("that change again: %v, %v; want 2 reads (both rows folded it)", c, err)
	}
	if c, err := cost(feed.Change{Source: src, Stream: jon, Version: 3, Data: Tagged{Tag: "leave"}}); err != nil || c.Total() != 0 {
		t.Errorf("a change with no row: %v, %v; want nothing sent", c, err)
	}
	empty, err := feed.NewProjector(vt, func(feed.Change) []feed.Row { return []feed.Row{{RowKey: "x"}} }, fold)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := func() (tablekit.MeterSnapshot, error) {
		before := m.Snapshot()
		err := empty.Handle(ctx, rename)
		return m.Snapshot().Sub(before), err
	}(); !errors.Is(err, tablekit.ErrInvalidInput) || c.Total() != 0 {
		t.Errorf("a row without a PartitionKey: %v (sent %v), want ErrInvalidInput, nothing sent", err, c)
	}
	want["Jones"], want["Brown"] = folded(` (4 folds) {"S/s~jon~":2,"S/s~lisa~":2}`), folded(`jon (1 folds) {"S/s~jon~":2}`)
	if got := rows(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after jon's rename:\n%v\nwant\n%v", got, want)
	}
}

// TestProjectorFedByTwoFeeds: one Projector fed by two feeds, whose
// stream tables hold streams of the same ids, folds every event of both
// once: its record of what a row folded names the stream's table as well
// as its id (Change.Source), so that one table's versions do not hide
// the other's.
func TestProjectorFedByTwoFeeds(t *testing.T) {
	acct := testenv.Account(t, nil)
	ctx := context.Background()
	vt := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	view := tagView(t, vt)
	id := stream.ID{PartitionKey: "o1"}
	var sources [2]string
	for i := range 2 {
		st := testenv.OpenTable[tablekit.Entity](t, acct, nil)
		store, err := stream.NewStore(st, registry(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		f, err := feed.New(store, testenv.OpenTable[tablekit.Entity](t, acct, nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Append(ctx, id, 0, []stream.Event{{Data: Tagged{Tag: fmt.Sprintf("t%d-1", i)}}, {Data: Tagged{Tag: fmt.Sprintf("t%d-2", i)}}}); err != nil {
			t.Fatal(err)
		}
		r := relay(t, f, feed.Subscription{Name: "view", Handle: func(ctx context.Context, c feed.Change) error {
			sources[i] = c.Source
			return view.Handle(ctx, c)
		}})
		round(t, r, 0)
	}
	if sources[0] == sources[1] || sources[0] == "" {
		t.Fatalf("the changes' sources: %q", sources)
	}
	// A change of either handed over again is skipped.
	for i, src := range sources {
		if err := view.Handle(ctx, feed.Change{Source: src, Stream: id, Version: 2, Data: Tagged{Tag: fmt.Sprintf("t%d-2", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	keys := []string{sources[0] + "/s~o1~", sources[1] + "/s~o1~"}
	slices.Sort(keys) // (a JSON object's keys are sorted)
	want := fmt.Sprintf(`t0-1 t0-2 t1-1 t1-2 (4) {%q:2,%q:2}`, keys[0], keys[1])
	if got := viewRows(t, vt)["o1"]; got != want {
		t.Errorf("view row: %s, want %s", got, want)
	}
}

// TestProjectorReadsRecordsWithoutSource: a view row written before the
// fold record named the stream's table (keyed by the stream alone) does
// not fold again what it folded: its record is read when the table's is
// absent, and replaced by the table's when the row is next written for
// that stream (the other streams' records stay).
func TestProjectorReadsRecordsWithoutSource(t *testing.T) {
	acct := testenv.Account(t, nil)
	ctx := context.Background()
	vt := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	view := tagView(t, vt)
	if _, err := vt.Insert(ctx, tablekit.Entity{PartitionKey: "orders", RowKey: "o1", Properties: map[string]any{
		"Tags": "a1 a2 b1", "Count": int64(3), feed.FoldedProperty: `{"s~o1~":2,"s~o1~x":1}`}}); err != nil {
		t.Fatal(err)
	}
	const src = "devstoreaccount1/streams"
	a := stream.ID{PartitionKey: "o1"}
	for _, c := range []feed.Change{
		{Source: src, Stream: a, Version: 1, Data: Tagged{Tag: "a1"}},
		{Source: src, Stream: a, Version: 2, Data: Tagged{Tag: "a2"}},
		{Source: src, Stream: a, Version: 3, Data: Tagged{Tag: "a3"}},
		{Source: src, Stream: a, Version: 2, Data: Tagged{Tag: "a2"}},
	} {
		if err := view.Handle(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	want := `a1 a2 b1 a3 (4) {"devstoreaccount1/streams/s~o1~":3,"s~o1~x":1}`
	if got := viewRows(t, vt)["o1"]; got != want {
		t.Errorf("view row: %s, want %s", got, want)
	}
}

// balance is a typed view row: a table struct, whose int field the
// table's codec stores as an Edm.Int64 and reads back as an int.
type balance struct {
	Owner string `table:",pk"`
	Row   string `table:",rk"`
	Total int    `table:"Total"`
	Folds int64  `table:"Folds"`
}

// deposited is a change's data in TestProjectorTyped.
type deposited struct{ Amount int }

// TestProjectorTyped: a Projector of a table struct hands fold the row
// decoded by the table's codec, so a number is the field's type: 5 + 5
// folds into 10 (a fold of a property bag that read the stored Int64 as
// an int would get nothing and fold 5 + 5 into 5, recording both as
// folded). A stored row that does not decode into the struct fails
// Handle, writing nothing: never a silent result.
func TestProjectorTyped(t *testing.T) {
	acct := testenv.Account(t, nil)
	ctx := context.Background()
	vt := testenv.OpenTable[balance](t, acct, nil)
	p, err := feed.NewProjector(vt, func(c feed.Change) []feed.Row {
		return []feed.Row{{PartitionKey: c.Stream.PartitionKey, RowKey: "balance"}}
	}, func(v *balance, c feed.Change) error {
		v.Total += c.Data.(deposited).Amount
		v.Folds++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	id := stream.ID{PartitionKey: "alice"}
	for _, v := range []int64{1, 2, 2} {
		if err := p.Handle(ctx, feed.Change{Source: "acct/streams", Stream: id, Version: v, Data: deposited{Amount: 5}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := vt.Get(ctx, "alice", "balance")
	if err != nil || got.Total != 10 || got.Folds != 2 {
		t.Errorf("typed view row: %+v, %v; want Total 10 after 2 folds", got, err)
	}
	raw, err := vt.AsEntities().Get(ctx, "alice", "balance")
	if err != nil || raw.Properties["Total"] != int64(10) || raw.Properties[feed.FoldedProperty] != `{"acct/streams/s~alice~":2}` {
		t.Errorf("the row as stored: %v, %v", raw.Properties, err)
	}
	// A row whose Total is not a number fails the fold, and is left as it is.
	bob := tablekit.Entity{PartitionKey: "bob", RowKey: "balance", Properties: map[string]any{"Total": "five", feed.FoldedProperty: `{}`}}
	if _, err := vt.AsEntities().Insert(ctx, bob); err != nil {
		t.Fatal(err)
	}
	if err := p.Handle(ctx, feed.Change{Source: "acct/streams", Stream: stream.ID{PartitionKey: "bob"}, Version: 1, Data: deposited{Amount: 5}}); err == nil {
		t.Error("a row that does not decode was folded")
	}
	if raw, err := vt.AsEntities().Get(ctx, "bob", "balance"); err != nil || raw.Properties["Total"] != "five" || raw.Properties[feed.FoldedProperty] != `{}` {
		t.Errorf("the row that does not decode, after the refused fold: %v, %v", raw.Properties, err)
	}
}
