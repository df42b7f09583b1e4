package archive

import (
	"context"
	"errors"
	"fmt"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
)

// refillLinger is how long the worker, once enough handlers are free to
// dequeue, waits for more handlers that finish close behind.
const refillLinger = 2 * time.Millisecond

// Defaults of [WorkerOptions].
const (
	DefaultConcurrency       = 4                      // handlers at once
	DefaultVisibilityTimeout = 30 * time.Second       // per dequeue and renewal
	DefaultMaxDequeueCount   = 5                      // attempts before the poison queue
	DefaultMinPollInterval   = 100 * time.Millisecond // first wait on an empty queue
	DefaultMaxPollInterval   = 5 * time.Second        // longest wait on an empty queue
	DefaultDrainTimeout      = 30 * time.Second       // shutdown grace for handlers
	DefaultOperationTimeout  = 30 * time.Second       // per storage request of the worker
)

// WorkerOptions configures a [Worker]. A nil *WorkerOptions means the
// defaults, except that [NewWorker] needs PoisonQueue ([OpenWorker] fills
// it in).
type WorkerOptions struct {
	// Concurrency is how many handlers run at once; 0 means 4. The worker
	// never holds more messages than it has free handlers.
	Concurrency int

	// BatchSize is the most messages one dequeue request asks for, 1–32;
	// 0 means min(Concurrency, 32). The worker asks again once at least
	// half a batch of handlers is free (and no further handler finished in
	// the last 2 ms), for as many messages as handlers are free.
	BatchSize int

	// VisibilityTimeout is how long a dequeued message stays hidden from
	// other workers; the worker renews it every half VisibilityTimeout
	// while the handler runs. Whole seconds (rounded up), at least 1 s; 0
	// means 30 s.
	VisibilityTimeout time.Duration

	// MaxDequeueCount is how many attempts a message gets: a handler
	// failure on attempt MaxDequeueCount (or a message found with a higher
	// dequeue count) moves it to the poison queue. 0 means 5.
	MaxDequeueCount int64

	// RetryDelay is how long a message whose handler failed stays hidden
	// before its next attempt, multiplied by the attempts so far (linear
	// back-off), in whole seconds (rounded up), at most 1 hour. 0 means it
	// is visible again at once.
	RetryDelay time.Duration

	// PoisonQueue receives the messages that failed MaxDequeueCount
	// attempts (or failed with a [Permanent] error). It is created on first
	// use. NewWorker requires it; OpenWorker defaults it to
	// [PoisonQueueName] of the work queue.
	PoisonQueue *azqueue.QueueClient

	// Container holds claim-check blobs (see [Client]). nil: a message
	// that carries a claim check fails (and ends in the poison queue).
	// OpenWorker defaults it to [ClaimContainerName] of the work queue.
	Container *container.Client

	// MinPollInterval and MaxPollInterval bound the wait between dequeue
	// attempts while the queue is empty: the wait starts at the minimum and
	// doubles up to the maximum, and returns to the minimum as soon as a
	// message arrives. 0 means 100 ms and 5 s.
	MinPollInterval, MaxPollInterval time.Duration

	// OperationTimeout bounds each storage request the worker itself
	// makes (dequeue, renew, delete, poison), including the SDK's retries,
	// so a hung connection cannot stall a message forever; the message is
	// then retried later. It does not apply to the handler. 0 means 30 s.
	OperationTimeout time.Duration

	// DrainTimeout bounds how long Run waits, after its context ends, for
	// the handlers in flight; then their contexts are cancelled and Run
	// returns. Their messages are not deleted and become visible again
	// when their visibility timeout lapses. 0 means 30 s.
	DrainTimeout time.Duration

	// Logger receives the worker's logs (never message payloads). nil
	// means no logging.
	Logger *slog.Logger
	// TracingProvider traces each message the worker handles (a span
	// "Worker.Handle" with the message id, kind and dequeue count, parent
	// of the handler's storage requests); OpenWorker takes the Account's.
	// The zero value traces nothing.
	TracingProvider tracing.Provider
}

