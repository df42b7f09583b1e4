package archive_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keyring"
)

// The archive chaos suites: writers, each with its own Account and Client
// (as separate processes would have), request archive moves of entities
// of a Current table, while several workers, each with its own Account,
// move them to an Archive table through one queue. Faults are injected
// into table, queue and blob requests of writers and workers alike.
// TestChaosArchiveMove runs the workers in this process;
// TestChaosArchiveProcesses (chaos_process_test.go) runs them as OS
// processes and kills them with SIGKILL.
//
// Invariant, once the faults stop and the workers have drained the queue:
//   - every entity whose move was acknowledged is in Archive exactly once
//     (under its transformed key), absent from Current, with its data
//     intact: the version its writer was last acknowledged for (or one
//     whose update had an unknown outcome), encrypted fields decrypting to
//     what was written;
//   - every entity whose move requests all failed, or that was never
//     requested, is in Current as written and not in Archive;
//   - an entity whose move request had an unknown outcome is in exactly
//     one of the two tables, intact;
//   - no other entity is in either table;
//   - the work queue and the poison queue are empty;
//   - every claim-check blob left is an orphan the design allows (see
//     orphanBudget): it holds a move that took effect or was never
//     acknowledged, and there are no more of them than faults that can
//     leave one.

// chaosEmp is the entity the archive chaos suites move. SSN is encrypted
// on the client; the Archive table encrypts it again for its new keys.
type chaosEmp struct {
	Dept    string      `table:",pk"`
	ID      string      `table:",rk"`
	Name    string      `table:"Name"`
	Version int         `table:"Version"`
	SSN     string      `table:"SSN,encrypt"`
	ETag    azcore.ETag `table:",etag"`
}

// chaosValue is the entity pk/rk at a version: what a writer stores.
func chaosValue(pk, rk string, version int) chaosEmp {
	short := rk
	if len(short) > 12 {
		short = short[:12]
	}
	return chaosEmp{Dept: pk, ID: rk, Version: version,
		Name: fmt.Sprintf("%s/%s v%d", pk, short, version), SSN: fmt.Sprintf("ssn-%s-%s-%d", pk, short, version)}
}

// archivedPK is the Mover's Transform of the suites: the archive is
// partitioned apart from Current, so the ciphertext is made anew for the
// new keys.
func archivedPK(pk string) string { return "A-" + pk }

// chaosClaimThreshold makes the Client spill the payloads of the entities
// with long RowKeys to claim-check blobs, and send the others inline.
const chaosClaimThreshold = 256

// chaosNames is where a run keeps its data; a worker process gets it
// through its environment.
type chaosNames struct {
	Conn                    string // connection string
	Current, Archive        string // tables
	Queue, Poison, Claims   string // work queue, poison queue, claim-check container
	Key                     []byte // the encryption key "k1"
	VisibilityTimeoutSecond int
}

// chaosEncryption returns the Encryption of both tables.
func chaosEncryption(key []byte) (*tablekit.Encryption, error) {
	ring := new(keyring.KeyRing)
	if err := ring.Add("k1", key); err != nil {
		return nil, err
	}
	return &tablekit.Encryption{Keys: ring}, nil
}

// openChaosTable opens table name of acct with the suites' encryption.
func openChaosTable(acct *tablekit.Account, name string, key []byte) (*tablekit.Table[chaosEmp], error) {
	enc, err := chaosEncryption(key)
	if err != nil {
		return nil, err
	}
	return tablekit.OpenTable[chaosEmp](acct, name, &tablekit.TableOptions{Encryption: enc})
}

// chaosHandler wraps the Mover's handler: it counts the handlers in
// flight (for the kill schedule of the process suite), and fails a seeded
// share of attempts itself, as a handler whose downstream call failed
// would: 10% before the move (nothing done; the message must be handled
// again) and 5% after it (everything done, failure reported; the repeat
// must be harmless). The choice hashes the seed, the payload and the
// dequeue count, so a seed fails the same attempts of the same moves.
type chaosHandler struct {
	h           archive.Handler
	seed        int64
	inFlight    atomic.Int64
	started     atomic.Int64
	early, late atomic.Int64 // failures injected before and after the move
}

var errHandlerFault = errors.New("chaos: handler failure injected")

