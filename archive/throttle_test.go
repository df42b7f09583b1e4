package archive_test

import (
	"context"
	"log/slog"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

var tableEndpointRE = regexp.MustCompile(`TableEndpoint=[^;]+`)

// throttledAccount puts package azurite's strict front, throttling each
// table partition to partitionRate entities/s, before the table endpoint
// of the tests' account, and opens an Account through it (queues and
// blobs go straight to the account). The SDK retries a throttled request
// once, quickly, so that throttling reaches the handlers; the Account's
// Governor starts at ceiling entities/s per partition.
func throttledAccount(t *testing.T, partitionRate, ceiling float64) (*tablekit.Account, *azurite.Front) {
	t.Helper()
	cs := testenv.ConnectionString(t)
	m := tableEndpointRE.FindString(cs)
	if m == "" {
		t.Skip("the connection string names no TableEndpoint")
	}
	front, err := azurite.NewFront(context.Background(), azurite.Endpoints{Table: m[len("TableEndpoint="):]}, &azurite.FrontOptions{
		NoLimits: true, NoSASRanges: true,
		Throttle: &azurite.ThrottleOptions{PartitionRate: partitionRate, AccountRate: -1, Burst: 200 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { front.Close() })
	quiet := slog.New(slog.DiscardHandler)
	acct, err := tablekit.Open(tableEndpointRE.ReplaceAllLiteralString(cs, "TableEndpoint="+front.Endpoints().Table), &tablekit.Options{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: 1, RetryDelay: 5 * time.Millisecond, MaxRetryDelay: 20 * time.Millisecond}}, Governor: tablekit.NewGovernor(&tablekit.GovernorOptions{PartitionRate: ceiling, HotPartition: -1, Logger: quiet}), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return acct, front
}

// concurrencyProbe samples a worker's Stats.Concurrency until stopped and
// keeps the lowest value seen.
type concurrencyProbe struct {
	mu     sync.Mutex
	lowest int
	stop   chan struct{}
	done   chan struct{}
}

func probeConcurrency(w *archive.Worker) *concurrencyProbe {
	p := &concurrencyProbe{lowest: w.Stats().Concurrency, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			c := w.Stats().Concurrency
			p.mu.Lock()
			p.lowest = min(p.lowest, c)
			p.mu.Unlock()
			select {
			case <-p.stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return p
}

func (p *concurrencyProbe) Lowest() int {
	close(p.stop)
	<-p.done
	return p.lowest
}

// TestWorkerAdaptsToThrottling moves employees through the strict front
// with each table partition throttled to 25 entities/s: far less than 8
// handlers ask. The Mover's writes report to the Account's Governor,
// which slows the partitions down; throttled handlers make the worker run
// fewer at once. Every move is done once: none lost, none duplicated,
// nothing poisoned. Then moves trickle in below the partitions' rate, and
// the worker's concurrency grows back to its maximum.
func TestWorkerAdaptsToThrottling(t *testing.T) {
	r := newRig(t, nil)
	facct, front := throttledAccount(t, 25, 400)
	current, err := tablekit.OpenTable[Employee](facct, r.current.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	archived, err := tablekit.OpenTable[Employee](facct, r.archive.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Governor nil: the Mover takes Current's, the Account's.
	mover := &archive.Mover[Employee]{Current: current, Archive: archived}
	mux := new(archive.Mux)
	if err := archive.HandleFunc(mux, archive.MoveKind, mover.Handle); err != nil {
		t.Fatal(err)
	}
	const concurrency = 8
	opts := r.workerOpts(t)
	opts.Concurrency = concurrency
	opts.VisibilityTimeout = 10 * time.Second
	// Throttled attempts fail often while the Governor learns the rate;
	// enough attempts that none is poisoned for it.
	opts.Retry = tablekit.RetryPolicy{MaxAttempts: 1000}
	w, err := archive.OpenWorker(r.acct, queueName(r.queue), mux, opts)
	if err != nil {
		t.Fatal(err)
	}

	all := employees(280)
	burst, trickle := all[:160], all[160:]
	r.seed(t, burst)
	probe := probeConcurrency(w)
	stop := runWorker(t, w)
	waitFor(t, 3*time.Minute, "the throttled moves", func() bool { return w.Stats().Succeeded == int64(len(burst)) })
	lowest := probe.Lowest()
	s, fs := w.Stats(), front.Stats()
	t.Logf("throttled phase: worker %+v; front: %d requests, %d throttled; lowest concurrency %d; governor rate %s: %.0f/s",
		s, fs.Requests, fs.ThrottledPartition, lowest, burst[0].Department, facct.Governor().Rate(current.Name(), burst[0].Department))
	if fs.ThrottledPartition == 0 || s.Throttled == 0 {
		t.Fatalf("the front throttled %d requests and %d handlers failed throttled: the test did not test throttling", fs.ThrottledPartition, s.Throttled)
	}
	if lowest >= concurrency {
		t.Errorf("the worker's concurrency never dropped below %d although %d handlers failed throttled", concurrency, s.Throttled)
	}
	if current.Account().Governor() != facct.Governor() {
		t.Error("a table opened with OpenTable does not share its Account's Governor")
	}
	cut := false
	for _, e := range burst[:4] {
		cut = cut || facct.Governor().Rate(current.Name(), e.Department) < 400
	}
	if !cut {
		t.Error("the Governor's partition rates were never cut: the Mover did not report its throttled writes")
	}

	// Below the partitions' rate, successes raise the concurrency back.
	ctx := context.Background()
	if _, err := r.current.BulkWriter(nil).Upsert(ctx, trickle); err != nil {
		t.Fatal(err)
	}
	recovered := -1 // trickled moves requested when it was back at the maximum
	for i, e := range trickle {
		if recovered < 0 && w.Stats().Concurrency == concurrency {
			recovered = i
		}
		if _, err := r.client.Enqueue(ctx, archive.MoveKind, archive.MoveRequest{PartitionKey: e.Department, RowKey: e.ID}, nil); err != nil {
			t.Fatal(err)
		}
		if recovered < 0 {
			time.Sleep(40 * time.Millisecond) // ~25 moves/s over 4 partitions
		}
	}
	if recovered < 0 {
		t.Errorf("the worker's concurrency did not grow back to %d over %d moves below the partitions' rate (it is %d)", concurrency, len(trickle), w.Stats().Concurrency)
	} else {
		t.Logf("the worker's concurrency was back at %d after %d trickled moves", concurrency, recovered)
	}
	waitFor(t, time.Minute, "the trickled moves", func() bool { return w.Stats().Succeeded == int64(len(all)) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	s = w.Stats()
	t.Logf("after the trickle: worker %+v", s)
	if s.Succeeded != int64(len(all)) || s.Poisoned != 0 || s.Lost != 0 {
		t.Errorf("worker handled %d, poisoned %d, lost %d messages; want %d, 0, 0", s.Succeeded, s.Poisoned, s.Lost, len(all))
	}
	r.checkArchived(t, all)
}