// Stats counts what a Worker did since it was made.
type Stats struct {
	// Received counts messages dequeued.
	Received int64
	// Succeeded counts messages handled and deleted.
	Succeeded int64
	// Failed counts handler failures (each attempt counts).
	Failed int64
	// Poisoned counts messages moved to the poison queue.
	Poisoned int64
	// Renewed counts visibility renewals of long-running handlers.
	Renewed int64
	// Lost counts messages whose ownership lapsed before they were
	// settled (another worker got them; they were not deleted here).
	Lost int64
	// Abandoned counts messages left undeleted at shutdown.
	Abandoned int64
}

// Worker takes messages from a work queue and hands each to a [Handler],
// deleting it only when the handler succeeds. It is a competing consumer:
// any number of Workers, in any number of processes, may share one queue.
// See the package documentation for its guarantees.
type Worker struct {
	queue     *azqueue.QueueClient
	queueName string
	poison    *azqueue.QueueClient
	claims    *container.Client
	handler   Handler
	log       *slog.Logger
	tracer    tracing.Tracer

	concurrency int
	batch       int
	visibility  time.Duration
	maxDequeue  int64
	retryDelay  time.Duration
	minPoll     time.Duration
	maxPoll     time.Duration
	drain       time.Duration
	opTimeout   time.Duration

	running atomic.Bool
	stats   struct {
		received, succeeded, failed, poisoned, renewed, lost, abandoned atomic.Int64
	}
}