func (c *chaosHandler) Handle(ctx context.Context, m *archive.Message) error {
	c.inFlight.Add(1)
	c.started.Add(1)
	defer c.inFlight.Add(-1)
	f := fnv.New64a()
	fmt.Fprintf(f, "%d|%s|%d", c.seed, m.Payload, m.DequeueCount)
	roll := f.Sum64() % 100
	if roll < 10 {
		c.early.Add(1)
		return fmt.Errorf("before the move: %w", errHandlerFault)
	}
	if err := c.h.Handle(ctx, m); err != nil {
		return err
	}
	if roll < 15 {
		c.late.Add(1)
		return fmt.Errorf("after the move: %w", errHandlerFault)
	}
	return nil
}

// openChaosWorker returns a worker of acct that moves entities from
// Current to Archive, and its handler.
func openChaosWorker(acct *tablekit.Account, n chaosNames, seed int64) (*archive.Worker, *chaosHandler, error) {
	current, err := openChaosTable(acct, n.Current, n.Key)
	if err != nil {
		return nil, nil, err
	}
	archived, err := openChaosTable(acct, n.Archive, n.Key)
	if err != nil {
		return nil, nil, err
	}
	mover := &archive.Mover[chaosEmp]{Current: current, Archive: archived, Transform: func(v chaosEmp) (chaosEmp, error) {
		v.Dept = archivedPK(v.Dept)
		return v, nil
	}}
	mux := new(archive.Mux)
	if err := archive.HandleFunc(mux, archive.MoveKind, mover.Handle); err != nil {
		return nil, nil, err
	}
	h := &chaosHandler{h: mux, seed: seed}
	vis := time.Duration(max(1, n.VisibilityTimeoutSecond)) * time.Second
	w, err := archive.OpenWorker(acct, n.Queue, h, &archive.WorkerOptions{
		Concurrency:       4,
		VisibilityTimeout: vis,
		// Attempts fail on purpose (chaosHandler: 15%), and lost
		// dequeue answers, kills and ownership lost to a lost renewal
		// answer add to a message's dequeue count: 10 attempts make a
		// poisoned move unlikely (0.15^10), so a poison record points to
		// a bug rather than to bad luck.
		Retry:            tablekit.RetryPolicy{MaxAttempts: 10},
		PoisonQueue:      n.Poison,
		Container:        n.Claims,
		PollInterval:     200 * time.Millisecond,
		DrainTimeout:     10 * time.Second,
		OperationTimeout: 10 * time.Second,
	})
	return w, h, err
}

// chaosEntity is one entity of a writer's plan: its keys and what the
// writer does to it, in this order: update it (to version 2), request its
// move, request the move again.
type chaosEntity struct {
	pk, rk             string
	update, move, dupe bool
}

func (e chaosEntity) key() string { return e.pk + "/" + e.rk }

// shortKey shortens the padding of a claim-check entity's key for
// messages.
func shortKey(k string) string {
	return strings.Replace(k, strings.Repeat("c", 200), "c…(200)", 1)
}

// chaosPlans draws each writer's entities from the seed. About 40% have
// long RowKeys, whose move requests go through claim-check blobs; about
// 12% are never requested (they must stay put).
func chaosPlans(seed int64, writers, perWriter int) [][]chaosEntity {
	plans := make([][]chaosEntity, writers)
	for w := range plans {
		r := rand.New(rand.NewPCG(uint64(seed), uint64(w)+0xa5c))
		for i := range perWriter {
			e := chaosEntity{pk: fmt.Sprintf("D%d", r.IntN(4)), rk: fmt.Sprintf("w%02d-%03d", w, i)}
			if r.IntN(10) < 4 {
				e.rk += "-" + strings.Repeat("c", 200) // a claim-check payload
			}
			e.move = r.IntN(100) >= 12
			e.update = r.IntN(100) < 30
			e.dupe = e.move && r.IntN(100) < 10
			plans[w] = append(plans[w], e)
		}
	}
	return plans
}

// seedChaosEntities stores every planned entity at version 1, without
// faults.
func seedChaosEntities(ctx context.Context, t *testing.T, acct *tablekit.Account, n chaosNames, plans [][]chaosEntity) {
	t.Helper()
	current, err := openChaosTable(acct, n.Current, n.Key)
	if err != nil {
		t.Fatal(err)
	}
	var items []chaosEmp
	for _, plan := range plans {
		for _, e := range plan {
			items = append(items, chaosValue(e.pk, e.rk, 1))
		}
	}
	if _, err := current.BulkWriter(nil).Upsert(chaos.NoFaults(ctx), items); err != nil {
		t.Fatal(err)
	}
}

