package index_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"log/slog"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keys"
)

// The inter-partition index chaos suite: concurrent writers, each with its
// own Account and CrossPartition (queued mode), upsert, update (conditional on the
// version read, or on any version) and delete employees (conditional on
// the version read, or whatever it is), changing indexed values (values
// holding ' included), while two archive workers, each with its own
// Account and CrossPartition, run the index maintenance; faults hit the tables, the
// queue and the blobs, for writers and workers alike.
//
// The indexes: a whole copy by email and a projected copy by employee id
// (a copies table), an index entity per department and last name (an
// EntityList, option 3) and a blob per first name across departments (a
// BlobList, option 1). Sync records live in the employees' table.
//
// Invariants, once caught up (faults stopped, the workers and the safety
// nets drained the queue; a bounded wait):
//   - the queue is empty and nothing was poisoned;
//   - every stored employee is caught up, and the index entries are exactly
//     those derived from the stored employees: one copy per employee and
//     copy index with the employee's current properties and version, each
//     list (index entity or blob) listing exactly the employees that have
//     its value, no list left empty, no sync record of a missing employee;
//   - each writer's employees end in a state that the in-order application
//     of its acknowledged writes and some of its unknown ones gives, and
//     every refused write is explained (a conditional update or delete
//     refused after an earlier write of the employee whose outcome was not
//     acknowledged, whose safety net may have fenced the version);
//     DeleteIfExists reports an employee as existing only when it did.

var chaosFirstNames = []string{"Ana", "O'Brien", "D'Or"}

// chaosInterRig holds the names of the suite's storage.
type chaosInterRig struct {
	employees, copies, lists string // tables
	container, queue, poison string
}

// build returns a CrossPartition over the rig on acct.
func (r *chaosInterRig) build(acct *tablekit.Account) (*index.CrossPartition[Employee], error) {
	lists, err := tablekit.OpenTable[tablekit.Entity](acct, r.lists, nil)
	if err != nil {
		return nil, err
	}
	blobs := acct.Blobs().ServiceClient().NewContainerClient(r.container)
	q, err := archive.NewClient(acct.Queues().NewQueueClient(r.queue), nil, nil)
	if err != nil {
		return nil, err
	}
	tbl, err := tablekit.OpenTable[Employee](acct, r.employees, nil)
	if err != nil {
		return nil, err
	}
	copies, err := tablekit.OpenTable[tablekit.Entity](acct, r.copies, nil)
	if err != nil {
		return nil, err
	}
	return index.NewCrossPartition(tbl, chaosInterIndexes(copies, lists, blobs), &index.CrossPartitionOptions{
		Queue: q,
		// Short delays keep the drain short: safety nets become visible
		// after 1 s, and the safety net of an insert stops looking for a
		// missing entity 1 s later.
		Delay: time.Second, InsertHorizon: time.Second,
	})
}

func chaosInterIndexes(copies, lists *tablekit.Table[tablekit.Entity], blobs *container.Client) []index.Index[Employee] {
	return []index.Index[Employee]{
		{Name: "email", Key: func(e Employee) string { return e.Email }, Table: copies},
		{Name: "empid", Key: func(e Employee) string { return e.ID }, Table: copies, Properties: []string{"FirstName", "LastName"}},
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: true, Table: lists},
		{Name: "firstname", Key: func(e Employee) string { return e.FirstName }, List: true, Blobs: blobs, Global: true},
	}
}

// chaosQueueConfig is chaosTableConfig on every service.
func chaosQueueConfig() *chaos.Config {
	c := chaosTableConfig()
	c.Services = nil
	return c
}

