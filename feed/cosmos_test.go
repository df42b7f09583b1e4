package feed_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/stream"
)

// TestCosmos runs a feed behind package azurite's front in Cosmos DB mode
// with Azure's paging (query results in no key order, short and empty
// pages): 24 streams over 3 directory shards, several sharing a
// partition, appended to in three waves with a round after each. Each
// round hands every subscription each stream's new events in version
// order with the event's kind, and clears every mark; Feed.Streams lists
// each stream once; a view rebuilt by Relay.Replay equals the view kept
// by the rounds.
func TestCosmos(t *testing.T) {
	ctx := context.Background()
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Paging: true, Seed: 3}})
	acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Service: tablekit.ServiceCosmosDB})
	if err != nil {
		t.Fatal(err)
	}
	var tbl [4]*tablekit.Table[tablekit.Entity] // streams, feed, view kept by rounds, view rebuilt
	for i, name := range []string{"cosmosstreams", "cosmosfeed", "cosmosview", "cosmosrebuilt"} {
		if tbl[i], err = tablekit.OpenTable[tablekit.Entity](acct, name, nil); err != nil {
			t.Fatal(err)
		}
		if err := tbl[i].CreateIfNotExists(ctx); err != nil {
			t.Fatal(err)
		}
	}
	store, err := stream.NewStore(tbl[0], registry(t), &stream.Options{PageSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	f, err := feed.New(store, tbl[1], &feed.Options{Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{acct: acct, store: store, ft: tbl[1], f: f}
	var ids []stream.ID
	for i := range 24 {
		ids = append(ids, stream.ID{PartitionKey: fmt.Sprintf("o%02d", i/3), Prefix: fmt.Sprintf("p%d", i%3)})
	}
	rec := newRecorder()
	kinds := map[string]int{}
	r := relay(t, f,
		feed.Subscription{Name: "view", Handle: tagView(t, tbl[2]).Handle},
		feed.Subscription{Name: "rec", Handle: func(ctx context.Context, c feed.Change) error {
			rec.mu.Lock()
			kinds[c.Kind]++
			rec.mu.Unlock()
			return rec.handle(ctx, c)
		}})
	want := map[stream.ID][]string{}
	for wave := range 3 {
		for i, id := range ids {
			var tags []string
			for k := range 1 + (i+wave)%3 {
				tags = append(tags, fmt.Sprintf("%s.%s-%d-%d", id.PartitionKey, id.Prefix, wave, k))
			}
			e.append(t, id, int64(len(want[id])), tags...)
			want[id] = append(want[id], tags...)
		}
		if wave == 0 {
			// The directory answers out of key order: the round and
			// Streams below must not depend on it.
			rows, err := tablekit.Collect(tbl[1].Query(ctx, tablekit.Where("PartitionKey eq ?", "dir~00"), nil), 0)
			if err != nil || len(rows) < 2 {
				t.Fatalf("directory shard: %d rows, %v", len(rows), err)
			}
			if slices.IsSortedFunc(rows, func(a, b tablekit.Entity) int { return strings.Compare(a.RowKey, b.RowKey) }) {
				t.Fatal("the Cosmos front answered the directory in key order: this test shows nothing")
			}
		}
		res := round(t, r, 1)
		if res.Streams != len(ids) {
			t.Errorf("wave %d: round over %d streams, want %d", wave, res.Streams, len(ids))
		}
		for _, id := range ids {
			if g, w := rec.tags(id), fmt.Sprint(want[id]); g != w {
				t.Fatalf("wave %d, %v: handed %s, want %s", wave, id, g, w)
			}
			if m := e.marks(t, id); len(m) != 0 {
				t.Errorf("wave %d: %v still marked after the round: %v", wave, id, m)
			}
			if cp := e.checkpoint(t, "view", id); cp != int64(len(want[id])) {
				t.Errorf("wave %d: %v checkpoint %d, want %d", wave, id, cp, len(want[id]))
			}
		}
	}
	if len(kinds) != 1 || kinds["Tagged"] == 0 {
		t.Errorf("kinds handed: %v, want only Tagged", kinds)
	}
	listed := map[stream.ID]int{}
	for id, err := range f.Streams(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		listed[id]++
	}
	for _, id := range ids {
		if listed[id] != 1 {
			t.Errorf("Streams listed %v %d times", id, listed[id])
		}
	}
	if len(listed) != len(ids) {
		t.Errorf("Streams listed %d streams, want %d", len(listed), len(ids))
	}
	r2 := relay(t, f,
		feed.Subscription{Name: "view", Handle: tagView(t, tbl[2]).Handle},
		feed.Subscription{Name: "rebuilt", Handle: tagView(t, tbl[3]).Handle})
	round(t, r2, 2)
	res, err := r2.Replay(ctx, "rebuilt")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, tags := range want {
		total += len(tags)
	}
	if res.Streams != len(ids) || res.Delivered != total {
		t.Errorf("replay: %+v, want %d streams, %d changes", res, len(ids), total)
	}
	// A view row folds its partition's 3 streams: each in version order,
	// interleaved as the rounds (and the replay) met them.
	if w, g := foldsByStream(t, tbl[2]), foldsByStream(t, tbl[3]); fmt.Sprint(w) != fmt.Sprint(g) || len(w) != len(ids) {
		t.Errorf("rebuilt view (%d streams):\n%v\nwant (%d streams)\n%v", len(g), g, len(w), w)
	}
	for _, id := range ids {
		if g, w := fmt.Sprint(foldsByStream(t, tbl[3])[fmt.Sprintf("%s.%s", id.PartitionKey, id.Prefix)]), fmt.Sprint(want[id]); g != w {
			t.Errorf("rebuilt view, %v: %s, want %s", id, g, w)
		}
	}
}

// foldsByStream returns the tags a tagView folded, by stream
// ("<partition>.<prefix>", the tags' own prefix), in fold order.
func foldsByStream(t *testing.T, vt *tablekit.Table[tablekit.Entity]) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	for e, err := range vt.Query(context.Background(), tablekit.Filter{}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		s, _ := e.Properties["Tags"].(string)
		for tag := range strings.FieldsSeq(s) {
			id, _, _ := strings.Cut(tag, "-")
			got[id] = append(got[id], tag)
		}
	}
	return got
}
