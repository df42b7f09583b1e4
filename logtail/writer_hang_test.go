package logtail_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/logtail"
)

// hangBlockList is a test-local azcore per-retry policy that hangs the
// first Put Block List after arm: before sending it, or after the service
// applied it (the answer never comes), until the test opens it or the
// request's context ends. The shared chaos package will replace it.
type hangBlockList struct {
	after   bool
	armed   atomic.Bool
	reached chan struct{}
	release chan struct{}
	opened  atomic.Bool
}

func newHang(t *testing.T, after bool) *hangBlockList {
	h := &hangBlockList{after: after, reached: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(h.open)
	return h
}

func (h *hangBlockList) arm() { h.armed.Store(true) }

func (h *hangBlockList) open() {
	if h.opened.CompareAndSwap(false, true) {
		close(h.release)
	}
}

func (h *hangBlockList) wait(t *testing.T) {
	t.Helper()
	select {
	case <-h.reached:
	case <-time.After(time.Minute):
		t.Fatal("no Put Block List was sent")
	}
}

func (h *hangBlockList) Do(req *policy.Request) (*http.Response, error) {
	r := req.Raw()
	if r.Method != http.MethodPut || r.URL.Query().Get("comp") != "blocklist" || !h.armed.CompareAndSwap(true, false) {
		return req.Next()
	}
	var resp *http.Response
	var err error
	if h.after {
		resp, err = req.Next()
	}
	close(h.reached)
	select {
	case <-h.release:
	case <-r.Context().Done():
		if resp != nil {
			resp.Body.Close()
		}
		return nil, r.Context().Err()
	}
	if h.after {
		return resp, err
	}
	return req.Next()
}

// hangWriter returns a Writer of source "app" on a container whose Put
// Block List requests pass through h.
func hangWriter(t *testing.T, h *hangBlockList, o logtail.WriterOptions) (*logtail.Writer, *logtail.Reader, *simClock) {
	t.Helper()
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{h}}})
	c := testenv.NewContainer(t, acct)
	clock := newClock(time.Date(2024, 5, 6, 15, 4, 5, 0, time.UTC))
	o.Clock = clock.Now
	w, err := logtail.OpenWriter(acct, containerName(c), "app", &o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := logtail.OpenReader(acct, containerName(c), "app")
	if err != nil {
		t.Fatal(err)
	}
	return w, r, clock
}

// writeN writes n records "<prefix> i", a second apart, and returns them.
func writeN(t *testing.T, w *logtail.Writer, clock *simClock, prefix string, n int) []logtail.Record {
	t.Helper()
	var out []logtail.Record
	for i := range n {
		rec := logtail.Record{Time: clock.Now(), Message: fmt.Sprint(prefix, " ", i)}
		if err := w.WriteRecord(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
		clock.Add(time.Second)
	}
	return out
}

// TestBlobWriterHungFlush: while a flush hangs in Put Block List, Stats
// answers, a Write that fits in the buffer is accepted, and a Write that
// must wait for buffer space gives up when its context ends; nothing
// acknowledged is lost and the order stays.
func TestBlobWriterHungFlush(t *testing.T) {
	ctx := context.Background()
	h := newHang(t, false)
	w, r, clock := hangWriter(t, h, logtail.WriterOptions{FlushBytes: 300})
	want := writeN(t, w, clock, "before", 3)

	h.arm()
	flushed := make(chan error, 1)
	go func() { flushed <- w.Flush(ctx) }()
	h.wait(t)
	// Only so that the old behaviour (everything waits for the hung
	// request) ends instead of hanging the test: the assertions below are
	// about order, not time.
	var released atomic.Bool
	watchdog := time.AfterFunc(10*time.Second, func() { released.Store(true); h.open() })
	defer watchdog.Stop()

	s := w.Stats()
	if released.Load() {
		t.Error("Stats waited for the hung flush")
	}
	if !released.Load() && (s.Buffered != 3 || s.Written != 0) {
		t.Fatalf("Stats during the hung flush: %+v; want 3 buffered, 0 written", s)
	}
	during := logtail.Record{Time: clock.Now(), Message: "during the hung flush"}
	if err := w.WriteRecord(ctx, during); err != nil {
		t.Fatalf("a Write that fits in the buffer: %v", err)
	}
	if released.Load() {
		t.Error("a Write that fits in the buffer waited for the hung flush")
	}
	want = append(want, during)
	clock.Add(time.Second)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	big := logtail.Record{Time: clock.Now(), Message: strings.Repeat("x", 250)}
	if err := w.WriteRecord(short, big); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a Write that must wait for buffer space: %v, want its context's deadline", err)
		if err == nil {
			want = append(want, big)
		}
	}
	if released.Load() {
		t.Error("a Write waiting for buffer space did not honour its context")
	}

	h.open()
	if err := <-flushed; err != nil {
		t.Fatalf("the flush, once released: %v", err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	equalRecords(t, "after Close", readAll(t, ctx, r, want[0].Time, clock.Now().Add(time.Second)), want)
}

// TestBlobWriterLostCommit: a Put Block List the service applied but whose
// answer never came (the flush failed on its context) is not written a
// second time by the next flush: every record once, in order.
func TestBlobWriterLostCommit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first int // records flushed before the lost commit: 0 = it creates the blob
	}{{"create", 0}, {"append", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			h := newHang(t, true)
			w, r, clock := hangWriter(t, h, logtail.WriterOptions{})
			want := writeN(t, w, clock, "first", tc.first)
			if err := w.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			want = append(want, writeN(t, w, clock, "lost", 3)...)
			h.arm()
			short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			if err := w.Flush(short); err == nil {
				t.Fatal("the flush whose answer was lost succeeded")
			}
			want = append(want, writeN(t, w, clock, "after", 2)...)
			if err := w.Close(ctx); err != nil {
				t.Fatal(err)
			}
			equalRecords(t, "after Close", readAll(t, ctx, r, want[0].Time, clock.Now()), want)
		})
	}
}

