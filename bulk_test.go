package tablekit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func newWireItems(t *testing.T) (*tablekit.Account, *tablekit.Table[wireItem]) {
	t.Helper()
	acct := testenv.Account(t, nil)
	tbl, err := tablekit.OpenTable[wireItem](acct, testenv.CreateTable(t, acct), nil)
	if err != nil {
		t.Fatal(err)
	}
	return acct, tbl
}

// TestBulkWriterRepeatedActionsInOrder: several actions on one entity in one
// Write take effect in order, and each reports its own true outcome.
func TestBulkWriterRepeatedActionsInOrder(t *testing.T) {
	ctx := context.Background()
	_, tbl := newWireItems(t)
	for _, rk := range []string{"a", "b", "c"} {
		if _, err := tbl.Insert(ctx, wireItem{PK: "p", RK: rk, N: 1, Tag: "old"}); err != nil {
			t.Fatal(err)
		}
	}
	stale := getETag(t, tbl, "p", "c")
	res, err := tbl.BulkWriter(nil).Write(ctx, []tablekit.Action[wireItem]{
		0: tablekit.UpsertAction(wireItem{PK: "p", RK: "a", N: 2}),           // drops Tag
		1: tablekit.MergeAction(wireItem{PK: "p", RK: "a", Tag: "B"}, ""),    // adds Tag B
		2: tablekit.DeleteAction(wireItem{PK: "p", RK: "b"}, azcore.ETagAny), // b exists
		3: tablekit.InsertAction(wireItem{PK: "p", RK: "b", N: 3}),           // so this insert succeeds
		4: tablekit.InsertAction(wireItem{PK: "p", RK: "c", N: 9}),           // c exists: fails
		5: tablekit.UpsertAction(wireItem{PK: "p", RK: "c", N: 4}),           // applies
		6: tablekit.MergeAction(wireItem{PK: "p", RK: "c", N: 5}, stale),     // stale: fails
		7: tablekit.MergeAction(wireItem{PK: "q", RK: "other", N: 1}, ""),
	})
	if !tablekit.ItemsFailed(err) || !errors.Is(err, tablekit.ErrAlreadyExists) || !strings.Contains(err.Error(), "2 of 8 items failed") {
		t.Fatalf("err = %v, want the error of items 4 and 6, matching the first's", err)
	}
	if len(res.Failed) != 2 || res.Failed[0].Index != 4 || !errors.Is(res.Failed[0].Err, tablekit.ErrAlreadyExists) ||
		res.Failed[1].Index != 6 || !errors.Is(res.Failed[1].Err, tablekit.ErrPreconditionFailed) || res.Succeeded != 6 {
		t.Fatalf("result %+v, want items 4 (exists) and 6 (stale) failed, 6 succeeded", res)
	}
	want := map[string]wireItem{"a": {PK: "p", RK: "a", N: 2, Tag: "B"}, "b": {PK: "p", RK: "b", N: 3}, "c": {PK: "p", RK: "c", N: 4}}
	for rk, w := range want {
		got, err := tbl.Get(ctx, "p", rk)
		if err != nil || got != w {
			t.Errorf("entity %s = %+v (%v), want %+v", rk, got, err, w)
		}
	}
	// The ETag of each entity's last applied action is the stored one.
	for i, rk := range map[int]string{1: "a", 3: "b", 5: "c"} {
		if etag := getETag(t, tbl, "p", rk); res.ETags[i] != etag {
			t.Errorf("item %d: ETag %q, stored %q", i, res.ETags[i], etag)
		}
	}
	if res.ETags[2] != "" || res.ETags[4] != "" {
		t.Errorf("a delete or failed item has an ETag: %q", res.ETags)
	}
}

// TestBulkWriterBoundsRequestsPerChunk: a chunk whose actions the service
// refuses one by one costs at most MaxChunkRequests requests, not one per
// refused action, and every item is reported truthfully.
func TestBulkWriterBoundsRequestsPerChunk(t *testing.T) {
	ctx := context.Background()
	acct, tbl := newWireItems(t)
	items := make([]wireItem, 100)
	for i := range items {
		items[i] = wireItem{PK: "p", RK: fmt.Sprintf("%03d", i), N: i}
	}
	if _, err := tbl.BulkWriter(nil).Upsert(ctx, items); err != nil {
		t.Fatal(err)
	}
	again := make([]wireItem, len(items))
	for i := range again {
		again[i] = wireItem{PK: "p", RK: items[i].RK, N: -1}
	}
	before := acct.Meter().Snapshot()
	res, err := tbl.BulkWriter(nil).Insert(ctx, again)
	sent := acct.Meter().Snapshot().Sub(before).Count("table", "Transaction")
	if err == nil || res.Succeeded != 0 || len(res.Failed) != 100 {
		t.Fatalf("inserting 100 existing entities: %d succeeded, %d failed, err %v", res.Succeeded, len(res.Failed), err)
	}
	if sent > 4 || int64(res.Requests) != sent {
		t.Errorf("%d requests (result says %d) for one refused chunk, want at most MaxChunkRequests (4)", sent, res.Requests)
	}
	exists, skipped := 0, 0
	for _, f := range res.Failed {
		switch {
		case errors.Is(f.Err, tablekit.ErrAlreadyExists):
			exists++
		case errors.Is(f.Err, tablekit.ErrSkipped):
			skipped++
		default:
			t.Errorf("item %d: %v", f.Index, f.Err)
		}
	}
	if exists != 4 || skipped != 96 {
		t.Errorf("%d refused and %d skipped, want 4 and 96", exists, skipped)
	}
	for e, err := range tbl.Query(ctx, tablekit.PartitionEq("p"), nil) {
		if err != nil || e.N < 0 {
			t.Fatalf("an existing entity changed: %+v, %v", e, err)
		}
	}

	// With a bound of 101 every refusal is resolved, one request each.
	res, _ = tbl.BulkWriter(&tablekit.BulkOptions{MaxChunkRequests: 101}).Insert(ctx, again[:10])
	if len(res.Failed) != 10 || res.Requests != 10 {
		t.Errorf("MaxChunkRequests 101: %d failed in %d requests, want 10 and 10", len(res.Failed), res.Requests)
	}
	for _, f := range res.Failed {
		if !errors.Is(f.Err, tablekit.ErrAlreadyExists) {
			t.Errorf("item %d: %v", f.Index, f.Err)
		}
	}

	// A failure of the whole chunk fails it once, whatever index the
	// service names.
	missing, err := tablekit.OpenTable[wireItem](acct, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err = missing.BulkWriter(nil).Upsert(ctx, again)
	if !errors.Is(err, tablekit.ErrNotFound) || res.Requests != 1 || len(res.Failed) != 100 {
		t.Errorf("missing table: %d requests, %d failed, err %v; want 1, 100, ErrNotFound", res.Requests, len(res.Failed), err)
	}
}

// TestBulkWriterContextEnded: items never sent because ctx ended fail with
// the context's error.
func TestBulkWriterContextEnded(t *testing.T) {
	_, tbl := newWireItems(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	items := []wireItem{{PK: "a", RK: "1"}, {PK: "b", RK: "1"}, {PK: "b", RK: "1"}}
	res, err := tbl.BulkWriter(nil).Upsert(ctx, items)
	if !errors.Is(err, context.Canceled) || len(res.Failed) != 3 || res.Succeeded != 0 {
		t.Fatalf("%+v, %v", res, err)
	}
	for _, f := range res.Failed {
		if !errors.Is(f.Err, context.Canceled) {
			t.Errorf("item %d: %v", f.Index, f.Err)
		}
	}
}
