package archive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablekit/tablekit/internal/names"
	"github.com/tablekit/tablekit/internal/spans"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/internal/wire"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/logs"
)

// refillLinger is how long the worker, once enough handlers are free to
// dequeue, waits for more handlers that finish close behind.
const refillLinger = 2 * time.Millisecond

// Defaults of [WorkerOptions].
const (
	defaultConcurrency       = 4
	defaultVisibilityTimeout = 30 * time.Second
	minPollInterval          = 100 * time.Millisecond // first wait on an empty queue
	defaultPollInterval      = 5 * time.Second
	defaultDrainTimeout      = 30 * time.Second
	defaultOperationTimeout  = 30 * time.Second
)

// defaultRetry is what a zero WorkerOptions.Retry means: 5 attempts
// (Azure Functions' maxDequeueCount), a failed message visible again at
// once, a back-off (when BaseDelay is set) never over an hour.
var defaultRetry = tablekit.RetryPolicy{MaxAttempts: 5, MaxDelay: time.Hour}

// WorkerOptions configures a [Worker]. A nil *WorkerOptions means the
// defaults. The Worker logs to its Account's Logger and traces with its
// Account's tracing provider (tablekit.Options).
type WorkerOptions struct {
	// Concurrency is the most handlers that run at once; 0 means 4. One
	// dequeue asks for up to min(Concurrency, 32) messages, and the worker
	// never holds more messages than it has free handlers. A handler that
	// fails throttled halves it for a while (see the package doc).
	Concurrency int

	// VisibilityTimeout is how long a dequeued message stays hidden from
	// other workers; the worker renews it every half VisibilityTimeout
	// while the handler runs. Whole seconds (rounded up), 1 s to 7 days;
	// 0 means 30 s.
	VisibilityTimeout time.Duration

	// Retry says how often a message is tried and how long it waits
	// between tries; each zero field means its default. MaxAttempts
	// (default 5, Azure Functions' maxDequeueCount) is how many attempts a
	// message gets before it moves to the poison queue; MaxAttempts 1
	// poisons a message at its first failure. After failed attempt n the
	// message stays hidden for about BaseDelay doubled n-1 times, at most
	// MaxDelay (default an hour), randomised, in whole seconds; BaseDelay
	// 0 (the default) makes it visible again at once.
	Retry tablekit.RetryPolicy

	// PoisonQueue and Container name the poison queue (created on first
	// use) and the claim-check container in the Worker's Account; ""
	// means "<queue>-poison" and "<queue>-claims", which a queue name over
	// 56 characters makes too long (OpenWorker then refuses it).
	PoisonQueue, Container string

	// PollInterval is the longest wait between dequeues while the queue is
	// empty: the wait starts at 100 ms (or PollInterval when shorter),
	// doubles up to PollInterval, and starts over when a message arrives.
	// 0 means 5 s.
	PollInterval time.Duration

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
}

// Stats holds a Worker's figures: what it did since it was made (the
// counts), how many handlers it runs at once now, and how long messages
// waited in the queue.
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
	// Throttled counts handler failures that were throttling
	// (tablekit.ErrThrottled); each also counts in Failed.
	Throttled int64

	// Concurrency is how many handlers the worker lets run at once now:
	// WorkerOptions.Concurrency, or fewer while it backs off after
	// throttled handlers (see [WorkerOptions].Concurrency).
	Concurrency int

	// QueueAge is how long the messages of the worker's latest dequeue
	// had waited in the queue (the oldest of them): the worker's clock
	// minus the insertion time the queue reports (whole seconds). It is 0
	// before the first message and after a dequeue found the queue empty,
	// so it tells how far the worker lags behind the queue. A redelivered
	// message's age includes its earlier attempts and their back-off.
	QueueAge time.Duration
	// MaxQueueAge is the longest queue age of any message the worker
	// dequeued since it was made.
	MaxQueueAge time.Duration
}

