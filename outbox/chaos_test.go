package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/chaos"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/outbox"
	"github.com/tablekit/tablekit/patterns"
)

// TestChaosOutbox is the outbox suite: chaos.Size(8, 12) writers of
// chaos.Size(10, 30) transactions each, each writer with its own Account,
// Store and Feed, through ~20% faulted tries (answers lost included),
// write a state row and 1 to 3 messages (events with ids) to the outbox
// stream of one of 4 partitions in one Feed.Append; a failed transaction
// is sent again at the version read anew, except 1 in 6, abandoned after
// a first failure (its error says it was not applied). 3 relays, each with
// its own Account and coord.Lease on one lease row, run Relay.Run with a
// Publisher (its Enqueue faulted too, so lost answers enqueue copies; tried 10 ms to
// 200 ms apart),
// restarted as a new Relay every 1-3 s; 2 archive workers, each with its
// own Account, run NewHandler whose apply adds 1 to its partition's count
// row (read, then merged on the ETag read) and writes a log row of the
// message id: a message applied twice would count twice.
//
// Invariants, once every acknowledged message has its log row and the
// queue is empty: the log rows are exactly the acknowledged messages (none
// of an abandoned transaction, none missing); each partition's count
// equals its log rows (no message applied twice); each acknowledged
// transaction's state row exists and no abandoned one's does; nothing was
// poisoned.
func TestChaosOutbox(t *testing.T) {
	chaos.Run(t, func(t *testing.T, seed int64) { chaosOutbox(t, seed, false) })
}

// TestChaosOutboxCosmos is TestChaosOutbox with its tables behind package
// azurite's front in Cosmos DB mode with Azure's paging (seeded by the
// chaos seed): every query, the feed's directory and the streams' reads
// included, answers in no key order and in short or empty pages, and the
// accounts are opened with tablekit.ServiceCosmosDB (the queue and the
// blobs stay Azurite's: Cosmos DB has none). CI runs it on seed 1 alone
// (chaos.RunVariant).
func TestChaosOutboxCosmos(t *testing.T) {
	chaos.RunVariant(t, func(t *testing.T, seed int64) { chaosOutbox(t, seed, true) })
}

