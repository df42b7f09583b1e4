package tablekit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// The tests of this file open Accounts with the default Options
// (Options.Service ServiceAuto) on an endpoint that is Azure Cosmos DB for
// Table (package azurite's front in Cosmos mode) but whose address does
// not say so, as behind a proxy or a custom domain: each order-dependent
// API must return the right result, or fail with an error that names
// Cosmos DB, from the answers it reads itself.

// autoCosmos starts an Azurite behind the front in Cosmos mode, creates a
// table and fills it through an Account of its own (fill), and returns a
// fresh Account with default Options and its Table: nothing the Account
// has read yet shows that the endpoint is Cosmos DB. Further fresh
// Accounts come from open.
func autoCosmos(t *testing.T, fill func(tbl *tablekit.Table[wireItem])) (acct *tablekit.Account, tbl *tablekit.Table[wireItem], open func() (*tablekit.Account, *tablekit.Table[wireItem])) {
	t.Helper()
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Paging: true, Seed: 5}})
	open = func() (*tablekit.Account, *tablekit.Table[wireItem]) {
		t.Helper()
		acct, err := tablekit.Open(srv.ConnectionString(), nil)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := tablekit.OpenTable[wireItem](acct, "auto", nil)
		if err != nil {
			t.Fatal(err)
		}
		return acct, tbl
	}
	_, setup := open()
	if err := setup.CreateIfNotExists(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fill != nil {
		fill(setup)
	}
	acct, tbl = open()
	return acct, tbl, open
}

// fiveBy60 fills partitions p0..p4 with RowKeys 00000..00059.
func fiveBy60(t *testing.T) func(tbl *tablekit.Table[wireItem]) {
	return func(tbl *tablekit.Table[wireItem]) {
		for p := range 5 {
			fillPartition(t, tbl, fmt.Sprintf("p%d", p), 60)
		}
	}
}

// onCosmos reports whether the test account is Cosmos DB's (the tests run
// behind the front in Cosmos DB mode, TABLEKIT_FRONT=cosmos): query
// results in no key order, Top refused, Cosmos DB's limits.
func onCosmos() bool { return testenv.Service() == tablekit.ServiceCosmosDB }

// isCosmosRefusal reports whether err says an operation is not supported
// on Cosmos DB.
func isCosmosRefusal(err error) bool {
	return errors.Is(err, tablekit.ErrUnsupported) && strings.Contains(err.Error(), "Cosmos DB")
}

func TestCosmosAutoTop(t *testing.T) {
	ctx := context.Background()
	acct, tbl, _ := autoCosmos(t, fiveBy60(t))
	got, err := tbl.Top(ctx, tablekit.PartitionEq("p1"), 3, nil)
	switch {
	case isCosmosRefusal(err):
		if got != nil {
			t.Errorf("the refused Top returned %v", got)
		}
	case err != nil:
		t.Fatalf("Top: %v", err)
	default:
		var rks []string
		for _, e := range got {
			rks = append(rks, e.RK)
		}
		if !slices.Equal(rks, []string{"00000", "00001", "00002"}) {
			t.Fatalf("Top(3) of p1 without Options.Service on Cosmos DB returned %v: not the first 3 in key order, and no error", rks)
		}
	}
	// The Account knows now: the next Top is refused before it is sent.
	before := acct.Meter().Snapshot()
	if _, err := tbl.Top(ctx, tablekit.PartitionEq("p2"), 3, nil); !isCosmosRefusal(err) {
		t.Errorf("a second Top: %v, want ErrUnsupported naming Cosmos DB", err)
	}
	if n := acct.Meter().Snapshot().Sub(before).Total(); n != 0 {
		t.Errorf("the second Top sent %d requests", n)
	}
}

// TestCosmosAutoTopOnePage: a Top whose answer is one page, all of the
// partition, in no key order: the result is right or refused, never the
// service's order.
func TestCosmosAutoTopOnePage(t *testing.T) {
	ctx := context.Background()
	_, tbl, _ := autoCosmos(t, func(tbl *tablekit.Table[wireItem]) { fillPartition(t, tbl, "small", 3) })
	got, err := tbl.Top(ctx, tablekit.PartitionEq("small"), 3, nil)
	if err != nil {
		if !isCosmosRefusal(err) {
			t.Fatalf("Top: %v", err)
		}
		return
	}
	var rks []string
	for _, e := range got {
		rks = append(rks, e.RK)
	}
	if !slices.Equal(rks, []string{"00000", "00001", "00002"}) {
		t.Fatalf("Top(3) of a 3-entity partition returned %v, not in key order, and no error", rks)
	}
}

func TestCosmosAutoKeyOrder(t *testing.T) {
	ctx := context.Background()
	_, tbl, open := autoCosmos(t, fiveBy60(t))
	var want []string
	for p := range 5 {
		for i := range 60 {
			want = append(want, fmt.Sprintf("p%d/%05d", p, i))
		}
	}
	// Many pages.
	var got []string
	for e, err := range tbl.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{PageSize: 70, KeyOrder: true, AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.PK+"/"+e.RK)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Query with KeyOrder without Options.Service on Cosmos DB: %d entities, in key order %v; want the %d written, in key order", len(got), slices.IsSorted(got), len(want))
	}
	// One page, with Limit, on a fresh Account.
	_, tbl = open()
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
	// QueryPage cannot sort: refused once an answer shows Cosmos DB.
	_, tbl = open()
	if p, err := tbl.QueryPage(ctx, tablekit.PartitionEq("p1"), &tablekit.QueryOptions{KeyOrder: true, PageSize: 10}); !isCosmosRefusal(err) {
		t.Errorf("QueryPage with KeyOrder: %d items, %v; want ErrUnsupported naming Cosmos DB", len(p.Items), err)
	}
}

// TestCosmosAutoCursorAfterDelete breaks off a loop with a Cursor,
// deletes the last entity it yielded, and resumes from another Account
// (another process): every other entity comes exactly once.
func TestCosmosAutoCursorAfterDelete(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ pageSize, stop int }{{1000, 120}, {50, 120}, {50, 37}} {
		t.Run(fmt.Sprintf("pagesize=%d,stop=%d", c.pageSize, c.stop), func(t *testing.T) {
			_, tbl, open := autoCosmos(t, fiveBy60(t))
			var cur tablekit.Cursor
			seen := map[string]int{}
			n := 0
			var last wireItem
			for e, err := range tbl.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{PageSize: c.pageSize, Cursor: &cur, AllowTableScan: true}) {
				if err != nil {
					t.Fatal(err)
				}
				seen[e.PK+"/"+e.RK]++
				last = e
				if n++; n == c.stop {
					break
				}
			}
			if err := tbl.Delete(ctx, last.PK, last.RK, azcore.ETagAny); err != nil {
				t.Fatal(err)
			}
			_, again := open()
			for e, err := range again.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{PageSize: c.pageSize, Continuation: cur.Token(), AllowTableScan: true}) {
				if err != nil {
					t.Fatal(err)
				}
				seen[e.PK+"/"+e.RK]++
			}
			twice, missing := 0, 0
			for p := range 5 {
				for i := range 60 {
					k := fmt.Sprintf("p%d/%05d", p, i)
					switch seen[k] {
					case 0:
						missing++
					case 1:
					default:
						twice++
					}
				}
			}
			if twice != 0 || missing != 0 {
				t.Errorf("resumed after deleting the Cursor's last entity: %d of 300 read twice, %d never", twice, missing)
			}
		})
	}
}
