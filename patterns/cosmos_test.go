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
// partition (the front's Cosmos mode), the timeline still merges its
// shards in time order: each shard's range is read whole and sorted.
func TestCosmosTimelineMerge(t *testing.T) {
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
	s, err := patterns.NewTimeline[Click](tbl.AsEntities(), "clicks", 4)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	entries := make([]patterns.TimelineEntry[Click], 300)
	var ids []string
	for i := range entries {
		entries[i] = patterns.TimelineEntry[Click]{Time: base.Add(time.Duration(i) * time.Second), ID: fmt.Sprintf("evt-%05d", i), Value: Click{N: i}}
		ids = append(ids, entries[i].ID)
	}
	if res, err := s.Append(ctx, entries...); err != nil || res.Succeeded != len(entries) {
		t.Fatalf("Append: %d, %v", res.Succeeded, err)
	}
	var got []string
	for en, err := range s.Query(ctx, base.Add(50*time.Second), base.Add(250*time.Second), &tablekit.QueryOptions{PageSize: 20}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, en.ID)
	}
	if !slices.Equal(got, ids[50:250]) {
		t.Errorf("Query on Cosmos DB: %d entries, in order %v; want entries 50..249 in time order", len(got), slices.IsSorted(got))
	}
	got = got[:0]
	for en, err := range s.Query(ctx, time.Time{}, time.Time{}, &tablekit.QueryOptions{Limit: 10}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, en.ID)
	}
	if !slices.Equal(got, ids[:10]) {
		t.Errorf("Query with Limit 10 on Cosmos DB: %v, want %v", got, ids[:10])
	}
}

// TestCosmosTimelineQueryAuto: on Cosmos DB behind an address that does not
// say so, through Accounts with the default Options (ServiceAuto), each
// query on a fresh Account that has read nothing, the timeline's queries
// still return entries in time order; and a query with a Limit stops
// reading once the limit is provable, instead of reading every shard
// whole.
func TestCosmosTimelineQueryAuto(t *testing.T) {
	ctx := context.Background()
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Paging: true, Seed: 5}})
	const shards = 8
	open := func(svc tablekit.Service) (*tablekit.Account, *patterns.Timeline[Click]) {
		t.Helper()
		acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Service: svc})
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := tablekit.OpenTable[tablekit.Entity](acct, "autostream", nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := patterns.NewTimeline[Click](tbl, "clicks", shards)
		if err != nil {
			t.Fatal(err)
		}
		return acct, s
	}
	setupAcct, setup := open(tablekit.ServiceCosmosDB)
	tbl, _ := tablekit.OpenTable[tablekit.Entity](setupAcct, "autostream", nil)
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	entries := make([]patterns.TimelineEntry[Click], 2000)
	var ids []string
	for i := range entries {
		entries[i] = patterns.TimelineEntry[Click]{Time: base.Add(time.Duration(i) * time.Second), ID: fmt.Sprintf("evt-%05d", i), Value: Click{N: i}}
		ids = append(ids, entries[i].ID)
	}
	if res, err := setup.Append(ctx, entries...); err != nil || res.Succeeded != len(entries) {
		t.Fatalf("Append: %d, %v", res.Succeeded, err)
	}
	query := func(s *patterns.Timeline[Click], from, until time.Time, o *tablekit.QueryOptions) []string {
		t.Helper()
		var got []string
		for en, err := range s.Query(ctx, from, until, o) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, en.ID)
		}
		return got
	}
	_, s := open(tablekit.ServiceAuto)
	if got := query(s, base.Add(50*time.Second), base.Add(250*time.Second), &tablekit.QueryOptions{PageSize: 20}); !slices.Equal(got, ids[50:250]) {
		t.Errorf("Query: %d entries, in order %v; want entries 50..249 in time order", len(got), slices.IsSorted(got))
	}
	for _, svc := range []tablekit.Service{tablekit.ServiceAuto, tablekit.ServiceCosmosDB} {
		for _, c := range []struct {
			from  int
			limit int
			page  int
		}{{0, 10, 0}, {0, 10, 20}, {1500, 25, 50}, {1990, 30, 0}} {
			acct, s := open(svc)
			from := time.Time{}
			if c.from > 0 {
				from = base.Add(time.Duration(c.from) * time.Second)
			}
			got := query(s, from, time.Time{}, &tablekit.QueryOptions{Limit: c.limit, PageSize: c.page})
			want := ids[c.from:min(c.from+c.limit, len(ids))]
			if !slices.Equal(got, want) {
				t.Errorf("%v: Query from %d with Limit %d, PageSize %d: %v, want %v", svc, c.from, c.limit, c.page, got, want)
			}
			// A page per shard to find the limit's last key, and the
			// shards' ranges up to it (Azure's paging adds short and
			// empty pages): reading every shard whole takes more than
			// 2000/PageSize requests.
			n := acct.Meter().Snapshot().Count("table", "QueryEntities")
			t.Logf("%v: Query from %d with Limit %d, PageSize %d: %d requests", svc, c.from, c.limit, c.page, n)
			if n > 6*shards {
				t.Errorf("%v: Query from %d with Limit %d, PageSize %d sent %d requests, want at most %d", svc, c.from, c.limit, c.page, n, 6*shards)
			}
		}
	}
}
