package archive_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
)

// Regression tests for claim-check enqueues whose answers are lost (found
// by TestChaosArchiveMove).

// claimRig is a rig whose requests go through faults, with fast SDK
// retries, and a Client that claim-checks every payload over 256 bytes.
func claimRig(t *testing.T) (*rig, *faultPolicy, *archive.Client) {
	faults := &faultPolicy{}
	r := newRig(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{faults}, Retry: policy.RetryOptions{RetryDelay: 5 * time.Millisecond, MaxRetryDelay: 20 * time.Millisecond}}})
	c, err := archive.NewClient(r.queue, r.claims, &archive.ClientOptions{
		ClaimCheckThreshold: 256,
		Retry:               tablekit.RetryPolicy{MaxAttempts: 3, BaseDelay: 5 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r, faults, c
}

type bigPayload struct{ Data string }

var claimPayload = bigPayload{Data: strings.Repeat("payload ", 100)}

func blobPut(r *http.Request) bool {
	return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/claims/")
}

// messagePut matches a PutMessage to the queue named queue.
func messagePut(queue string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/"+queue+"/messages")
	}
}

// drainWith runs a worker on r's queue until it is empty and returns how
// many messages its handler succeeded on.
func drainWith(t *testing.T, r *rig) int64 {
	t.Helper()
	var handled atomic.Int64
	mux := new(archive.Mux)
	if err := archive.HandleFunc(mux, "big", func(ctx context.Context, p bigPayload) error {
		if p != claimPayload {
			t.Errorf("payload %q, want %q", p.Data, claimPayload.Data)
		}
		handled.Add(1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	opts := r.workerOpts(t)
	opts.Retry.MaxAttempts = 2
	opts.Concurrency = 1 // one message after the other: copies never race
	w, err := archive.OpenWorker(r.acct, queueName(r.queue), mux, opts)
	if err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, w)
	waitFor(t, time.Minute, "the queue to empty", func() bool { return approxCount(t, r.queue) == 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	return handled.Load()
}

// An answer lost on the claim-check blob's upload: the SDK's retry meets
// the blob its first try stored. That is the same upload, not a clash, so
// Enqueue succeeds (it failed with BlobAlreadyExists).
func TestEnqueueClaimBlobAnswerLost(t *testing.T) {
	r, faults, c := claimRig(t)
	faults.add(&fault{name: "blob upload: answer lost", mode: failAfter, match: blobPut})
	if _, err := c.Enqueue(context.Background(), "big", claimPayload, nil); err != nil {
		t.Fatalf("Enqueue after a lost upload answer: %v", err)
	}
	if left := faults.unfired(); len(left) > 0 {
		t.Fatalf("faults never fired: %v", left)
	}
	if n := drainWith(t, r); n != 1 {
		t.Errorf("handled %d messages, want 1", n)
	}
	if p := drainPoison(t, r.poison); len(p) != 0 {
		t.Errorf("poison records: %+v", p[0])
	}
	if blobs := listBlobs(t, r); len(blobs) != 0 {
		t.Errorf("claim-check blobs left: %v", blobs)
	}
}

// An answer lost on the message's PutMessage: the message was stored, and
// a retry stores another. Each must carry a blob of its own; when they
// shared one, the first handled deleted it and the other failed on the
// missing blob until it was poisoned.
func TestEnqueueClaimMessageAnswerLost(t *testing.T) {
	r, faults, c := claimRig(t)
	faults.add(&fault{name: "message put: answer lost", mode: failAfter, match: messagePut(queueName(r.queue))})
	if _, err := c.Enqueue(context.Background(), "big", claimPayload, nil); err != nil {
		t.Fatalf("Enqueue after a lost PutMessage answer: %v", err)
	}
	if left := faults.unfired(); len(left) > 0 {
		t.Fatalf("faults never fired: %v", left)
	}
	if n := approxCount(t, r.queue); n != 2 {
		t.Fatalf("queue holds %d messages, want 2 (the stored one whose answer was lost, and the retry)", n)
	}
	if n := drainWith(t, r); n != 2 {
		t.Errorf("handled %d messages, want 2", n)
	}
	if p := drainPoison(t, r.poison); len(p) != 0 {
		t.Errorf("%d poison records, first: %+v", len(p), p[0])
	}
	if blobs := listBlobs(t, r); len(blobs) != 0 {
		t.Errorf("claim-check blobs left: %v", blobs)
	}
}

// Every PutMessage is stored but its answer lost: Enqueue fails, yet the
// messages are in the queue. Their blobs must stay (they were deleted as
// if nothing had been stored, and every message was poisoned).
func TestEnqueueClaimUnknownFailureKeepsBlobs(t *testing.T) {
	r, faults, c := claimRig(t)
	faults.add(&fault{name: "message put: answer lost", mode: failAfter, match: messagePut(queueName(r.queue)), times: 100})
	_, err := c.Enqueue(context.Background(), "big", claimPayload, nil)
	if !errors.Is(err, tablekit.ErrOutcomeUnknown) {
		t.Fatalf("Enqueue whose every answer was lost: %v, want an error matching ErrOutcomeUnknown", err)
	}
	stored := approxCount(t, r.queue)
	if stored == 0 {
		t.Fatal("no message stored")
	}
	if n := drainWith(t, r); n != int64(stored) {
		t.Errorf("handled %d messages, want the %d stored", n, stored)
	}
	if p := drainPoison(t, r.poison); len(p) != 0 {
		t.Errorf("%d poison records, first: %+v", len(p), p[0])
	}
	if blobs := listBlobs(t, r); len(blobs) != 0 {
		t.Errorf("claim-check blobs left: %v", blobs)
	}
}

// A try stores the message but its answer is lost, then the retries are
// refused with 503 ServerBusy: the message is in the queue, so Enqueue
// must not report the 503 as if nothing was stored (a caller told
// "failed" would count on the move not happening): its error matches
// ErrOutcomeUnknown. (It was ErrThrottled.)
func TestEnqueueLostThenRefusedIsUnknown(t *testing.T) {
	r, faults, c := claimRig(t)
	put := messagePut(queueName(r.queue))
	faults.add(&fault{name: "message put: answer lost", mode: failAfter, match: put})
	faults.add(&fault{name: "message put: server busy", mode: serverBusy, match: put, times: 100})
	small := bigPayload{Data: "small"}
	_, err := c.Enqueue(context.Background(), "small", small, nil)
	if !errors.Is(err, tablekit.ErrOutcomeUnknown) {
		t.Fatalf("Enqueue: %v, want an error matching ErrOutcomeUnknown", err)
	}
	if n := approxCount(t, r.queue); n != 1 {
		t.Errorf("queue holds %d messages, want the 1 stored", n)
	}
}
