package index_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keys"
)

// interRig is an employee table with inter-partition indexes: by email
// and id (copies in a table of their own), by last name (index entities in
// a third table, option 3) and by first name (blobs, option 1, one list
// for all departments).
type interRig struct {
	acct                     *tablekit.Account
	employees, copies, lists string // table names
	container, queue, poison string
	queued                   bool
	lastNameOnly             bool          // only the last name index
	delay                    time.Duration // CrossPartitionOptions.Delay; 0: 1 s
	ix                       *index.CrossPartition[Employee]
	employeeTable            *tablekit.Table[Employee]
	copyRows, listRows       *tablekit.Table[tablekit.Entity]
	entityList               *index.EntityList
	blobList                 *index.BlobList
}

func newInterRig(t *testing.T, queued bool) *interRig {
	t.Helper()
	return newInterRigWith(t, &interRig{queued: queued})
}

func newInterRigWith(t *testing.T, r *interRig) *interRig {
	t.Helper()
	acct := testenv.Account(t, nil)
	r.acct = acct
	queued := r.queued
	r.employees, r.copies, r.lists = newTable(t, acct), newTable(t, acct), newTable(t, acct)
	r.container = testenv.ContainerName(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		acct.Blobs().ServiceClient().NewContainerClient(r.container).Delete(ctx, nil) // created on demand
	})
	if queued {
		r.queue = queueName(testenv.NewQueue(t, acct))
		r.poison = queueName(testenv.NewQueue(t, acct))
	}
	r.ix = r.build(t, acct)
	r.employeeTable = mustNewTable[Employee](t, acct, r.employees)
	r.copyRows = mustNewTable[tablekit.Entity](t, acct, r.copies)
	r.listRows = mustNewTable[tablekit.Entity](t, acct, r.lists)
	var err error
	if r.entityList, err = index.NewEntityList(r.listRows, nil); err != nil {
		t.Fatal(err)
	}
	if r.blobList, err = index.NewBlobList(acct.Blobs().ServiceClient().NewContainerClient(r.container), nil); err != nil {
		t.Fatal(err)
	}
	return r
}