// NewWorker returns a Worker for queue that calls handler for each
// message. It checks the options (an error matching
// tablekit.ErrInvalidInput names the bad one) but does not contact the
// service.
func NewWorker(queue *azqueue.QueueClient, handler Handler, opts *WorkerOptions) (*Worker, error) {
	if queue == nil {
		return nil, invalid("archive.NewWorker", "queue is nil")
	}
	if handler == nil {
		return nil, invalid("archive.NewWorker", "handler is nil")
	}
	var o WorkerOptions
	if opts != nil {
		o = *opts
	}
	w := &Worker{
		queue:     queue,
		queueName: queueNameOf(queue),
		poison:    o.PoisonQueue,
		claims:    o.Container,
		handler:   handler,
		log:       o.Logger,
		tracer:    o.TracingProvider.NewTracer(tablekit.TracerName, "v0"),
	}
	w.tracer.SetAttributes(tracing.Attribute{Key: "az.namespace", Value: "Microsoft.Storage"})
	if w.poison == nil {
		return nil, invalid("archive.NewWorker", "WorkerOptions.PoisonQueue is nil (OpenWorker defaults it to <queue>-poison)")
	}
	if err := tablekit.ValidateQueueName(w.queueName); err != nil {
		return nil, err
	}
	if err := tablekit.ValidateQueueName(queueNameOf(w.poison)); err != nil {
		return nil, err
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.log = w.log.With("queue", w.queueName)

	switch {
	case o.Concurrency < 0:
		return nil, invalid("archive.WorkerOptions", fmt.Sprintf("Concurrency %d is negative", o.Concurrency))
	case o.Concurrency == 0:
		w.concurrency = DefaultConcurrency
	default:
		w.concurrency = o.Concurrency
	}
	switch {
	case o.BatchSize < 0 || o.BatchSize > 32:
		return nil, invalid("archive.WorkerOptions", fmt.Sprintf("BatchSize %d is outside 1..32", o.BatchSize))
	case o.BatchSize == 0:
		w.batch = min(w.concurrency, 32)
	default:
		w.batch = min(o.BatchSize, w.concurrency)
	}
	switch {
	case o.VisibilityTimeout < 0 || o.VisibilityTimeout > 7*24*time.Hour:
		return nil, invalid("archive.WorkerOptions", fmt.Sprintf("VisibilityTimeout %v is outside 1s..7 days", o.VisibilityTimeout))
	case o.VisibilityTimeout == 0:
		w.visibility = DefaultVisibilityTimeout
	default:
		w.visibility = time.Duration(*seconds(o.VisibilityTimeout)) * time.Second
	}
	switch {
	case o.MaxDequeueCount < 0:
		return nil, invalid("archive.WorkerOptions", fmt.Sprintf("MaxDequeueCount %d is negative", o.MaxDequeueCount))
	case o.MaxDequeueCount == 0:
		w.maxDequeue = DefaultMaxDequeueCount
	default:
		w.maxDequeue = o.MaxDequeueCount
	}
	if o.RetryDelay < 0 {
		return nil, invalid("archive.WorkerOptions", fmt.Sprintf("RetryDelay %v is negative", o.RetryDelay))
	}
	w.retryDelay = o.RetryDelay
	if o.MinPollInterval < 0 || o.MaxPollInterval < 0 || o.DrainTimeout < 0 || o.OperationTimeout < 0 {
		return nil, invalid("archive.WorkerOptions", "MinPollInterval, MaxPollInterval, DrainTimeout and OperationTimeout must not be negative")
	}
	w.minPoll = cmpOr(o.MinPollInterval, DefaultMinPollInterval)
	w.maxPoll = cmpOr(o.MaxPollInterval, DefaultMaxPollInterval)
	if w.maxPoll < w.minPoll {
		w.maxPoll = w.minPoll
	}
	w.drain = cmpOr(o.DrainTimeout, DefaultDrainTimeout)
	w.opTimeout = cmpOr(o.OperationTimeout, DefaultOperationTimeout)
	return w, nil
}

// OpenWorker returns a Worker for the queue named queue in acct, with the
// poison queue [PoisonQueueName](queue) and the claim-check container
// [ClaimContainerName](queue) unless opts names others.
func OpenWorker(acct *tablekit.Account, queue string, handler Handler, opts *WorkerOptions) (*Worker, error) {
	if acct == nil {
		return nil, invalid("archive.OpenWorker", "account is nil")
	}
	if err := tablekit.ValidateQueueName(queue); err != nil {
		return nil, err
	}
	var o WorkerOptions
	if opts != nil {
		o = *opts
	}
	if !o.TracingProvider.NewTracer(tablekit.TracerName, "v0").Enabled() {
		o.TracingProvider = acct.TracingProvider()
	}
	if o.PoisonQueue == nil {
		name := PoisonQueueName(queue)
		if err := tablekit.ValidateQueueName(name); err != nil {
			return nil, err
		}
		o.PoisonQueue = acct.Queue(name)
	}
	if o.Container == nil {
		if name := ClaimContainerName(queue); tablekit.ValidateContainerName(name) == nil {
			o.Container = acct.Container(name)
		}
	}
	return NewWorker(acct.Queue(queue), handler, &o)
}

// Stats returns the worker's counters.
func (w *Worker) Stats() Stats {
	return Stats{
		Received:  w.stats.received.Load(),
		Succeeded: w.stats.succeeded.Load(),
		Failed:    w.stats.failed.Load(),
		Poisoned:  w.stats.poisoned.Load(),
		Renewed:   w.stats.renewed.Load(),
		Lost:      w.stats.lost.Load(),
		Abandoned: w.stats.abandoned.Load(),
	}
}

// ErrRunning is returned by Run when the Worker is already running.
var ErrRunning = errors.New("archive: worker is already running")

// Run checks that the queue exists, then takes messages from it and
// handles them until ctx ends. Then it stops dequeuing, waits up to
// DrainTimeout for the handlers in flight (they keep a live context
// meanwhile, and those that finish delete their message), cancels the
// rest, and returns nil. A cancelled handler may still be returning when
// Run returns; its message is not deleted. A Worker runs once at a time
// (else [ErrRunning]); it may be run again after Run returned.
//
// Only two things end Run: ctx (then Run returns nil, also while it is
// still checking the queue) and a permanent configuration error found by
// the first check, returned at once as a *tablekit.ServiceError. Permanent
// means the service refused the request itself with a 4xx status other
// than 408 and 429: the queue does not exist (404, matching
// tablekit.ErrNotFound), the credential is wrong or lacks rights (401,
// 403), the request is malformed for this account (400). Repeating such a
// request unchanged gets the same answer until someone changes the
// deployment, and a worker that waited silently would hide that it does
// nothing; so Run reports it to its caller. Everything else is transient
// and logged, then retried with the poll back-off (MinPollInterval
// doubling up to MaxPollInterval), never ending Run: a request that failed
// or timed out (OperationTimeout) in the network, an answer lost after the
// service handled the request, 408, 429 and 5xx (ServerBusy,
// OperationTimedOut). Once the worker has started, every failed request
// (dequeue, renewal, delete, poison) is logged and retried, whatever its
// cause, and the message it concerned is redelivered if need be.
func (w *Worker) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer w.running.Store(false)
	if err := w.checkQueue(ctx); err != nil || ctx.Err() != nil {
		return err
	}
	w.log.Info("worker started", "concurrency", w.concurrency, "batch", w.batch, "visibility", w.visibility)

	// work lives past ctx, through the drain, so handlers in flight and
	// their final delete are not cut short by the shutdown itself.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stopDrainTimer := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(w.drain, cancelWork)
		context.AfterFunc(work, func() { t.Stop() })
	})
	defer stopDrainTimer()

	done := make(chan struct{}, w.concurrency)
	inFlight := 0
	refill := max(1, min(w.batch, w.concurrency)/2)
	wait := time.Duration(0)

	for ctx.Err() == nil {
		// Wait until enough handlers are free to be worth a request.
		for inFlight > 0 && w.concurrency-inFlight < refill {
			select {
			case <-done:
				inFlight--
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
		}
		// Linger briefly for handlers finishing close together, so one
		// request fetches a fuller batch (fewer billed dequeues).
		if inFlight > 0 && w.concurrency-inFlight < w.batch && ctx.Err() == nil {
			t := time.NewTimer(refillLinger)
		linger:
			for w.concurrency-inFlight < w.batch {
				select {
				case <-done:
					inFlight--
					t.Reset(refillLinger)
				case <-t.C:
					break linger
				case <-ctx.Done():
					break linger
				}
			}
			t.Stop()
		}
		if ctx.Err() != nil {
			break
		}
		n := min(w.concurrency-inFlight, w.batch)
		msgs, err := w.dequeue(work, n)
		if err != nil {
			if work.Err() != nil {
				break
			}
			w.log.Warn("dequeue failed", "error", err)
		}
		for i := range msgs {
			inFlight++
			go func() {
				defer func() { done <- struct{}{} }()
				w.process(work, &msgs[i])
			}()
		}
		if len(msgs) > 0 {
			wait = 0
			continue
		}
		// Empty queue (or an error): back off, doubling up to the cap.
		wait = min(max(wait*2, w.minPoll), w.maxPoll)
		if !sleep(ctx, wait, done, &inFlight) {
			break
		}
	}

	w.log.Info("worker stopping", "in_flight", inFlight, "drain_timeout", w.drain)
	for inFlight > 0 {
		select {
		case <-done:
			inFlight--
		case <-work.Done():
			w.log.Warn("drain timeout: handlers still running were cancelled; their messages will reappear", "in_flight", inFlight)
			return nil
		}
	}
	w.log.Info("worker stopped")
	return nil
}

