package patterns_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/patterns"
)

// On Cosmos DB, whose query results are in no key order even within a
// partition (the front's Cosmos mode), the sharded stream still merges its
// shards in time order: each shard's range is read whole and sorted.
func TestCosmosStreamMerge(t *testing.T) {
	ctx := context.Background()
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Seed: 5}})
	acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Service: tablekit.ServiceCosmosDB})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, "cosmosstream", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := patterns.NewStream[Click](tbl.AsEntities(), "clicks", 4)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	events := make([]patterns.Event[Click], 300)
	var ids []string
	for i := range events {
		events[i] = patterns.Event[Click]{Time: base.Add(time.Duration(i) * time.Second), ID: fmt.Sprintf("evt-%05d", i), Value: Click{N: i}}
		ids = append(ids, events[i].ID)
	}
	if res, err := s.Append(ctx, events...); err != nil || res.Succeeded != len(events) {
		t.Fatalf("Append: %d, %v", res.Succeeded, err)
	}
	var got []string
	for ev, err := range s.Query(ctx, base.Add(50*time.Second), base.Add(250*time.Second), &tablekit.QueryOptions{PageSize: 20}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.ID)
	}
	if !slices.Equal(got, ids[50:250]) {
		t.Errorf("Query on Cosmos DB: %d events, in order %v; want events 50..249 in time order", len(got), slices.IsSorted(got))
	}
	got = got[:0]
	for ev, err := range s.Query(ctx, time.Time{}, time.Time{}, &tablekit.QueryOptions{Limit: 10}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.ID)
	}
	if !slices.Equal(got, ids[:10]) {
		t.Errorf("Query with Limit 10 on Cosmos DB: %v, want %v", got, ids[:10])
	}
}