// Worker takes messages from a work queue and hands each to a [Handler],
// deleting it only when the handler succeeds. It is a competing consumer:
// any number of Workers, in any number of processes, may share one queue.
// Make one with [OpenWorker]; the package doc states its guarantees.
type Worker struct {
	queue      *azqueue.QueueClient
	queueName  string
	poison     *azqueue.QueueClient
	poisonName string
	claims     *container.Client
	claimsName string
	handler    Handler
	log        *slog.Logger
	tracer     tracing.Tracer
	clock      func() time.Time // nil: time.Now; set by internal tests

	concurrency int
	batch       int
	visibility  time.Duration
	maxDequeue  int64
	retry       tablekit.RetryPolicy
	minPoll     time.Duration
	maxPoll     time.Duration
	drain       time.Duration
	opTimeout   time.Duration

	running atomic.Bool
	stats   struct {
		received, succeeded, failed, poisoned, renewed, lost, abandoned, throttled atomic.Int64
		limit                                                                      atomic.Int64
		queueAge, maxQueueAge                                                      atomic.Int64 // nanoseconds
	}
}

// OpenWorker returns a Worker for the queue named queue in acct that calls
// handler for each message, with the poison queue and claim-check
// container opts names (default "<queue>-poison" and "<queue>-claims").
// It logs to acct's Logger and traces each message with acct's tracing
// provider (a span "Worker.Handle", parent of the handler's requests).
// It checks the names and options but does not contact the service: bad
// input is refused with a *tablekit.ValidationError whose Op is
// "archive.OpenWorker" and whose Property names the option at fault
// (matching tablekit.ErrInvalidInput, or tablekit.ErrInvalidKey for a
// name).
func OpenWorker(acct *tablekit.Account, queue string, handler Handler, opts *WorkerOptions) (*Worker, error) {
	const op = "archive.OpenWorker"
	if acct == nil || acct.Queues() == nil || acct.Blobs() == nil {
		return nil, invalid(op, "acct", "the account is nil or zero: use tablekit.Open")
	}
	if err := names.CheckQueue(queue); err != nil {
		return nil, withOp(op, err)
	}
	var o WorkerOptions
	if opts != nil {
		o = *opts
	}
	if o.PoisonQueue == "" {
		name, err := suffixedName(op, queue, poisonSuffix, "poison queue", "name the poison queue in WorkerOptions.PoisonQueue")
		if err != nil {
			return nil, err
		}
		o.PoisonQueue = name
	}
	if o.Container == "" {
		name, err := suffixedName(op, queue, claimsSuffix, "claim-check container", "name the container in WorkerOptions.Container")
		if err != nil {
			return nil, err
		}
		o.Container = name
	}
	for _, check := range []struct {
		property, name string
		validate       func(string) error
	}{{"PoisonQueue", o.PoisonQueue, names.CheckQueue}, {"Container", o.Container, names.CheckContainer}} {
		if err := check.validate(check.name); err != nil {
			var ve *tablekit.ValidationError
			if errors.As(err, &ve) && ve.Property == "" {
				ve.Property = check.property
			}
			return nil, withOp(op, err)
		}
	}
	return newWorker(op, acct.Queues().NewQueueClient(queue), acct.Queues().NewQueueClient(o.PoisonQueue),
		acct.Blobs().ServiceClient().NewContainerClient(o.Container), handler, &o,
		acct.Logger(), acct.TracingProvider())
}