// TestBlobWriterFlushTimeout: a flush that hangs in Put Block List fails
// after FlushTimeout even under a context without a deadline; its records
// stay buffered, in order, and the next flush writes them once.
func TestBlobWriterFlushTimeout(t *testing.T) {
	ctx := context.Background()
	h := newHang(t, false) // opened only when the test ends
	w, r, clock := hangWriter(t, h, logtail.WriterOptions{FlushTimeout: 300 * time.Millisecond})
	want := writeN(t, w, clock, "first", 3)
	h.arm()
	err := w.Flush(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "FlushTimeout") {
		t.Fatalf("a hung flush: %v, want a FlushTimeout error", err)
	}
	if s := w.Stats(); s.FailedFlushes != 1 || s.Buffered != 3 || s.Written != 0 {
		t.Fatalf("after the timeout: %+v", s)
	}
	want = append(want, writeN(t, w, clock, "then", 2)...)
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if s := w.Stats(); s.Written != 5 || s.Buffered != 0 || s.Flushes != 2 {
		t.Fatalf("after Close: %+v; want 5 written in 2 flushes (the retried block, then the rest)", s)
	}
	equalRecords(t, "after Close", readAll(t, ctx, r, want[0].Time, clock.Now()), want)
}

// faultBlockList answers every fourth Put Block List 500 after the service
// applied it (a lost answer, which the SDK retries) and hangs every other
// fourth one until its context ends (a flush timeout).
type faultBlockList struct {
	n          atomic.Int64
	lost, hung atomic.Int64
}

func (f *faultBlockList) Do(req *policy.Request) (*http.Response, error) {
	r := req.Raw()
	if r.Method != http.MethodPut || r.URL.Query().Get("comp") != "blocklist" {
		return req.Next()
	}
	switch f.n.Add(1) % 4 {
	case 1:
		resp, err := req.Next()
		if err != nil {
			return resp, err
		}
		resp.Body.Close()
		f.lost.Add(1)
		return &http.Response{StatusCode: http.StatusInternalServerError, Status: "500 Operation Timed Out",
			Header: http.Header{"X-Ms-Error-Code": {"OperationTimedOut"}}, Body: http.NoBody, Request: r}, nil
	case 3:
		f.hung.Add(1)
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	return req.Next()
}

// TestBlobWriterConcurrentFaults: eight goroutines share one Writer while
// commits lose their answers or hang past FlushTimeout. Every record a
// Write accepted is stored exactly once, and each goroutine's records are
// stored in the order it wrote them.
func TestBlobWriterConcurrentFaults(t *testing.T) {
	ctx := context.Background()
	const writers, records = 8, 100
	f := &faultBlockList{}
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{f}, Retry: policy.RetryOptions{RetryDelay: 5 * time.Millisecond}}})
	c := testenv.NewContainer(t, acct)
	clock := newClock(time.Date(2024, 5, 6, 15, 4, 5, 0, time.UTC))
	w, err := logtail.OpenWriter(acct, containerName(c), "app", &logtail.WriterOptions{FlushBytes: 2000, FlushTimeout: 200 * time.Millisecond, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	accepted := make([][]int, writers)
	done := make(chan struct{})
	for g := range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range records {
				if err := w.Write(ctx, fmt.Sprintf("%d-%d", g, i)); err == nil {
					accepted[g] = append(accepted[g], i)
				}
			}
		}()
	}
	for range writers {
		<-done
	}
	var cerr error
	for range 10 {
		if cerr = w.Close(ctx); cerr == nil {
			break
		}
	}
	if cerr != nil {
		t.Fatal(cerr)
	}
	stored := make([][]int, writers)
	for _, b := range listAll(t, ctx, c) { // one period: blobs in sequence order
		if b.parseErr != nil {
			t.Fatalf("blob %s: %v", b.name, b.parseErr)
		}
		for _, rec := range b.records {
			var g, i int
			if _, err := fmt.Sscanf(rec.Message, "%d-%d", &g, &i); err != nil {
				t.Fatalf("record %q", rec.Message)
			}
			stored[g] = append(stored[g], i)
		}
	}
	total := 0
	for g := range writers {
		if fmt.Sprint(stored[g]) != fmt.Sprint(accepted[g]) {
			t.Errorf("writer %d: stored %v, accepted %v", g, stored[g], accepted[g])
		}
		total += len(accepted[g])
	}
	s := w.Stats()
	t.Logf("%d records accepted, %d written in %d flushes; %d failed flushes; %d lost answers, %d hung commits injected", total, s.Written, s.Flushes, s.FailedFlushes, f.lost.Load(), f.hung.Load())
	if s.Written != int64(total) || s.Buffered != 0 {
		t.Errorf("stats %+v, want %d written", s, total)
	}
	if f.lost.Load() == 0 || f.hung.Load() == 0 {
		t.Errorf("faults injected: %d lost, %d hung; want both", f.lost.Load(), f.hung.Load())
	}
}