// build returns the rig's CrossPartition on acct (another Account can carry
// fault-injecting policies).
func (r *interRig) build(t *testing.T, acct *tablekit.Account) *index.CrossPartition[Employee] {
	t.Helper()
	lists := mustNewTable[tablekit.Entity](t, acct, r.lists)
	blobs := acct.Blobs().ServiceClient().NewContainerClient(r.container)
	copies := mustNewTable[tablekit.Entity](t, acct, r.copies)
	indexes := []index.Index[Employee]{
		{Name: "email", Key: func(e Employee) string { return e.Email }, Table: copies},
		{Name: "empid", Key: func(e Employee) string { return e.ID }, Table: copies, Properties: []string{"FirstName", "LastName"}},
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: true, Table: lists},
		{Name: "firstname", Key: func(e Employee) string { return e.FirstName }, List: true, Blobs: blobs, Global: true},
	}
	if r.lastNameOnly {
		indexes = indexes[2:3]
	}
	// A short InsertHorizon: the safety net of an insert that never
	// reached the service stops looking for the entity after 1+3 s.
	opts := &index.CrossPartitionOptions{Delay: time.Second, InsertHorizon: 3 * time.Second}
	if r.delay > 0 {
		opts.Delay = r.delay
	}
	var err error
	if r.queued {
		if opts.Queue, err = archive.NewClient(acct.Queues().NewQueueClient(r.queue), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	ix, err := index.NewCrossPartition(mustNewTable[Employee](t, acct, r.employees), indexes, opts)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// worker runs a worker for the rig's queue on acct until the returned
// stop function is called.
func (r *interRig) worker(t *testing.T, acct *tablekit.Account, ix *index.CrossPartition[Employee], opts *archive.WorkerOptions) (stop func()) {
	t.Helper()
	o := archive.WorkerOptions{Concurrency: 8, PollInterval: 200 * time.Millisecond, VisibilityTimeout: 5 * time.Second, Retry: tablekit.RetryPolicy{MaxAttempts: 20}}
	if opts != nil {
		o = *opts
	}
	// The claim-check container is never used (the index's messages are
	// small): name one that fits, as the default's suffix may not.
	o.PoisonQueue, o.Container = r.poison, r.poison
	w, err := archive.OpenWorker(acct, r.queue, ix, &o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	}
}

// drain waits until the work queue is empty, delayed and in-flight
// messages included.
func (r *interRig) drain(t *testing.T, ctx context.Context) {
	t.Helper()
	q := r.acct.Queues().NewQueueClient(r.queue)
	for {
		props, err := q.GetProperties(ctx, nil)
		if err != nil {
			t.Fatalf("queue properties: %v", err)
		}
		if props.ApproximateMessagesCount != nil && *props.ApproximateMessagesCount == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the queue did not drain: %v", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	peek, err := r.acct.Queues().NewQueueClient(r.poison).PeekMessages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range peek.Messages {
		p, _ := archive.ParsePoison(*m.MessageText)
		t.Errorf("poisoned: %+v", p)
	}
}

// check asserts that every index agrees exactly with the stored employees:
// each one is caught up and found under each of its values, and every
// entry points to a stored employee that has the entry's value.
func (r *interRig) check(t *testing.T, ctx context.Context) map[string]Employee {
	t.Helper()
	stored := map[string]Employee{}
	for e, err := range r.employeeTable.Query(ctx, tablekit.Filter{}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(e.Department, index.StatePartitionPrefix+"!") {
			continue // sync records
		}
		stored[e.Department+"/"+e.ID] = e
	}
	for _, e := range stored {
		if ok, err := r.ix.CaughtUp(ctx, e.Department, e.ID); err != nil || !ok {
			t.Errorf("%s/%s not caught up (%v)", e.Department, e.ID, err)
		}
	}
	// Copies: exactly one per employee and index, with the current data.
	want := map[string]bool{}
	for _, e := range stored {
		if r.lastNameOnly {
			break
		}
		pk, _ := keys.Compound("email", e.Department)
		rk, _ := keys.Compound(e.Email, e.ID)
		want[pk+"|"+rk] = true
		pk, _ = keys.Compound("empid", e.Department)
		rk, _ = keys.Compound(e.ID, e.ID)
		want[pk+"|"+rk] = true
	}
	for row, err := range r.copyRows.Query(ctx, tablekit.Filter{}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		key := row.PartitionKey + "|" + row.RowKey
		if !want[key] {
			t.Errorf("stale copy %s", key)
			continue
		}
		delete(want, key)
		e := stored[row.Properties[index.PrimaryPartitionKeyProperty].(string)+"/"+row.Properties[index.PrimaryRowKeyProperty].(string)]
		if row.Properties["FirstName"] != e.FirstName || row.Properties["LastName"] != e.LastName {
			t.Errorf("copy %s has %v %v, entity has %s %s", key, row.Properties["FirstName"], row.Properties["LastName"], e.FirstName, e.LastName)
		}
	}
	for key := range want {
		t.Errorf("missing copy %s", key)
	}
	// Lists: index entities per department and last name, blobs per first name.
	lastNames := map[index.ListKey][]index.ID{}
	firstNames := map[index.ListKey][]index.ID{}
	for _, e := range stored {
		k := index.ListKey{Index: "lastname", Partition: e.Department, Value: e.LastName}
		lastNames[k] = append(lastNames[k], index.ID{PartitionKey: e.Department, RowKey: e.ID})
		if !r.lastNameOnly {
			k = index.ListKey{Index: "firstname", Value: e.FirstName}
			firstNames[k] = append(firstNames[k], index.ID{PartitionKey: e.Department, RowKey: e.ID})
		}
	}
	nLists := 0
	for row, err := range r.listRows.Query(ctx, tablekit.Filter{}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		c, _ := keys.Split(row.PartitionKey)
		v, _ := keys.Split(row.RowKey)
		if _, ok := lastNames[index.ListKey{Index: c[0], Partition: c[1], Value: v[0]}]; !ok {
			t.Errorf("stale index entity %s/%s", row.PartitionKey, row.RowKey)
		}
		nLists++
	}
	if nLists != len(lastNames) {
		t.Errorf("%d index entities, want %d", nLists, len(lastNames))
	}
	for k, ids := range lastNames {
		sortIDs(ids)
		got, err := r.entityList.IDs(ctx, k)
		if err != nil || !slices.Equal(got, ids) {
			t.Errorf("index entity %v = %v (%v), want %v", k, got, err, ids)
		}
	}
	for k, ids := range firstNames {
		sortIDs(ids)
		got, err := r.blobList.IDs(ctx, k)
		if err != nil || !slices.Equal(got, ids) {
			t.Errorf("blob list %v = %v (%v), want %v", k, got, err, ids)
		}
	}
	nBlobs := 0
	pager := r.acct.Blobs().ServiceClient().NewContainerClient(r.container).NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			break // container not created: no blobs
		}
		nBlobs += len(page.Segment.BlobItems)
	}
	if nBlobs != len(firstNames) {
		t.Errorf("%d blob lists, want %d", nBlobs, len(firstNames))
	}
	return stored
}

