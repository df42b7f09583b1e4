package tablekit_test

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// wantCounts checks that d has exactly the given counts and nothing else.
func wantCounts(t *testing.T, d tablekit.MeterSnapshot, service string, want map[string]int64) {
	t.Helper()
	var total int64
	for op, n := range want {
		total += n
		if got := d.Count(service, op); got != n {
			t.Errorf("%s %s = %d, want %d (all: %v)", service, op, got, n, d)
		}
	}
	if d.Total() != total || d.Service(service) != total {
		t.Errorf("counted %v, want %d %s requests only", d, total, service)
	}
}

func TestMeterCountsTableOperations(t *testing.T) {
	ctx := testCtx(t)
	acct := testenv.Account(t, nil)
	meter := acct.Meter()
	start := meter.Snapshot()

	client := testenv.NewTable(t, acct) // CreateTable
	entity, _ := json.Marshal(map[string]any{"PartitionKey": "p", "RowKey": "r1", "N": "one"})
	if _, err := client.AddEntity(ctx, entity, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := client.GetEntity(ctx, "p", "r1", nil); err != nil {
		t.Fatal(err)
	}
	pager := client.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'p'")})
	var rows, pages int64
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows += int64(len(page.Entities))
		pages++ // 1 from Azurite; Azure may answer an empty page first
	}
	if rows != 1 {
		t.Fatalf("query returned %d entities, want 1", rows)
	}
	wantCounts(t, meter.Snapshot().Sub(start), "table", map[string]int64{
		"CreateTable": 1, "InsertEntity": 1, "GetEntity": 1, "QueryEntities": pages,
	})

	// Upserts, a transaction, a delete.
	before := meter.Snapshot()
	if _, err := client.UpsertEntity(ctx, entity, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.UpsertEntity(ctx, entity, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeMerge}); err != nil {
		t.Fatal(err)
	}
	e2, _ := json.Marshal(map[string]any{"PartitionKey": "p", "RowKey": "r2"})
	e3, _ := json.Marshal(map[string]any{"PartitionKey": "p", "RowKey": "r3"})
	if _, err := client.SubmitTransaction(ctx, []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeAdd, Entity: e2},
		{ActionType: aztables.TransactionTypeAdd, Entity: e3},
	}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DeleteEntity(ctx, "p", "r1", nil); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, meter.Snapshot().Sub(before), "table", map[string]int64{
		"UpdateEntity": 1, "MergeEntity": 1, "Transaction": 1, "DeleteEntity": 1,
	})
}

func TestMeterCountsQueueAndBlobOperations(t *testing.T) {
	ctx := testCtx(t)
	acct := testenv.Account(t, nil)
	meter := acct.Meter()

	before := meter.Snapshot()
	q := testenv.NewQueue(t, acct)
	if _, err := q.EnqueueMessage(ctx, "m", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := q.PeekMessage(ctx, nil); err != nil {
		t.Fatal(err)
	}
	got, err := q.DequeueMessage(ctx, nil)
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("dequeue: %v, %d messages", err, len(got.Messages))
	}
	msg := got.Messages[0]
	upd, err := q.UpdateMessage(ctx, *msg.MessageID, *msg.PopReceipt, "m2", &azqueue.UpdateMessageOptions{VisibilityTimeout: to.Ptr[int32](0)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.DeleteMessage(ctx, *msg.MessageID, *upd.PopReceipt, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := q.GetProperties(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := q.ClearMessages(ctx, nil); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, meter.Snapshot().Sub(before), "queue", map[string]int64{
		"CreateQueue": 1, "PutMessage": 1, "PeekMessages": 1, "GetMessages": 1,
		"UpdateMessage": 1, "DeleteMessage": 1, "GetProperties": 1, "ClearMessages": 1,
	})

	before = meter.Snapshot()
	c := testenv.NewContainer(t, acct)
	b := c.NewBlockBlobClient("dir/blob.txt")
	if _, err := b.UploadBuffer(ctx, []byte("hello"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetProperties(ctx, nil); err != nil {
		t.Fatal(err)
	}
	resp, err := b.DownloadStream(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(data) != "hello" {
		t.Fatalf("download: %q, %v", data, err)
	}
	pager := c.NewListBlobsFlatPager(nil)
	for pager.More() {
		if _, err := pager.NextPage(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, meter.Snapshot().Sub(before), "blob", map[string]int64{
		"CreateContainer": 1, "PutBlob": 1, "GetProperties": 1, "GetBlob": 1, "ListBlobs": 1, "DeleteBlob": 1,
	})
}