// chaosWrite runs one writer's plan with its own Account: updates and move
// requests, each recorded with what the writer was told. before, if set,
// runs before the i-th entity (the process suite paces its writers with
// it).
func chaosWrite(ctx context.Context, w *chaos.Writer, acct *tablekit.Account, n chaosNames, plan []chaosEntity, before func(i int)) error {
	current, err := openChaosTable(acct, n.Current, n.Key)
	if err != nil {
		return err
	}
	client, err := archive.NewClient(acct.Queues().NewQueueClient(n.Queue), acct.Blobs().ServiceClient().NewContainerClient(n.Claims), &archive.ClientOptions{
		ClaimCheckThreshold: chaosClaimThreshold,
		// One try (even writers) or two (odd ones), as fast as
		// chaos.FastRetry: under the faults, some enqueues fail or end
		// with an unknown outcome, and those entities must stay put, or
		// be moved or stay put, respectively.
		Retry: tablekit.RetryPolicy{MaxAttempts: 1 + w.Index%2, BaseDelay: 4 * time.Millisecond, MaxDelay: 40 * time.Millisecond},
	})
	if err != nil {
		return err
	}
	for i, e := range plan {
		if before != nil {
			before(i)
		}
		if e.update {
			v := chaosValue(e.pk, e.rk, 2)
			w.Do(ctx, "Update", e.key(), 2, func(ctx context.Context) (any, error) {
				_, err := current.Merge(ctx, v, azcore.ETagAny)
				return nil, err
			})
		}
		requests := 0
		if e.move {
			requests++
		}
		if e.dupe {
			requests++
		}
		for range requests {
			w.Do(ctx, "Move", e.key(), nil, func(ctx context.Context) (any, error) {
				return client.Enqueue(ctx, archive.MoveKind, archive.MoveRequest{PartitionKey: e.pk, RowKey: e.rk}, nil)
			})
		}
	}
	return nil
}

// chaosState is what the suite reads at the end, without faults.
type chaosState struct {
	current, archived map[string]chaosEmp // by Current's key pk/rk
	strays            []string            // entities in Archive under a key the Transform cannot make
	queued            int                 // approximate count of the work queue
	poisoned          []archive.Poisoned
	blobs             map[string][]byte // claim-check container: name -> content
}

func readChaosState(ctx context.Context, t *testing.T, acct *tablekit.Account, n chaosNames) chaosState {
	t.Helper()
	ctx = chaos.NoFaults(ctx)
	st := chaosState{current: map[string]chaosEmp{}, archived: map[string]chaosEmp{}, blobs: map[string][]byte{}}
	for name, into := range map[string]map[string]chaosEmp{n.Current: st.current, n.Archive: st.archived} {
		tbl, err := openChaosTable(acct, name, n.Key)
		if err != nil {
			t.Fatal(err)
		}
		for e, err := range tbl.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true}) {
			if err != nil {
				t.Fatalf("reading %s: %v", name, err)
			}
			pk := e.Dept
			if name == n.Archive {
				var ok bool
				if pk, ok = strings.CutPrefix(pk, "A-"); !ok {
					st.strays = append(st.strays, e.Dept+"/"+e.ID)
					continue
				}
			}
			k := pk + "/" + e.ID
			if _, dup := into[k]; dup {
				st.strays = append(st.strays, "duplicate "+k)
			}
			into[k] = e
		}
	}
	st.queued = approxCount(t, acct.Queues().NewQueueClient(n.Queue))
	st.poisoned = drainPoison(t, acct.Queues().NewQueueClient(n.Poison))
	c := acct.Blobs().ServiceClient().NewContainerClient(n.Claims)
	pager := c.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if bloberror.HasCode(err, bloberror.ContainerNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			data, err := getBlob(ctx, c, *b.Name)
			if err != nil {
				t.Fatal(err)
			}
			st.blobs[*b.Name] = data
		}
	}
	return st
}

// chaosTally counts how the entities ended.
type chaosTally struct {
	moved, untouched, unknownMoved, unknownStayed, notRequested int
}

func (c chaosTally) String() string {
	return fmt.Sprintf("%d moved as acknowledged, %d untouched after failed requests, %d never requested; unknown requests: %d moved, %d not",
		c.moved, c.untouched, c.notRequested, c.unknownMoved, c.unknownStayed)
}

