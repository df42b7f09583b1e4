package index_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// lateWrite delays the first request it matches in the network: the writer
// is told at once that the connection broke after the request was sent
// (the outcome is unknown to it), and the request reaches the service only
// when the test closes release. result then receives what the service
// answered.
type lateWrite struct {
	match   func(*http.Request) bool
	mu      sync.Mutex
	fired   bool
	release chan struct{}
	result  chan string
}

func newLateWrite(match func(*http.Request) bool) *lateWrite {
	return &lateWrite{match: match, release: make(chan struct{}), result: make(chan string, 1)}
}

var errConnectionLost = errors.New("injected: connection lost after the request was sent")

func (p *lateWrite) Do(req *policy.Request) (*http.Response, error) {
	p.mu.Lock()
	hit := !p.fired && p.match(req.Raw())
	p.fired = p.fired || hit
	p.mu.Unlock()
	if !hit {
		return req.Next()
	}
	var body []byte
	if req.Body() != nil {
		body, _ = io.ReadAll(req.Body())
	}
	late := req.Clone(context.Background())
	if err := late.SetBody(streaming.NopCloser(bytes.NewReader(body)), req.Raw().Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	go func() {
		<-p.release
		resp, err := late.Next()
		if err != nil {
			p.result <- "error: " + err.Error()
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		p.result <- resp.Status
	}()
	return nil, errConnectionLost
}

// entityWrite matches a write of the entity rk of table (an insert is a
// POST to the table itself).
func entityWrite(table, rk string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/"+table) {
			return true
		}
		return isWrite(r) && strings.Contains(r.URL.Path, "/"+table+"(") && strings.Contains(r.URL.Path, "RowKey='"+rk+"'")
	}
}

// lateWriter returns a CrossPartition like the rig's whose first write of rk is
// delayed in the network (see lateWrite); no SDK retries.
func (r *interRig) lateWriter(t *testing.T, rk string) (*index.CrossPartition[Employee], *lateWrite) {
	t.Helper()
	late := newLateWrite(entityWrite(r.employees, rk))
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{late}, Retry: policy.RetryOptions{MaxRetries: -1}}})
	return r.build(t, acct), late
}

// An update of an existing entity that reaches the service only after its
// safety-net request ran must not leave the indexes stale: the safety net
// either sees the new version or makes sure the late write can never be
// applied.
func TestInterUpdateLandingAfterSafetyNet(t *testing.T) {
	ctx := testCtx(t)
	r := newInterRigWith(t, &interRig{queued: true, lastNameOnly: true})
	stop := r.worker(t, r.acct, r.ix, nil)
	defer stop()
	e := staff()[0]
	if _, err := r.ix.Upsert(ctx, e); err != nil {
		t.Fatal(err)
	}
	r.drain(t, ctx)
	r.check(t, ctx)

	writer, late := r.lateWriter(t, e.ID)
	e.LastName = "Smith"
	if _, err := writer.Upsert(ctx, e); !errors.Is(err, errConnectionLost) {
		t.Fatalf("Put with its write delayed in the network: %v, want the lost connection", err)
	}
	r.drain(t, ctx) // the safety net has run
	close(late.release)
	t.Logf("the delayed write reached the service after the safety net ran: %s", <-late.result)
	r.drain(t, ctx)
	stored := r.check(t, ctx)
	t.Logf("stored: %+v", stored["Sales/"+e.ID])

	// A delete delayed the same way.
	writer, late = r.lateWriter(t, e.ID)
	if _, err := writer.DeleteIfExists(ctx, e.Department, e.ID); !errors.Is(err, errConnectionLost) {
		t.Fatalf("DeleteIfExists with its write delayed in the network: %v, want the lost connection", err)
	}
	r.drain(t, ctx)
	close(late.release)
	t.Logf("the delayed delete reached the service after the safety net ran: %s", <-late.result)
	r.drain(t, ctx)
	r.check(t, ctx)
}

// The safety net of an insert that never reaches the service stops
// looking for the entity after Delay + InsertHorizon: the queue drains.
func TestInterInsertNeverLanding(t *testing.T) {
	ctx := testCtx(t)
	r := newInterRigWith(t, &interRig{queued: true, lastNameOnly: true})
	stop := r.worker(t, r.acct, r.ix, nil)
	defer stop()
	e := staff()[0]
	writer, _ := r.lateWriter(t, e.ID) // never released
	if _, err := writer.Upsert(ctx, e); !errors.Is(err, errConnectionLost) {
		t.Fatalf("Put: %v, want the lost connection", err)
	}
	r.drain(t, ctx)
	if stored := r.check(t, ctx); len(stored) != 0 {
		t.Errorf("stored %v, want nothing", stored)
	}
}

// The same for the insert of a new entity, which no condition can fence:
// the safety net keeps looking for the entity, so an insert that lands
// late is still indexed.
func TestInterInsertLandingAfterSafetyNet(t *testing.T) {
	ctx := testCtx(t)
	r := newInterRigWith(t, &interRig{queued: true, lastNameOnly: true})
	handled := make(chan struct{}, 100)
	h := archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
		err := r.ix.Handle(ctx, m)
		handled <- struct{}{}
		return err
	})
	w, err := archive.OpenWorker(r.acct, r.queue, h, &archive.WorkerOptions{PollInterval: 200 * time.Millisecond, VisibilityTimeout: 5 * time.Second, PoisonQueue: r.poison, Container: r.poison})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	e := staff()[0]
	writer, late := r.lateWriter(t, e.ID)
	if _, err := writer.Upsert(ctx, e); !errors.Is(err, errConnectionLost) {
		t.Fatalf("Put with its insert delayed in the network: %v, want the lost connection", err)
	}
	select {
	case <-handled: // the safety net ran; the entity was not there yet
	case <-ctx.Done():
		t.Fatal("the safety net never ran")
	}
	close(late.release)
	t.Logf("the delayed insert reached the service after the safety net ran: %s", <-late.result)
	r.drain(t, ctx)
	stored := r.check(t, ctx)
	if _, ok := stored["Sales/"+e.ID]; !ok {
		t.Errorf("the late insert is not stored")
	}
}
