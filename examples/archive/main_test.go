package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results and costs the pattern promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"then deleted its message: Current: [000223 000224 000301], Archive: [000123 000124]",
		"GetEntity=2 UpdateEntity=2 (the upsert) DeleteEntity=2, and its message's DeleteMessage=2",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}

// rig is the example's tables and queue, a Client, and a running worker
// of mux with the example's options plus opts.
type rig struct {
	current, arch *tablekit.Table[Employee]
	queue         string
	client        *archive.Client
	worker        *archive.Worker
	acct          *tablekit.Account
}

func newRig(t *testing.T, mux *archive.Mux, opts *archive.WorkerOptions) *rig {
	t.Helper()
	ctx := context.Background()
	r := &rig{acct: testenv.Account(t, nil)}
	var cleanup func()
	var err error
	r.current, r.arch, r.queue, cleanup, err = setup(ctx, r.acct)
	t.Cleanup(cleanup)
	if err != nil {
		t.Fatal(err)
	}
	if r.client, err = archive.OpenClient(r.acct, r.queue, nil); err != nil {
		t.Fatal(err)
	}
	if r.worker, err = archive.OpenWorker(r.acct, r.queue, mux, opts); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.worker.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return r
}

func (r *rig) waitFor(t *testing.T, what string, cond func(archive.Stats) bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(r.worker.Stats()); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s: %+v", what, r.worker.Stats())
		}
	}
}

// in says which tables hold the employee pk/rk.
func (r *rig) in(t *testing.T, pk, rk string) string {
	t.Helper()
	var in []string
	for name, tbl := range map[string]*tablekit.Table[Employee]{"Current": r.current, "Archive": r.arch} {
		_, err := tbl.Get(context.Background(), pk, rk)
		switch {
		case err == nil:
			in = append(in, name)
		case !errors.Is(err, tablekit.ErrNotFound):
			t.Fatal(err)
		}
	}
	return strings.Join(in, "+")
}

// A message is base64 JSON, as Azure Functions expects.
func TestMessageFormat(t *testing.T) {
	ctx := context.Background()
	q := testenv.NewQueue(t, testenv.Account(t, nil))
	c, err := archive.NewClient(q, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, archive.MoveKind, archive.MoveRequest{PartitionKey: "Sales", RowKey: "000123"}, nil); err != nil {
		t.Fatal(err)
	}
	peek, err := q.PeekMessages(ctx, &azqueue.PeekMessagesOptions{})
	if err != nil || len(peek.Messages) != 1 {
		t.Fatalf("peek: %v", err)
	}
	body, err := base64.StdEncoding.DecodeString(*peek.Messages[0].MessageText)
	if want := `{"kind":"archive.move","payload":{"pk":"Sales","rk":"000123"}}`; err != nil || string(body) != want {
		t.Errorf("message %s, %v; want %s", body, err, want)
	}
}

// A move that fails half-way (Archive written, Current not deleted) is
// retried after its back-off; the retry sees the first attempt's error in
// the message, repeats every idempotent step and finishes the move.
func TestRetryAfterCrash(t *testing.T) {
	var mux archive.Mux
	var (
		mu        sync.Mutex
		lastError string
		r         *rig
	)
	err := mux.Register(archive.MoveKind, archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
		var req archive.MoveRequest
		if err := m.Decode(&req); err != nil {
			return err
		}
		if m.DequeueCount == 1 {
			e, err := r.current.Get(ctx, req.PartitionKey, req.RowKey)
			if err == nil {
				_, err = r.arch.Upsert(ctx, e)
			}
			return errors.Join(err, errors.New("simulated crash after the Archive write"))
		}
		mu.Lock()
		lastError = m.LastError
		mu.Unlock()
		return (&archive.Mover[Employee]{Current: r.current, Archive: r.arch}).Handle(ctx, req)
	}))
	if err != nil {
		t.Fatal(err)
	}
	r = newRig(t, &mux, &archive.WorkerOptions{VisibilityTimeout: 2 * time.Second, PollInterval: 200 * time.Millisecond,
		Retry: tablekit.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Second}})
	if _, err := r.client.Enqueue(context.Background(), archive.MoveKind, archive.MoveRequest{PartitionKey: "Marketing", RowKey: "000223"}, nil); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "the failed attempt", func(s archive.Stats) bool { return s.Failed == 1 })
	if in := r.in(t, "Marketing", "000223"); in != "Archive+Current" && in != "Current+Archive" {
		t.Errorf("after the failed attempt the employee is in %s, want both tables", in)
	}
	r.waitFor(t, "the retry", func(s archive.Stats) bool { return s.Succeeded == 1 })
	if in := r.in(t, "Marketing", "000223"); in != "Archive" {
		t.Errorf("after the retry the employee is in %s, want Archive only", in)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(lastError, "simulated crash") {
		t.Errorf("the retry found LastError %q, want the first attempt's error", lastError)
	}
}

