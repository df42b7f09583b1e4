package coord_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/transfer"
)

// TestCosmos runs coord's primitives behind package azurite's front in
// Cosmos DB mode (query results in no key order, Cosmos DB's limits and
// answers): a lease and its takeover, fenced and keyed writes, and a
// Sweep whose pages mix partitions. Cosmos DB's own table-level time to
// live is set outside the data plane and cannot be exercised here.
func TestCosmos(t *testing.T) {
	ctx := context.Background()
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Seed: 5}})
	acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Service: tablekit.ServiceCosmosDB})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := tablekit.OpenTable[Session](acct, "cosmoscoord", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	a := newLease(t, tbl.AsEntities(), "a", clock)
	b := newLease(t, tbl.AsEntities(), "b", clock)
	if term, err := a.Acquire(ctx); err != nil || term != 1 {
		t.Fatalf("a.Acquire: %d, %v", term, err)
	}
	if _, err := b.Acquire(ctx); !errors.Is(err, coord.ErrHeld) {
		t.Fatalf("b.Acquire: %v", err)
	}
	clock.Add(11 * time.Second)
	if term, err := b.Acquire(ctx); err != nil || term != 2 {
		t.Fatalf("b.Acquire after Duration: %d, %v", term, err)
	}
	w, _ := coord.NewWriter(tbl, nil)
	if _, err := w.Transaction(ctx, coord.Write{Term: 2, Key: "k"}, tablekit.UpsertAction(Session{User: "u", ID: "1"})); err != nil {
		t.Fatal(err)
	}
	if r, err := w.Transaction(ctx, coord.Write{Term: 2, Key: "k"}, tablekit.UpsertAction(Session{User: "u", ID: "1"})); err != nil || !r.Replayed {
		t.Fatalf("replay: %+v, %v", r, err)
	}
	if _, err := w.Transaction(ctx, coord.Write{Term: 1}, tablekit.UpsertAction(Session{User: "u", ID: "2"})); !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("stale write: %v", err)
	}
	var rows []Session
	for i := range 250 {
		rows = append(rows, Session{User: fmt.Sprintf("p%d", i%5), ID: fmt.Sprintf("r%03d", i), Expires: time.Now().Add(-time.Minute)})
	}
	if _, err := tbl.BulkWriter(nil).Upsert(ctx, rows); err != nil {
		t.Fatal(err)
	}
	// Pages of 60 rows, in no key order: each mixes partitions.
	res, err := coord.Sweep(ctx, tbl.AsEntities(), time.Now(), &transfer.PurgeOptions{Options: transfer.Options{PageSize: 60}})
	if err != nil {
		t.Fatal(err)
	}
	total := res.Deleted
	if total != 250 || !res.Complete {
		t.Errorf("swept %d expired rows, want 250", total)
	}
	if n, err := tbl.Count(ctx, tablekit.RowKeyRange("p0", "", "~")); err != nil || n != 0 {
		t.Errorf("%d expired rows left in p0 (%v)", n, err)
	}
}
