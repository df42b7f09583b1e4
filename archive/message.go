package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/codec"
)

// Message is one queue message as a [Handler] sees it: the queue's
// metadata plus the decoded envelope, with a claim-checked payload already
// fetched from its blob.
type Message struct {
	// ID is the queue's message ID. It is stable across redeliveries, so
	// it identifies the message in logs and in the poison queue.
	ID string
	// DequeueCount is how many times the message has been dequeued,
	// including this time (1 on the first attempt).
	DequeueCount int64
	// InsertedAt is when the message was put in the queue.
	InsertedAt time.Time
	// ExpiresAt is when the queue will drop the message if it is still
	// there.
	ExpiresAt time.Time
	// Kind is the operation kind from the envelope ([Client.Enqueue]'s
	// kind), "" for a message that is not a tablekit envelope.
	Kind string
	// Payload is the operation's payload: the envelope's JSON payload
	// (fetched from the claim-check blob when the payload was too large
	// for the queue), or, for a message that is not a tablekit envelope,
	// the message body itself (base64-decoded when it was base64).
	Payload []byte
	// Blob is the name of the claim-check blob that held the payload, ""
	// when the payload travelled in the message.
	Blob string
	// LastError is the error a previous attempt recorded in the message,
	// "" on the first attempt or when none was recorded.
	LastError string
	// Text is the message text exactly as the queue returned it.
	Text string

	env *envelope
}

// Decode unmarshals the JSON payload into v. A payload that is not valid
// JSON for v gives a *tablekit.DecodeError (Op "archive.Message.Decode")
// marked [Permanent]: retrying cannot fix it.
func (m *Message) Decode(v any) error {
	const op = "archive.Message.Decode"
	if m == nil || len(m.Payload) == 0 {
		return Permanent(invalid(op, "", "the Message is nil or has no payload"))
	}
	if err := json.Unmarshal(m.Payload, v); err != nil {
		return Permanent(&tablekit.DecodeError{Op: op, Detail: fmt.Sprintf("message %s (kind %q): payload: %v", m.ID, m.Kind, err)})
	}
	return nil
}

// Handler applies the change one message describes; m is the message,
// with its ID, dequeue count and payload. It must be idempotent: a
// message can be delivered more than once (after a crash, a lost
// response, or when its visibility timeout lapses), so every step must be
// safe to repeat: [tablekit.Table.Upsert] (insert or replace),
// [tablekit.Table.DeleteIfExists], [UpsertBlob], [DeleteBlobIfExists].
// Returning nil deletes the message; returning an error leaves it in the
// queue for another attempt, until WorkerOptions.Retry.MaxAttempts
// attempts have failed and it moves to the poison queue ([Permanent]: at
// once). An error that matches tablekit.ErrThrottled also makes the
// worker run fewer handlers at once for a while. Handle should return
// promptly when ctx ends.
type Handler interface {
	Handle(ctx context.Context, m *Message) error
}

// HandlerFunc adapts a function to [Handler].
type HandlerFunc func(ctx context.Context, m *Message) error

// Handle calls f(ctx, m); a nil f fails permanently.
func (f HandlerFunc) Handle(ctx context.Context, m *Message) error {
	if f == nil {
		return Permanent(invalid("archive.HandlerFunc.Handle", "", "the HandlerFunc is nil"))
	}
	return f(ctx, m)
}

// ErrPermanent marks an error that retrying cannot fix (a malformed
// payload, an unknown kind): the worker moves the message to the poison
// queue at once instead of after Retry.MaxAttempts attempts. Check with
// errors.Is; mark with [Permanent].
var ErrPermanent = errors.New("archive: permanent failure")

// Permanent marks err as permanent (see [ErrPermanent]); the result
// matches both err and ErrPermanent with errors.Is. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrPermanent) {
		return err
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string   { return e.err.Error() }
func (e *permanentError) Unwrap() []error { return []error{e.err, ErrPermanent} }

// invalid returns the refusal of op (an exported operation, qualified:
// "archive.OpenWorker", "archive.Client.Enqueue", ...): a *tablekit.ValidationError
// matching tablekit.ErrInvalidInput. property names the option or argument
// at fault ("" for none).
func invalid(op, property, detail string) error {
	return &tablekit.ValidationError{Op: op, Property: property, Detail: detail, Err: tablekit.ErrInvalidInput}
}

// withOp names op in err's tablekit error when that names no operation
// yet (the root's name checks leave it empty), so every refusal says which
// archive operation refused (internal/opname, the module's one way).
func withOp(op string, err error) error { return codec.WithOp(op, err) }
