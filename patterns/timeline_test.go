package patterns_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

// Click is the value of a timeline entry.
type Click struct {
	PK   string `table:",pk"`
	RK   string `table:",rk"`
	Page string `table:"Page"`
	N    int    `table:"N"`
}

func TestTimelineShardsAndWindow(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	s, err := patterns.NewTimeline[Click](tbl.AsEntities(), "clicks", 8)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	const total = 10000
	entries := make([]patterns.TimelineEntry[Click], total)
	for i := range entries {
		// Two entries per second, so that times tie and IDs decide.
		entries[i] = patterns.TimelineEntry[Click]{Time: base.Add(time.Duration(i/2) * time.Second), ID: fmt.Sprintf("evt-%05d", i), Value: Click{Page: "/p" + fmt.Sprint(i%7), N: i}}
	}
	res, err := s.Append(ctx, entries...)
	if err != nil || res.Succeeded != total {
		t.Fatalf("Append: %d, %v", res.Succeeded, err)
	}

	// Eight partitions, each within 20% of an even split.
	sum := 0
	for _, pk := range s.Partitions() {
		n := 0
		for _, err := range tbl.Query(ctx, tablekit.PartitionEq(pk), &tablekit.QueryOptions{Select: []string{"N"}}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n < total/8*8/10 || n > total/8*12/10 {
			t.Errorf("partition %s holds %d entries; an even split is %d", pk, n, total/8)
		}
		sum += n
	}
	if sum != total || len(s.Partitions()) != 8 {
		t.Fatalf("%d entries in %d partitions", sum, len(s.Partitions()))
	}

	// A window: exactly its entries, in time order (then ID), across shards.
	from, until := base.Add(1000*time.Second), base.Add(3000*time.Second)
	before := acct.Meter().Snapshot()
	want := 2000
	n := 0
	for en, err := range s.Query(ctx, from, until, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if id := fmt.Sprintf("evt-%05d", want); en.ID != id || en.Value.N != want || !en.Time.Equal(entries[want].Time) {
			t.Fatalf("entry %d: got %s (N=%d, %v), want %s", n, en.ID, en.Value.N, en.Time, id)
		}
		want++
		n++
	}
	if n != 4000 {
		t.Fatalf("window returned %d entries, want 4000", n)
	}
	// One page per shard from Azurite; Azure may cut a shard's pages short.
	if cost := acct.Meter().Snapshot().Sub(before); cost.Count("table", "QueryEntities") != cost.Total() || cost.Total() < 8 || (cost.Total() != 8 && !testenv.PagesAsAzure()) {
		t.Fatalf("window cost %v; want one query per shard", cost)
	}

	// Limit, and stopping early.
	n = 0
	for en, err := range s.Query(ctx, time.Time{}, time.Time{}, &tablekit.QueryOptions{Limit: 10, PageSize: 3}) {
		if err != nil {
			t.Fatal(err)
		}
		if en.Value.N != n {
			t.Fatalf("entry %d is N=%d", n, en.Value.N)
		}
		n++
	}
	if n != 10 {
		t.Fatalf("limited query: %d", n)
	}
	for range s.Query(ctx, from, time.Time{}, nil) {
		break
	}
}