func sortIDs(ids []index.ID) {
	slices.SortFunc(ids, func(a, b index.ID) int {
		if c := compare(a.PartitionKey, b.PartitionKey); c != 0 {
			return c
		}
		return compare(a.RowKey, b.RowKey)
	})
}

func newTable(t *testing.T, acct *tablekit.Account) string {
	t.Helper()
	name := testenv.TableName(t)
	c := acct.Tables().NewClient(name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c.Delete(ctx, nil)
	})
	return name
}

func mustNewTable[T any](t *testing.T, acct *tablekit.Account, name string) *tablekit.Table[T] {
	t.Helper()
	tbl, err := tablekit.OpenTable[T](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func queueName(q *azqueue.QueueClient) string {
	u := strings.TrimRight(q.URL(), "/")
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i]
	}
	return u[strings.LastIndexByte(u, '/')+1:]
}

func TestInterDirect(t *testing.T) {
	ctx := testCtx(t)
	r := newInterRig(t, false)
	for _, e := range staff() {
		if _, err := r.ix.Upsert(ctx, e); err != nil {
			t.Fatalf("put %s: %v", e.ID, err)
		}
	}
	r.check(t, ctx)

	equal(t, "by email", collect(t, r.ix.By(ctx, "Sales", "email", "jonesj@contoso.com")), []string{"000223"})
	equal(t, "email prefix a", collect(t, r.ix.Prefix(ctx, "Sales", "email", "a")),
		filterStaff("Sales", func(e Employee) bool { return strings.HasPrefix(e.Email, "a") }, func(e Employee) string { return e.Email }))
	equal(t, "id range 000100-000199", collect(t, r.ix.Range(ctx, "Sales", "empid", "000100", "000200")),
		filterStaff("Sales", func(e Employee) bool { return e.ID >= "000100" && e.ID <= "000199" }, func(e Employee) string { return e.ID }))
	equal(t, "last name Jones", collect(t, r.ix.By(ctx, "Sales", "lastname", "Jones")),
		filterStaff("Sales", func(e Employee) bool { return e.LastName == "Jones" }, func(e Employee) string { return e.ID }))
	got, err := r.ix.Find(ctx, "Sales", "email", "donh@contoso.com")
	if err != nil || got.Age != 34 || got.ID != "000152" {
		t.Errorf("Find by email = %+v, %v", got, err)
	}
	for e, err := range r.ix.By(ctx, "Sales", "empid", "000152") {
		if err != nil || e.FirstName != "Don" || e.Email != "" {
			t.Errorf("projected copy = %+v, %v", e, err)
		}
	}
	ids, err := r.ix.IDs(ctx, "", "firstname", "Jon")
	if err != nil || len(ids) != 1 || ids[0] != (index.ID{PartitionKey: "Sales", RowKey: "000223"}) {
		t.Errorf("first name Jon = %v, %v", ids, err)
	}

	// Changing the email and the last name moves the entries.
	e := staff()[0]
	e.Email, e.LastName = "jon.jones@contoso.com", "Hall"
	before := r.acct.Meter().Snapshot()
	if _, err := r.ix.Upsert(ctx, e); err != nil {
		t.Fatal(err)
	}
	t.Logf("direct Put changing 2 indexed values: %v", r.acct.Meter().Snapshot().Sub(before))
	equal(t, "by old email", collect(t, r.ix.By(ctx, "Sales", "email", "jonesj@contoso.com")), nil)
	equal(t, "Jones after the move", collect(t, r.ix.By(ctx, "Sales", "lastname", "Jones")), []string{"000123", "000200"})
	equal(t, "Hall after the move", collect(t, r.ix.By(ctx, "Sales", "lastname", "Hall")), []string{"000152", "000223"})

	// Deleting removes every entry and the sync record.
	if existed, err := r.ix.DeleteIfExists(ctx, "Sales", "000152"); err != nil || !existed {
		t.Fatalf("DeleteIfExists = %v, %v", existed, err)
	}
	if existed, err := r.ix.DeleteIfExists(ctx, "Sales", "000152"); err != nil || existed {
		t.Errorf("DeleteIfExists of a missing employee = %v, %v; want false, nil", existed, err)
	}
	if err := r.ix.Delete(ctx, "Sales", "000152", azcore.ETagAny); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Delete of a missing employee: %v, want ErrNotFound", err)
	}
	stored := r.check(t, ctx)
	if len(stored) != len(staff())-1 {
		t.Errorf("%d employees left", len(stored))
	}
	if ok, err := r.ix.CaughtUp(ctx, "Sales", "000152"); err != nil || !ok {
		t.Errorf("deleted employee: CaughtUp = %v, %v", ok, err)
	}
	before = r.acct.Meter().Snapshot()
	if err := r.ix.Sync(ctx, "Sales", "000223"); err != nil {
		t.Fatal(err)
	}
	if cost := r.acct.Meter().Snapshot().Sub(before); cost.Total() != 2 {
		t.Errorf("Sync of an up-to-date entity cost %v, want 2", cost)
	}
}

