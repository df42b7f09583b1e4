package outbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keyring"
	"github.com/tablekit/tablekit/outbox"
	"github.com/tablekit/tablekit/stream"
)

// TestChaosOutbox is the outbox suite: two Stores on one queue, one
// handler. Each Store is a streams table of its own with a Feed of its
// own; the second encrypts Card on the client. chaos.Size(8, 12) writers
// (half on each Store) of chaos.Size(10, 30) transactions each, each
// writer with its own Account, Store and Feed, through ~20% faulted tries
// (answers lost included), write a state row and 1 to 3 messages (events
// with ids) to the outbox stream of one of 4 partitions in one
// Feed.Append: the two Stores' outbox streams have the same ids and
// versions, so only the messages' source tells them apart. A failed
// transaction is sent again at the version read anew, except 1 in 6,
// abandoned after a first failure (its error says it was not applied).
// The writers of the encrypted Store also append, 1 transaction in 3, a
// Charged event with a card to a stream of another prefix in the
// partition (an account's own history, not an outbox), and before the
// writers start, its "vault" partition's outbox gets a Charged event. 2
// relays per Store, each with its own Account and coord.Lease (6 s) on
// its feed's lease row, run Relay.Run's loop (Lease.Lead, Relay.Round
// with the term) with a Publisher of the Store's outbox streams (its
// Enqueue faulted too, so lost answers enqueue copies; tried 10 ms to
// 200 ms apart; the encrypted Store's through a claim-check blob each)
// and RelayOptions.Trim dropping the outbox streams' dispatched events,
// restarted as a new Relay 1-3 s after it starts (mid-round or between
// rounds, once a round has ended); 2 archive workers, each
// with its own Account, run NewHandler whose apply adds 1 to its
// partition's count row (read, then merged on the ETag read) and writes a
// log row of the message id: a message applied twice would count twice.
//
// Invariants, once every acknowledged message has its log row and the
// queue is empty: the log rows are exactly the acknowledged messages (none
// of an abandoned transaction, none of another stream, none of the vault,
// none missing: a message taken for another Store's would be); each
// partition's count equals its log rows (no message applied twice); each
// acknowledged transaction's state row exists and no abandoned one's
// does; nothing was poisoned; no message a worker received (a queue
// message's payload or its claim-check blob) holds a card's plaintext,
// nor does any blob left in the container; the relays of the encrypted
// Store were told why the vault's message was refused, and its stream
// was not trimmed; fewer outbox event rows are left than messages were
// dispatched.
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
	reg := &tablekit.Registry{}
	if err := tablekit.Register[Shipped](reg, "Shipped", 1); err != nil {
		t.Fatal(err)
	}
	if err := tablekit.Register[Charged](reg, "Charged", 1); err != nil {
		t.Fatal(err)
	}
	ring := new(keyring.KeyRing)
	if err := ring.Add("k1", keyring.GenerateKey()); err != nil {
		t.Fatal(err)
	}
	encs := [2]*tablekit.Encryption{nil, {Keys: ring, Properties: []string{"Card"}}} // by Store
	openAccount := inj.Opener(t, cosmos)
	inj.SetEnabled(false)
	setup, err := openAccount()
	if err != nil {
		t.Fatal(err)
	}
	effects := testenv.CreateTable(t, setup)
	var names [2][3]string // by Store: streams+state, feed, effects
	for i := range names {
		names[i] = [3]string{testenv.CreateTable(t, setup), testenv.CreateTable(t, setup), effects}
	}
	queue := testenv.NewQueue(t, setup)
	qname := path.Base(queue.URL())
	claims := testenv.NewContainer(t, setup)
	poison := testenv.QueueName(t)
	// The vault: an outbox event with a card, which no relay may publish.
	vault := openSuiteTables(t, setup, names[1], reg, encs[1])
	if _, err := vault.f.Append(ctx, stream.ID{PartitionKey: "vault", Prefix: "outbox"}, 0, []stream.Event{{ID: "vault-1", Data: Charged{Order: "vault-1", Card: card}}}); err != nil {
		t.Fatal(err)
	}
	inj.SetEnabled(true)
	open := func() [2]suiteTables {
		acct, err := openAccount()
		if err != nil {
			t.Fatal(err)
		}
		return [2]suiteTables{openSuiteTables(t, acct, names[0], reg, encs[0]), openSuiteTables(t, acct, names[1], reg, encs[1])}
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
	applies, cards, viaBlob := 0, 0, 0
	refusals := &matchCounter{match: "encrypts Card"} // the relays' warnings that name the vault's card

	// The relays: 2 per Store.
	relayCtx, stopRelays := context.WithCancel(ctx)
	var bg sync.WaitGroup
	runs, rounds, roundTime := 0, 0, time.Duration(0)
	for i := range 4 {
		si := i % 2
		bg.Go(func() {
			p := open()[si]
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
			copts := &archive.ClientOptions{Retry: tablekit.RetryPolicy{BaseDelay: 10 * time.Millisecond, MaxDelay: 200 * time.Millisecond}}
			if encs[si] != nil {
				copts.ClaimCheckThreshold = 200 // every message through a blob
			}
			client, err := archive.NewClient(p.acct.Queues().NewQueueClient(qname), p.acct.Blobs().ServiceClient().NewContainerClient(path.Base(claims.URL())), copts)
			if err != nil {
				violate("NewClient: %v", err)
				return
			}
			pub, err := outbox.NewPublisher(client, p.store, "outbox", nil)
			if err != nil {
				violate("NewPublisher: %v", err)
				return
			}
			// A lease of 6 s (a renewal every ~0.8 s, lost after 4 s
			// without one): a 600 ms lease was lost at every try on a
			// loaded machine (load 22, -race, the Cosmos DB front), and no
			// round ended. A run that ends releases it, so the next relay
			// takes over at its next try.
			lease, err := coord.NewLease(p.ft, "lease", "relay", fmt.Sprintf("relay%d", i), &coord.LeaseOptions{Duration: 6 * time.Second})
			if err != nil {
				violate("NewLease: %v", err)
				return
			}
			logger := slog.New(slog.NewTextHandler(refusals, &slog.HandlerOptions{Level: slog.LevelWarn}))
			for relayCtx.Err() == nil {
				r, err := p.f.NewRelay([]feed.Subscription{{Name: "outbox", Handle: pub.Handle}},
					&feed.RelayOptions{Logger: logger, Trim: func(id stream.ID) bool { return id.Prefix == "outbox" }})
				if err != nil {
					violate("NewRelay: %v", err)
					return
				}
				// Relay.Run's loop (rounds while leading by lease), ended
				// 1-3 s after it starts, in the middle of a round or
				// between two, but not before a round has ended: on a
				// loaded machine a round can take longer than that, and a
				// relay always cut short would never store a checkpoint.
				runCtx, cancel := context.WithCancel(relayCtx)
				var done atomic.Int64 // rounds that ended in this run
				window := time.Duration(1000+rng.IntN(2000)) * time.Millisecond
				go func() {
					defer cancel()
					for start := time.Now(); runCtx.Err() == nil && (time.Since(start) < window || done.Load() == 0); {
						time.Sleep(10 * time.Millisecond)
					}
				}()
				err = lease.Lead(runCtx, func(ctx context.Context, term int64) error {
					for ctx.Err() == nil {
						start := time.Now()
						_, err := r.Round(ctx, term)
						if ctx.Err() != nil {
							break
						}
						done.Add(1)
						mu.Lock()
						rounds++
						roundTime += time.Since(start)
						mu.Unlock()
						if errors.Is(err, coord.ErrFenced) {
							return err
						}
						if err != nil {
							logger.Warn("round", "err", err)
						}
						time.Sleep(20 * time.Millisecond)
					}
					return ctx.Err()
				}, nil)
				cancel()
				if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, coord.ErrFenced) && !errors.Is(err, coord.ErrLost) {
					violate("Lead: %v", err)
					return
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
		p := open()[0]
		apply := countAndLog(p.et, func() {
			mu.Lock()
			applies++
			mu.Unlock()
		})
		h, err := outbox.NewHandler(p.et, byStream, apply, nil)
		if err != nil {
			t.Fatal(err)
		}
		var mux archive.Mux
		err = mux.Register(outbox.Kind, archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
			if strings.Contains(string(m.Payload), "4111") { // the payload as enqueued, or its blob's
				violate("queue message %s holds a card in plaintext: %s", m.ID, m.Payload)
			}
			if m.Blob != "" {
				mu.Lock()
				viaBlob++
				mu.Unlock()
			}
			return h.Handle(ctx, m)
		}))
		if err != nil {
			t.Fatal(err)
		}
		wk, err := archive.OpenWorker(p.acct, qname, &mux, &archive.WorkerOptions{
			Concurrency: 4, VisibilityTimeout: 2 * time.Second, PollInterval: 100 * time.Millisecond, DrainTimeout: 5 * time.Second,
			Retry:       tablekit.RetryPolicy{MaxAttempts: 1000},
			PoisonQueue: poison, Container: path.Base(claims.URL())})
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
		si := w.Index % 2
		p := open()[si]
		for j := range perWriter {
			if err := l.write(ctx, w, si, p.store, p.f, j); err != nil {
				return err
			}
			if encs[si] != nil && w.Rand.IntN(3) == 0 { // a card in an account's history: not the outbox's
				acct := stream.ID{PartitionKey: parts[w.Rand.IntN(len(parts))], Prefix: "account"}
				tag := fmt.Sprintf("card-w%d-%d", w.Index, j)
				if _, err := p.f.Append(ctx, acct, stream.AnyVersion, []stream.Event{{ID: tag, Data: Charged{Order: tag, Card: card}}}); err == nil {
					mu.Lock()
					cards++
					mu.Unlock()
				}
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
	logged, drain, ok := l.drain(ctx, check[0].et, queue, 3*time.Minute)
	if !ok {
		violate("not every acknowledged message handled, or the queue not empty: nothing moved for 3 minutes (%v after the writes)", drain.Round(time.Second))
	}
	stopRelays()
	bg.Wait()
	st := inj.Stats()
	inj.SetEnabled(false)

	var v chaos.Violations
	for _, b := range bad {
		v.Addf("%s", b)
	}
	l.check(t, ctx, check[0].et, []*tablekit.Table[tablekit.Entity]{check[0].st, check[1].st}, logged, &v)
	for name, data := range blobTexts(t, claims) {
		if strings.Contains(data, "4111") {
			v.Addf("blob %s holds a card in plaintext: %s", name, data)
		}
	}
	// Retention: the vault's message, never enqueued, is still in its
	// stream; the dispatched messages' event rows went (but those of the
	// trims that failed under faults after the last message of a stream).
	nctx := chaos.NoFaults(ctx)
	vaultID := stream.ID{PartitionKey: "vault", Prefix: "outbox"}
	if start, err := check[1].store.Start(nctx, vaultID); err != nil || start != 1 {
		v.Addf("the vault's stream, its message never enqueued, starts at %d (%v), want 1: trimmed", start, err)
	}
	left := 0
	for i := range check {
		for _, pk := range parts {
			c, err := check[i].st.Count(nctx, tablekit.RowKeyRange(pk, "outbox~ev~", "outbox~ev~~"))
			if err != nil {
				t.Fatal(err)
			}
			left += c
		}
	}
	if left >= len(l.acked) {
		v.Addf("%d outbox event rows left of %d messages dispatched: nothing trimmed", left, len(l.acked))
	}
	if viaBlob == 0 {
		v.Addf("no message came through a claim-check blob")
	}
	if refusals.count() == 0 {
		v.Addf("the encrypted Store's relays logged no refusal of the vault's message")
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
	t.Logf("%d writers × %d transactions on 2 Stores × %d partitions: %v, %d met a lost answer; %d cards appended to other streams", n, perWriter, len(parts), l, lost, cards)
	t.Logf("4 relays: %d runs, %d rounds (%v on average), %d refusals of the vault's card logged; 2 workers: %d received (%d through a blob) for %d messages, %d handled and deleted, %d failed attempts, %d apply calls; drained %v after the writes",
		runs, rounds, (roundTime / time.Duration(max(rounds, 1))).Round(time.Millisecond), refusals.count(), ws.Received, viaBlob, len(l.acked), ws.Succeeded, ws.Failed, applies, drain.Round(time.Millisecond))
	mu.Unlock()
	t.Logf("retention: %d outbox event rows left of %d messages dispatched (tombstones included)", left, len(l.acked))
	t.Logf("faults: %s", st.String())
	if st.FaultRate() < 0.15 || st.Count(chaos.AnswerLost, "", "") == 0 {
		v.Addf("fault rate %.1f%%, %d answers lost: too few", 100*st.FaultRate(), st.Count(chaos.AnswerLost, "", ""))
	}
	v.Report(t)
}

// matchCounter is an io.Writer that counts the writes (log records) that
// contain match. It is safe for concurrent use.
type matchCounter struct {
	match string
	mu    sync.Mutex
	n     int
}

func (c *matchCounter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(c.match)) {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
	return len(p), nil
}

func (c *matchCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