func TestChaosInter(t *testing.T) {
	const employees = 3 // per writer
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		inj, err := chaos.New(seed, chaosQueueConfig())
		if err != nil {
			t.Fatal(err)
		}
		setup := inj.Account(t, nil)
		inj.SetEnabled(false)
		r := &chaosInterRig{container: testenv.ContainerName(t)}
		r.employees, r.copies, r.lists = newTable(t, setup), newTable(t, setup), newTable(t, setup)
		r.queue, r.poison = queueName(testenv.NewQueue(t, setup)), queueName(testenv.NewQueue(t, setup))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			setup.Blobs().ServiceClient().NewContainerClient(r.container).Delete(ctx, nil) // created on demand
		})
		writers, perWriter := chaos.Size(8, 16), chaos.Size(14, 40)
		open := func(log *slog.Logger) (*tablekit.Account, *index.CrossPartition[Employee]) {
			t.Helper()
			acct, err := inj.Open(testenv.ConnectionString(t), &tablekit.Options{Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			ix, err := r.build(acct)
			if err != nil {
				t.Fatal(err)
			}
			return acct, ix
		}
		ixs := make([]*index.CrossPartition[Employee], writers)
		for w := range ixs {
			_, ixs[w] = open(nil)
		}
		// Two workers, as two processes would run them.
		var workers []*chaosWorker
		logs := &countingHandler{n: map[string]int{}}
		slow := &slowest{}
		for range 2 {
			acct, ix := open(slog.New(logs)) // the worker logs to its Account's Logger
			workers = append(workers, startChaosWorker(t, acct, slow.wrap(ix), r))
		}
		stopWorkers := func() {
			for _, w := range workers {
				w.stop(t)
			}
		}
		defer stopWorkers()
		inj.SetEnabled(true)

		h, err := chaos.RunWriters(ctx, seed, writers, func(ctx context.Context, w *chaos.Writer) error {
			ix := ixs[w.Index]
			for seq := range perWriter {
				k := w.Rand.IntN(employees)
				pk := chaosDepartments[(w.Index+k)%len(chaosDepartments)]
				rk := fmt.Sprintf("w%02d-%d", w.Index, k)
				key := pk + "/" + rk
				v := Employee{Department: pk, ID: rk, FirstName: chaosFirstNames[w.Rand.IntN(len(chaosFirstNames))], Age: seq + 1}
				if n := w.Rand.IntN(len(chaosLastNames) + 1); n < len(chaosLastNames) {
					v.LastName = chaosLastNames[n]
				}
				if w.Rand.IntN(8) > 0 {
					v.Email = fmt.Sprintf("%s.%d'x@contoso.com", rk, seq)
				}
				write := func(kind string, call func(ctx context.Context, mo *empOp) error) {
					mo := &empOp{Kind: kind, Key: key, PK: pk, V: empOf(v)}
					w.Do(ctx, kind, key, mo, func(ctx context.Context) (any, error) {
						return nil, call(ctx, mo)
					})
				}
				get := func() (azcore.ETag, bool) {
					mo := &empOp{Kind: opGet, Key: key, PK: pk}
					var etag azcore.ETag
					op := w.Do(ctx, opGet, key, mo, func(ctx context.Context) (any, error) {
						e, err := ix.Get(ctx, pk, rk)
						if err == nil {
							etag, mo.V = e.ETag, empOf(e)
						}
						return nil, err
					})
					return etag, op.Outcome == chaos.OK
				}
				switch n := w.Rand.IntN(20); {
				case n < 7:
					write(opUpsert, func(ctx context.Context, _ *empOp) error { _, err := ix.Upsert(ctx, v); return err })
				case n < 13:
					if etag, ok := get(); ok {
						write(opUpdate, func(ctx context.Context, _ *empOp) error { _, err := ix.Update(ctx, v, etag); return err })
					}
				case n < 15:
					write(opUpdateAny, func(ctx context.Context, _ *empOp) error { _, err := ix.Update(ctx, v, azcore.ETagAny); return err })
				case n < 18:
					write(opDeleteIfExists, func(ctx context.Context, mo *empOp) error {
						var err error
						mo.Existed, err = ix.DeleteIfExists(ctx, pk, rk)
						return err
					})
				default:
					if etag, ok := get(); ok {
						write(opDelete, func(ctx context.Context, _ *empOp) error { return ix.Delete(ctx, pk, rk, etag) })
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		writersDone := time.Now()
		st := inj.Stats()
		h = settled(h)
		t.Logf("%d ops (%d ok, %d failed, %d unknown); faults while the writers ran: %s", h.Len(), h.Count(chaos.OK), h.Count(chaos.Failed), h.Count(chaos.Unknown), st.ByKind())
		t.Logf("failed ops by reason: %v", reasons(h, chaos.Failed))
		t.Logf("unknown ops by reason: %v", reasons(h, chaos.Unknown))

		// The workers go on under faults until they have drained the
		// queue (the safety nets included); then faults stop and whatever
		// is left (a message whose handler failed last) drains.
		var v chaos.Violations
		check := chaos.NoFaults(ctx)
		if err := waitQueueEmpty(check, setup.Queues().NewQueueClient(r.queue), 2*time.Minute); err != nil {
			t.Logf("the workers did not drain the queue under faults: %v", err)
		}
		t.Logf("drained under faults %v after the writers ended", time.Since(writersDone).Round(time.Millisecond))
		inj.SetEnabled(false)
		st = inj.Stats()
		t.Logf("faults in all: %s (%.1f%% of eligible tries)", st.ByKind(), 100*st.FaultRate())
		if rate := st.FaultRate(); rate < 0.15 {
			t.Errorf("only %.1f%% of requests faulted, want at least 15%%", 100*rate)
		}
		if err := waitQueueEmpty(check, setup.Queues().NewQueueClient(r.queue), 2*time.Minute); err != nil {
			v.Addf("the workers did not catch up: %v", err)
		}
		t.Logf("caught up %v after the writers ended", time.Since(writersDone).Round(time.Millisecond))
		stopWorkers()
		var ws archive.Stats
		for _, w := range workers {
			s := w.w.Stats()
			ws.Received, ws.Succeeded, ws.Failed, ws.Poisoned, ws.Lost = ws.Received+s.Received, ws.Succeeded+s.Succeeded, ws.Failed+s.Failed, ws.Poisoned+s.Poisoned, ws.Lost+s.Lost
		}
		t.Logf("slowest handler runs: %s", slow)
		t.Logf("workers: %d messages received, %d handled, %d handler failures, %d poisoned, %d ownership lost; warnings: %v", ws.Received, ws.Succeeded, ws.Failed, ws.Poisoned, ws.Lost, logs.counts())
		poisoned := poisonRecords(t, check, setup.Queues().NewQueueClient(r.poison))
		for _, p := range poisoned {
			v.Addf("message poisoned: %s (dequeued %d times): %s", p.Payload, p.DequeueCount, p.Error)
		}

		reader, err := r.build(setup)
		if err != nil {
			t.Fatal(err)
		}
		stored := checkInterIndexes(t, check, setup, r, reader, &v)
		model := empModel{fences: true}
		model.check(h, stored, ownerOf, &v)
		if writes := countWrites(h); writes < 300 && chaos.Full() {
			v.Addf("only %d write operations ran, want at least 300", writes)
		}
		v.Report(t)
	})
}

// settled returns h with the outcomes of some ops corrected:
//
//   - chaos.OutcomeOf calls an error it does not know Unknown, and the
//     index package returns three such errors that say nothing was
//     written: a write that lost every race until its retries ran out
//     (*index.ConflictError), the refusal of a write to a missing entity
//     (an error matching tablekit.ErrNotFound that is no service error),
//     and the refusal of a SamePartition write whose ETag the entity no longer
//     has (one matching tablekit.ErrPreconditionFailed, found by its
//     read). Those are Failed.
//   - tablekit reports a write whose last try was throttled (503) as
//     ErrThrottled even when an earlier try of it was applied and its
//     answer lost (wrapWriteError turns only 408 and 5xx other than 503
//     into ErrOutcomeUnknown), and OutcomeOf calls that Failed. When a
//     fault that applies the try was injected into such an op, it is
//     Unknown.
func settled(h *chaos.History) *chaos.History {
	out := &chaos.History{}
	for _, op := range h.Ops() {
		if op.Outcome == chaos.Failed && errors.Is(op.Err, tablekit.ErrThrottled) && op.AnswerLost() {
			op.Outcome = chaos.Unknown
		}
		if op.Outcome == chaos.Unknown && !errors.Is(op.Err, tablekit.ErrOutcomeUnknown) &&
			!errors.Is(op.Err, context.DeadlineExceeded) && !errors.Is(op.Err, context.Canceled) {
			var ce *index.ConflictError
			var se *tablekit.ServiceError
			var re *tablekit.RequestError
			refused := errors.Is(op.Err, tablekit.ErrNotFound) || errors.Is(op.Err, tablekit.ErrPreconditionFailed)
			if errors.As(op.Err, &ce) || (refused && !errors.As(op.Err, &se) && !errors.As(op.Err, &re)) {
				op.Outcome = chaos.Failed
			}
		}
		out.Add(op)
	}
	return out
}

// chaosWorker is one archive worker of the suite, running until stopped.
type chaosWorker struct {
	w      *archive.Worker
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

func startChaosWorker(t *testing.T, acct *tablekit.Account, h archive.Handler, r *chaosInterRig) *chaosWorker {
	t.Helper()
	w, err := archive.OpenWorker(acct, r.queue, h, &archive.WorkerOptions{
		Concurrency: 8, PollInterval: 100 * time.Millisecond,
		VisibilityTimeout: 3 * time.Second, Retry: tablekit.RetryPolicy{MaxAttempts: 10}, DrainTimeout: 10 * time.Second,
		PoisonQueue: r.poison, Container: r.poison, // no claim checks: the index's messages are small
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cw := &chaosWorker{w: w, cancel: cancel, done: make(chan error, 1)}
	go func() { cw.done <- w.Run(ctx) }()
	return cw
}

func (cw *chaosWorker) stop(t *testing.T) {
	cw.once.Do(func() {
		cw.cancel()
		if err := <-cw.done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})
}

// slowest keeps the slowest handler runs, to explain a long drain.
type slowest struct {
	mu   sync.Mutex
	runs []string
	durs []time.Duration
}

func (s *slowest) wrap(ix *index.CrossPartition[Employee]) archive.Handler {
	return archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
		start := time.Now()
		err := ix.Handle(ctx, m)
		d := time.Since(start)
		s.mu.Lock()
		defer s.mu.Unlock()
		i, _ := slices.BinarySearchFunc(s.durs, d, func(a, b time.Duration) int { return int(b - a) })
		if i < 3 {
			s.durs = slices.Insert(s.durs, i, d)
			s.runs = slices.Insert(s.runs, i, fmt.Sprintf("%v %s (attempt %d): %v", d.Round(time.Millisecond), m.Payload, m.DequeueCount, err))
			s.durs, s.runs = s.durs[:min(3, len(s.durs))], s.runs[:min(3, len(s.runs))]
		}
		return err
	})
}

func (s *slowest) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.runs, "; ")
}

// countingHandler counts the warnings and errors the workers log, by
// message.
type countingHandler struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	key := r.Message
	if r.Level < slog.LevelWarn {
		if !strings.HasPrefix(key, "handler failed") {
			return nil
		}
		r.Attrs(func(a slog.Attr) bool {
			if err, ok := a.Value.Any().(error); ok && a.Key == "error" {
				key = "handler failed: " + reason("Sync", err)
			}
			return true
		})
	}
	h.mu.Lock()
	h.n[key]++
	h.mu.Unlock()
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

func (h *countingHandler) counts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.n)
}

// waitQueueEmpty waits until the queue holds no message (visible, delayed
// or in flight). How long that takes depends on the machine's load, so it
// gives up only when the count has not fallen below its lowest for stall.
func waitQueueEmpty(ctx context.Context, q *azqueue.QueueClient, stall time.Duration) error {
	var n int64 = -1
	var lastErr error
	waited, ok := chaos.WaitProgress(stall, 50*time.Millisecond, func() (int64, bool) {
		props, err := q.GetProperties(ctx, nil)
		if err != nil || props.ApproximateMessagesCount == nil {
			lastErr = err
			return math.MinInt64, false // no progress seen
		}
		n = int64(*props.ApproximateMessagesCount)
		return -n, n == 0
	})
	if !ok {
		return fmt.Errorf("%d messages still queued, none handled for %v (%v in all; last error: %v)", n, stall, waited.Round(time.Second), lastErr)
	}
	return nil
}

// poisonRecords reads the poison queue (without removing anything).
func poisonRecords(t *testing.T, ctx context.Context, q *azqueue.QueueClient) []archive.Poisoned {
	t.Helper()
	props, err := q.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []archive.Poisoned
	if props.ApproximateMessagesCount == nil || *props.ApproximateMessagesCount == 0 {
		return nil
	}
	peek, err := q.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: new(int32(32))})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range peek.Messages {
		p, err := archive.ParsePoison(*m.MessageText)
		if err != nil {
			t.Errorf("poison message %q: %v", *m.MessageText, err)
			continue
		}
		out = append(out, p)
	}
	if n := int(*props.ApproximateMessagesCount); n > len(out) {
		t.Logf("%d poison messages, %d shown", n, len(out))
	}
	return out
}

