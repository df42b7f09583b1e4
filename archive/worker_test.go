package archive_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
)

// checkArchived asserts the end state of an archive run: every employee
// in Archive exactly once with its data, none in Current, the work queue
// and the poison queue empty.
func (r *rig) checkArchived(t *testing.T, emps []Employee) {
	t.Helper()
	if cur := all(t, r.current); len(cur) != 0 {
		t.Errorf("Current still holds %d employees, e.g. %s", len(cur), cur[0].ID)
	}
	arch := all(t, r.archive)
	seen := map[string]int{}
	for _, e := range arch {
		seen[e.Department+"/"+e.ID]++
	}
	for _, e := range emps {
		switch n := seen[e.Department+"/"+e.ID]; n {
		case 1:
		case 0:
			t.Errorf("employee %s/%s is not in Archive", e.Department, e.ID)
		default:
			t.Errorf("employee %s/%s is in Archive %d times", e.Department, e.ID, n)
		}
	}
	if len(arch) != len(emps) {
		t.Errorf("Archive holds %d entities, want %d", len(arch), len(emps))
	}
	for _, e := range arch {
		if e.Name != "Employee "+e.ID || e.Email != "e"+e.ID+"@contoso.com" {
			t.Errorf("archived %s has wrong data: %+v", e.ID, e)
		}
	}
	if n := approxCount(t, r.queue); n != 0 {
		t.Errorf("work queue holds %d messages, want 0", n)
	}
	if p := drainPoison(t, r.poison); len(p) != 0 {
		t.Errorf("poison queue holds %d messages, want 0: first %+v", len(p), p[0])
	}
}

func TestArchive200ThreeWorkers(t *testing.T) {
	r := newRig(t, nil)
	emps := employees(200)
	r.seed(t, emps)

	mux := new(archive.Mux)
	if err := archive.HandleFunc(mux, archive.MoveKind, r.mover.Handle); err != nil {
		t.Fatal(err)
	}
	var workers []*archive.Worker
	for range 3 {
		w, err := archive.OpenWorker(r.acct, queueName(r.queue), mux, r.workerOpts(t))
		if err != nil {
			t.Fatal(err)
		}
		workers = append(workers, w)
	}
	var stops []func() error
	for _, w := range workers {
		stops = append(stops, runWorker(t, w))
	}
	waitFor(t, 90*time.Second, "the queue to empty", func() bool { return approxCount(t, r.queue) == 0 })
	var total archive.Stats
	for i, stop := range stops {
		if err := stop(); err != nil {
			t.Errorf("worker %d: Run: %v", i, err)
		}
		s := workers[i].Stats()
		t.Logf("worker %d: %+v", i, s)
		total.Succeeded += s.Succeeded
		total.Poisoned += s.Poisoned
	}
	if total.Succeeded != 200 || total.Poisoned != 0 {
		t.Errorf("workers handled %d and poisoned %d messages, want 200 and 0", total.Succeeded, total.Poisoned)
	}
	r.checkArchived(t, emps)
}

