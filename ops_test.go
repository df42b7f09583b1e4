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
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// fillPartition writes n wireItems to partition pk, RowKeys "00000".."n-1".
func fillPartition(t *testing.T, tbl *tablekit.Table[wireItem], pk string, n int) []string {
	t.Helper()
	items := make([]wireItem, n)
	rks := make([]string, n)
	for i := range items {
		rks[i] = fmt.Sprintf("%05d", i)
		items[i] = wireItem{PK: pk, RK: rks[i], N: i, Tag: "t"}
	}
	if _, err := tbl.BulkWriter(nil).Upsert(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	return rks
}

func TestExistsAndCount(t *testing.T) {
	ctx := context.Background()
	acct, tbl := newWireItems(t)
	fillPartition(t, tbl, "p", 2500)
	if _, err := tbl.Insert(ctx, wireItem{PK: "", RK: ""}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pk, rk string
		want   bool
	}{{"p", "00007", true}, {"p", "x", false}, {"", "", true}, {"q", "00007", false}} {
		before := acct.Meter().Snapshot()
		n, err := tbl.Count(ctx, tablekit.PointQuery(c.pk, c.rk))
		if got := n == 1; err != nil || got != c.want {
			t.Errorf("Count of PointQuery(%q, %q) = %v, %v; want %v", c.pk, c.rk, n, err, c.want)
		}
		if n := acct.Meter().Snapshot().Sub(before).Total(); n != 1 {
			t.Errorf("a point Count cost %d transactions, want 1", n)
		}
	}
	before := acct.Meter().Snapshot()
	n, err := tbl.Count(ctx, tablekit.PartitionEq("p"))
	if err != nil || n != 2500 {
		t.Fatalf("Count = %d, %v; want 2500", n, err)
	}
	// Pages of 1,000: 3 from Azurite; Azure may cut pages short.
	if pages := acct.Meter().Snapshot().Sub(before).Count("table", "QueryEntities"); pages < 3 || (pages != 3 && !testenv.PagesAsAzure()) {
		t.Errorf("Count of 2,500 entities took %d pages, want 3", pages)
	}
	if n, err := tbl.Count(ctx, tablekit.Where("PartitionKey eq ? and N ge ?", "p", 2000)); err != nil || n != 500 {
		t.Errorf("Count with a property filter = %d, %v; want 500", n, err)
	}
}

func TestCollect(t *testing.T) {
	ctx := context.Background()
	_, tbl := newWireItems(t)
	fillPartition(t, tbl, "p", 30)
	all, err := tablekit.Collect(tbl.Query(ctx, tablekit.PartitionEq("p"), nil), 30)
	if err != nil || len(all) != 30 || !slices.Equal(sortedNs(all, func(v wireItem) int { return v.N }), upTo(30)) {
		t.Fatalf("Collect(30 of 30) = %d values, %v", len(all), err)
	}
	some, err := tablekit.Collect(tbl.Query(ctx, tablekit.PartitionEq("p"), nil), 29)
	if !errors.Is(err, tablekit.ErrTooLarge) || len(some) != 29 {
		t.Errorf("Collect(29 of 30) = %d values, %v; want 29 and ErrTooLarge", len(some), err)
	}
	if _, err := tablekit.Collect(tbl.Query(ctx, tablekit.PartitionEq("p"), nil), -1); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("negative limit: %v", err)
	}
	_, err = tablekit.Collect(tbl.Query(ctx, tablekit.Where("Bad eq ?"), nil), 0)
	if !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("a failing query: %v", err)
	}
}

// itemName is a projection of wireItem: only its key fields and Tag.
type itemName struct {
	PK   string      `table:",pk"`
	RK   string      `table:",rk"`
	Tag  string      `table:"Tag"`
	ETag azcore.ETag `table:",etag"`
}

func TestQueryAs(t *testing.T) {
	ctx := context.Background()
	_, tbl := newWireItems(t)
	fillPartition(t, tbl, "p", 5)
	got, err := tablekit.Collect(tablekit.QueryAs[itemName](ctx, tbl, tablekit.PartitionEq("p"), nil), 0)
	if err != nil || len(got) != 5 {
		t.Fatalf("QueryAs: %d, %v", len(got), err)
	}
	// In key order on Table storage; in no order on Cosmos DB.
	slices.SortFunc(got, func(a, b itemName) int { return strings.Compare(a.RK, b.RK) })
	for i, g := range got {
		if g.PK != "p" || g.RK != fmt.Sprintf("%05d", i) || g.Tag != "t" || g.ETag == "" {
			t.Errorf("projection %d = %+v", i, g)
		}
	}
	// The projection reads only Tag: a query of N through it sees nothing of N.
	type onlyN struct {
		N int `table:"N"`
	}
	ns, err := tablekit.Collect(tablekit.QueryAs[onlyN](ctx, tbl, tablekit.PartitionEq("p"), nil), 0)
	if err != nil || len(ns) != 5 || !slices.Equal(sortedNs(ns, func(v onlyN) int { return v.N }), upTo(5)) {
		t.Errorf("keyless projection: %+v, %v", ns, err)
	}
	if _, err := tablekit.Collect(tablekit.QueryAs[int](ctx, tbl, tablekit.Filter{}, nil), 0); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("projection into int: %v", err)
	}
}

