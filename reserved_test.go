package tablekit_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// TestReadsSkipReservedRows: rows tablekit keeps in a user's partition
// (RowKeys starting with "~coord~": coord's idempotency records and fence
// rows) are not the user's: Query, QueryAs, QueryPage, Top and Count leave
// them out unless QueryOptions.Reserved asks for them. Pages of 2 put the
// reserved rows on pages of their own and beside user rows: a page comes
// back shorter (or empty) and its continuation still resumes right, and a
// Cursor's token resumes after a page with a reserved row.
func TestReadsSkipReservedRows(t *testing.T) {
	ctx := context.Background()
	_, tbl := newWireItems(t)
	user := []string{"a", "b", "~d", "~e"}
	reserved := []string{"~coord~fence", "~coord~key~1", "~coord~key~2"}
	for _, rk := range append(slices.Clone(user), reserved...) {
		if _, err := tbl.Insert(ctx, wireItem{PK: "p", RK: rk, N: 1}); err != nil {
			t.Fatal(err)
		}
	}
	rks := func(items []wireItem) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.RK)
		}
		return out
	}
	all := []string{"a", "b", "~coord~fence", "~coord~key~1", "~coord~key~2", "~d", "~e"}
	f := tablekit.PartitionEq("p")
	// Cosmos DB for Table keeps no key order within a partition: there the
	// reads are compared as sets.
	cosmos := testenv.Service() == tablekit.ServiceCosmosDB
	same := func(got, want []string) bool {
		if cosmos {
			got = slices.Sorted(slices.Values(got))
		}
		return slices.Equal(got, want)
	}

	got, err := tablekit.Collect(tbl.Query(ctx, f, &tablekit.QueryOptions{PageSize: 2}), 0)
	if err != nil || !same(rks(got), user) {
		t.Errorf("Query: %q, %v; want the user's rows %q", rks(got), err, user)
	}
	got, err = tablekit.Collect(tbl.Query(ctx, f, &tablekit.QueryOptions{PageSize: 2, Reserved: true}), 0)
	if err != nil || !same(rks(got), all) {
		t.Errorf("Query with Reserved: %q, %v; want every row %q", rks(got), err, all)
	}
	type proj struct {
		RK string `table:",rk"`
	}
	var as []string
	for v, err := range tablekit.QueryAs[proj](ctx, tbl, f, nil) {
		if err != nil {
			t.Fatal(err)
		}
		as = append(as, v.RK)
	}
	if !same(as, user) {
		t.Errorf("QueryAs: %q, want %q", as, user)
	}
	if n, err := tbl.Count(ctx, f); err != nil || n != len(user) {
		t.Errorf("Count: %d, %v; want %d", n, err, len(user))
	}
	if cosmos {
		// Top relies on key order, which Cosmos DB does not keep: refused
		// (cosmos_test.go), with or without the reserved rows.
		if _, err := tbl.Top(ctx, f, 3, nil); !errors.Is(err, tablekit.ErrUnsupported) {
			t.Errorf("Top on Cosmos DB: %v, want ErrUnsupported", err)
		}
	} else {
		top, err := tbl.Top(ctx, f, 3, &tablekit.QueryOptions{PageSize: 2})
		if err != nil || !slices.Equal(rks(top), user[:3]) {
			t.Errorf("Top 3: %q, %v; want %q", rks(top), err, user[:3])
		}
		top, err = tbl.Top(ctx, f, 3, &tablekit.QueryOptions{Reserved: true})
		if err != nil || !slices.Equal(rks(top), all[:3]) {
			t.Errorf("Top 3 with Reserved: %q, %v; want %q", rks(top), err, all[:3])
		}
	}

	for _, reserved := range []bool{false, true} {
		var paged []string
		pages := 0
		opts := &tablekit.QueryOptions{PageSize: 2, Reserved: reserved}
		for {
			p, err := tbl.QueryPage(ctx, f, opts)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if len(p.Items) > 2 {
				t.Errorf("a page of %d items, PageSize 2", len(p.Items))
			}
			paged = append(paged, rks(p.Items)...)
			if p.Continuation == "" || pages > 10 {
				break
			}
			opts.Continuation = p.Continuation
		}
		want := user
		if reserved {
			want = all
		}
		if !same(paged, want) {
			t.Errorf("QueryPage (Reserved %v): %q in %d pages, want %q", reserved, paged, pages, want)
		}
	}

	// A Cursor broken off after "~d", the second row of a page whose first
	// is reserved, resumes after it: what was read before the break and
	// what the resumed query reads are the user's rows, each once (in key
	// order on Table storage, where the resumed query reads only "~e").
	var cur tablekit.Cursor
	var before []string
	for v, err := range tbl.Query(ctx, f, &tablekit.QueryOptions{PageSize: 2, Cursor: &cur}) {
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, v.RK)
		if v.RK == "~d" {
			break
		}
	}
	got, err = tablekit.Collect(tbl.Query(ctx, f, &tablekit.QueryOptions{PageSize: 2, Continuation: cur.Token()}), 0)
	if err != nil || !same(append(before, rks(got)...), user) || (!cosmos && !slices.Equal(rks(got), []string{"~e"})) {
		t.Errorf("resumed after ~d (read before: %q): %q, %v; want the rest of %q, each once", before, rks(got), err, user)
	}
	// A point read of a reserved row still finds it (DeleteIfExists, Get).
	if _, err := tbl.Get(ctx, "p", "~coord~fence"); err != nil {
		t.Errorf("Get of a reserved row: %v", err)
	}
	if existed, err := tbl.DeleteIfExists(ctx, "p", "~coord~key~2"); err != nil || !existed {
		t.Errorf("DeleteIfExists of a reserved row: %v, %v", existed, err)
	}
	if _, err := tbl.Get(ctx, "p", "~coord~key~2"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("reserved row not deleted: %v", err)
	}
}
