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
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/chaos"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/outbox"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/stream"
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
// accounts are opened with tablekit.Options.Cosmos (the queue and the
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
	var conn string
	if cosmos {
		conn = azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Paging: true, Seed: uint64(seed)}}).ConnectionString()
	} else {
		conn = testenv.ConnectionString(t)
	}
	openAccount := func() (*tablekit.Account, error) {
		return inj.Open(conn, &tablekit.Options{Cosmos: cosmos})
	}
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
	type proc struct {
		acct  *tablekit.Account
		store *stream.Store
		st    *tablekit.Table[tablekit.Entity]
		f     *feed.Feed
		ft    *tablekit.Table[tablekit.Entity]
		et    *tablekit.Table[tablekit.Entity]
	}
	open := func() proc {
		acct, err := openAccount()
		if err != nil {
			t.Fatal(err)
		}
		var tbl [3]*tablekit.Table[tablekit.Entity]
		for i, name := range names {
			if tbl[i], err = tablekit.OpenTable[tablekit.Entity](acct, name, nil); err != nil {
				t.Fatal(err)
			}
		}
		s, err := stream.NewStore(tbl[0], reg, nil)
		if err != nil {
			t.Fatal(err)
		}
		f, err := feed.New(s, tbl[1], &feed.Options{Shards: 2})
		if err != nil {
			t.Fatal(err)
		}
		return proc{acct, s, tbl[0], f, tbl[1], tbl[2]}
	}
	parts := []string{"p0", "p1", "p2", "p3"}

	var mu sync.Mutex
	var bad []string
	violate := func(format string, args ...any) {
		mu.Lock()
		bad = append(bad, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	acked := map[string]bool{}                                       // message tags of committed transactions
	abandoned := map[string]bool{}                                   // message tags of abandoned ones
	ackedTx, abandonedTx := map[string]string{}, map[string]string{} // state row -> partition
	appends, conflicts, applies := 0, 0, 0

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
		apply := func(ctx context.Context, m outbox.Message) ([]tablekit.Action[tablekit.Entity], error) {
			var s Shipped
			if err := m.Decode(&s); err != nil {
				return nil, err
			}
			mu.Lock()
			applies++
			mu.Unlock()
			pk := m.Stream.PartitionKey
			log := tablekit.UpsertAction(tablekit.Entity{PartitionKey: pk, RowKey: "log~" + m.ID, Properties: map[string]any{"Tag": s.Order}})
			row, err := p.et.Get(ctx, pk, "count")
			switch {
			case errors.Is(err, tablekit.ErrNotFound):
				return []tablekit.Action[tablekit.Entity]{tablekit.InsertAction(tablekit.Entity{PartitionKey: pk, RowKey: "count", Properties: map[string]any{"N": int64(1)}}), log}, nil
			case err != nil:
				return nil, err
			}
			n, _ := row.Properties["N"].(int64)
			row.Properties = map[string]any{"N": n + 1}
			return []tablekit.Action[tablekit.Entity]{tablekit.MergeAction(row, row.ETag), log}, nil
		}
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
			pk := parts[w.Rand.IntN(len(parts))]
			id := stream.ID{PartitionKey: pk, Prefix: "outbox"}
			evs := make([]stream.Event, 1+w.Rand.IntN(3))
			for k := range evs {
				tag := fmt.Sprintf("w%d-%d-%d", w.Index, j, k)
				evs[k] = stream.Event{ID: tag, Data: Shipped{Order: tag}}
			}
			state := fmt.Sprintf("state~w%d-%d", w.Index, j)
			act := tablekit.InsertAction(tablekit.Entity{PartitionKey: pk, RowKey: state, Properties: map[string]any{"Done": true}})
			abandon := w.Rand.IntN(6) == 0
			expected := int64(-1)
			for attempt := 0; ; attempt++ {
				if attempt == 500 {
					return fmt.Errorf("%s: not acknowledged after 500 tries", state)
				}
				if expected < 0 {
					v, err := p.store.Version(ctx, id)
					if err != nil {
						continue
					}
					expected = v
				}
				op := w.Do(ctx, "Append", fmt.Sprint(id), evs, func(ctx context.Context) (any, error) {
					return p.f.Append(ctx, id, expected, evs, act)
				})
				mu.Lock()
				appends++
				mu.Unlock()
				var ce *stream.ConflictError
				switch {
				case op.Err == nil:
					mu.Lock()
					for _, ev := range evs {
						acked[ev.ID] = true
					}
					ackedTx[state] = pk
					mu.Unlock()
				case errors.Is(op.Err, tablekit.ErrOutcomeUnknown), errors.Is(op.Err, stream.ErrPartlyApplied):
					violate("%v", op)
					return nil
				case abandon:
					mu.Lock()
					for _, ev := range evs {
						abandoned[ev.ID] = true
					}
					abandonedTx[state] = pk
					mu.Unlock()
				case errors.As(op.Err, &ce):
					mu.Lock()
					conflicts++
					mu.Unlock()
					expected = ce.Current
					continue
				default:
					expected = -1
					continue
				}
				break
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
	logs := func() (map[string]string, bool) {
		nctx := chaos.NoFaults(ctx)
		got := map[string]string{} // tag -> partition
		for e, err := range check.et.Query(nctx, tablekit.Where("RowKey ge 'log~' and RowKey lt 'log~~'"), nil) {
			if err != nil {
				return nil, false
			}
			tag, _ := e.Properties["Tag"].(string)
			got[tag] = e.PartitionKey
		}
		return got, true
	}
	start := time.Now()
	var logged map[string]string
	for {
		got, ok := logs()
		if ok {
			logged = got
			all := true
			for tag := range acked {
				if _, ok := got[tag]; !ok {
					all = false
					break
				}
			}
			if all {
				props, err := queue.GetProperties(chaos.NoFaults(ctx), nil)
				if err == nil && props.ApproximateMessagesCount != nil && *props.ApproximateMessagesCount == 0 {
					break
				}
			}
		}
		if time.Since(start) > 3*time.Minute {
			violate("not every acknowledged message handled, or the queue not empty, 3 minutes after the writes")
			break
		}
		time.Sleep(100 * time.Millisecond)
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
	nctx := chaos.NoFaults(ctx)
	for tag := range acked {
		if _, ok := logged[tag]; !ok {
			v.Addf("message %s of a committed transaction never handled", tag)
		}
	}
	perPart := map[string]int64{}
	for tag, pk := range logged {
		if !acked[tag] {
			v.Addf("message %s handled but not acknowledged (abandoned: %v)", tag, abandoned[tag])
		}
		perPart[pk]++
	}
	for _, pk := range parts {
		row, err := check.et.Get(nctx, pk, "count")
		var c int64
		if err == nil {
			c, _ = row.Properties["N"].(int64)
		} else if !errors.Is(err, tablekit.ErrNotFound) {
			t.Fatal(err)
		}
		if c != perPart[pk] {
			v.Addf("partition %s: count %d, %d distinct messages handled (a message applied twice, or a count lost)", pk, c, perPart[pk])
		}
	}
	for state, pk := range ackedTx {
		if _, err := check.st.Get(nctx, pk, state); err != nil {
			v.Addf("state %s of an acknowledged transaction: %v", state, err)
		}
	}
	for state, pk := range abandonedTx {
		if _, err := check.st.Get(nctx, pk, state); !errors.Is(err, tablekit.ErrNotFound) {
			v.Addf("state %s of an abandoned transaction: %v, want not found", state, err)
		}
	}
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
	t.Logf("%d writers × %d transactions on %d partitions: %d committed (%d messages), %d abandoned (%d messages); %d append calls, %d conflicts, %d met a lost answer", n, perWriter, len(parts), len(ackedTx), len(acked), len(abandonedTx), len(abandoned), appends, conflicts, lost)
	t.Logf("3 relays: %d runs; 2 workers: %d received, %d deleted (%d copies beyond the %d messages), %d failed attempts, %d apply calls; drained %v after the writes",
		runs, ws.Received, ws.Succeeded, ws.Succeeded-int64(len(acked)), len(acked), ws.Failed, applies, drain.Round(time.Millisecond))
	mu.Unlock()
	t.Logf("faults: %s", st.String())
	if st.FaultRate() < 0.15 || st.Count(chaos.AnswerLost, "", "") == 0 {
		v.Addf("fault rate %.1f%%, %d answers lost: too few", 100*st.FaultRate(), st.Count(chaos.AnswerLost, "", ""))
	}
	v.Report(t)
}