// TestArchiveFaults injects a fault into each step of each of 200 moves
// in turn (a lost response after the Archive write, a failure before the
// Current delete, a failure before the message delete) and kills a worker
// while three of its handlers are between the Archive write and the
// Current delete; after a restart and drain everything is archived once
// and no message is lost or left over.
func TestArchiveFaults(t *testing.T) {
	faults := &faultPolicy{}
	r := newRig(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{faults}, Retry: policy.RetryOptions{MaxRetries: -1}}})
	emps := employees(200)
	ids := r.seed(t, emps)

	archiveName, currentName := r.archive.Name(), r.current.Name()
	upsert := []string{http.MethodPut, http.MethodPatch, "MERGE"}
	var hangs []*fault
	for i, e := range emps {
		switch {
		case i >= 100 && i < 103:
			// The worker dies after the Archive write, before the Current
			// delete.
			hangs = append(hangs, faults.add(&fault{name: "hang " + e.ID, mode: hangAfter, match: entityRequest(upsert, archiveName, e.ID)}))
		case i%3 == 0:
			faults.add(&fault{name: "after archive write " + e.ID, mode: failAfter, match: entityRequest(upsert, archiveName, e.ID)})
		case i%3 == 1:
			faults.add(&fault{name: "before current delete " + e.ID, mode: failBefore, match: entityRequest([]string{http.MethodDelete}, currentName, e.ID)})
		default:
			faults.add(&fault{name: "before message delete " + e.ID, mode: failBefore, match: messageDelete(ids[i])})
		}
	}

	mux := new(archive.Mux)
	if err := archive.HandleFunc(mux, archive.MoveKind, r.mover.Handle); err != nil {
		t.Fatal(err)
	}
	opts := r.workerOpts(t)
	opts.DrainTimeout = 200 * time.Millisecond
	first, err := archive.OpenWorker(r.acct, queueName(r.queue), mux, opts)
	if err != nil {
		t.Fatal(err)
	}
	stopFirst := runWorker(t, first)
	for _, h := range hangs {
		select {
		case <-h.reached:
		case <-time.After(90 * time.Second):
			t.Fatalf("%s never reached", h.name)
		}
	}
	// Kill the first worker mid-handler: its drain times out and the three
	// hung handlers are cancelled between their two table writes.
	if err := stopFirst(); err != nil {
		t.Fatal(err)
	}
	// Run returns at the drain deadline; the cancelled handlers settle
	// (without deleting their messages) just after.
	waitFor(t, 10*time.Second, "the 3 hung handlers to be abandoned", func() bool { return first.Stats().Abandoned >= 3 })
	t.Logf("first worker: %+v", first.Stats())

	// Restart: two fresh workers drain the queue.
	opts.DrainTimeout = 5 * time.Second
	var stops []func() error
	var restarted []*archive.Worker
	for range 2 {
		w, err := archive.OpenWorker(r.acct, queueName(r.queue), mux, opts)
		if err != nil {
			t.Fatal(err)
		}
		restarted = append(restarted, w)
		stops = append(stops, runWorker(t, w))
	}
	waitFor(t, 90*time.Second, "the queue to empty", func() bool { return approxCount(t, r.queue) == 0 })
	for i, stop := range stops {
		if err := stop(); err != nil {
			t.Error(err)
		}
		t.Logf("restarted worker %d: %+v", i, restarted[i].Stats())
	}
	if left := faults.unfired(); len(left) > 0 {
		t.Errorf("%d faults never fired, e.g. %q", len(left), left[0])
	}
	r.checkArchived(t, emps)
}

