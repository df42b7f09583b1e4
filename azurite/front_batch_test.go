package azurite_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

func adds(pk string, n int, props map[string]any) []aztables.TransactionAction {
	var a []aztables.TransactionAction
	for i := range n {
		a = append(a, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: entity(pk, fmt.Sprintf("r%03d", i), props)})
	}
	return a
}

func (env *frontEnv) testBatch(t *testing.T) {
	ctx := ctxFor(t)
	c := tableClient(t, env.srv.ConnectionString(), "batches")

	if _, err := c.SubmitTransaction(ctx, adds("ok", 100, nil), nil); err != nil {
		t.Fatalf("100 actions: %v", err)
	}

	_, err := c.SubmitTransaction(ctx, adds("many", 101, nil), nil)
	wantBatchError(t, "101 actions", err, 400, "InvalidInput", "99:The batch request operation exceeds the maximum 100 changes per change set.")

	mixed := append(adds("one", 2, nil), aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertMerge, Entity: entity("two", "r", nil)})
	_, err = c.SubmitTransaction(ctx, mixed, nil)
	wantBatchError(t, "two partitions", err, 400, "CommandsInBatchActOnDifferentPartitions", "2:All commands in a batch must operate on same entity group.")

	dup := append(adds("dup", 3, nil), aztables.TransactionAction{ActionType: aztables.TransactionTypeDelete, Entity: entity("dup", "r001", nil)})
	_, err = c.SubmitTransaction(ctx, dup, nil)
	wantBatchError(t, "one entity twice", err, 400, "InvalidDuplicateRow", "3:The batch request contains multiple changes with same row key.")

	badKey := append(adds("keys", 2, nil), aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: entity("keys", "a/b", nil)})
	_, err = c.SubmitTransaction(ctx, badKey, nil)
	wantBatchError(t, "bad key", err, 400, "OutOfRangeInput", "2:The 'RowKey' parameter of value 'a/b' is out of range.")

	tooMany := append(adds("props", 1, nil), aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: entity("props", "x", manyProps(253))})
	_, err = c.SubmitTransaction(ctx, tooMany, nil)
	wantBatchError(t, "too many properties", err, 400, "TooManyProperties", "1:The entity contains more properties than allowed.")

	// Errors found while reading a property carry no index (as Azure sends them).
	bigValue := append(adds("value", 1, nil), aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: entity("value", "x", map[string]any{"S": strings.Repeat("v", 32<<10+1)})})
	_, err = c.SubmitTransaction(ctx, bigValue, nil)
	wantBatchError(t, "property too large", err, 400, "PropertyValueTooLarge", "The property value exceeds the maximum allowed size (64KB).")

	bigEntity := adds("entity", 1, bigProps(20, 30_000))
	_, err = c.SubmitTransaction(ctx, bigEntity, nil)
	wantBatchError(t, "entity too large", err, 400, "EntityTooLarge", "The entity is larger than the maximum size permitted.")

	// Over 4 MiB: refused as a whole (413), not as a changeset.
	_, err = c.SubmitTransaction(ctx, adds("huge", 9, bigProps(16, 30_000)), nil)
	wantError(t, "batch over 4 MiB", err, http.StatusRequestEntityTooLarge, "RequestBodyTooLarge")

	for _, pk := range []string{"many", "one", "two", "dup", "keys", "props", "value", "entity", "huge"} {
		if n := count(t, c, "PartitionKey eq '"+pk+"'"); n != 0 {
			t.Errorf("partition %s holds %d entities after its refused batch", pk, n)
		}
	}
	if n := count(t, c, "PartitionKey eq 'ok'"); n != 100 {
		t.Errorf("the accepted batch stored %d entities, want 100", n)
	}
}
