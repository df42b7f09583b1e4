package tablekit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// The bulk benchmarks write 10,000 entities in 100 partitions against
// Azurite (or the account in AZURE_STORAGE_CONNECTION_STRING) and report
// entities/s. Run them with -benchtime=1x and -count for benchstat:
//
//	go test -run '^$' -bench 'Bulk' -benchtime 1x -count 5 .
const (
	benchEntities   = 10_000
	benchPartitions = 100
)

type benchRow struct {
	PK    string `table:",pk"`
	RK    string `table:",rk"`
	Name  string
	Count int32
	Score float64
}

func benchRows() []benchRow {
	rows := make([]benchRow, benchEntities)
	for i := range rows {
		rows[i] = benchRow{PK: fmt.Sprintf("p%03d", i%benchPartitions), RK: fmt.Sprintf("r%06d", i), Name: "some name", Count: int32(i), Score: float64(i) / 3}
	}
	return rows
}

func benchTable(b *testing.B) (*tablekit.Table[benchRow], []benchRow) {
	tbl, _, rows := benchTableClient(b)
	return tbl, rows
}

// benchTableClient is benchTable with the SDK's client of the same table.
func benchTableClient(b *testing.B) (*tablekit.Table[benchRow], *aztables.Client, []benchRow) {
	acct := testenv.Account(b, nil)
	name := testenv.CreateTable(b, acct)
	tbl, err := tablekit.OpenTable[benchRow](acct, name, nil)
	if err != nil {
		b.Fatal(err)
	}
	return tbl, acct.Tables().NewClient(name), benchRows()
}

func reportRate(b *testing.B) {
	b.ReportMetric(float64(benchEntities*b.N)/b.Elapsed().Seconds(), "entities/s")
}

// BenchmarkBulkWriter: one BulkWriter.Upsert call.
func BenchmarkBulkWriter(b *testing.B) {
	tbl, rows := benchTable(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := tbl.BulkWriter(nil).Upsert(ctx, rows); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b)
}

// sdkEntity encodes a row the way aztables users do: an EDMEntity and its
// MarshalJSON.
func sdkEntity(b *testing.B, r benchRow) []byte {
	e := aztables.EDMEntity{
		Entity:     aztables.Entity{PartitionKey: r.PK, RowKey: r.RK},
		Properties: map[string]any{"Name": r.Name, "Count": r.Count, "Score": r.Score},
	}
	data, err := e.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// handBatches groups rows by partition, in input order, into upsert
// transactions of at most 100 actions: the hand-written way.
func handBatches(b *testing.B, rows []benchRow) [][]aztables.TransactionAction {
	byPK := map[string][]aztables.TransactionAction{}
	var order []string
	for _, r := range rows {
		if _, ok := byPK[r.PK]; !ok {
			order = append(order, r.PK)
		}
		byPK[r.PK] = append(byPK[r.PK], aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: sdkEntity(b, r)})
	}
	var batches [][]aztables.TransactionAction
	for _, pk := range order {
		acts := byPK[pk]
		for len(acts) > 0 {
			n := min(100, len(acts))
			batches = append(batches, acts[:n])
			acts = acts[n:]
		}
	}
	return batches
}

// BenchmarkBulkSingleUpserts: a loop of single UpsertEntity calls, the way
// the SDK's samples write entities.
func BenchmarkBulkSingleUpserts(b *testing.B) {
	_, client, rows := benchTableClient(b)
	ctx := context.Background()
	for b.Loop() {
		for _, r := range rows {
			if _, err := client.UpsertEntity(ctx, sdkEntity(b, r), nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportRate(b)
}

// BenchmarkBulkHandTransactions: a hand-written loop of 100-action
// SubmitTransaction calls, partition by partition, one at a time.
func BenchmarkBulkHandTransactions(b *testing.B) {
	_, client, rows := benchTableClient(b)
	ctx := context.Background()
	batches := handBatches(b, rows)
	for b.Loop() {
		for _, bt := range batches {
			if _, err := client.SubmitTransaction(ctx, bt, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportRate(b)
}

// BenchmarkBulkHandTransactionsParallel: the same hand-written loop, with
// as many transactions in flight as BulkWriter's default concurrency.
func BenchmarkBulkHandTransactionsParallel(b *testing.B) {
	_, client, rows := benchTableClient(b)
	ctx := context.Background()
	batches := handBatches(b, rows)
	for b.Loop() {
		work := make(chan []aztables.TransactionAction)
		errs := make(chan error, 16)
		done := make(chan struct{})
		go func() {
			for _, bt := range batches {
				work <- bt
			}
			close(work)
		}()
		for range 16 {
			go func() {
				for bt := range work {
					if _, err := client.SubmitTransaction(ctx, bt, nil); err != nil {
						errs <- err
					}
				}
				done <- struct{}{}
			}()
		}
		for range 16 {
			<-done
		}
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	reportRate(b)
}