func TestAlwaysFailingHandlerIsPoisoned(t *testing.T) {
	r := newRig(t, nil)
	ids := r.seed(t, employees(3))
	var mu sync.Mutex
	attempts := map[string][]int64{}
	h := archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
		mu.Lock()
		attempts[m.ID] = append(attempts[m.ID], m.DequeueCount)
		mu.Unlock()
		if m.DequeueCount > 1 && m.LastError == "" {
			return fmt.Errorf("attempt %d: the previous attempt's error was not recorded", m.DequeueCount)
		}
		return fmt.Errorf("boom on attempt %d", m.DequeueCount)
	})
	opts := r.workerOpts(t)
	opts.Retry.MaxAttempts = 0 // the default, 5
	w, err := archive.OpenWorker(r.acct, queueName(r.queue), h, opts)
	if err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, w)
	waitFor(t, 60*time.Second, "three poisoned messages", func() bool { return w.Stats().Poisoned == 3 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := approxCount(t, r.queue); n != 0 {
		t.Errorf("work queue holds %d messages, want 0", n)
	}
	for _, id := range ids {
		if got := attempts[id]; fmt.Sprint(got) != "[1 2 3 4 5]" {
			t.Errorf("message %s: handler saw dequeue counts %v, want [1 2 3 4 5]", id, got)
		}
	}
	poisoned := drainPoison(t, r.poison)
	if len(poisoned) != 3 {
		t.Fatalf("poison queue holds %d messages, want 3", len(poisoned))
	}
	for _, p := range poisoned {
		if p.Error != "boom on attempt 5" || p.DequeueCount != 5 || p.Kind != archive.MoveKind {
			t.Errorf("poison record %+v (kind %q): want error %q after 5 dequeues", p, p.Kind, "boom on attempt 5")
		}
		if _, ok := attempts[p.MessageID]; !ok || p.Queue != queueName(r.queue) {
			t.Errorf("poison record names message %s of queue %s, not one of ours", p.MessageID, p.Queue)
		}
		var req archive.MoveRequest
		if err := json.Unmarshal(p.Payload, &req); err != nil || req.RowKey == "" {
			t.Errorf("poison record lost the payload: %s (%v)", p.Payload, err)
		}
	}
	if s := w.Stats(); s.Failed != 15 || s.Succeeded != 0 {
		t.Errorf("stats %+v: want 15 failures, 0 successes", s)
	}
}

func TestPermanentErrorAndUnknownKindArePoisonedAtOnce(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	if _, err := r.client.Enqueue(ctx, "no-such-kind", map[string]int{"x": 1}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.queue.EnqueueMessage(ctx, "plain text, not an envelope", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.client.Enqueue(ctx, "bad-payload", `"a string, not an object"`, nil); err != nil {
		t.Fatal(err)
	}
	mux := new(archive.Mux)
	calls := atomic.Int32{}
	if err := archive.HandleFunc(mux, "bad-payload", func(ctx context.Context, p struct{ X int }) error {
		calls.Add(1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := archive.HandleFunc(mux, "bad-payload", func(ctx context.Context, p struct{}) error { return nil }); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("registering a kind twice: %v, want ErrInvalidInput", err)
	}
	w, err := archive.OpenWorker(r.acct, queueName(r.queue), mux, r.workerOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, w)
	waitFor(t, 30*time.Second, "three poisoned messages", func() bool { return w.Stats().Poisoned == 3 })
	stop()
	if calls.Load() != 0 {
		t.Errorf("typed handler called %d times with an undecodable payload", calls.Load())
	}
	if s := w.Stats(); s.Received != 3 {
		t.Errorf("stats %+v: want each message dequeued once", s)
	}
	poisoned := drainPoison(t, r.poison)
	texts := 0
	for _, p := range poisoned {
		if p.DequeueCount != 1 {
			t.Errorf("%+v: poisoned after %d dequeues, want 1", p, p.DequeueCount)
		}
		if p.Text == "plain text, not an envelope" {
			texts++
		}
	}
	if texts != 1 {
		t.Errorf("the foreign message's text was not kept in its poison record: %+v", poisoned)
	}
}

// TestPoisonAfterCrash: a message whose last worker died on its final
// attempt is found with a dequeue count over the maximum and is poisoned
// with the error recorded in it by an earlier attempt.
func TestPoisonAfterCrash(t *testing.T) {
	r := newRig(t, nil)
	r.seed(t, employees(1))
	// Attempt 1 fails and records its error in the message; on attempt 2
	// the worker "dies": the handler hangs and the worker is stopped with
	// a short drain, so the message is never settled.
	crashed := make(chan struct{})
	h := archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
		if m.DequeueCount == 1 {
			return errors.New("disk on fire")
		}
		close(crashed)
		<-ctx.Done()
		return ctx.Err()
	})
	opts := r.workerOpts(t)
	opts.Retry.MaxAttempts = 2
	opts.DrainTimeout = 10 * time.Millisecond
	w, err := archive.OpenWorker(r.acct, queueName(r.queue), h, opts)
	if err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, w)
	select {
	case <-crashed:
	case <-time.After(30 * time.Second):
		t.Fatal("attempt 2 never started")
	}
	stop()
	// The crashed attempt's visibility lapses; the next worker sees
	// dequeue count 3 > 2 and poisons without calling its handler.
	called := atomic.Int32{}
	w2, err := archive.OpenWorker(r.acct, queueName(r.queue), archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
		called.Add(1)
		return nil
	}), opts)
	if err != nil {
		t.Fatal(err)
	}
	stop2 := runWorker(t, w2)
	waitFor(t, 30*time.Second, "the poisoned message", func() bool { return w2.Stats().Poisoned == 1 })
	stop2()
	if called.Load() != 0 {
		t.Errorf("handler ran %d times on a message over Retry.MaxAttempts", called.Load())
	}
	poisoned := drainPoison(t, r.poison)
	if len(poisoned) != 1 {
		t.Fatalf("poison queue holds %d messages, want 1", len(poisoned))
	}
	rec := poisoned[0]
	if rec.DequeueCount != 3 || !strings.Contains(rec.Error, "more than Retry.MaxAttempts 2") || !strings.Contains(rec.Error, "disk on fire") {
		t.Errorf("poison record %+v: want dequeue count 3 and the recorded error", rec)
	}
	if n := approxCount(t, r.queue); n != 0 {
		t.Errorf("work queue holds %d messages, want 0", n)
	}
}

