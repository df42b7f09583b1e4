package archive_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/internal/wire"
)

// TestMain runs the tests, or, when the environment asks for it, runs
// this test binary as a worker process of TestChaosArchiveProcesses.
func TestMain(m *testing.M) {
	if cfg := os.Getenv(chaosWorkerEnv); cfg != "" {
		os.Exit(chaosWorkerProcess(cfg))
	}
	testenv.Main(m)
}

// Employee is the guide's entity.
type Employee struct {
	Department string      `table:",pk"`
	ID         string      `table:",rk"`
	Name       string      `table:"Name"`
	Email      string      `table:"Email"`
	ETag       azcore.ETag `table:",etag"`
}

// rig is what a storage test of the worker needs: an account, a work
// queue with its poison queue, a claim-check container and the Current
// and Archive tables.
type rig struct {
	acct             *tablekit.Account
	queue, poison    *azqueue.QueueClient
	claims           *container.Client
	current, archive *tablekit.Table[Employee]
	client           *archive.Client
	mover            *archive.Mover[Employee]
}

func newRig(t *testing.T, opts *tablekit.Options) *rig {
	t.Helper()
	var o tablekit.Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	acct := testenv.Account(t, &o)
	r := &rig{acct: acct, queue: testenv.NewQueue(t, acct), claims: testenv.NewContainer(t, acct)}
	// Not PoisonQueueName: the test's queue name may be too long for the
	// suffix. Created on demand by the worker.
	r.poison = acct.Queues().NewQueueClient(testenv.QueueName(t))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r.poison.Delete(ctx, nil) // created on demand; absent is fine
	})
	r.current = newTable(t, acct)
	r.archive = newTable(t, acct)
	var err error
	if r.client, err = archive.NewClient(r.queue, r.claims, nil); err != nil {
		t.Fatal(err)
	}
	r.mover = &archive.Mover[Employee]{Current: r.current, Archive: r.archive}
	return r
}

// newTable creates a named table for t (so Name() is set) and deletes it
// when t ends.
func newTable(t *testing.T, acct *tablekit.Account) *tablekit.Table[Employee] {
	t.Helper()
	tbl, err := tablekit.OpenTable[Employee](acct, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := tbl.DeleteTable(ctx); err != nil && !errors.Is(err, tablekit.ErrNotFound) {
			t.Errorf("delete table %s: %v", tbl.Name(), err)
		}
	})
	return tbl
}

// getBlob reads the whole blob name from c (tablekit.ErrNotFound when it
// is missing).
func getBlob(ctx context.Context, c *container.Client, name string) ([]byte, error) {
	resp, err := c.NewBlobClient(name).DownloadStream(ctx, nil)
	if err != nil {
		if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
			return nil, fmt.Errorf("blob %s: %w", name, tablekit.ErrNotFound)
		}
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// queueName returns the name of a queue or container client.
func queueName(q interface{ URL() string }) string {
	u := strings.TrimRight(q.URL(), "/")
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i]
	}
	return u[strings.LastIndexByte(u, '/')+1:]
}

// workerOpts are fast settings for tests: 1 s visibility, quick polling.
func (r *rig) workerOpts(t *testing.T) *archive.WorkerOptions {
	return &archive.WorkerOptions{
		Concurrency:       4,
		VisibilityTimeout: time.Second,
		PoisonQueue:       queueName(r.poison),
		Container:         queueName(r.claims),
		PollInterval:      200 * time.Millisecond,
		DrainTimeout:      5 * time.Second,
	}
}

// testLogger logs to the test log when -v and ARCHIVE_LOG is set, else
// nowhere.
func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("ARCHIVE_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func employees(n int) []Employee {
	depts := []string{"Sales", "Marketing", "Engineering", "Finance"}
	out := make([]Employee, n)
	for i := range out {
		id := fmt.Sprintf("%06d", i)
		out[i] = Employee{Department: depts[i%len(depts)], ID: id, Name: "Employee " + id, Email: "e" + id + "@contoso.com"}
	}
	return out
}