// checkInterIndexes checks every index entry and sync record against the
// stored employees; it returns the employees' model states by "pk/rk".
func checkInterIndexes(t *testing.T, ctx context.Context, acct *tablekit.Account, r *chaosInterRig, reader *index.CrossPartition[Employee], v *chaos.Violations) map[string]empState {
	t.Helper()
	statePrefix, _ := keys.Compound(index.StatePartitionPrefix)
	employees := map[string]tablekit.Entity{}
	records := map[string]tablekit.Entity{}
	for e, err := range mustNewTable[tablekit.Entity](t, acct, r.employees).Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(e.PartitionKey, statePrefix+string(keys.Separator)) {
			c, err := keys.Split(e.PartitionKey)
			if err != nil || len(c) != 3 {
				v.Addf("sync record %s/%s has a malformed PartitionKey", e.PartitionKey, e.RowKey)
				continue
			}
			records[c[2]+"/"+e.RowKey] = e
			continue
		}
		employees[e.PartitionKey+"/"+e.RowKey] = e
	}
	stored := map[string]empState{}
	wantCopies := map[string]map[string]any{} // "pk|rk" -> properties
	wantLists := map[index.ListKey][]index.ID{}
	wantBlobs := map[index.ListKey][]index.ID{}
	for key, e := range employees {
		emp, err := tablekit.FromEntity[Employee](e)
		if err != nil {
			t.Fatal(err)
		}
		stored[key] = empOf(emp)
		id := index.ID{PartitionKey: e.PartitionKey, RowKey: e.RowKey}
		if ok, err := reader.CaughtUp(ctx, id.PartitionKey, id.RowKey); err != nil || !ok {
			v.Addf("employee %s is not caught up (%v)", key, err)
		}
		rec, ok := records[key]
		delete(records, key)
		if !ok {
			v.Addf("employee %s has no sync record", key)
		} else if got := rec.Properties[index.SyncedProperty]; got != string(e.ETag) {
			v.Addf("sync record of %s names version %v, the employee is at %s", key, got, e.ETag)
		}
		primary := map[string]any{
			index.PrimaryPartitionKeyProperty: id.PartitionKey,
			index.PrimaryRowKeyProperty:       id.RowKey,
			index.PrimaryETagProperty:         string(e.ETag),
		}
		if emp.Email != "" {
			pk, _ := keys.Compound("email", id.PartitionKey)
			rk, _ := keys.Compound(emp.Email, id.RowKey)
			props := maps.Clone(e.Properties)
			maps.Copy(props, primary)
			wantCopies[pk+"|"+rk] = props
		}
		pk, _ := keys.Compound("empid", id.PartitionKey)
		rk, _ := keys.Compound(emp.ID, id.RowKey)
		props := maps.Clone(primary)
		for _, p := range []string{"FirstName", "LastName"} {
			if x, ok := e.Properties[p]; ok {
				props[p] = x
			}
		}
		wantCopies[pk+"|"+rk] = props
		if emp.LastName != "" {
			k := index.ListKey{Index: "lastname", Partition: id.PartitionKey, Value: emp.LastName}
			wantLists[k] = append(wantLists[k], id)
		}
		if emp.FirstName != "" {
			k := index.ListKey{Index: "firstname", Value: emp.FirstName}
			wantBlobs[k] = append(wantBlobs[k], id)
		}
	}
	for key, rec := range records {
		v.Addf("sync record of missing employee %s is left: %v", key, rec.Properties)
	}

	// Copies.
	for row, err := range mustNewTable[tablekit.Entity](t, acct, r.copies).Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		key := row.PartitionKey + "|" + row.RowKey
		want, ok := wantCopies[key]
		switch {
		case !ok:
			v.Addf("index copy %s is stale or extra: %v", key, row.Properties)
		case !reflect.DeepEqual(row.Properties, want):
			v.Addf("index copy %s holds %v, want %v", key, row.Properties, want)
		}
		delete(wantCopies, key)
	}
	for key := range wantCopies {
		v.Addf("index copy %s is missing", key)
	}

	// Index entities (option 3).
	entityList, err := index.NewEntityList(mustNewTable[tablekit.Entity](t, acct, r.lists), nil)
	if err != nil {
		t.Fatal(err)
	}
	for row, err := range mustNewTable[tablekit.Entity](t, acct, r.lists).Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		c, err1 := keys.Split(row.PartitionKey)
		val, err2 := keys.Split(row.RowKey)
		if err1 != nil || err2 != nil || len(c) != 2 || len(val) != 1 {
			v.Addf("index entity %s/%s has malformed keys", row.PartitionKey, row.RowKey)
			continue
		}
		k := index.ListKey{Index: c[0], Partition: c[1], Value: val[0]}
		ids, count := listedIDs(row)
		if _, ok := wantLists[k]; !ok {
			v.Addf("index entity %v is stale or extra: %q", k, ids)
		}
		if count != fmt.Sprint(len(ids)) || len(ids) == 0 {
			v.Addf("index entity %v lists %d ids with Count %s", k, len(ids), count)
		}
	}
	for k, want := range wantLists {
		sortIDs(want)
		got, err := entityList.IDs(ctx, k)
		if err != nil || !slices.Equal(got, want) {
			v.Addf("index entity %v = %v (%v), want %v", k, got, err, want)
		}
	}

	// Blobs (option 1).
	blobList, err := index.NewBlobList(acct.Blobs().ServiceClient().NewContainerClient(r.container), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for k := range wantBlobs {
		names[blobList.BlobName(k)] = true
	}
	pager := acct.Blobs().ServiceClient().NewContainerClient(r.container).NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			if len(wantBlobs) > 0 {
				v.Addf("listing the blob lists: %v", err)
			}
			break
		}
		for _, b := range page.Segment.BlobItems {
			if !names[*b.Name] {
				v.Addf("blob list %s is stale or extra", *b.Name)
			}
		}
	}
	for k, want := range wantBlobs {
		sortIDs(want)
		got, err := blobList.IDs(ctx, k)
		if err != nil || !slices.Equal(got, want) {
			v.Addf("blob list %v = %v (%v), want %v", k, got, err, want)
		}
	}
	return stored
}