// TestPoisonRaceManyWorkers: three workers with short leases race over
// always-failing messages; each message ends in the poison queue exactly
// once.
func TestPoisonRaceManyWorkers(t *testing.T) {
	r := newRig(t, nil)
	ids := r.seed(t, employees(20))
	fails := archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error { return errors.New("nope") })
	var stops []func() error
	for range 3 {
		opts := r.workerOpts(t)
		opts.Retry.MaxAttempts = 2
		w, err := archive.OpenWorker(r.acct, queueName(r.queue), fails, opts)
		if err != nil {
			t.Fatal(err)
		}
		stops = append(stops, runWorker(t, w))
	}
	waitFor(t, 60*time.Second, "the queue to empty", func() bool { return approxCount(t, r.queue) == 0 })
	for _, s := range stops {
		s()
	}
	poisoned := drainPoison(t, r.poison)
	count := map[string]int{}
	for _, p := range poisoned {
		count[p.MessageID]++
	}
	for _, id := range ids {
		if count[id] != 1 {
			t.Errorf("message %s is in the poison queue %d times, want 1", id, count[id])
		}
	}
	if len(poisoned) != len(ids) {
		t.Errorf("poison queue holds %d records, want %d", len(poisoned), len(ids))
	}
}

func TestClaimCheck200KiB(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	raw := make([]byte, 150*1024)
	rand.Read(raw)
	type big struct{ Data string }
	payload := big{Data: base64.StdEncoding.EncodeToString(raw)} // 200 KiB of text
	if len(payload.Data) != 200*1024 {
		t.Fatalf("payload is %d bytes", len(payload.Data))
	}
	if _, err := r.client.Enqueue(ctx, "big", payload, nil); err != nil {
		t.Fatal(err)
	}
	if blobs := listBlobs(t, r); len(blobs) != 1 {
		t.Fatalf("claim-check container holds %v, want one blob", blobs)
	}
	mux := new(archive.Mux)
	var got big
	var blob string
	if err := mux.Register("big", archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
		blob = m.Blob
		return m.Decode(&got)
	})); err != nil {
		t.Fatal(err)
	}
	w, err := archive.OpenWorker(r.acct, queueName(r.queue), mux, r.workerOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, w)
	waitFor(t, 30*time.Second, "the message", func() bool { return w.Stats().Succeeded == 1 })
	stop()
	if got.Data != payload.Data {
		t.Errorf("payload differs after the claim check: %d bytes, want %d", len(got.Data), len(payload.Data))
	}
	if blob == "" {
		t.Error("Message.Blob is empty for a claim-checked message")
	}
	if blobs := listBlobs(t, r); len(blobs) != 0 {
		t.Errorf("claim-check blobs left after success: %v", blobs)
	}
	if n := approxCount(t, r.queue); n != 0 {
		t.Errorf("work queue holds %d messages", n)
	}

	// A claim-checked message that fails for good keeps its blob: the
	// poison record refers to it. Requeued, it succeeds and the blob goes.
	if _, err := r.client.Enqueue(ctx, "big-bad", payload, nil); err != nil {
		t.Fatal(err)
	}
	if err := archive.HandleFunc(mux, "big-bad", func(ctx context.Context, p big) error {
		return archive.Permanent(errors.New("cannot handle big-bad"))
	}); err != nil {
		t.Fatal(err)
	}
	w2, err := archive.OpenWorker(r.acct, queueName(r.queue), mux, r.workerOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	stop = runWorker(t, w2)
	waitFor(t, 30*time.Second, "the poisoned message", func() bool { return w2.Stats().Poisoned == 1 })
	stop()
	poisoned := drainPoison(t, r.poison)
	if len(poisoned) != 1 || poisoned[0].Blob == "" || poisoned[0].Kind != "big-bad" {
		t.Fatalf("poison records %+v: want one big-bad with its blob", poisoned)
	}
	if blobs := listBlobs(t, r); len(blobs) != 1 || blobs[0] != poisoned[0].Blob {
		t.Fatalf("blobs %v: want the poisoned message's %s", blobs, poisoned[0].Blob)
	}
	poisoned[0].Kind = "big" // "fixed": route it to the working handler
	if _, err := r.client.Requeue(ctx, poisoned[0], nil); err != nil {
		t.Fatal(err)
	}
	got = big{}
	w3, err := archive.OpenWorker(r.acct, queueName(r.queue), mux, r.workerOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	stop = runWorker(t, w3)
	waitFor(t, 30*time.Second, "the requeued message", func() bool { return w3.Stats().Succeeded == 1 })
	stop()
	if got.Data != payload.Data {
		t.Error("requeued payload differs")
	}
	if blobs := listBlobs(t, r); len(blobs) != 0 {
		t.Errorf("claim-check blobs left after the requeued message succeeded: %v", blobs)
	}

	// Without a container the Client refuses the payload.
	c, err := archive.NewClient(r.queue, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, "big", payload, nil); !errors.Is(err, tablekit.ErrTooLarge) {
		t.Errorf("oversized payload without a container: %v, want ErrTooLarge", err)
	}
}

func listBlobs(t *testing.T, r *rig) []string {
	t.Helper()
	var names []string
	pager := r.claims.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			names = append(names, *b.Name)
		}
	}
	return names
}

