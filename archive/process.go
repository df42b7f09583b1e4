package archive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
	"unicode/utf8"

	"github.com/tablekit/tablekit/internal/spans"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/internal/wire"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
)

// maxErrorText bounds the error text recorded in a message or poison
// record.
const maxErrorText = 2048

// process handles one dequeued message from receipt to settlement: run the
// handler (renewing visibility meanwhile), then delete, record the failure,
// or poison. It returns what the handler's outcome says about the
// service's load, for the worker's concurrency.
func (w *Worker) process(ctx context.Context, dm *dequeuedMessage) result {
	log := w.log.With("message_id", dm.id, "dequeue_count", dm.count)
	m := &Message{
		ID:           dm.id,
		DequeueCount: dm.count,
		InsertedAt:   dm.inserted,
		ExpiresAt:    dm.expires,
		Text:         dm.text,
	}
	if env, ok := decodeEnvelope(dm.text); ok {
		m.env = env
		m.Kind = env.Kind
		m.Payload = env.Payload
		m.Blob = env.Blob
		m.LastError = env.LastError
	} else {
		m.Payload = foreignBody(dm.text)
	}
	if m.Kind != "" {
		log = log.With("kind", m.Kind)
	}

	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	l := &lease{w: w, ctx: ctx, cancel: cancel, id: dm.id, receipt: dm.receipt, text: dm.text}

	if dm.count > w.maxDequeue {
		// A worker died (or lost the message) on its last attempt: poison
		// without running the handler again.
		reason := fmt.Sprintf("dequeued %d times, more than Retry.MaxAttempts %d", dm.count, w.maxDequeue)
		if m.LastError != "" {
			reason += "; last recorded error: " + m.LastError
		}
		w.poisonMessage(ctx, log, l, m, reason)
		return resultOther
	}

	l.start()
	sctx, end := spans.Start(hctx, w.tracer, "Worker.Handle",
		tracing.Attribute{Key: "messaging.system", Value: "azure_queue"},
		tracing.Attribute{Key: "messaging.destination.name", Value: w.queueName},
		tracing.Attribute{Key: "messaging.message.id", Value: m.ID},
		tracing.Attribute{Key: "tablekit.message_kind", Value: m.Kind},
		tracing.Attribute{Key: "tablekit.dequeue_count", Value: m.DequeueCount})
	err := w.runHandler(sctx, m)
	end(err)
	receipt, lost := l.stop()
	res := resultOther
	switch {
	case err == nil:
		res = resultOK
	case wire.IsThrottled(err) && ctx.Err() == nil:
		res = resultThrottled
	}
	switch {
	case lost:
		w.stats.lost.Add(1)
		log.Warn("message ownership lost while handling; another worker has it", "handler_error", errString(err))
	case err == nil:
		octx, cancel := w.opContext(ctx)
		_, derr := w.queue.DeleteMessage(octx, dm.id, receipt, nil)
		cancel()
		if derr != nil {
			if lostOwnership(derr) {
				w.stats.lost.Add(1)
			}
			// Not deleted: it reappears and is handled again, which the
			// handler's idempotent steps make harmless.
			log.Warn("handled but not deleted; it will be redelivered", "error", wire.Wrap("DeleteMessage", "", "", "", derr))
			return res
		}
		w.stats.succeeded.Add(1)
		if m.Blob != "" && w.claims != nil {
			octx, cancel := w.opContext(ctx)
			_, err := DeleteBlobIfExists(octx, w.claims, m.Blob)
			cancel()
			if err != nil {
				log.Warn("claim-check blob not deleted", "blob", m.Blob, "error", err)
			}
		}
		log.Debug("message handled")
	case ctx.Err() != nil:
		// Drain timeout: leave the message; it reappears after its
		// visibility timeout.
		w.stats.abandoned.Add(1)
		log.Warn("handler cancelled at drain timeout; message left for redelivery", "error", err)
	default:
		w.stats.failed.Add(1)
		if res == resultThrottled {
			w.stats.throttled.Add(1)
		}
		l.receipt = receipt
		if errors.Is(err, ErrPermanent) || dm.count >= w.maxDequeue {
			log.Warn("handler failed; moving message to the poison queue", "error", err)
			w.poisonMessage(ctx, log, l, m, err.Error())
			return res
		}
		log.Warn("handler failed; message will be retried", "error", err, "throttled", res == resultThrottled)
		w.recordFailure(ctx, log, l, m, err)
	}
	return res
}

