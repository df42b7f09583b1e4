package archive_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// benchChunk is how many messages are in the queue at most: Azurite slows
// down on deep queues, so each chunk is filled (untimed) and drained
// (timed) in turn.
const benchChunk = 500

// benchTimeout bounds each request of the benchmarks: Azurite has been
// seen (on a loaded 2-core machine) to leave a request unanswered.
const benchTimeout = 5 * time.Second

// BenchmarkThroughput measures messages/s through a no-op handler: the
// Worker at Concurrency 1 and 16 against hand-written loops that dequeue
// 32 and delete each message (one after the other, and in parallel).
//
// Run it and BenchmarkPaired in separate invocations, e.g.
//
//	go test -run '^$' -bench Throughput -benchtime 1000x -count 6 ./archive/
//	go test -run '^$' -bench Paired -benchtime 1000x -count 6 ./archive/
//
// An in-memory Azurite 3.37 that has served some 30,000 messages in one
// process (all queues deleted) was seen stuck at 100% CPU, answering
// nothing; one invocation of each stays below that.
func BenchmarkThroughput(b *testing.B) {
	acct := testenv.Account(b, nil)
	drainers := []struct {
		name  string
		drain func(b *testing.B, q *azqueue.QueueClient, n int)
	}{
		{"handloop", handLoop(false)},
		{"handloop-parallel-delete", handLoop(true)},
		{"worker-c1", workerDrain(acct, 1)},
		{"worker-c16", workerDrain(acct, 16)},
	}
	for _, d := range drainers {
		b.Run(d.name, func(b *testing.B) {
			q := testenv.NewQueue(b, acct)
			var timed time.Duration
			b.StopTimer()
			for done := 0; done < b.N; {
				n := min(benchChunk, b.N-done)
				m := fill(b, q, n)
				b.StartTimer()
				t0 := time.Now()
				d.drain(b, q, m)
				timed += time.Since(t0)
				b.StopTimer()
				done += n
			}
			b.ReportMetric(float64(b.N)/timed.Seconds(), "msgs/s")
		})
	}
}

var benchText = func() string {
	text, err := archive.EncodeForTest("noop", map[string]string{"pk": "Sales", "rk": "000001"})
	if err != nil {
		panic(err)
	}
	return text
}()

// fill enqueues n messages and returns how many the queue acknowledged.
func fill(b *testing.B, q *azqueue.QueueClient, n int) int {
	var wg sync.WaitGroup
	var ok atomic.Int64
	sem := make(chan struct{}, 16)
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
			defer cancel()
			if _, err := q.EnqueueMessage(ctx, benchText, nil); err != nil {
				b.Log(err)
				return
			}
			ok.Add(1)
		})
	}
	wg.Wait()
	return int(ok.Load())
}

func handLoop(parallel bool) func(b *testing.B, q *azqueue.QueueClient, n int) {
	return func(b *testing.B, q *azqueue.QueueClient, n int) {
		ctx := context.Background()
		empty := 0
		for got := 0; got < n; {
			dctx, cancel := context.WithTimeout(ctx, benchTimeout)
			resp, err := q.DequeueMessages(dctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to32(32), VisibilityTimeout: to32(5)})
			cancel()
			if err != nil {
				b.Log(err)
				continue
			}
			got += len(resp.Messages)
			if len(resp.Messages) == 0 {
				empty++
				if empty == 10000 { // ~10 s without a message
					props, err := q.GetProperties(ctx, nil)
					if err == nil {
						b.Fatalf("hand loop: got %d of %d, then the queue ran dry (approximate count %d)", got, n, *props.ApproximateMessagesCount)
					}
					b.Fatalf("hand loop: got %d of %d, then the queue ran dry (%v)", got, n, err)
				}
				time.Sleep(time.Millisecond) // waiting for a message whose delete failed
			} else {
				empty = 0
			}
			var wg sync.WaitGroup
			for _, m := range resp.Messages {
				del := func() {
					dctx, cancel := context.WithTimeout(ctx, benchTimeout)
					defer cancel()
					if _, err := q.DeleteMessage(dctx, *m.MessageID, *m.PopReceipt, nil); err != nil {
						b.Log(err) // the message reappears in 5 s and is counted again
					}
				}
				if parallel {
					wg.Go(del)
				} else {
					del()
				}
			}
			wg.Wait()
		}
	}
}

func workerDrain(acct *tablekit.Account, concurrency int) func(b *testing.B, q *azqueue.QueueClient, n int) {
	return func(b *testing.B, q *azqueue.QueueClient, n int) {
		noop := archive.HandlerFunc(func(context.Context, *archive.Message) error { return nil })
		w, err := archive.OpenWorker(acct, queueName(q), noop, &archive.WorkerOptions{
			Concurrency:       concurrency,
			VisibilityTimeout: 5 * time.Second,
			OperationTimeout:  benchTimeout,
		})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan error, 1)
		go func() { res <- w.Run(ctx) }()
		last, since := int64(-1), time.Now()
		for s := w.Stats(); s.Succeeded < int64(n); s = w.Stats() {
			if s.Succeeded != last {
				last, since = s.Succeeded, time.Now()
			} else if time.Since(since) > 10*time.Second {
				props, err := q.GetProperties(context.Background(), nil)
				count := int32(-1)
				if err == nil {
					count = *props.ApproximateMessagesCount
				}
				cancel()
				b.Fatalf("worker: no progress for 10 s at %+v of %d (queue approximate count %d, %v)", s, n, count, err)
			}
			time.Sleep(time.Millisecond)
		}
		cancel()
		if err := <-res; err != nil {
			b.Fatal(err)
		}
		if s := w.Stats(); s.Succeeded != int64(n) || s.Failed != 0 {
			b.Fatalf("stats %+v, want %d succeeded", s, n)
		}
	}
}

// BenchmarkPaired drains alternate chunks with the hand-written loop and
// the Worker, so both see the same load on a shared machine, and reports
// both rates and their ratio.
func BenchmarkPaired(b *testing.B) {
	acct := testenv.Account(b, nil)
	for _, c := range []int{1, 16} {
		b.Run(fmt.Sprintf("c%d", c), func(b *testing.B) {
			q := testenv.NewQueue(b, acct)
			loop, worker := handLoop(false), workerDrain(acct, c)
			var tLoop, tWorker time.Duration
			b.StopTimer()
			for done := 0; done < b.N; {
				n := min(benchChunk, b.N-done)
				m := fill(b, q, n)
				b.StartTimer()
				t0 := time.Now()
				loop(b, q, m)
				tLoop += time.Since(t0)
				b.StopTimer()
				m = fill(b, q, n)
				b.StartTimer()
				t0 = time.Now()
				worker(b, q, m)
				tWorker += time.Since(t0)
				b.StopTimer()
				done += n
			}
			b.ReportMetric(float64(b.N)/tLoop.Seconds(), "loop-msgs/s")
			b.ReportMetric(float64(b.N)/tWorker.Seconds(), "worker-msgs/s")
			b.ReportMetric(100*tLoop.Seconds()/tWorker.Seconds(), "worker/loop-%")
		})
	}
}