// checkQueue reads the queue's properties until the queue answers (nil),
// a permanent error occurs (returned), or ctx ends (nil; the caller checks
// ctx). Transient failures are logged and retried with the poll back-off.
func (w *Worker) checkQueue(ctx context.Context) error {
	wait := time.Duration(0)
	for {
		octx, cancel := w.opContext(ctx)
		_, err := w.queue.GetProperties(octx, nil)
		cancel()
		if err == nil || ctx.Err() != nil {
			return nil
		}
		err = tablekit.WrapError("Worker.Run", err)
		if permanentConfigError(err) {
			return err
		}
		wait = min(max(wait*2, w.minPoll), w.maxPoll)
		w.log.Warn("queue check failed; retrying", "error", err, "retry_in", wait)
		if !tablekit.Sleep(ctx, wait) {
			return nil
		}
	}
}

// permanentConfigError reports whether the service refused a request
// itself, in a way only a change of deployment can fix: a 4xx status other
// than 408 Request Timeout and 429 Too Many Requests.
func permanentConfigError(err error) bool {
	var se *tablekit.ServiceError
	if !errors.As(err, &se) {
		return false
	}
	return se.StatusCode >= 400 && se.StatusCode < 500 && se.StatusCode != 408 && se.StatusCode != 429
}

// sleep waits d or until ctx ends (false), counting finished handlers
// meanwhile.
func sleep(ctx context.Context, d time.Duration, done <-chan struct{}, inFlight *int) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		case <-done:
			*inFlight--
		}
	}
}

// dequeuedMessage is the part of azqueue's DequeuedMessage the worker uses.
type dequeuedMessage struct {
	id, receipt, text string
	count             int64
	inserted, expires time.Time
	at                time.Time // when the receipt was issued (client clock)
}