// runHandler fetches a claim-checked payload and calls the handler,
// turning a panic into an error.
func (w *Worker) runHandler(ctx context.Context, m *Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			w.log.Error("handler panicked", "message_id", m.ID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("archive: Worker.Run: handler panicked: %v", r)
		}
	}()
	if m.Blob != "" {
		if w.claims == nil {
			return fmt.Errorf("archive: Worker.Run: message %s carries claim check %q but the worker has no container", m.ID, m.Blob)
		}
		octx, cancel := w.opContext(ctx)
		data, err := getBlob(octx, w.claims, m.Blob)
		cancel()
		if err != nil {
			return fmt.Errorf("archive: Worker.Run: message %s: reading claim check %q: %w", m.ID, m.Blob, err)
		}
		m.Payload = data
	}
	return w.handler.Handle(ctx, m)
}

// recordFailure writes the error into the message (so a later worker knows
// it, even after a crash) and hides it for the back-off of WorkerOptions.Retry.
func (w *Worker) recordFailure(ctx context.Context, log *slog.Logger, l *lease, m *Message, herr error) {
	text := m.Text
	if m.env != nil {
		env := *m.env
		env.LastError = truncate(herr.Error(), maxErrorText)
		env.Attempt = m.DequeueCount
		if t, err := encodeEnvelope(&env); err == nil && len(t) <= maxMessageSize {
			text = t
		}
	}
	octx, cancel := w.opContext(ctx)
	defer cancel()
	_, err := w.queue.UpdateMessage(octx, l.id, l.receipt, text, &azqueue.UpdateMessageOptions{VisibilityTimeout: seconds(w.backoff(m.DequeueCount))})
	if err != nil {
		// The message reappears when its visibility timeout lapses anyway.
		log.Debug("could not record the failure in the message", "error", wire.Wrap("UpdateMessage", "", "", "", err))
	}
}

// backoff returns how long a message whose attempt number attempt failed
// stays hidden before the next: the Retry policy's randomised back-off
// before attempt+1.
func (w *Worker) backoff(attempt int64) time.Duration {
	return timing.Policy(w.retry).Pause(int(min(attempt, 1<<20)) + 1)
}