// checkChaosMoves checks the end state against the plans and what each
// writer was told.
func checkChaosMoves(h *chaos.History, plans [][]chaosEntity, st chaosState, v *chaos.Violations) chaosTally {
	var tally chaosTally
	byKey := h.ByKey()
	planned := map[string]bool{}
	for _, plan := range plans {
		for _, e := range plan {
			k := e.key()
			planned[k] = true
			versions := map[int]bool{1: true}
			var acked, unknown, requested bool
			for _, op := range byKey[k] {
				switch op.Name {
				case "Update":
					switch op.Outcome {
					case chaos.OK:
						versions = map[int]bool{2: true}
					case chaos.Unknown:
						versions[2] = true
					}
				case "Move":
					requested = true
					switch op.Outcome {
					case chaos.OK:
						acked = true
					case chaos.Unknown:
						unknown = true
					}
				}
			}
			cur, inCur := st.current[k]
			arc, inArc := st.archived[k]
			intact := func(where string, got chaosEmp, wantPK string) {
				for ver := range versions {
					want := chaosValue(e.pk, e.rk, ver)
					want.Dept = wantPK
					if got.Dept == want.Dept && got.ID == want.ID && got.Name == want.Name && got.Version == want.Version && got.SSN == want.SSN {
						return
					}
				}
				v.Addf("%s: %s holds %+v, not a version its writer wrote (allowed versions %v); ops: %v", shortKey(k), where, got, versions, byKey[k])
			}
			switch {
			case acked:
				if inCur || !inArc {
					v.Addf("%s: its move was acknowledged, but it is in Current: %v, in Archive: %v; ops: %v", shortKey(k), inCur, inArc, byKey[k])
				}
				tally.moved++
			case unknown:
				if inCur == inArc {
					v.Addf("%s: its move request has an unknown outcome, so it must be in exactly one table, but it is in Current: %v, in Archive: %v; ops: %v", shortKey(k), inCur, inArc, byKey[k])
				}
				if inArc {
					tally.unknownMoved++
				} else {
					tally.unknownStayed++
				}
			default:
				if !inCur || inArc {
					v.Addf("%s: no move request of it took effect (requested: %v), but it is in Current: %v, in Archive: %v; ops: %v", shortKey(k), requested, inCur, inArc, byKey[k])
				}
				if requested {
					tally.untouched++
				} else {
					tally.notRequested++
				}
			}
			if inCur {
				intact("Current", cur, e.pk)
			}
			if inArc {
				intact("Archive", arc, archivedPK(e.pk))
			}
		}
	}
	for _, m := range []map[string]chaosEmp{st.current, st.archived} {
		for k := range m {
			if !planned[k] {
				v.Addf("%s: an entity no writer planned", shortKey(k))
			}
		}
	}
	for _, s := range st.strays {
		v.Addf("Archive holds an unexpected entity: %s", s)
	}
	if st.queued != 0 {
		v.Addf("the work queue still holds %d messages", st.queued)
	}
	for _, p := range st.poisoned {
		v.Addf("poison record: message %s (dequeued %d times, blob %q, payload %s): %s", p.MessageID, p.DequeueCount, p.Blob, p.Payload, p.Error)
	}
	return tally
}

// leftoverBlobs checks the claim-check blobs left at the end (the queue is
// empty, so no message names them): each must hold a move request, of an
// entity that was moved or whose move was never acknowledged (a blob of an
// acknowledged move that did not happen would be a lost message), and
// there may be at most allowed of them (see orphanBudget). It returns
// their number.
func leftoverBlobs(h *chaos.History, st chaosState, allowed int64, why string, v *chaos.Violations) int {
	acked := map[string]bool{}
	for _, op := range h.Ops() {
		if op.Name == "Move" && op.Outcome == chaos.OK {
			acked[op.Key] = true
		}
	}
	names := make([]string, 0, len(st.blobs))
	for name := range st.blobs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var req archive.MoveRequest
		if err := json.Unmarshal(st.blobs[name], &req); err != nil {
			v.Addf("claim-check blob %s does not hold a move request: %v", name, err)
			continue
		}
		k := req.PartitionKey + "/" + req.RowKey
		if _, inCur := st.current[k]; inCur && acked[k] {
			v.Addf("claim-check blob %s is left, and the acknowledged move of %s it holds has not taken effect", name, shortKey(k))
		}
	}
	if int64(len(names)) > allowed {
		v.Addf("%d claim-check blobs are left, more than the %d events that may leave one (%s): %v", len(names), allowed, why, names)
	}
	return len(names)
}