// newWorker makes a Worker of queue, poison and claims (nil: no
// claim-check container), logging to log (nil: slog.Default()) and
// tracing with tp. OpenWorker has checked the names of poison and claims.
func newWorker(op string, queue, poison *azqueue.QueueClient, claims *container.Client, handler Handler, o *WorkerOptions, log *slog.Logger, tp tracing.Provider) (*Worker, error) {
	if handler == nil {
		return nil, invalid(op, "handler", "handler is nil")
	}
	w := &Worker{
		queue:     queue,
		queueName: nameOf(queue.URL()),
		poison:    poison,
		claims:    claims,
		handler:   handler,
		tracer:    tp.NewTracer(spans.TracerName, "v0"),
	}
	w.tracer.SetAttributes(tracing.Attribute{Key: spans.NamespaceKey, Value: "Microsoft.Storage"})
	w.poisonName = nameOf(w.poison.URL())
	if w.poisonName == w.queueName {
		return nil, invalid(op, "PoisonQueue", fmt.Sprintf("the poison queue is the work queue %q", w.queueName))
	}
	if w.claims != nil {
		w.claimsName = nameOf(w.claims.URL())
	}
	w.log = logs.Or(log).With("queue", w.queueName)

	switch {
	case o.Concurrency < 0:
		return nil, invalid(op, "Concurrency", fmt.Sprintf("Concurrency %d is negative", o.Concurrency))
	case o.Concurrency == 0:
		w.concurrency = defaultConcurrency
	default:
		w.concurrency = o.Concurrency
	}
	w.stats.limit.Store(int64(w.concurrency))
	w.batch = min(w.concurrency, 32)
	switch {
	case o.VisibilityTimeout < 0 || o.VisibilityTimeout > 7*24*time.Hour:
		return nil, invalid(op, "VisibilityTimeout", fmt.Sprintf("VisibilityTimeout %v is outside 1s..7 days", o.VisibilityTimeout))
	case o.VisibilityTimeout == 0:
		w.visibility = defaultVisibilityTimeout
	default:
		w.visibility = time.Duration(*seconds(o.VisibilityTimeout)) * time.Second
	}
	if err := timing.Policy(o.Retry).Validate(op); err != nil {
		return nil, err
	}
	w.retry = tablekit.RetryPolicy(timing.Policy(o.Retry).WithDefaults(timing.Policy(defaultRetry)))
	w.maxDequeue = int64(w.retry.MaxAttempts)
	for _, d := range []struct {
		property string
		v        time.Duration
	}{{"PollInterval", o.PollInterval}, {"OperationTimeout", o.OperationTimeout}, {"DrainTimeout", o.DrainTimeout}} {
		if d.v < 0 {
			return nil, invalid(op, d.property, fmt.Sprintf("%s %v is negative", d.property, d.v))
		}
	}
	w.maxPoll = cmpOr(o.PollInterval, defaultPollInterval)
	w.minPoll = min(minPollInterval, w.maxPoll)
	w.drain = cmpOr(o.DrainTimeout, defaultDrainTimeout)
	w.opTimeout = cmpOr(o.OperationTimeout, defaultOperationTimeout)
	return w, nil
}

// Stats returns the worker's counters.
func (w *Worker) Stats() Stats {
	if w == nil {
		return Stats{}
	}
	return Stats{
		Received:  w.stats.received.Load(),
		Succeeded: w.stats.succeeded.Load(),
		Failed:    w.stats.failed.Load(),
		Poisoned:  w.stats.poisoned.Load(),
		Renewed:   w.stats.renewed.Load(),
		Lost:      w.stats.lost.Load(),
		Abandoned: w.stats.abandoned.Load(),
		Throttled: w.stats.throttled.Load(),

		Concurrency: int(w.stats.limit.Load()),
		QueueAge:    time.Duration(w.stats.queueAge.Load()),
		MaxQueueAge: time.Duration(w.stats.maxQueueAge.Load()),
	}
}

