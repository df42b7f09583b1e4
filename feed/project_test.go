package feed_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/stream"
)

// tagView is the tests' projection: one view row per stream partition
// ("orders"/<stream partition>), whose Tags property is the tags of its
// streams' events joined in fold order, and Count their number.
func tagView(t *testing.T, vt *tablekit.Table[tablekit.Entity]) *feed.Projector {
	t.Helper()
	p, err := feed.NewProjector(vt,
		func(c feed.Change) (string, string) { return "orders", c.Stream.PartitionKey },
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
	pf, err := feed.NewProjector(vt, func(feed.Change) (string, string) { return "orders", "o1" },
		func(*tablekit.Entity, feed.Change) error { return boom })
	if err != nil {
		t.Fatal(err)
	}
	if err := pf.Handle(ctx, ch(a, 5, "a5")); !errors.Is(err, boom) {
		t.Errorf("failing fold: %v", err)
	}
	// A fold that moves the row is refused.
	pm, err := feed.NewProjector(vt, func(feed.Change) (string, string) { return "orders", "o1" },
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
	for _, id := range ids {
		if d, _ := e.dir(t, id); d {
			t.Fatalf("%v still dirty", id)
		}
	}
	v2 := testenv.OpenTable[tablekit.Entity](t, e.acct, nil)
	r2 := relay(t, e.f, feed.Subscription{Name: "view1", Handle: tagView(t, v1).Handle}, feed.Subscription{Name: "view2", Handle: tagView(t, v2).Handle})
	if res := round(t, r2, 2); res.Streams != 0 {
		t.Fatalf("round with nothing dirty: %+v", res)
	}
	res, err := r2.Replay(ctx, 2, "view2")
	if err != nil {
		t.Fatal(err)
	}
	if res.Streams != 3 || res.Delivered != 9 {
		t.Errorf("replay: %+v, want 3 streams, 9 changes", res)
	}
	w, g := viewRows(t, v1), viewRows(t, v2)
	if fmt.Sprint(w) != fmt.Sprint(g) || len(w) != 2 {
		t.Errorf("rebuilt view:\n%v\nwant\n%v", g, w)
	}
	// Replay again: nothing new, nothing handed over.
	if res, err := r2.Replay(ctx, 2, "view2"); err != nil || res.Delivered != 0 {
		t.Errorf("second replay: %+v, %v", res, err)
	}
	if _, err := r2.Replay(ctx, 2, "nope"); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("replay of an unknown subscription: %v", err)
	}
}
