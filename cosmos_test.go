package tablekit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/core"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
)

// cosmosTable opens a table behind package azurite's front in Cosmos DB
// mode: query results in no key order, Cosmos DB's limits.
func cosmosTable(t *testing.T) (*tablekit.Account, *tablekit.Table[wireItem]) {
	t.Helper()
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Seed: 7}})
	acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Cosmos: true})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := tablekit.OpenTable[wireItem](acct, "cosmos", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !core.AccountCosmos(acct) || !core.Cosmos(tbl) {
		t.Fatal("Options.Cosmos did not reach the table")
	}
	return acct, tbl
}

func TestCosmosOrderDependentAPIs(t *testing.T) {
	ctx := context.Background()
	acct, tbl := cosmosTable(t)
	var want []string
	for p := range 5 {
		for i := range 60 {
			want = append(want, fmt.Sprintf("p%d/%05d", p, i))
		}
		fillPartition(t, tbl, fmt.Sprintf("p%d", p), 60)
	}

	// Query: every entity once, in the service's order (not key order).
	var got []string
	for e, err := range tbl.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.PK+"/"+e.RK)
	}
	if slices.IsSorted(got) {
		t.Fatal("the front's Cosmos mode returned results in key order; the test proves nothing")
	}
	if !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Fatalf("Query returned %d entities, want the %d written", len(got), len(want))
	}

	// Top needs key order: refused before anything is sent.
	before := acct.Meter().Snapshot()
	if _, err := tbl.Top(ctx, tablekit.PartitionEq("p1"), 3, nil); !errors.Is(err, tablekit.ErrUnsupported) || !strings.Contains(err.Error(), "Cosmos") {
		t.Errorf("Top on Cosmos DB: %v", err)
	}
	if n := acct.Meter().Snapshot().Sub(before).Total(); n != 0 {
		t.Errorf("the refused Top sent %d requests", n)
	}

	// A Cursor resumes a broken-off loop exactly once per entity, in pages
	// that are not in key order.
	for _, stop := range []int{1, 37, 100, 299} {
		var cur tablekit.Cursor
		var seen []string
		opts := &tablekit.QueryOptions{PageSize: 50, Cursor: &cur, AllowTableScan: true}
		for e, err := range tbl.Query(ctx, tablekit.Filter{}, opts) {
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, e.PK+"/"+e.RK)
			if len(seen) == stop {
				break
			}
		}
		for e, err := range tbl.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{PageSize: 50, Continuation: cur.Token(), AllowTableScan: true}) {
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, e.PK+"/"+e.RK)
		}
		if !slices.Equal(slices.Sorted(slices.Values(seen)), want) {
			t.Errorf("stop %d: %d entities after resuming, want each of the %d once", stop, len(seen), len(want))
		}
	}

	// KeyOrder: the whole result read, then sorted; Limit applies after.
	got = got[:0]
	for e, err := range tbl.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{PageSize: 70, KeyOrder: true, AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.PK+"/"+e.RK)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Query with KeyOrder returned %d entities, sorted %v; want the %d written in key order", len(got), slices.IsSorted(got), len(want))
	}
	got = got[:0]
	for e, err := range tbl.Query(ctx, tablekit.RowKeyRange("p3", "00010", "00020"), &tablekit.QueryOptions{KeyOrder: true, Limit: 4}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.PK+"/"+e.RK)
	}
	if !slices.Equal(got, want[3*60+10:3*60+14]) {
		t.Errorf("a RowKey range with KeyOrder and Limit 4: %v, want %v", got, want[3*60+10:3*60+14])
	}
	if _, err := tbl.QueryPage(ctx, tablekit.PartitionEq("p1"), &tablekit.QueryOptions{KeyOrder: true}); !errors.Is(err, tablekit.ErrUnsupported) {
		t.Errorf("QueryPage with KeyOrder on Cosmos DB: %v, want ErrUnsupported", err)
	}
	for _, err := range tbl.Query(ctx, tablekit.PartitionEq("p1"), &tablekit.QueryOptions{KeyOrder: true, Cursor: &tablekit.Cursor{}}) {
		if !errors.Is(err, tablekit.ErrUnsupported) {
			t.Errorf("Query with KeyOrder and a Cursor on Cosmos DB: %v, want ErrUnsupported", err)
		}
		break
	}

	// Cosmos DB's own limits: a RowKey of at most 255 bytes.
	if _, err := tbl.Insert(ctx, wireItem{PK: "p", RK: strings.Repeat("k", 256)}); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("a 256-byte RowKey on Cosmos DB: %v", err)
	}
}

func TestCosmosEndpointsRecognised(t *testing.T) {
	for cs, want := range map[string]bool{
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;TableEndpoint=https://acct.table.cosmos.azure.com:443/;": true,
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;TableEndpoint=https://acct.table.cosmosdb.azure.com/;":   true,
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;TableEndpoint=http://localhost:8902/;":                   true,
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net":                         false,
		"UseDevelopmentStorage=true": false,
	} {
		acct, err := tablekit.Open(cs, nil)
		if err != nil {
			t.Fatalf("%s: %v", cs, err)
		}
		if core.AccountCosmos(acct) != want {
			t.Errorf("%s: Cosmos() = %v, want %v", cs, core.AccountCosmos(acct), want)
		}
	}
}

// TestCosmosMerges: on Azure Cosmos DB for Table a merge goes as POST with
// "X-HTTP-Method: MERGE" (Cosmos DB has no PATCH); merges of every kind
// (upsert, update, in a transaction too) keep the properties they do not
// name.
func TestCosmosMerges(t *testing.T) {
	ctx := context.Background()
	acct, tbl := cosmosTable(t)
	etag, err := tbl.Insert(ctx, wireItem{PK: "m", RK: "o'k", N: 1, Tag: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	before := acct.Meter().Snapshot()
	if etag, err = tbl.Merge(ctx, wireItem{PK: "m", RK: "o'k", N: 2}, etag); err != nil {
		t.Fatalf("update merge: %v", err)
	} else if etag == "" {
		t.Error("update merge returned no ETag")
	}
	if _, err = tbl.Merge(ctx, wireItem{PK: "m", RK: "o'k", N: 3}, ""); err != nil {
		t.Fatalf("upsert merge: %v", err)
	}
	if n := acct.Meter().Snapshot().Sub(before).Count("table", "MergeEntity"); n != 2 {
		t.Errorf("%d MergeEntity requests, want 2", n)
	}
	if got, err := tbl.Get(ctx, "m", "o'k"); err != nil || got.N != 3 || got.Tag != "kept" {
		t.Fatalf("after merges: %+v, %v", got, err)
	}
	if _, err := tbl.Transaction(ctx, tablekit.MergeAction(wireItem{PK: "m", RK: "o'k", N: 4}, "")); err != nil {
		t.Fatalf("merge in a transaction: %v", err)
	}
	if got, err := tbl.Get(ctx, "m", "o'k"); err != nil || got.N != 4 || got.Tag != "kept" {
		t.Fatalf("after the merge transaction: %+v, %v", got, err)
	}
}
