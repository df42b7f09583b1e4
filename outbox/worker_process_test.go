package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/outbox"
)

const workerEnv = "TABLEKIT_OUTBOX_WORKER"

// workerConfig is what a worker process is told.
type workerConfig struct {
	Conn                   string
	Effects                string // the effects table
	Queue, Poison, Claims  string
	Seed                   int64
	VisibilityTimeoutMilli int64
}

// handlerFunc is an archive.Handler made of a function.
type handlerFunc func(ctx context.Context, m *archive.Message) error

func (f handlerFunc) Handle(ctx context.Context, m *archive.Message) error { return f(ctx, m) }

// workerProcess runs an archive worker with outbox.NewHandler(countAndLog)
// until ctx ends (its stdin closes, see chaos.RunChild), through a fault
// injector of its own. It prints "IN" before each handler call and "OUT"
// after it (one write each to the unbuffered stdout), and "STATS
// <eligible> <faults> <poisoned>" every 100 ms. It returns the exit code.
func workerProcess(ctx context.Context, cfg workerConfig) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 2
	}
	inj, err := chaos.New(cfg.Seed, chaos.Mixed(0.2))
	if err != nil {
		return fail(err)
	}
	// Warnings only: the handlers' retries (a count row raced, a
	// transaction refused by the key) are the test's ordinary business.
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	acct, err := inj.Open(cfg.Conn, &tablekit.Options{Logger: log})
	if err != nil {
		return fail(err)
	}
	et, err := tablekit.OpenTable[tablekit.Entity](acct, cfg.Effects, nil)
	if err != nil {
		return fail(err)
	}
	h, err := outbox.NewHandler(et, byStream, countAndLog(et, nil), nil)
	if err != nil {
		return fail(err)
	}
	var outMu sync.Mutex
	say := func(line string) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Println(line)
	}
	var mux archive.Mux
	err = mux.Register(outbox.Kind, handlerFunc(func(ctx context.Context, m *archive.Message) error {
		say("IN")
		defer say("OUT")
		return h.Handle(ctx, m)
	}))
	if err != nil {
		return fail(err)
	}
	wk, err := archive.OpenWorker(acct, cfg.Queue, &mux, &archive.WorkerOptions{
		Concurrency: 4, VisibilityTimeout: time.Duration(cfg.VisibilityTimeoutMilli) * time.Millisecond, PollInterval: 100 * time.Millisecond, DrainTimeout: 5 * time.Second,
		Retry:       tablekit.RetryPolicy{MaxAttempts: 1000},
		PoisonQueue: cfg.Poison, Container: cfg.Claims})
	if err != nil {
		return fail(err)
	}
	go func() {
		for ctx.Err() == nil {
			s := inj.Stats()
			say(fmt.Sprintf("STATS %d %d %d", s.Eligible("", ""), s.Faults(), wk.Stats().Poisoned))
			time.Sleep(100 * time.Millisecond)
		}
	}()
	if err := wk.Run(ctx); err != nil {
		return fail(err)
	}
	return 0
}