func TestInterQueued(t *testing.T) {
	ctx := testCtx(t)
	r := newInterRig(t, true)
	before := r.acct.Meter().Snapshot()
	for _, e := range staff() {
		if _, err := r.ix.Upsert(ctx, e); err != nil {
			t.Fatalf("put %s: %v", e.ID, err)
		}
	}
	if cost := r.acct.Meter().Snapshot().Sub(before); cost.Total() != int64(4*len(staff())) {
		t.Errorf("%d queued Puts cost %v, want 4 each", len(staff()), cost)
	}
	// Nothing has run the maintenance yet.
	if ok, err := r.ix.CaughtUp(ctx, "Sales", "000223"); err != nil || ok {
		t.Errorf("CaughtUp before the worker ran = %v, %v", ok, err)
	}
	equal(t, "by email before the worker ran", collect(t, r.ix.By(ctx, "Sales", "email", "jonesj@contoso.com")), nil)

	stop := r.worker(t, r.acct, r.ix, nil)
	defer stop()
	r.drain(t, ctx)
	r.check(t, ctx)
	equal(t, "by email", collect(t, r.ix.By(ctx, "Sales", "email", "jonesj@contoso.com")), []string{"000223"})
	equal(t, "last name Jones", collect(t, r.ix.By(ctx, "Sales", "lastname", "Jones")),
		filterStaff("Sales", func(e Employee) bool { return e.LastName == "Jones" }, func(e Employee) string { return e.ID }))

	e := staff()[0]
	e.Email = "jon.jones@contoso.com"
	if _, err := r.ix.Upsert(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ix.DeleteIfExists(ctx, "Sales", "000152"); err != nil {
		t.Fatal(err)
	}
	r.drain(t, ctx)
	r.check(t, ctx)
	equal(t, "by old email", collect(t, r.ix.By(ctx, "Sales", "email", "jonesj@contoso.com")), nil)
	equal(t, "by new email", collect(t, r.ix.By(ctx, "Sales", "email", "jon.jones@contoso.com")), []string{"000223"})
}

// Option 3 under contention: 16 writers add 50 employees each, all named
// Jones; once the worker has drained the queue, the Jones index entity
// lists all 800.
func TestInterListContention(t *testing.T) {
	ctx := testCtx(t)
	// Delay 5 s: a write gives up after Delay (its safety net would be
	// visible), and 16 writers on a loaded CI machine took more than the
	// rig's 1 s now and then (1 run in 6 at a load average of 8; at 5 s,
	// 1 in 4 at a load average of 10, hence also the writers' retry).
	r := newInterRigWith(t, &interRig{queued: true, lastNameOnly: true, delay: 5 * time.Second})
	// Two workers, as two processes would run them: each one's handlers
	// take turns on the index entity, and the two meet its ETag condition.
	for range 2 {
		stop := r.worker(t, r.acct, r.build(t, r.acct), &archive.WorkerOptions{Concurrency: 8, PollInterval: 200 * time.Millisecond, VisibilityTimeout: 10 * time.Second, Retry: tablekit.RetryPolicy{MaxAttempts: 20}})
		defer stop()
	}
	const writers, each = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				n := w*each + i
				e := Employee{Department: "Sales", ID: fmt.Sprintf("%06d", n), FirstName: fmt.Sprintf("F%d", n%4), LastName: "Jones", Email: fmt.Sprintf("j%d@contoso.com", n)}
				// A write cut off by the Delay may still be applied: an
				// application sends the same Upsert again, as here.
				var err error
				for try := 0; try < 5; try++ {
					if _, err = r.ix.Upsert(ctx, e); err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
						break
					}
					t.Logf("writer %d: Upsert of %s cut off by the Delay, sent again: %v", w, e.ID, err)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	start := time.Now()
	wg.Wait()
	t.Logf("writers done in %v", time.Since(start))
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	r.drain(t, ctx)
	t.Logf("drained in %v", time.Since(start))
	t.Logf("cost: %v", r.acct.Meter().Snapshot())
	got, err := r.ix.IDs(ctx, "Sales", "lastname", "Jones")
	if err != nil {
		t.Fatal(err)
	}
	want := fmtIDs(writers*each, func(i int) string { return fmt.Sprintf("%06d", i) })
	equal(t, "Jones ids", ids(got), want)
	stored := r.check(t, ctx)
	if len(stored) != writers*each {
		t.Errorf("%d employees stored, want %d", len(stored), writers*each)
	}
}

// fault fails chosen requests without sending them.
type fault struct {
	match func(req *http.Request) bool
	every int64 // fail every n-th matching request
	limit int64 // at most this many failures
	n     atomic.Int64
	fails atomic.Int64
}

func (f *fault) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	if f.match(raw) && f.n.Add(1)%f.every == 0 && f.fails.Add(1) <= f.limit {
		return nil, fmt.Errorf("injected fault: %s %s", raw.Method, raw.URL.Path)
	}
	return req.Next()
}