// TestGracefulShutdown cancels Run with 10 handlers in flight: it returns
// once they finished, and they were all deleted.
func TestGracefulShutdown(t *testing.T) {
	r := newRig(t, nil)
	ids := r.seed(t, employees(10))
	started := make(chan string, 10)
	release := make(chan struct{})
	var done sync.Map
	h := archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
		started <- m.ID
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		done.Store(m.ID, true)
		return nil
	})
	opts := r.workerOpts(t)
	opts.Concurrency = 10
	opts.DrainTimeout = 30 * time.Second
	w, err := archive.OpenWorker(r.acct, queueName(r.queue), h, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- w.Run(ctx) }()
	for range 10 {
		<-started
	}
	cancel()
	select {
	case err := <-res:
		t.Fatalf("Run returned (%v) while 10 handlers were still running", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-res:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(opts.DrainTimeout + 10*time.Second):
		t.Fatal("Run did not return after its handlers finished")
	}
	for _, id := range ids {
		if _, ok := done.Load(id); !ok {
			t.Errorf("message %s was not handled", id)
		}
	}
	if s := w.Stats(); s.Succeeded != 10 {
		t.Errorf("stats %+v: want 10 deleted", s)
	}
	if n := approxCount(t, r.queue); n != 0 {
		t.Errorf("work queue holds %d messages, want 0", n)
	}
}