// TestChaosOutboxWorkerProcesses is the outbox check with worker processes
// killed: 2 archive worker processes (this test binary, re-executed, see
// TestMain and workerProcess), each through a fault injector of its own
// (20% of tries faulted), run NewHandler with the apply of TestChaosOutbox
// (a count per partition, a log row per message id) on one queue, while
// chaos.Size(4, 8) writers in the test write transactions as
// TestChaosOutbox's do (1 in 6 abandoned after a first failure) and a
// relay in the test publishes them, all under faults. The test SIGKILLs a
// worker process chaos.Size(6, 20) times, every 100-350 ms, each time one
// with a handler running (an IN line with no OUT after it, 0-11 ms before
// the kill), and starts a fresh one in its place; the writers go on until
// the last kill. A killed worker's messages come back after their 1 s
// visibility timeout, some after their effect was committed and before
// they were deleted.
//
// Invariants, once every acknowledged message has its log row and the
// queue is empty: TestChaosOutbox's (each committed message's effect
// applied once: the log rows are exactly the acknowledged messages and
// each partition's count equals its log rows; no abandoned transaction's
// message or state), and nothing in the poison queue.
func TestChaosOutboxWorkerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		inj, err := chaos.New(seed, chaos.Mixed(0.2))
		if err != nil {
			t.Fatal(err)
		}
		reg := &tablekit.Registry{}
		if err := tablekit.Register[Shipped](reg, "Shipped", 1); err != nil {
			t.Fatal(err)
		}
		inj.SetEnabled(false)
		setup := inj.Account(t, nil)
		names := [3]string{testenv.CreateTable(t, setup), testenv.CreateTable(t, setup), testenv.CreateTable(t, setup)} // streams+state, feed, effects
		queue := testenv.NewQueue(t, setup)
		qname := path.Base(queue.URL())
		poison, claims := testenv.QueueName(t), testenv.ContainerName(t)
		inj.SetEnabled(true)
		conn := testenv.ConnectionString(t)
		open := func() suiteTables {
			acct, err := inj.Open(conn, nil)
			if err != nil {
				t.Fatal(err)
			}
			return openSuiteTables(t, acct, names, reg, nil)
		}
		l := newLedger([]string{"p0", "p1", "p2", "p3"})
		var mu sync.Mutex // guards bad and the procs' fields
		var bad []string
		violate := func(format string, args ...any) {
			mu.Lock()
			bad = append(bad, fmt.Sprintf(format, args...))
			mu.Unlock()
		}

		// The relay, in this process.
		relayCtx, stopRelay := context.WithCancel(ctx)
		var relayDone sync.WaitGroup
		relay := open()
		client, err := archive.OpenClient(relay.acct, qname, &archive.ClientOptions{Retry: tablekit.RetryPolicy{BaseDelay: 10 * time.Millisecond, MaxDelay: 200 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		pub, err := outbox.NewPublisher(client, relay.store, "outbox", nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := relay.f.NewRelay([]feed.Subscription{{Name: "outbox", Handle: pub.Handle}}, &feed.RelayOptions{Interval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		lease, err := coord.NewLease(relay.ft, "lease", "relay", "relay", &coord.LeaseOptions{Duration: 6 * time.Second}) // generous: a loaded machine's renewals are slow
		if err != nil {
			t.Fatal(err)
		}
		relayDone.Go(func() {
			if err := r.Run(relayCtx, lease); !errors.Is(err, context.Canceled) {
				violate("relay: Run: %v", err)
			}
		})

		// The worker processes.
		type proc struct {
			*chaos.Process
			inFlight int      // handlers running: IN lines minus OUT lines
			stats    [3]int64 // eligible, faults, poisoned, as last reported
		}
		var all []*proc
		start := func(serial int) *proc {
			p := &proc{}
			cfg := workerConfig{Conn: conn, Effects: names[2], Queue: qname, Poison: poison, Claims: claims, Seed: seed*1000 + int64(serial), VisibilityTimeoutMilli: 1000}
			p.Process = chaos.StartProcess(t, workerEnv, cfg, func(f []string) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case len(f) == 1 && f[0] == "IN":
					p.inFlight++
				case len(f) == 1 && f[0] == "OUT":
					p.inFlight--
				case len(f) == 4 && f[0] == "STATS":
					for i := range p.stats {
						p.stats[i], _ = strconv.ParseInt(f[i+1], 10, 64)
					}
				}
			})
			mu.Lock()
			all = append(all, p)
			mu.Unlock()
			return p
		}
		const workers = 2
		procs := make([]*proc, workers)
		for i := range procs {
			procs[i] = start(i)
		}
		next := workers

		// The killer: each victim has a handler running.
		kills := chaos.Size(6, 20)
		killed, idle := 0, 0
		var killsDone atomic.Bool
		killerDone := make(chan error, 1)
		go func() {
			defer killsDone.Store(true)
			rng := rand.New(rand.NewPCG(uint64(seed), 0x0b0c))
			for killed < kills {
				time.Sleep(time.Duration(100+rng.IntN(250)) * time.Millisecond)
				var victim int
				// 60 s: Azurite, loaded, sometimes answers nothing for up
				// to ~30 s (every worker's dequeue times out at once;
				// full-size seed 14 at a load average of 5), and then no
				// handler runs: a pause of the service, not of the workers.
				for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(2 * time.Millisecond) {
					victim = rng.IntN(workers)
					mu.Lock()
					busy := procs[victim].inFlight > 0
					mu.Unlock()
					if busy {
						break
					}
					if time.Now().After(deadline) {
						killerDone <- fmt.Errorf("no worker had a handler running for 60 s (%d kills done)", killed)
						return
					}
				}
				time.Sleep(time.Duration(rng.IntN(12)) * time.Millisecond)
				if err := procs[victim].Kill(); err != nil {
					killerDone <- err
					return
				}
				mu.Lock()
				if procs[victim].inFlight > 0 {
					killed++
				} else {
					idle++ // its handlers returned between the look and the kill
				}
				mu.Unlock()
				procs[victim] = start(next)
				next++
			}
			killerDone <- nil
		}()

		// The writers: at least chaos.Size(6, 20) transactions each, and
		// on until the kills are over.
		n := chaos.Size(4, 8)
		hist, err := chaos.RunWriters(ctx, seed, n, func(ctx context.Context, w *chaos.Writer) error {
			p := open()
			for j := 0; j < chaos.Size(6, 20) || !killsDone.Load(); j++ {
				if err := l.write(ctx, w, 0, p.store, p.f, j); err != nil {
					return err
				}
				time.Sleep(time.Duration(w.Rand.IntN(30)) * time.Millisecond)
			}
			return nil
		})
		if kerr := <-killerDone; kerr != nil {
			t.Error(kerr)
		}
		if err != nil {
			t.Error(err)
		}

		check := open()
		logged, drain, ok := l.drain(ctx, check.et, queue, 3*time.Minute)
		if !ok {
			violate("not every acknowledged message handled, or the queue not empty: nothing moved for 3 minutes (%v after the writes)", drain.Round(time.Second))
		}
		stopRelay()
		relayDone.Wait()
		live := make([]*chaos.Process, len(procs))
		for i, p := range procs {
			live[i] = p.Process
		}
		if err := chaos.StopProcesses(time.Minute, live...); err != nil {
			t.Error(err)
		}
		st := inj.Stats()
		inj.SetEnabled(false)

		var v chaos.Violations
		for _, b := range bad {
			v.Addf("%s", b)
		}
		l.check(t, ctx, check.et, []*tablekit.Table[tablekit.Entity]{check.st}, logged, &v)
		props, err := setup.Queues().NewQueueClient(poison).GetProperties(chaos.NoFaults(ctx), nil)
		var re *azcore.ResponseError
		switch {
		case err == nil:
			if c := props.ApproximateMessagesCount; c != nil && *c != 0 {
				v.Addf("%d messages in the poison queue", *c)
			}
		case errors.As(err, &re) && re.ErrorCode == "QueueNotFound": // nothing poisoned
		default:
			t.Fatal(err)
		}
		mu.Lock()
		var eligible, faults, poisoned int64
		for _, p := range all {
			eligible, faults, poisoned = eligible+p.stats[0], faults+p.stats[1], poisoned+p.stats[2]
		}
		if poisoned != 0 {
			v.Addf("worker processes poisoned %d messages", poisoned)
		}
		if killed < min(kills, 5) {
			v.Addf("only %d kills caught a handler running, want %d", killed, kills)
		}
		lost := 0
		for _, op := range hist.Ops() {
			if op.AnswerLost() {
				lost++
			}
		}
		t.Logf("%d writers on %d partitions: %v, %d met a lost answer", n, len(l.parts), l, lost)
		t.Logf("%d worker processes started, %d SIGKILLed with a handler running (%d more kills found none running by then); drained %v after the writes; worker processes' faults as last reported: %d in %d eligible tries (%.1f%%)",
			next, killed, idle, drain.Round(time.Millisecond), faults, eligible, 100*float64(faults)/float64(max(eligible, 1)))
		mu.Unlock()
		if st.FaultRate() < 0.15 || st.Count(chaos.AnswerLost, "", "") == 0 {
			v.Addf("writers' and relay's fault rate %.1f%%, %d answers lost: too few", 100*st.FaultRate(), st.Count(chaos.AnswerLost, "", ""))
		}
		v.Report(t)
	})
}