func isWrite(req *http.Request) bool {
	return req.Method == http.MethodPut || req.Method == http.MethodPost || req.Method == "MERGE" || req.Method == http.MethodPatch || req.Method == http.MethodDelete
}

// A writer that dies between writing the entity and the maintenance
// request, or between the request and the write; a worker that dies in the
// middle of syncs; storage failing some index writes: once the queue has
// drained, no index entry points to a missing entity or an old value, and
// no entity misses an entry.
func TestInterCrashes(t *testing.T) {
	ctx := testCtx(t)
	r := newInterRig(t, true)
	// The writer's requests fail: every 3rd immediate PutMessage (the one
	// after the entity write: the writer "crashes" before it) and every
	// 4th entity write (after the safety-net message was sent).
	writerFault := &fault{every: 3, limit: 1000, match: func(req *http.Request) bool {
		return req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/messages") && !strings.Contains(req.URL.RawQuery, "visibilitytimeout")
	}}
	entityFault := &fault{every: 4, limit: 1000, match: func(req *http.Request) bool {
		return isWrite(req) && strings.Contains(req.URL.Path, "/"+r.employees+"(")
	}}
	writerAcct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{writerFault, entityFault}, Retry: policy.RetryOptions{MaxRetries: -1}}})
	writer := r.build(t, writerAcct)

	// The worker's index writes fail now and then.
	workerFault := &fault{every: 3, limit: 60, match: func(req *http.Request) bool {
		return isWrite(req) && (strings.Contains(req.URL.Path, "/"+r.copies) || strings.Contains(req.URL.Path, "/"+r.lists) || strings.Contains(req.URL.Path, "/"+r.container+"/"))
	}}
	workerAcct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{workerFault}, Retry: policy.RetryOptions{MaxRetries: -1}}})
	handler := r.build(t, workerAcct)

	// A first worker is killed (its handlers cancelled at once) while the
	// writers are busy.
	crashCtx, crash := context.WithCancel(context.Background())
	defer crash()
	w1, err := archive.OpenWorker(workerAcct, r.queue, handler, &archive.WorkerOptions{Concurrency: 8, VisibilityTimeout: 2 * time.Second, DrainTimeout: time.Millisecond, PollInterval: 50 * time.Millisecond, Retry: tablekit.RetryPolicy{MaxAttempts: 50}, PoisonQueue: r.poison, Container: r.poison})
	if err != nil {
		t.Fatal(err)
	}
	w1done := make(chan error, 1)
	go func() { w1done <- w1.Run(crashCtx) }()

	var failed atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for round := range 3 {
				for i := range 10 {
					n := w*10 + i
					e := Employee{Department: []string{"Sales", "Marketing"}[n%2], ID: fmt.Sprintf("%06d", n),
						FirstName: fmt.Sprintf("F%d", (n+round)%3), LastName: fmt.Sprintf("L%d", (n*round)%4), Email: fmt.Sprintf("e%d.%d@contoso.com", n, round)}
					var err error
					if round == 2 && i%3 == 0 {
						_, err = writer.DeleteIfExists(ctx, e.Department, e.ID)
					} else {
						_, err = writer.Upsert(ctx, e)
					}
					if err != nil {
						failed.Add(1)
					}
				}
				if w == 0 && round == 0 {
					crash()
				}
			}
		})
	}
	wg.Wait()
	if err := <-w1done; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d writes failed part-way; worker faults injected: %d", failed.Load(), min(workerFault.fails.Load(), workerFault.limit))
	if failed.Load() == 0 {
		t.Fatal("no write failed: the faults were not injected")
	}
	stop := r.worker(t, workerAcct, handler, &archive.WorkerOptions{Concurrency: 8, VisibilityTimeout: 2 * time.Second, PollInterval: 200 * time.Millisecond, Retry: tablekit.RetryPolicy{MaxAttempts: 50}})
	defer stop()
	r.drain(t, ctx)
	stored := r.check(t, ctx)
	t.Logf("%d employees stored after the crashes", len(stored))
}

func TestInterErrors(t *testing.T) {
	ctx := testCtx(t)
	r := newInterRig(t, false)
	e := staff()[0]
	e.Email = strings.Repeat("x", 1100) // over the key size limit
	if _, err := r.ix.Upsert(ctx, e); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("value over 1 KiB: %v, want ErrInvalidKey", err)
	}
	if _, err := r.employeeTable.Get(ctx, e.Department, e.ID); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("the refused entity was written: %v", err)
	}
	if _, err := r.ix.IDs(ctx, "Sales", "email", "x"); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("IDs of a copy index: %v", err)
	}
	if _, err := index.NewCrossPartition(r.employeeTable, []index.Index[Employee]{{Name: "a", Key: func(e Employee) string { return e.Email }}, {Name: "a", Key: func(e Employee) string { return e.Email }}}, nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("duplicate index names: %v", err)
	}
	// Entities may not live in the key range of an index kept in their table.
	same, err := index.NewCrossPartition(r.employeeTable, []index.Index[Employee]{{Name: "email", Key: func(e Employee) string { return e.Email }}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e = staff()[0]
	e.Department = "email!Sales"
	if _, err := same.Upsert(ctx, e); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("entity in the index's partition: %v, want ErrInvalidKey", err)
	}
}