func (w *Worker) dequeue(ctx context.Context, n int) ([]dequeuedMessage, error) {
	at := time.Now()
	ctx, cancel := w.opContext(ctx)
	defer cancel()
	resp, err := w.queue.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{
		NumberOfMessages:  ptr(int32(n)),
		VisibilityTimeout: seconds(w.visibility),
	})
	if err != nil {
		return nil, tablekit.WrapError("DequeueMessages", err)
	}
	msgs := make([]dequeuedMessage, 0, len(resp.Messages))
	for _, m := range resp.Messages {
		if m == nil || m.MessageID == nil || m.PopReceipt == nil {
			continue
		}
		dm := dequeuedMessage{id: *m.MessageID, receipt: *m.PopReceipt, at: at}
		if m.MessageText != nil {
			dm.text = *m.MessageText
		}
		if m.DequeueCount != nil {
			dm.count = *m.DequeueCount
		}
		if m.InsertionTime != nil {
			dm.inserted = *m.InsertionTime
		}
		if m.ExpirationTime != nil {
			dm.expires = *m.ExpirationTime
		}
		msgs = append(msgs, dm)
	}
	w.stats.received.Add(int64(len(msgs)))
	return msgs, nil
}

// queueNameOf returns the last path segment of the queue's URL.
func queueNameOf(q *azqueue.QueueClient) string {
	u, err := url.Parse(q.URL())
	if err != nil {
		return q.URL()
	}
	p := strings.TrimRight(u.Path, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	return p
}

// opContext bounds one storage request of the worker.
func (w *Worker) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, w.opTimeout)
}

func cmpOr(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

// lease is the worker's ownership of one dequeued message: its current pop
// receipt, renewed while the handler runs.
type lease struct {
	w      *Worker
	ctx    context.Context
	cancel context.CancelFunc // cancels the handler when ownership is lost

	mu      sync.Mutex
	id      string
	receipt string
	text    string
	lost    bool
	stopped bool
	timer   *time.Timer
}

// start schedules renewals every half visibility timeout.
func (l *lease) start() {
	l.mu.Lock()
	l.timer = time.AfterFunc(l.w.visibility/2, l.renew)
	l.mu.Unlock()
}

// renew extends the message's visibility and records the new receipt. It
// holds the lock across the call, so stop waits for a renewal in progress.
func (l *lease) renew() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || l.lost {
		return
	}
	ctx, cancel := l.w.opContext(l.ctx)
	defer cancel()
	resp, err := l.w.queue.UpdateMessage(ctx, l.id, l.receipt, l.text, &azqueue.UpdateMessageOptions{VisibilityTimeout: seconds(l.w.visibility)})
	if err != nil {
		if lostOwnership(err) {
			l.lost = true
			l.w.log.Warn("visibility renewal: message taken by another worker; cancelling its handler", "message_id", l.id, "error", tablekit.WrapError("UpdateMessage", err))
			l.cancel()
			return
		}
		if l.ctx.Err() != nil {
			return
		}
		l.w.log.Warn("visibility renewal failed; retrying", "message_id", l.id, "error", tablekit.WrapError("UpdateMessage", err))
		l.timer.Reset(l.w.visibility / 4)
		return
	}
	if resp.PopReceipt != nil {
		l.receipt = *resp.PopReceipt
	}
	l.w.stats.renewed.Add(1)
	l.timer.Reset(l.w.visibility / 2)
}

// stop ends renewals and returns the current receipt and whether
// ownership was lost.
func (l *lease) stop() (receipt string, lost bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	if l.timer != nil {
		l.timer.Stop()
	}
	return l.receipt, l.lost
}

// lostOwnership reports whether a queue error means the pop receipt is no
// longer valid: the message was dequeued by someone else (400
// PopReceiptMismatch) or is gone (404).
func lostOwnership(err error) bool {
	err = tablekit.WrapError("", err)
	var se *tablekit.ServiceError
	if !errors.As(err, &se) {
		return false
	}
	return se.StatusCode == 404 || se.Code == "PopReceiptMismatch"
}

// Name returns the name of the queue the worker reads.
func (w *Worker) Name() string { return w.queueName }
