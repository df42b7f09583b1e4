package tablekit_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
)

// BenchmarkGovernor writes through package azurite's strict front with
// throttling on: each partition serves govPartitionRate entities/s, and
// the account more than the partitions together, so the target is
// govPartitions × govPartitionRate. impl=tablekit is a BulkWriter with its
// Governor at Azure's default ceiling (it finds the front's rate by
// itself); impl=aztables is a hand-written writer of 100-action
// SubmitTransaction calls at the same fixed concurrency, with the SDK's
// default retries. Both report entities/s, the % of the target, the 503s
// the front answered and the writes that failed.
//
//	go test -run '^$' -bench '^BenchmarkGovernor$' -benchtime 1x -count 6 . | benchstat -col /impl -
func BenchmarkGovernor(b *testing.B) {
	ctx := context.Background()
	srv, err := azurite.Start(ctx, &azurite.Options{Front: &azurite.FrontOptions{
		Throttle: &azurite.ThrottleOptions{PartitionRate: govPartitionRate, AccountRate: 10_000},
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	target := float64(govPartitions * govPartitionRate)

	b.Run("impl=tablekit", func(b *testing.B) {
		gov := tablekit.NewGovernor(&tablekit.GovernorOptions{HotPartition: -1, Logger: slog.New(slog.DiscardHandler)})
		acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Governor: gov})
		if err != nil {
			b.Fatal(err)
		}
		tbl := govTable(b, acct)
		rows := govRows()
		for b.Loop() {
			before := srv.Front().Stats()
			start := time.Now()
			res, err := tbl.BulkWriter(&tablekit.BulkOptions{Concurrency: govConcurrency}).Upsert(ctx, rows)
			elapsed := time.Since(start)
			govReport(b, float64(len(rows))/elapsed.Seconds(), target, srv.Front().Stats().Throttled-before.Throttled, len(res.Failed))
			if err != nil {
				b.Logf("failures: %v", err)
			}
		}
	})
	b.Run("impl=aztables", func(b *testing.B) {
		acct, err := tablekit.Open(srv.ConnectionString(), nil)
		if err != nil {
			b.Fatal(err)
		}
		name := govTable(b, acct).Name()
		var retries atomic.Int64
		opts := &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{countTries{&retries}}}}
		svc, err := aztables.NewServiceClientFromConnectionString(srv.ConnectionString(), opts)
		if err != nil {
			b.Fatal(err)
		}
		client := svc.NewClient(name)
		batches := interleave(handBatches(b, govRows()), govPartitions)
		for b.Loop() {
			before := srv.Front().Stats()
			retries.Store(0)
			start := time.Now()
			failed := handWriter(ctx, client, batches, govConcurrency)
			elapsed := time.Since(start)
			govReport(b, float64(govEntities)/elapsed.Seconds(), target, srv.Front().Stats().Throttled-before.Throttled, failed)
			b.ReportMetric(float64(retries.Load()-int64(len(batches))), "retries")
		}
	})
}

const (
	govPartitions    = 4
	govPartitionRate = 1_000 // entities/s per partition at the front
	govEntities      = 40_000
	govConcurrency   = 16
)

func govTable(b *testing.B, acct *tablekit.Account) *tablekit.Table[benchRow] {
	b.Helper()
	name := fmt.Sprintf("gov%d", time.Now().UnixNano()%1_000_000_000)
	tbl, err := tablekit.OpenTable[benchRow](acct, name, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(context.Background()); err != nil {
		b.Fatal(err)
	}
	return tbl
}

// govRows are govEntities rows spread over govPartitions partitions.
func govRows() []benchRow {
	rows := make([]benchRow, govEntities)
	for i := range rows {
		rows[i] = benchRow{PK: fmt.Sprintf("p%d", i%govPartitions), RK: fmt.Sprintf("%06d", i), Name: "row", Count: int32(i), Score: 1.5}
	}
	return rows
}

// interleave orders batches grouped by partition (parts groups of equal
// length, one after the other) round-robin across the partitions, as a
// careful hand-written writer would, so that its fixed concurrency is
// spread over the partitions.
func interleave(batches [][]aztables.TransactionAction, parts int) [][]aztables.TransactionAction {
	per := len(batches) / parts
	out := make([][]aztables.TransactionAction, 0, len(batches))
	for i := range per {
		for p := range parts {
			out = append(out, batches[p*per+i])
		}
	}
	return append(out, batches[per*parts:]...)
}

func govReport(b *testing.B, rate, target float64, throttled int64, failed int) {
	b.ReportMetric(rate, "entities/s")
	b.ReportMetric(100*rate/target, "%target")
	b.ReportMetric(float64(throttled), "503s")
	b.ReportMetric(float64(failed), "failed")
}

// handWriter sends batches with conc goroutines and returns how many
// entities failed.
func handWriter(ctx context.Context, client *aztables.Client, batches [][]aztables.TransactionAction, conc int) int {
	work := make(chan []aztables.TransactionAction)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for batch := range work {
				if _, err := client.SubmitTransaction(ctx, batch, nil); err != nil {
					failed.Add(int64(len(batch)))
				}
			}
		})
	}
	for _, batch := range batches {
		work <- batch
	}
	close(work)
	wg.Wait()
	return int(failed.Load())
}

// countTries counts the tries of every request.
type countTries struct{ n *atomic.Int64 }

func (c countTries) Do(req *policy.Request) (*http.Response, error) {
	c.n.Add(1)
	return req.Next()
}