// TestDrainTimeout cancels Run with 10 handlers that do not finish: Run
// returns after DrainTimeout, and the messages are handled later by
// another worker; none is lost.
func TestDrainTimeout(t *testing.T) {
	r := newRig(t, nil)
	ids := r.seed(t, employees(10))
	started := make(chan struct{}, 10)
	stuck := archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	})
	opts := r.workerOpts(t)
	opts.Concurrency = 10
	opts.DrainTimeout = 300 * time.Millisecond
	w, err := archive.OpenWorker(r.acct, queueName(r.queue), stuck, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- w.Run(ctx) }()
	for range 10 {
		<-started
	}
	t0 := time.Now()
	cancel()
	select {
	case err := <-res:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Run returned %v after cancellation (DrainTimeout %v)", time.Since(t0), opts.DrainTimeout)
	case <-time.After(opts.DrainTimeout + 10*time.Second):
		t.Fatal("Run did not return after DrainTimeout")
	}
	waitFor(t, 10*time.Second, "abandoned handlers to settle", func() bool { return w.Stats().Abandoned == 10 })

	var handled sync.Map
	ok := archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
		handled.Store(m.ID, true)
		return nil
	})
	opts.DrainTimeout = 5 * time.Second
	w2, err := archive.OpenWorker(r.acct, queueName(r.queue), ok, opts)
	if err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, w2)
	waitFor(t, 30*time.Second, "the abandoned messages", func() bool { return w2.Stats().Succeeded == 10 })
	stop()
	for _, id := range ids {
		if _, ok := handled.Load(id); !ok {
			t.Errorf("message %s was lost", id)
		}
	}
	if n := approxCount(t, r.queue); n != 0 {
		t.Errorf("work queue holds %d messages, want 0", n)
	}
}

// TestVisibilityRenewal: a handler that runs for several visibility
// timeouts keeps its message hidden from a second worker.
func TestVisibilityRenewal(t *testing.T) {
	r := newRig(t, nil)
	r.seed(t, employees(1))
	var calls atomic.Int32
	slow := archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
		calls.Add(1)
		select {
		case <-time.After(3 * time.Second): // three visibility timeouts
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	})
	var workers []*archive.Worker
	var stops []func() error
	for range 2 {
		w, err := archive.OpenWorker(r.acct, queueName(r.queue), slow, r.workerOpts(t))
		if err != nil {
			t.Fatal(err)
		}
		workers = append(workers, w)
		stops = append(stops, runWorker(t, w))
	}
	waitFor(t, 30*time.Second, "the message", func() bool {
		return workers[0].Stats().Succeeded+workers[1].Stats().Succeeded == 1
	})
	for _, s := range stops {
		s()
	}
	if calls.Load() != 1 {
		t.Errorf("handler called %d times, want 1: the renewal did not keep the message hidden", calls.Load())
	}
	if n := workers[0].Stats().Renewed + workers[1].Stats().Renewed; n < 2 {
		t.Errorf("%d renewals, want at least 2", n)
	}
	if n := approxCount(t, r.queue); n != 0 {
		t.Errorf("work queue holds %d messages, want 0", n)
	}
}