// poisonMessage moves a message to the poison queue: exactly once per
// owner, in three steps.
//
//  1. Update the message with the current pop receipt, hiding it for a
//     full visibility timeout and recording the error in it. This succeeds
//     only while this worker still owns the message: if another worker
//     dequeued it meanwhile, the receipt is stale (PopReceiptMismatch) and
//     this worker stops here, leaving the message to its new owner. So two
//     racing workers never both write a poison record.
//  2. Put the poison record (original envelope plus [Poisoned]).
//  3. Delete the message with the receipt from step 1.
//
// If the process dies between 2 and 3 (or 3 fails), the message reappears
// with a dequeue count above the maximum and is poisoned again: a
// duplicate record with the same MessageID. That is the only way to get
// one.
func (w *Worker) poisonMessage(ctx context.Context, log *slog.Logger, l *lease, m *Message, reason string) {
	reason = truncate(reason, maxErrorText)
	text := m.Text
	if m.env != nil {
		env := *m.env
		env.LastError = reason
		env.Attempt = m.DequeueCount
		if t, err := encodeEnvelope(&env); err == nil && len(t) <= maxMessageSize {
			text = t
		}
	}
	octx, cancel := w.opContext(ctx)
	resp, err := w.queue.UpdateMessage(octx, l.id, l.receipt, text, &azqueue.UpdateMessageOptions{VisibilityTimeout: seconds(w.visibility)})
	cancel()
	if err != nil {
		if lostOwnership(err) {
			w.stats.lost.Add(1)
			log.Debug("not poisoning: another worker owns the message now", "error", wire.Wrap("UpdateMessage", "", "", "", err))
		} else {
			log.Warn("not poisoning now (could not confirm ownership); it will be retried", "error", wire.Wrap("UpdateMessage", "", "", "", err))
		}
		return
	}
	receipt := l.receipt
	if resp.PopReceipt != nil {
		receipt = *resp.PopReceipt
	}

	rec := &poisonRecord{
		MessageID:    m.ID,
		Queue:        w.queueName,
		DequeueCount: m.DequeueCount,
		Error:        reason,
		InsertedAt:   m.InsertedAt,
		PoisonedAt:   timing.Now(w.clock).UTC(),
	}
	octx, cancel = w.opContext(ctx)
	defer cancel()
	ptext, err := w.poisonText(octx, m, rec)
	if err != nil {
		log.Error("cannot build the poison record; message left in the work queue", "error", err)
		return
	}
	if err := w.putPoison(octx, ptext); err != nil {
		log.Error("poison queue write failed; message left in the work queue for another try", "error", err)
		return
	}
	if _, err := w.queue.DeleteMessage(octx, l.id, receipt, nil); err != nil {
		log.Error("poisoned but not deleted from the work queue: a duplicate poison record may follow", "error", wire.Wrap("DeleteMessage", "", "", "", err))
		return
	}
	w.stats.poisoned.Add(1)
	log.Warn("message moved to the poison queue", "reason", reason)
}

// poisonText builds the poison message for m, spilling a payload that does
// not fit to a claim-check blob when the worker has a container.
func (w *Worker) poisonText(ctx context.Context, m *Message, rec *poisonRecord) (string, error) {
	env := envelope{Poison: rec}
	if m.env != nil {
		env.Kind, env.Payload, env.Blob = m.env.Kind, m.env.Payload, m.env.Blob
	} else {
		env.Text = m.Text
	}
	text, err := encodeEnvelope(&env)
	if err != nil {
		return "", err
	}
	if len(text) <= maxMessageSize {
		return text, nil
	}
	if w.claims == nil {
		return "", fmt.Errorf("poison record is %d bytes, over the %d-byte message limit, and the worker has no claim-check Container", len(text), maxMessageSize)
	}
	// Deterministic name: a repeated attempt overwrites the same blob.
	name := "poison/" + w.queueName + "/" + m.ID + ".json"
	var data []byte
	if m.env != nil {
		data, env.Payload = env.Payload, nil
	} else {
		data, env.Text = []byte(m.Text), ""
	}
	if err := putBlobOverwrite(ctx, w.claims, name, data); err != nil {
		return "", err
	}
	env.Blob = name
	return encodeEnvelope(&env)
}

// putPoison enqueues a poison record, creating the poison queue on demand.
// Poison records never expire.
func (w *Worker) putPoison(ctx context.Context, text string) error {
	opts := &azqueue.EnqueueMessageOptions{TimeToLive: ptr(int32(-1))}
	_, err := w.poison.EnqueueMessage(ctx, text, opts)
	if err != nil && errors.Is(wire.Wrap("", "", "", "", err), tablekit.ErrNotFound) {
		if _, cerr := w.poison.Create(ctx, nil); cerr != nil && !errors.Is(wire.Wrap("", "", "", "", cerr), tablekit.ErrAlreadyExists) {
			return wire.Wrap("CreateQueue", "", "", "", cerr)
		}
		_, err = w.poison.EnqueueMessage(ctx, text, opts)
	}
	return wire.Wrap("EnqueueMessage", "", "", "", err)
}

// truncate shortens s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