// drainChaosQueue waits for the workers to empty the work queue while the
// faults go on (for at most a minute, so that most moves run under
// faults), then stops the faults and waits for the queue to be empty (a
// hang guard of two minutes, not a timed assertion).
func drainChaosQueue(t *testing.T, acct *tablekit.Account, n chaosNames, stopFaults func()) {
	t.Helper()
	ctx := chaos.NoFaults(context.Background())
	queue := acct.Queues().NewQueueClient(n.Queue)
	depth := func() int {
		resp, err := queue.GetProperties(ctx, nil)
		if err != nil {
			t.Fatalf("reading the work queue's depth: %v", err)
		}
		return int(*resp.ApproximateMessagesCount)
	}
	for deadline := time.Now().Add(time.Minute); depth() > 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if d := depth(); d > 0 {
		t.Logf("%d messages still queued after a minute under faults", d)
	}
	stopFaults()
	waitFor(t, 2*time.Minute, "the workers to drain the queue", func() bool { return depth() == 0 })
}

// orphanBudget returns how many claim-check blobs the faults st counts may
// leave behind, as the package doc says ("Claim-check blobs"): a
// DeleteMessage applied but answered with a lost answer or a 500 (the
// SDK's retry gets 404, which does not prove the message gone, so the
// worker keeps the blob), and a claim-check PutMessage try that failed
// without reaching the queue and without a refusal (a reset or a 500: the
// Client cannot tell it from a try that stored the message, so it keeps
// the blob and sends the payload again in a new one). A PutMessage applied
// despite its failure stores a message whose worker deletes the blob, and
// a refused one (503) has its blob reused or deleted, so they leave none.
func orphanBudget(st chaos.Stats) (int64, string) {
	n := st.Count(chaos.AnswerLost, "queue", "DeleteMessage") + st.Count(chaos.TimeoutAfter, "queue", "DeleteMessage") +
		st.Count(chaos.Reset, "queue", "PutMessage") + st.Count(chaos.TimeoutBefore, "queue", "PutMessage")
	return n, "answers lost on DeleteMessage, PutMessage tries reset or timed out before sending"
}

// newChaosNames creates the tables, queue and container of a run (the
// poison queue is created by the workers on demand) and deletes them when
// t ends.
func newChaosNames(t *testing.T, acct *tablekit.Account) chaosNames {
	t.Helper()
	n := chaosNames{
		Conn:                    testenv.ConnectionString(t),
		Current:                 testenv.TableName(t),
		Archive:                 testenv.TableName(t),
		Queue:                   queueName(testenv.NewQueue(t, acct)),
		Poison:                  testenv.QueueName(t),
		Key:                     keyring.GenerateKey(),
		VisibilityTimeoutSecond: 1,
	}
	n.Claims = chaosContainer(t, acct)
	for _, name := range []string{n.Current, n.Archive} {
		tbl, err := openChaosTable(acct, name, n.Key)
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.CreateIfNotExists(chaos.NoFaults(context.Background())); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := tbl.DeleteTable(chaos.NoFaults(ctx)); err != nil && !errors.Is(err, tablekit.ErrNotFound) {
				t.Errorf("delete table %s: %v", tbl.Name(), err)
			}
		})
	}
	poison := acct.Queues().NewQueueClient(n.Poison)
	t.Cleanup(func() { poison.Delete(chaos.NoFaults(context.Background()), nil) })
	return n
}

// chaosContainer creates the claim-check container and returns its name.
func chaosContainer(t *testing.T, acct *tablekit.Account) string {
	c := testenv.NewContainer(t, acct)
	u := strings.TrimRight(c.URL(), "/")
	return u[strings.LastIndexByte(u, '/')+1:]
}

// chaosFaults is the fault mix of the archive suites: every service
// (table, queue, blob), every operation.
func chaosFaults() *chaos.Config {
	return &chaos.Config{Reset: 0.05, AnswerLost: 0.07, ServerBusy: 0.04, TimeoutBefore: 0.02, TimeoutAfter: 0.03, Delay: 0.05}
}