// seed stores emps in Current and enqueues one move request each,
// returning the message IDs in the order of emps.
func (r *rig) seed(t *testing.T, emps []Employee) []string {
	t.Helper()
	ctx := context.Background()
	if _, err := r.current.BulkWriter(nil).Upsert(ctx, emps); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(emps))
	var wg sync.WaitGroup
	errs := make(chan error, len(emps))
	sem := make(chan struct{}, 8)
	for i, e := range emps {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			id, err := r.client.Enqueue(ctx, archive.MoveKind, archive.MoveRequest{PartitionKey: e.Department, RowKey: e.ID}, nil)
			ids[i] = id
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// approxCount returns the queue's approximate message count (visible and
// hidden), 0 for a queue that does not exist.
func approxCount(t *testing.T, q *azqueue.QueueClient) int {
	t.Helper()
	resp, err := q.GetProperties(context.Background(), nil)
	if errors.Is(wire.Wrap("", "", "", "", err), tablekit.ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return int(*resp.ApproximateMessagesCount)
}

// waitFor polls cond until it is true; it fails the test if that takes
// longer than limit (a hang guard, not a timing assertion).
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %v", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runWorker runs w until the returned stop function is called; stop
// returns Run's error.
func runWorker(t *testing.T, w *archive.Worker) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- w.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-res:
			case <-time.After(time.Minute):
				t.Fatal("Run did not return within a minute of cancellation")
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// all reads every entity of a table.
func all(t *testing.T, tbl *tablekit.Table[Employee]) []Employee {
	t.Helper()
	var out []Employee
	for e, err := range tbl.Query(context.Background(), tablekit.Filter{}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// drainPoison reads (and deletes) every message of the poison queue.
func drainPoison(t *testing.T, q *azqueue.QueueClient) []archive.Poisoned {
	t.Helper()
	var out []archive.Poisoned
	for {
		resp, err := q.DequeueMessages(context.Background(), &azqueue.DequeueMessagesOptions{NumberOfMessages: to32(32)})
		if errors.Is(wire.Wrap("", "", "", "", err), tablekit.ErrNotFound) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Messages) == 0 {
			return out
		}
		for _, m := range resp.Messages {
			p, err := archive.ParsePoison(*m.MessageText)
			if err != nil {
				t.Fatalf("poison message %s: %v", *m.MessageID, err)
			}
			out = append(out, p)
			if _, err := q.DeleteMessage(context.Background(), *m.MessageID, *m.PopReceipt, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func to32(n int) *int32 { v := int32(n); return &v }

// faultPolicy is an azcore per-retry policy that fails chosen requests,
// either before sending them or after the service has applied them (a
// lost response), or blocks them until their context ends (a process
// dying mid-request).
type faultPolicy struct {
	mu    sync.Mutex
	rules []*fault
}

type faultMode int

const (
	failBefore faultMode = iota // fail without sending
	failAfter                   // send, then report a failure
	hangAfter                   // send, then block until the request's context ends
	serverBusy                  // answer 503 ServerBusy without sending, as Azure does when throttling
)

type fault struct {
	name    string
	mode    faultMode
	match   func(r *http.Request) bool
	times   int           // how many requests to fail
	fired   int           // how many were failed
	reached chan struct{} // hangAfter: closed when first reached
}

var errInjected = errors.New("injected fault")

func (p *faultPolicy) add(f *fault) *fault {
	if f.times == 0 {
		f.times = 1
	}
	if f.mode == hangAfter {
		f.reached = make(chan struct{})
	}
	p.mu.Lock()
	p.rules = append(p.rules, f)
	p.mu.Unlock()
	return f
}

func (p *faultPolicy) Do(req *policy.Request) (*http.Response, error) {
	r := req.Raw()
	var hit *fault
	p.mu.Lock()
	for _, f := range p.rules {
		if f.fired < f.times && f.match(r) {
			f.fired++
			hit = f
			if f.mode == hangAfter && f.fired == 1 {
				close(f.reached)
			}
			break
		}
	}
	p.mu.Unlock()
	if hit == nil {
		return req.Next()
	}
	switch hit.mode {
	case serverBusy:
		const body = "\ufeff<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>ServerBusy</Code><Message>The server is busy.\nRequestId:00000000-0000-0000-0000-000000000000\nTime:2025-01-01T00:00:00.0000000Z</Message></Error>"
		h := http.Header{}
		h.Set("Content-Type", "application/xml")
		h.Set("x-ms-error-code", "ServerBusy")
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 The server is busy.", Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
	case failBefore:
		return nil, fmt.Errorf("%w: %s", errInjected, hit.name)
	case failAfter:
		resp, err := req.Next()
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return nil, fmt.Errorf("%w: %s", errInjected, hit.name)
	default: // hangAfter
		resp, err := req.Next()
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
}

func (p *faultPolicy) unfired() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, f := range p.rules {
		if f.fired < f.times {
			out = append(out, f.name)
		}
	}
	return out
}

// entityRequest matches a request for one entity of a table.
func entityRequest(methods []string, table, rk string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		ok := false
		for _, m := range methods {
			ok = ok || r.Method == m
		}
		return ok && strings.Contains(r.URL.Path, "/"+table+"(") && strings.Contains(r.URL.Path, "RowKey='"+rk+"'")
	}
}

// messageDelete matches the delete of one queue message.
func messageDelete(id string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/messages/"+id)
	}
}