func TestMoverWithBlobCopy(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	emps := employees(2)
	if _, err := r.current.BulkWriter(nil).Upsert(ctx, emps); err != nil {
		t.Fatal(err)
	}
	m := &archive.Mover[Employee]{Current: r.current, Archive: r.archive, Blobs: r.claims}
	for range 2 { // the second round is a redelivery: a no-op
		for _, e := range emps {
			if err := m.Move(ctx, e.Department, e.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	data, err := getBlob(ctx, r.claims, emps[1].Department+"/"+emps[1].ID+".json")
	if err != nil {
		t.Fatal(err)
	}
	var got Employee
	if err := json.Unmarshal(data, &got); err != nil || got.Email != emps[1].Email {
		t.Errorf("blob copy %s: %v", data, err)
	}
	// A concurrent update of Current between the read and the delete is
	// not lost: the stale delete fails and the retry archives the update.
	e := Employee{Department: "Sales", ID: "race", Name: "v1"}
	if _, err := r.current.Insert(ctx, e); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	m.Transform = func(v Employee) (Employee, error) {
		once.Do(func() {
			e.Name = "v2"
			if _, err := r.current.Upsert(ctx, e); err != nil {
				t.Error(err)
			}
		})
		return v, nil
	}
	if err := m.Move(ctx, "Sales", "race"); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Fatalf("move over a concurrent update: %v, want ErrPreconditionFailed", err)
	}
	if err := m.Move(ctx, "Sales", "race"); err != nil {
		t.Fatal(err)
	}
	if got, err := r.archive.Get(ctx, "Sales", "race"); err != nil || got.Name != "v2" {
		t.Errorf("archived %+v, %v; want the updated v2", got, err)
	}
	if _, err := r.current.Get(ctx, "Sales", "race"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Current still has the entity: %v", err)
	}
}

// The blob steps are idempotent: an upsert twice, a delete twice (the
// second reports that nothing was there).
func TestBlobSteps(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	var etags []azcore.ETag
	for range 2 {
		etag, err := archive.UpsertBlob(ctx, r.claims, "x/y", []byte("hello"))
		if err != nil || etag == "" {
			t.Fatalf("UpsertBlob: %q, %v", etag, err)
		}
		etags = append(etags, etag)
	}
	if etags[0] == etags[1] {
		t.Errorf("UpsertBlob returned the same ETag twice: %q", etags[0])
	}
	if data, err := getBlob(ctx, r.claims, "x/y"); err != nil || string(data) != "hello" {
		t.Errorf("GetBlob: %q, %v", data, err)
	}
	for i, want := range []bool{true, false} {
		existed, err := archive.DeleteBlobIfExists(ctx, r.claims, "x/y")
		if err != nil || existed != want {
			t.Fatalf("DeleteBlobIfExists #%d: existed %v, %v; want %v", i+1, existed, err, want)
		}
	}
	if _, err := getBlob(ctx, r.claims, "x/y"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("GetBlob of a deleted blob: %v, want ErrNotFound", err)
	}
}

func TestRunMissingQueue(t *testing.T) {
	r := newRig(t, nil)
	w, err := archive.OpenWorker(r.acct, "no-such-queue-here", new(archive.Mux), r.workerOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(context.Background()); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Run on a missing queue: %v, want ErrNotFound", err)
	}
}

// TestClockAndQueueAge: the worker tells time by its clock (a clock an
// hour ahead here, set with SetClock): poison records are stamped with it, and the
// queue age of a message is that clock minus its insertion time. A failed
// attempt waits Retry's back-off before the next (1 s).
func TestClockAndQueueAge(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	const ahead = time.Hour
	opts := r.workerOpts(t)
	opts.Retry = tablekit.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Second} // randomised up to 1 s; the queue rounds it up to 1 s
	var attempts []time.Time
	var mu sync.Mutex
	h := archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
		mu.Lock()
		attempts = append(attempts, time.Now())
		mu.Unlock()
		return errors.New("always fails")
	})
	w, err := archive.OpenWorker(r.acct, queueName(r.queue), h, opts)
	if err != nil {
		t.Fatal(err)
	}
	archive.SetClock(w, func() time.Time { return time.Now().Add(ahead) })
	start := time.Now()
	if _, err := r.client.Enqueue(ctx, "k", 1, nil); err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, w)
	waitFor(t, 30*time.Second, "the poisoned message", func() bool { return w.Stats().Poisoned == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	s := w.Stats()
	t.Logf("stats %+v", s)
	// The queue stamps whole seconds; allow for them and for the test's
	// own time.
	if s.MaxQueueAge < ahead-2*time.Second || s.MaxQueueAge > ahead+time.Since(start)+2*time.Second {
		t.Errorf("MaxQueueAge %v, want about %v", s.MaxQueueAge, ahead)
	}
	if s.Received != 2 || s.Failed != 2 || s.Throttled != 0 || s.Concurrency != 4 {
		t.Errorf("stats %+v: want 2 received, 2 failed, none throttled, concurrency 4", s)
	}
	if len(attempts) == 2 && attempts[1].Sub(attempts[0]) < 900*time.Millisecond {
		t.Errorf("second attempt %v after the first, want the 1 s back-off", attempts[1].Sub(attempts[0]))
	}
	p := drainPoison(t, r.poison)
	if len(p) != 1 {
		t.Fatalf("%d poison records, want 1", len(p))
	}
	if at := p[0].PoisonedAt; at.Before(start.Add(ahead)) || at.After(time.Now().Add(ahead)) {
		t.Errorf("PoisonedAt %v, want the worker's clock (%v ahead)", at, ahead)
	}
}