func TestChaosArchiveMove(t *testing.T) {
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		inj, err := chaos.New(seed, chaosFaults())
		if err != nil {
			t.Fatal(err)
		}
		setup := inj.Account(t, nil)
		inj.SetEnabled(false)
		names := newChaosNames(t, setup)
		writers, perWriter, workers := chaos.Size(8, 16), chaos.Size(10, 24), chaos.Size(3, 4)
		plans := chaosPlans(seed, writers, perWriter)
		seedChaosEntities(ctx, t, setup, names, plans)
		inj.SetEnabled(true)

		// The workers, each with its own Account, run while the writers
		// request moves.
		type running struct {
			w    *archive.Worker
			h    *chaosHandler
			stop context.CancelFunc
			done chan error
		}
		var ws []running
		for range workers {
			acct, err := inj.Open(names.Conn, &tablekit.Options{Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			w, h, err := openChaosWorker(acct, names, seed)
			if err != nil {
				t.Fatal(err)
			}
			wctx, stop := context.WithCancel(ctx)
			r := running{w: w, h: h, stop: stop, done: make(chan error, 1)}
			go func() { r.done <- w.Run(wctx) }()
			ws = append(ws, r)
		}
		var stopOnce sync.Once
		stopWorkers := func() {
			stopOnce.Do(func() {
				for _, r := range ws {
					r.stop()
				}
				for i, r := range ws {
					if err := <-r.done; err != nil {
						t.Errorf("worker %d: Run: %v", i, err)
					}
				}
			})
		}
		t.Cleanup(stopWorkers)

		h, err := chaos.RunWriters(ctx, seed, writers, func(ctx context.Context, w *chaos.Writer) error {
			acct, err := inj.Open(names.Conn, nil)
			if err != nil {
				return err
			}
			return chaosWrite(ctx, w, acct, names, plans[w.Index], nil)
		})
		if err != nil {
			t.Fatal(err)
		}

		// The workers take the queue down under faults, then the faults
		// stop and they drain what is left (messages hidden by a failed
		// attempt reappear after the 1 s visibility timeout).
		drainChaosQueue(t, setup, names, func() { inj.SetEnabled(false) })
		stopWorkers()
		st := inj.Stats()
		var ws0 archive.Stats
		var early, late int64
		for _, r := range ws {
			early += r.h.early.Load()
			late += r.h.late.Load()
			s := r.w.Stats()
			ws0.Received += s.Received
			ws0.Succeeded += s.Succeeded
			ws0.Failed += s.Failed
			ws0.Poisoned += s.Poisoned
			ws0.Renewed += s.Renewed
			ws0.Lost += s.Lost
			ws0.Abandoned += s.Abandoned
			ws0.Throttled += s.Throttled
			ws0.MaxQueueAge = max(ws0.MaxQueueAge, s.MaxQueueAge)
		}
		t.Logf("%d ops (%d ok, %d failed, %d unknown); faults: %s", h.Len(), h.Count(chaos.OK), h.Count(chaos.Failed), h.Count(chaos.Unknown), st.ByKind())
		t.Logf("workers: %+v; handler failures injected: %d before the move, %d after", ws0, early, late)
		logFailedOps(t, h)
		if rate := st.FaultRate(); rate < 0.15 {
			t.Errorf("only %.1f%% of requests faulted, want at least 15%%", 100*rate)
		}
		for _, op := range []string{"PutMessage", "GetMessages", "DeleteMessage"} {
			if st.Count(chaos.AnswerLost, "queue", op)+st.Count(chaos.TimeoutAfter, "queue", op) == 0 && chaos.Full() {
				t.Errorf("no answer of a queue %s was lost: the run did not cover it", op)
			}
		}

		state := readChaosState(ctx, t, setup, names)
		var v chaos.Violations
		tally := checkChaosMoves(h, plans, state, &v)
		t.Logf("entities: %s", tally)
		allowed, why := orphanBudget(st)
		left := leftoverBlobs(h, state, allowed, why, &v)
		t.Logf("claim-check blobs left: %d (at most %d allowed)", left, allowed)
		if h.Len() < 300 && chaos.Full() {
			v.Addf("only %d operations ran, want at least 300", h.Len())
		}
		v.Report(t)
	})
}

// logFailedOps logs the errors of the ops that failed or whose outcome is
// unknown, by reason.
func logFailedOps(t *testing.T, h *chaos.History) {
	reasons := map[string]int{}
	for _, op := range h.Ops() {
		if op.Outcome == chaos.OK {
			continue
		}
		reason := op.Outcome.String() + " " + op.Name + ": "
		var se *tablekit.ServiceError
		var fe *chaos.FaultError
		switch {
		case errors.As(op.Err, &se):
			reason += se.Code
		case errors.As(op.Err, &fe):
			reason += string(fe.Kind)
		case op.Err != nil:
			reason += fmt.Sprintf("%T", op.Err)
		}
		reasons[reason]++
		if testing.Verbose() && os.Getenv("ARCHIVE_LOG") != "" {
			t.Logf("%v", op)
		}
	}
	t.Logf("ops not acknowledged, by reason: %v", reasons)
}