// Run checks that the queue exists, then takes messages from it and
// handles them until ctx ends. Then it stops dequeuing, waits up to
// DrainTimeout for the handlers in flight (they keep a live context
// meanwhile, and those that finish delete their message), cancels the
// rest, and returns nil. A cancelled handler may still be returning when
// Run returns; its message is not deleted.
//
// Besides ctx, only a permanent configuration error found by the first
// check of the queue ends Run: a *tablekit.ServiceError with a 4xx status
// other than 408 and 429, such as a queue that does not exist (matching
// tablekit.ErrNotFound) or a credential without rights. Every other
// failure is logged and retried (see the package doc). A Worker runs once
// at a time (a second Run at once is refused with an error matching
// tablekit.ErrInvalidInput); it may be run again after Run returned.
func (w *Worker) Run(ctx context.Context) error {
	const op = "archive.Worker.Run"
	if w == nil || w.queue == nil {
		return invalid(op, "", "the Worker is nil or zero: use archive.OpenWorker")
	}
	if !w.running.CompareAndSwap(false, true) {
		return invalid(op, "", "the Worker is already running")
	}
	defer w.running.Store(false)
	if err := w.checkQueue(ctx, op); err != nil || ctx.Err() != nil {
		return err
	}
	w.log.Debug("worker started", "concurrency", w.concurrency, "batch", w.batch, "visibility", w.visibility)

	// work lives past ctx, through the drain, so handlers in flight and
	// their final delete are not cut short by the shutdown itself.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stopDrainTimer := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(w.drain, cancelWork)
		context.AfterFunc(work, func() { t.Stop() })
	})
	defer stopDrainTimer()

	done := make(chan settled, w.concurrency)
	lim := &limiter{w: w, max: w.concurrency, limit: w.concurrency}
	w.stats.limit.Store(int64(lim.limit))
	inFlight := 0
	settle := func(s settled) {
		inFlight--
		lim.settle(s)
	}
	wait := time.Duration(0)

	for ctx.Err() == nil {
		// Wait until enough handlers are free to be worth a request.
		for inFlight > 0 && lim.limit-inFlight < max(1, min(w.batch, lim.limit)/2) {
			select {
			case s := <-done:
				settle(s)
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
		}
		// Linger briefly for handlers finishing close together, so one
		// request fetches a fuller batch (fewer billed dequeues).
		if inFlight > 0 && lim.limit-inFlight < min(w.batch, lim.limit) && ctx.Err() == nil {
			t := time.NewTimer(refillLinger)
		linger:
			for lim.limit-inFlight < min(w.batch, lim.limit) {
				select {
				case s := <-done:
					settle(s)
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
		n := min(lim.limit-inFlight, w.batch)
		if n <= 0 {
			continue // a cut left more in flight than allowed: wait above
		}
		msgs, err := w.dequeue(work, n)
		if err != nil {
			if work.Err() != nil {
				break
			}
			w.log.Warn("dequeue failed", "error", err)
		}
		for i := range msgs {
			inFlight++
			gen := lim.gen
			go func() {
				r := resultOther
				defer func() { done <- settled{gen: gen, result: r} }()
				r = w.process(work, &msgs[i])
			}()
		}
		if len(msgs) > 0 {
			wait = 0
			continue
		}
		// Empty queue (or an error): back off, doubling up to the cap.
		wait = min(max(wait*2, w.minPoll), w.maxPoll)
		if !sleep(ctx, wait, done, settle) {
			break
		}
	}

	w.log.Debug("worker stopping", "in_flight", inFlight, "drain_timeout", w.drain)
	for inFlight > 0 {
		select {
		case s := <-done:
			settle(s)
		case <-work.Done():
			w.log.Warn("drain timeout: handlers still running were cancelled; their messages will reappear", "in_flight", inFlight)
			return nil
		}
	}
	w.log.Debug("worker stopped")
	return nil
}

// result is what a handler run says about the service's load.
type result int

const (
	resultOther     result = iota // failed otherwise, or not run
	resultOK                      // the handler succeeded
	resultThrottled               // the handler failed throttled
)

// settled is a finished message: its handler's result and the limiter
// generation it started in.
type settled struct {
	gen    uint64
	result result
}

// limiter is the worker's adaptive concurrency (see
// WorkerOptions.Concurrency). Only Run's goroutine uses it.
type limiter struct {
	w          *Worker
	max, limit int
	run        int    // successes since the limit last changed
	gen        uint64 // bumped by each cut
}

// settle adapts the limit to one finished handler: a throttled one
// started since the last cut halves it, a run of limit successes raises
// it by one.
func (l *limiter) settle(s settled) {
	switch s.result {
	case resultThrottled:
		if s.gen != l.gen {
			return // started before the last cut: already accounted for
		}
		l.gen++
		l.run = 0
		if l.limit > 1 {
			l.limit = max(1, l.limit/2)
			l.w.log.Warn("handlers throttled; running fewer at once", "concurrency", l.limit)
		}
	case resultOK:
		if l.limit >= l.max {
			return
		}
		if l.run++; l.run >= l.limit {
			l.limit++
			l.run = 0
			if l.limit == l.max {
				l.w.log.Info("handlers back at full concurrency", "concurrency", l.limit)
			}
		}
	default:
		return
	}
	l.w.stats.limit.Store(int64(l.limit))
}

// checkQueue reads the queue's properties until the queue answers (nil),
// a permanent error occurs (returned), or ctx ends (nil; the caller checks
// ctx). Transient failures are logged and retried with the poll back-off.
func (w *Worker) checkQueue(ctx context.Context, op string) error {
	wait := time.Duration(0)
	for {
		octx, cancel := w.opContext(ctx)
		_, err := w.queue.GetProperties(octx, nil)
		cancel()
		if err == nil || ctx.Err() != nil {
			return nil
		}
		err = wire.Wrap(op, "", "", "", err)
		if permanentConfigError(err) {
			return err
		}
		wait = min(max(wait*2, w.minPoll), w.maxPoll)
		w.log.Warn("queue check failed; retrying", "error", err, "retry_in", wait)
		if !timing.Sleep(ctx, wait) {
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

// sleep waits d or until ctx ends (false), settling finished handlers
// meanwhile.
func sleep(ctx context.Context, d time.Duration, done <-chan settled, settle func(settled)) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		case s := <-done:
			settle(s)
		}
	}
}

// dequeuedMessage is the part of azqueue's DequeuedMessage the worker uses.
type dequeuedMessage struct {
	id, receipt, text string
	count             int64
	inserted, expires time.Time
}

// dequeue takes up to n messages from the queue and records their queue
// age.
func (w *Worker) dequeue(ctx context.Context, n int) ([]dequeuedMessage, error) {
	ctx, cancel := w.opContext(ctx)
	defer cancel()
	resp, err := w.queue.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{
		NumberOfMessages:  ptr(int32(n)),
		VisibilityTimeout: seconds(w.visibility),
	})
	if err != nil {
		return nil, wire.Wrap("DequeueMessages", "", "", "", err)
	}
	msgs := make([]dequeuedMessage, 0, len(resp.Messages))
	for _, m := range resp.Messages {
		if m == nil || m.MessageID == nil || m.PopReceipt == nil {
			continue
		}
		dm := dequeuedMessage{id: *m.MessageID, receipt: *m.PopReceipt}
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
	w.recordQueueAge(msgs)
	return msgs, nil
}

// recordQueueAge sets Stats.QueueAge to the oldest age among msgs (0 for
// none: the queue was empty) and raises Stats.MaxQueueAge.
func (w *Worker) recordQueueAge(msgs []dequeuedMessage) {
	now := timing.Now(w.clock)
	var age time.Duration
	for _, m := range msgs {
		if !m.inserted.IsZero() {
			age = max(age, now.Sub(m.inserted)) // a clock behind the service's gives 0
		}
	}
	w.stats.queueAge.Store(int64(age))
	for {
		old := w.stats.maxQueueAge.Load()
		if int64(age) <= old || w.stats.maxQueueAge.CompareAndSwap(old, int64(age)) {
			return
		}
	}
}

// nameOf returns the last path segment of a queue's or container's URL:
// its name.
func nameOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
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
			l.w.log.Warn("visibility renewal: message taken by another worker; cancelling its handler", "message_id", l.id, "error", wire.Wrap("UpdateMessage", "", "", "", err))
			l.cancel()
			return
		}
		if l.ctx.Err() != nil {
			return
		}
		l.w.log.Warn("visibility renewal failed; retrying", "message_id", l.id, "error", wire.Wrap("UpdateMessage", "", "", "", err))
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
	err = wire.Wrap("", "", "", "", err)
	var se *tablekit.ServiceError
	if !errors.As(err, &se) {
		return false
	}
	return se.StatusCode == 404 || se.Code == "PopReceiptMismatch"
}

// Name returns the name of the queue the worker reads ("" for a zero
// Worker).
func (w *Worker) Name() string {
	if w == nil {
		return ""
	}
	return w.queueName
}

// PoisonQueueName returns the name of the worker's poison queue: where to
// read the messages it gave up on (see [ParsePoison]).
func (w *Worker) PoisonQueueName() string {
	if w == nil {
		return ""
	}
	return w.poisonName
}

// ContainerName returns the name of the worker's claim-check container.
func (w *Worker) ContainerName() string {
	if w == nil {
		return ""
	}
	return w.claimsName
}