// A payload over the queue's 64 KiB goes to a claim-check blob: 1 PutBlob
// and 1 PutMessage; the handler gets all of it, and the blob is deleted
// after the message.
func TestClaimCheck(t *testing.T) {
	type leave struct {
		archive.MoveRequest
		Handover string `json:"handover"`
	}
	var mux archive.Mux
	var mu sync.Mutex
	var got leave
	var blob string
	r := (*rig)(nil)
	err := mux.Register("hr.leave", archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
		mu.Lock()
		defer mu.Unlock()
		blob = m.Blob
		if err := m.Decode(&got); err != nil {
			return err
		}
		return (&archive.Mover[Employee]{Current: r.current, Archive: r.arch}).Handle(ctx, got.MoveRequest)
	}))
	if err != nil {
		t.Fatal(err)
	}
	r = newRig(t, &mux, &archive.WorkerOptions{PollInterval: 200 * time.Millisecond})
	ctx := context.Background()
	req := leave{archive.MoveRequest{PartitionKey: "Marketing", RowKey: "000224"}, strings.Repeat("handover notes. ", 6400)} // 100 KiB
	// The Client would create the container on its first large payload,
	// at the cost of a refused PutBlob.
	claims := r.acct.Blobs().ServiceClient().NewContainerClient(r.client.ContainerName())
	if _, err := claims.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	before := r.acct.Meter().Snapshot()
	if _, err := r.client.Enqueue(ctx, "hr.leave", req, nil); err != nil {
		t.Fatal(err)
	}
	sent := r.acct.Meter().Snapshot().Sub(before)
	if sent.Count("blob", "PutBlob") != 1 || sent.Count("queue", "PutMessage") != 1 {
		t.Errorf("enqueueing 100 KiB: %v, want a PutBlob and a PutMessage", sent)
	}
	r.waitFor(t, "the claim-check move", func(s archive.Stats) bool { return s.Succeeded == 1 })
	mu.Lock()
	defer mu.Unlock()
	if blob == "" || got.Handover != req.Handover {
		t.Errorf("the handler got %d bytes from blob %q, want %d from a blob", len(got.Handover), blob, len(req.Handover))
	}
	page, err := claims.NewListBlobsFlatPager(nil).NextPage(ctx)
	if err != nil || len(page.Segment.BlobItems) != 0 {
		t.Errorf("claim-check blobs left after the message: %v", err)
	}
	if in := r.in(t, "Marketing", "000224"); in != "Archive" {
		t.Errorf("the employee is in %s, want Archive", in)
	}
}

// A message no handler knows fails permanently: it goes to the poison
// queue after one attempt, with its error; reading the poison queue is the
// application's part.
func TestPoison(t *testing.T) {
	r := newRig(t, new(archive.Mux), &archive.WorkerOptions{PollInterval: 200 * time.Millisecond})
	ctx := context.Background()
	if _, err := r.client.Enqueue(ctx, "archive.purge", archive.MoveRequest{PartitionKey: "Sales", RowKey: "000999"}, nil); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "the poison message", func(s archive.Stats) bool { return s.Poisoned == 1 })
	poison := r.acct.Queues().NewQueueClient(r.worker.PoisonQueueName())
	resp, err := poison.DequeueMessages(ctx, nil)
	if err != nil || len(resp.Messages) != 1 {
		t.Fatalf("the poison queue: %v", err)
	}
	p, err := archive.ParsePoison(*resp.Messages[0].MessageText)
	if err != nil {
		t.Fatal(err)
	}
	if p.Kind != "archive.purge" || p.DequeueCount != 1 || !strings.Contains(p.Error, `no handler for kind "archive.purge"`) || p.Queue != r.queue {
		t.Errorf("poison record %+v", p)
	}
	if s := r.worker.Stats(); s.Received != 1 || s.Failed != 1 || s.Concurrency != 4 {
		t.Errorf("stats %+v: want 1 received, 1 failed, concurrency 4", s)
	}
}
