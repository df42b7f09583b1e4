package index_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keys"
)

func lastNameList() []index.Index[Employee] {
	return []index.Index[Employee]{{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: true}}
}

func ids(list []index.ID) []string {
	out := make([]string, len(list))
	for i, id := range list {
		out[i] = id.RowKey
	}
	return out
}

// Option 2: the index entity lives in the employees' partition and changes
// in the same transaction as the employee.
func TestPartitionListMoves(t *testing.T) {
	ctx := testCtx(t)
	f := newIntra(t, lastNameList(), nil)
	for _, e := range staff() {
		if _, err := f.ix.Upsert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	jones := filterStaff("Sales", func(e Employee) bool { return e.LastName == "Jones" }, func(e Employee) string { return e.ID })
	got, err := f.ix.IDs(ctx, "Sales", "lastname", "Jones")
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "Jones ids", ids(got), jones)
	equal(t, "Jones employees", collect(t, f.ix.By(ctx, "Sales", "lastname", "Jones")), jones)
	// Range over index entities: every last name from H up to (not incl.) K.
	equal(t, "H..K", collect(t, f.ix.Range(ctx, "Sales", "lastname", "H", "K")),
		filterStaff("Sales", func(e Employee) bool { return e.LastName >= "H" && e.LastName < "K" }, func(e Employee) string { return e.LastName }))

	// Marrying moves the id from the Jones entity to the Hall entity.
	prev, err := f.ix.Get(ctx, "Sales", "000223")
	if err != nil {
		t.Fatal(err)
	}
	next := prev
	next.LastName = "Hall"
	before := f.acct.Meter().Snapshot()
	if _, err := f.ix.Update(ctx, next, prev.ETag); err != nil {
		t.Fatal(err)
	}
	if cost := f.acct.Meter().Snapshot().Sub(before); cost.Total() != 4 || cost.Count("table", "Transaction") != 1 {
		t.Errorf("moving an id cost %v, want a read of the employee, 2 index entity reads and 1 transaction", cost)
	}
	got, _ = f.ix.IDs(ctx, "Sales", "lastname", "Jones")
	equal(t, "Jones after the move", ids(got), []string{"000123", "000200"})
	got, _ = f.ix.IDs(ctx, "Sales", "lastname", "Hall")
	equal(t, "Hall after the move", ids(got), []string{"000152", "000223"})

	// The last Smith leaves: the Smith index entity goes away.
	if _, err := f.ix.DeleteIfExists(ctx, "Sales", "001234"); err != nil {
		t.Fatal(err)
	}
	smith, _ := keys.Compound("lastname", "Smith")
	if _, err := f.raw.Get(ctx, "Sales", smith); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("empty index entity left: %v", err)
	}
}

// 16 writers add 50 employees each, all named Jones, to one partition: the
// Jones index entity must list all 800 (no lost update). The writers use
// four SamePartition instances, as four processes would: writers of one instance
// take turns on the index entity, and the instances meet the entity's ETag
// condition.
func TestPartitionListContention(t *testing.T) {
	ctx := testCtx(t)
	f := newIntra(t, lastNameList(), nil)
	var procs []*index.SamePartition[Employee]
	for range 4 {
		ix, err := index.NewSamePartition(mustTable[Employee](t, f), lastNameList(), nil)
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, ix)
	}
	const writers, each = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				e := Employee{Department: "Sales", ID: fmt.Sprintf("%06d", w*each+i), FirstName: "J", LastName: "Jones", Email: fmt.Sprintf("j%d@contoso.com", w*each+i)}
				if _, err := procs[w%len(procs)].Insert(ctx, e); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	cost := f.acct.Meter().Snapshot()
	t.Logf("%d inserts took %d transactions: %d lost an ETag race and were retried", writers*each, cost.Count("table", "Transaction"), cost.Count("table", "Transaction")-writers*each)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := f.ix.IDs(ctx, "Sales", "lastname", "Jones")
	if err != nil {
		t.Fatal(err)
	}
	want := fmtIDs(writers*each, func(i int) string { return fmt.Sprintf("%06d", i) })
	equal(t, "Jones ids", ids(got), want)
	n := 0
	for e, err := range f.raw.Query(ctx, tablekit.PartitionEq("Sales"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(e.RowKey, "lastname!") {
			n++
		}
	}
	if n != writers*each {
		t.Errorf("%d employees stored, want %d", n, writers*each)
	}
}

// An EntityList splits a long list over several properties and refuses to
// grow past 1 MiB, pointing to the blob option.
func TestEntityListLimits(t *testing.T) {
	ctx := testCtx(t)
	acct := testenv.Account(t, nil)
	name := newTable(t, acct)
	lists, err := index.NewEntityList(mustNewTable[tablekit.Entity](t, acct, name), nil)
	if err != nil {
		t.Fatal(err)
	}
	key := index.ListKey{Index: "lastname", Partition: "Sales", Value: "Jones"}
	var want []index.ID
	for i := range 80 {
		id := index.ID{PartitionKey: "Sales", RowKey: fmt.Sprintf("%04d-%s", i, strings.Repeat("x", 1000))}
		if err := lists.Add(ctx, key, id); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
		want = append(want, id)
	}
	if err := lists.Add(ctx, key, want[3]); err != nil { // already there
		t.Fatal(err)
	}
	got, err := lists.IDs(ctx, key)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("IDs: %d ids, %v; want %d", len(got), err, len(want))
	}
	pk, rk, _ := lists.Keys(key)
	raw := mustNewTable[tablekit.Entity](t, acct, name)
	e, err := raw.Get(ctx, pk, rk)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Properties["IDs2"]; !ok {
		t.Errorf("an 80 KB list is not split: %d properties", len(e.Properties))
	}
	for _, id := range want {
		if err := lists.Remove(ctx, key, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.Get(ctx, pk, rk); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("empty index entity left: %v", err)
	}
}

// Option 1: concurrent writers of one blob list lose no id.
func TestBlobListConcurrent(t *testing.T) {
	ctx := testCtx(t)
	acct := testenv.Account(t, nil)
	c := testenv.NewContainer(t, acct)
	lists, err := index.NewBlobList(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := index.ListKey{Index: "lastname", Value: "Van Damme/Jones"}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := range 20 {
				if err := lists.Add(ctx, key, index.ID{PartitionKey: fmt.Sprintf("D%d", w), RowKey: fmt.Sprintf("%03d", i)}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := lists.IDs(ctx, key)
	if err != nil || len(got) != 160 || got[0] != (index.ID{PartitionKey: "D0", RowKey: "000"}) || got[159] != (index.ID{PartitionKey: "D7", RowKey: "019"}) {
		t.Fatalf("IDs = %d ids (%v), %v", len(got), got[:min(len(got), 3)], err)
	}
	if name := lists.BlobName(key); name != "lastname/Van%20Damme%2FJones" {
		t.Errorf("blob name %q", name)
	}
	for _, id := range got {
		if err := lists.Remove(ctx, key, id); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := lists.IDs(ctx, key); err != nil || len(got) != 0 {
		t.Errorf("after removing all: %v, %v", got, err)
	}
}
