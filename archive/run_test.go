package archive_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// queueCheck matches Run's first request: the queue's properties.
func queueCheck(queue string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/"+queue) && r.URL.Query().Get("comp") == "metadata"
	}
}

// Transient failures of Run's first queue check (a request that never
// left, an answer lost after the service handled it, a 503 ServerBusy; no
// SDK retries, so each reaches the worker) do not end Run: it checks again
// with back-off, starts, and handles the queue's messages until its
// context ends.
func TestRunSurvivesTransientStartFailures(t *testing.T) {
	faults := &faultPolicy{}
	r := newRig(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{faults}, Retry: policy.RetryOptions{MaxRetries: -1}}})
	check := queueCheck(queueName(r.queue))
	faults.add(&fault{name: "check: request lost", mode: failBefore, match: check})
	faults.add(&fault{name: "check: answer lost", mode: failAfter, match: check})
	faults.add(&fault{name: "check: server busy", mode: serverBusy, match: check})
	r.seed(t, employees(1))
	handled := make(chan string, 1)
	h := archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
		handled <- m.ID
		return nil
	})
	w, err := archive.OpenWorker(r.acct, queueName(r.queue), h, r.workerOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make(chan error, 1)
	go func() { res <- w.Run(ctx) }()
	select {
	case err := <-res:
		t.Fatalf("Run returned %v after a transient failure of its first queue check; faults not yet fired: %v", err, faults.unfired())
	case <-handled:
	case <-time.After(time.Minute):
		t.Fatal("the message was not handled within a minute")
	}
	if left := faults.unfired(); len(left) > 0 {
		t.Errorf("faults never fired: %v", left)
	}
	cancel()
	select {
	case err := <-res:
		if err != nil {
			t.Errorf("Run after cancellation: %v, want nil", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of cancellation")
	}
}

// Cancelling Run while its first queue check keeps failing returns nil.
func TestRunCancelledWhileStartFails(t *testing.T) {
	faults := &faultPolicy{}
	r := newRig(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{faults}, Retry: policy.RetryOptions{MaxRetries: -1}}})
	f := faults.add(&fault{name: "check: server busy", mode: serverBusy, match: queueCheck(queueName(r.queue)), times: 1 << 30})
	w, err := archive.OpenWorker(r.acct, queueName(r.queue), new(archive.Mux), r.workerOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- w.Run(ctx) }()
	fired := func() int {
		faults.mu.Lock()
		defer faults.mu.Unlock()
		return f.fired
	}
	deadline := time.After(time.Minute)
	for fired() < 3 {
		select {
		case err := <-res:
			t.Fatalf("Run returned %v after %d failed queue checks, before its context ended", err, fired())
		case <-deadline:
			t.Fatal("gave up waiting for three failed checks after 1m0s")
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	select {
	case err := <-res:
		if err != nil {
			t.Errorf("Run cancelled while its queue check failed: %v, want nil", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of cancellation")
	}
}

// Permanent configuration errors end Run at once: a wrong account key
// (403 AuthenticationFailed) and a missing queue (404, TestRunMissingQueue).
func TestRunWrongKeyIsPermanent(t *testing.T) {
	cs := testenv.ConnectionString(t)
	if !strings.Contains(cs, "AccountKey=") {
		t.Skip("the test account's connection string has no AccountKey to falsify")
	}
	r := newRig(t, nil)
	var parts []string
	for p := range strings.SplitSeq(cs, ";") {
		if strings.HasPrefix(p, "AccountKey=") {
			p = "AccountKey=" + strings.Repeat("A", 86) + "=="
		}
		parts = append(parts, p)
	}
	bad, err := tablekit.Open(strings.Join(parts, ";"), &tablekit.Options{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := archive.OpenWorker(bad, queueName(r.queue), new(archive.Mux), r.workerOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = w.Run(ctx)
	var se *tablekit.ServiceError
	if !errors.As(err, &se) || se.StatusCode != http.StatusForbidden {
		t.Errorf("Run with a wrong account key: %v, want the 403 ServiceError", err)
	}
	if ctx.Err() != nil {
		t.Error("Run with a wrong account key did not return before its context ended")
	}
}