// TestCursorResumesBrokenLoop breaks out of a Query at several places and
// resumes it in a new Table from the Cursor's token: every entity comes
// exactly once, in the order a query returns them (key order on Table
// storage).
func TestCursorResumesBrokenLoop(t *testing.T) {
	ctx := context.Background()
	_, tbl := newWireItems(t)
	fillPartition(t, tbl, "p", 2100)
	rks := queryRKs(t, tbl, tablekit.PartitionEq("p"))
	for _, stop := range []int{1, 999, 1000, 1001, 1234, 2099, 2100} {
		var cur tablekit.Cursor
		var got []string
		opts := &tablekit.QueryOptions{Cursor: &cur}
		for e, err := range tbl.Query(ctx, tablekit.PartitionEq("p"), opts) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.RK)
			if len(got) == stop {
				break
			}
		}
		again, err := tablekit.OpenTable[wireItem](testenv.Account(t, nil), tbl.Name(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for e, err := range again.Query(ctx, tablekit.PartitionEq("p"), &tablekit.QueryOptions{Continuation: cur.Token()}) {
			if err != nil {
				t.Fatalf("stop %d: resume: %v", stop, err)
			}
			got = append(got, e.RK)
		}
		if !slices.Equal(got, rks) {
			t.Errorf("stop %d: %d entities after resuming, want the %d in order", stop, len(got), len(rks))
		}
	}

	// A loop that ran to the end leaves no token.
	var cur tablekit.Cursor
	for _, err := range tbl.Query(ctx, tablekit.PartitionEq("p"), &tablekit.QueryOptions{Cursor: &cur, PageSize: 1000}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if cur.Token() != "" {
		t.Error("a finished query left a token")
	}

	// The last entity yielded is deleted before resuming: the query goes on
	// after it all the same (rks are in the query's order).
	cur = tablekit.Cursor{}
	n := 0
	for _, err := range tbl.Query(ctx, tablekit.PartitionEq("p"), &tablekit.QueryOptions{Cursor: &cur}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 10 {
			break
		}
	}
	if err := tbl.Delete(ctx, "p", rks[9], azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	// Pages of 5 from the token: the first ones hold only what the loop
	// had yielded, and come back empty (with a continuation) once that is
	// skipped; the first entity of the first page that is not is rks[10].
	opts := &tablekit.QueryOptions{Continuation: cur.Token(), PageSize: 5}
	for {
		page, err := tbl.QueryPage(ctx, tablekit.PartitionEq("p"), opts)
		if err != nil || len(page.Items) > 0 || page.Continuation == "" {
			if err != nil || len(page.Items) == 0 || page.Items[0].RK != rks[10] {
				t.Errorf("QueryPage from a cursor after a deletion: %+v, %v", page.Items, err)
			}
			break
		}
		opts.Continuation = page.Continuation
	}
	// A token belongs to its filter.
	if _, err := tbl.QueryPage(ctx, tablekit.PartitionEq("q"), &tablekit.QueryOptions{Continuation: cur.Token()}); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("token of another filter: %v", err)
	}
}

// queryRKs returns the RowKeys f matches in tbl, in the order a query
// returns them: key order on Table storage, the service's on Cosmos DB.
func queryRKs(t *testing.T, tbl *tablekit.Table[wireItem], f tablekit.Filter) []string {
	t.Helper()
	var rks []string
	for e, err := range tbl.Query(context.Background(), f, &tablekit.QueryOptions{AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		rks = append(rks, e.RK)
	}
	return rks
}

// sortedNs returns the N fields of vs, sorted.
func sortedNs[V any](vs []V, n func(V) int) []int {
	out := make([]int, 0, len(vs))
	for _, v := range vs {
		out = append(out, n(v))
	}
	slices.Sort(out)
	return out
}

// upTo returns 0..n-1.
func upTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
