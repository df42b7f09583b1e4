package azurite_test

import (
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/azurite"
)

// BenchmarkFront measures what the strict front costs: the same writes
// straight to Azurite and through the front (limits and SAS ranges on,
// no throttling or latency). Entities of ~1 KiB, as Azure's targets
// assume.
func BenchmarkFront(b *testing.B) {
	srv := azurite.StartForTest(b, &azurite.Options{Front: &azurite.FrontOptions{}})
	props := map[string]any{"Payload": string(make([]byte, 900)), "N": 1}
	for _, target := range []struct {
		name string
		cs   string
	}{
		{"direct", srv.Direct().ConnectionString(azurite.AccountName, azurite.AccountKey)},
		{"front", srv.ConnectionString()},
	} {
		c := tableClient(b, target.cs, "bench"+target.name)
		b.Run("upsert/"+target.name, func(b *testing.B) {
			ctx := ctxFor(b)
			i := 0
			for b.Loop() {
				if _, err := c.UpsertEntity(ctx, entity("p", fmt.Sprint(i), props), nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "entities/s")
		})
		b.Run("batch100/"+target.name, func(b *testing.B) {
			ctx := ctxFor(b)
			n := 0
			for b.Loop() {
				var acts []aztables.TransactionAction
				for j := range 100 {
					acts = append(acts, aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: entity(fmt.Sprint("b", n), fmt.Sprint(j), props)})
				}
				if _, err := c.SubmitTransaction(ctx, acts, nil); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(100*n)/b.Elapsed().Seconds(), "entities/s")
		})
	}
}