// chaosOutbox is the body of TestChaosOutbox, on Table storage (the
// tests' Azurite) or, cosmos, behind an Azurite of its own in Cosmos DB
// mode.
func chaosOutbox(t *testing.T, seed int64, cosmos bool) {
	ctx := context.Background()
	inj, err := chaos.New(seed, chaos.Mixed(0.2))
	if err != nil {
		t.Fatal(err)
	}
	n, perWriter := chaos.Size(8, 12), chaos.Size(10, 30)
	reg := &patterns.Registry{}
	if err := patterns.Register[Shipped](reg, "Shipped", 1); err != nil {
		t.Fatal(err)
	}
	openAccount := inj.Opener(t, cosmos)
	inj.SetEnabled(false)
	setup, err := openAccount()
	if err != nil {
		t.Fatal(err)
	}
	names := [3]string{testenv.CreateTable(t, setup), testenv.CreateTable(t, setup), testenv.CreateTable(t, setup)} // streams+state, feed, effects
	queue := testenv.NewQueue(t, setup)
	qname := path.Base(queue.URL())
	poison, claims := testenv.QueueName(t), testenv.ContainerName(t)
	inj.SetEnabled(true)
	open := func() suiteTables {
		acct, err := openAccount()
		if err != nil {
			t.Fatal(err)
		}
		return openSuiteTables(t, acct, names, reg)
	}
	parts := []string{"p0", "p1", "p2", "p3"}

	var mu sync.Mutex
	var bad []string
	violate := func(format string, args ...any) {
		mu.Lock()
		bad = append(bad, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	l := newLedger(parts)
	applies := 0

	// The relays.
	relayCtx, stopRelays := context.WithCancel(ctx)
	var bg sync.WaitGroup
	runs := 0
	for i := range 3 {
		bg.Go(func() {
			p := open()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
			client, err := archive.OpenClient(p.acct, qname, &archive.ClientOptions{Retry: tablekit.RetryPolicy{BaseDelay: 10 * time.Millisecond, MaxDelay: 200 * time.Millisecond}})
			if err != nil {
				violate("OpenClient: %v", err)
				return
			}
			pub, err := outbox.NewPublisher(client, nil)
			if err != nil {
				violate("NewPublisher: %v", err)
				return
			}
			lease, err := coord.NewLease(p.ft, "lease", "relay", fmt.Sprintf("relay%d", i), &coord.LeaseOptions{Duration: 600 * time.Millisecond})
			if err != nil {
				violate("NewLease: %v", err)
				return
			}
			for relayCtx.Err() == nil {
				r, err := p.f.NewRelay([]feed.Subscription{{Name: "outbox", Handle: pub.Handle}}, &feed.RelayOptions{Interval: 20 * time.Millisecond})
				if err != nil {
					violate("NewRelay: %v", err)
					return
				}
				runCtx, cancel := context.WithTimeout(relayCtx, time.Duration(1000+rng.IntN(2000))*time.Millisecond)
				err = r.Run(runCtx, lease)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
					violate("Run: %v", err)
				}
				mu.Lock()
				runs++
				mu.Unlock()
			}
		})
	}

	// The workers.
	var workers []*archive.Worker
	for range 2 {
		p := open()
		w, err := coord.NewWriter(p.et, nil)
		if err != nil {
			t.Fatal(err)
		}
		apply := countAndLog(p.et, func() {
			mu.Lock()
			applies++
			mu.Unlock()
		})
		h, err := outbox.NewHandler(w, apply)
		if err != nil {
			t.Fatal(err)
		}
		var mux archive.Mux
		if err := mux.Register(outbox.Kind, h); err != nil {
			t.Fatal(err)
		}
		wk, err := archive.OpenWorker(p.acct, qname, &mux, &archive.WorkerOptions{
			Concurrency: 4, VisibilityTimeout: 2 * time.Second, PollInterval: 100 * time.Millisecond, DrainTimeout: 5 * time.Second,
			Retry:       tablekit.RetryPolicy{MaxAttempts: 1000},
			PoisonQueue: poison, Container: claims})
		if err != nil {
			t.Fatal(err)
		}
		workers = append(workers, wk)
		bg.Go(func() {
			if err := wk.Run(relayCtx); err != nil {
				violate("Worker.Run: %v", err)
			}
		})
	}

	hist, err := chaos.RunWriters(ctx, seed, n, func(ctx context.Context, w *chaos.Writer) error {
		p := open()
		for j := range perWriter {
			if err := l.write(ctx, w, p.store, p.f, j); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		stopRelays()
		bg.Wait()
		t.Fatal(err)
	}

	// Wait until every acknowledged message has its log row and the
	// queue is empty (no copy left to handle).
	check := open()
	start := time.Now()
	logged, ok := l.drain(ctx, check.et, queue, 3*time.Minute)
	if !ok {
		violate("not every acknowledged message handled, or the queue not empty, 3 minutes after the writes")
	}
	drain := time.Since(start)
	stopRelays()
	bg.Wait()
	st := inj.Stats()
	inj.SetEnabled(false)

	var v chaos.Violations
	for _, b := range bad {
		v.Addf("%s", b)
	}
	l.check(t, ctx, check.et, check.st, logged, &v)
	var ws archive.Stats
	for _, w := range workers {
		s := w.Stats()
		ws.Received += s.Received
		ws.Succeeded += s.Succeeded
		ws.Failed += s.Failed
		ws.Poisoned += s.Poisoned
	}
	if ws.Poisoned != 0 {
		v.Addf("%d messages poisoned", ws.Poisoned)
	}
	lost := 0
	for _, op := range hist.Ops() {
		if op.AnswerLost() {
			lost++
		}
	}
	mu.Lock()
	t.Logf("%d writers × %d transactions on %d partitions: %v, %d met a lost answer", n, perWriter, len(parts), l, lost)
	t.Logf("3 relays: %d runs; 2 workers: %d received, %d deleted (%d copies beyond the %d messages), %d failed attempts, %d apply calls; drained %v after the writes",
		runs, ws.Received, ws.Succeeded, ws.Succeeded-int64(len(l.acked)), len(l.acked), ws.Failed, applies, drain.Round(time.Millisecond))
	mu.Unlock()
	t.Logf("faults: %s", st.String())
	if st.FaultRate() < 0.15 || st.Count(chaos.AnswerLost, "", "") == 0 {
		v.Addf("fault rate %.1f%%, %d answers lost: too few", 100*st.FaultRate(), st.Count(chaos.AnswerLost, "", ""))
	}
	v.Report(t)
}
