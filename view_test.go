package tablekit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tablekit/tablekit"
)

// A delete action without an ETag is refused before anything is sent, as
// Table.Delete refuses one: "any version" is said with azcore.ETagAny.
func TestDeleteActionNeedsETag(t *testing.T) {
	ctx := context.Background()
	acct, tbl := newWireItems(t)
	if _, err := tbl.Insert(ctx, wireItem{PK: "p", RK: "a", N: 1}); err != nil {
		t.Fatal(err)
	}
	before := acct.Meter().Snapshot()
	_, err := tbl.Transaction(ctx, tablekit.DeleteAction(wireItem{PK: "p", RK: "a"}, ""))
	var ve *tablekit.ValidationError
	if !errors.As(err, &ve) || ve.Op != "Transaction" || !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Fatalf("DeleteAction with no ETag: %v, want a ValidationError of Transaction", err)
	}
	if sent := acct.Meter().Snapshot().Sub(before).Total(); sent != 0 {
		t.Errorf("%d requests sent for a refused action", sent)
	}
	if n, err := tbl.Count(ctx, tablekit.PointQuery("p", "a")); err != nil || n != 1 {
		t.Errorf("entity after a refused delete: count=%d, %v", n, err)
	}
}

// Entities is the same table as property bags: what one view writes the
// other reads, with the ETag the write returned.
func TestTableEntitiesView(t *testing.T) {
	ctx := context.Background()
	_, tbl := newWireItems(t)
	bags := tbl.AsEntities()
	if bags.Name() != tbl.Name() {
		t.Errorf("view name %q, table name %q", bags.Name(), tbl.Name())
	}
	etag, err := tbl.Insert(ctx, wireItem{PK: "p", RK: "o'k", N: 7, Tag: "x"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := bags.Get(ctx, "p", "o'k")
	if err != nil {
		t.Fatal(err)
	}
	if e.ETag != etag || e.Properties["N"] != int64(7) || e.Properties["Tag"] != "x" {
		t.Errorf("view read %+v (etag %s), want N=int64(7) Tag=x etag %s", e.Properties, e.ETag, etag)
	}
	e.Properties["N"] = int64(8)
	if _, err := bags.Merge(ctx, e, e.ETag); err != nil {
		t.Fatal(err)
	}
	v, err := tbl.Get(ctx, "p", "o'k")
	if err != nil || v.N != 8 {
		t.Errorf("typed read after the view's update: %+v, %v", v, err)
	}
}
