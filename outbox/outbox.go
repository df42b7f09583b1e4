package outbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/stream"
)

// Kind is the archive message kind a Publisher enqueues under by default:
// register the Handler for it on the worker's archive.Mux. A Publisher
// with PublisherOptions.ByEventKind enqueues under EventKind instead.
const Kind = "outbox.message"

// EventKind returns the archive message kind under which a Publisher with
// PublisherOptions.ByEventKind enqueues the messages whose event is of
// kind (the kind it is registered under in the stream Store's
// patterns.Registry): "outbox." + kind. Register each event type's
// handler for it on the worker's archive.Mux:
//
//	err = mux.Register(outbox.EventKind("Hired"), badges)
func EventKind(kind string) string { return "outbox." + kind }

// Message is one outbox message as it travels in an archive envelope's
// payload: the event of an outbox stream, with its id.
type Message struct {
	// ID is the message's id, MessageID(Stream, Version): the same for
	// every copy of the message the relay enqueues.
	ID string `json:"id"`
	// Stream is the outbox stream the message was written to; its
	// PartitionKey is the partition of the state change.
	Stream stream.ID `json:"stream"`
	// Version is the message's version in Stream, from 1: the order in
	// which the stream's messages were written and enqueued.
	Version int64 `json:"version"`
	// EventID is the event's id in its stream, "" when it was appended
	// without one.
	EventID string `json:"eventId,omitempty"`
	// Kind is the event's kind (feed.Change.Kind: the kind its type is
	// registered under), "" when it has none.
	Kind string `json:"kind,omitempty"`
	// Data is the event, as JSON (json.Marshal of the decoded event).
	Data json.RawMessage `json:"data"`
}

// Decode unmarshals the message's Data into v. A Data that is not valid
// JSON for v gives an error marked archive.Permanent: retrying cannot fix
// it.
func (m Message) Decode(v any) error {
	if err := json.Unmarshal(m.Data, v); err != nil {
		return archive.Permanent(fmt.Errorf("outbox: Message.Decode: message %s: %w", m.ID, err))
	}
	return nil
}

// MessageID returns the id of the message of version v in stream id:
// "<partition>~<prefix>~<version in 10 digits>". A prefix holds no "~",
// so the id names one stream and version.
func MessageID(id stream.ID, v int64) string {
	return fmt.Sprintf("%s~%s~%010d", id.PartitionKey, id.Prefix, v)
}

// recordKey is the coord.Write key under which a Handler records message
// id: the id itself, or, when the record's RowKey (coord's "~coord~key~" +
// the key) would pass 255 bytes (Cosmos DB for Table's RowKey limit;
// Table storage's is 1 KiB of UTF-16, which a stream partition near 500
// characters passes), "sha256~" + the id's SHA-256 in hex: the same for
// every copy of the message, and short enough on both services.
func recordKey(id string) string {
	if len(coord.ReservedPrefix)+len("key~")+len(id) <= 255 {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256~" + hex.EncodeToString(sum[:])
}

// Publisher enqueues the messages of outbox streams to an archive queue:
// its Handle is a feed.Subscription's, so the feed's relay hands it each
// message at least once, one at a time and in version order per stream.
// Make one with NewPublisher; it is safe for concurrent use. The zero
// Publisher refuses every call with an error matching
// tablekit.ErrInvalidInput.
type Publisher struct {
	client  *archive.Client
	kind    string
	byEvent bool
	eopts   *archive.EnqueueOptions
}

// PublisherOptions configure a Publisher. The zero value (or nil) means the
// defaults.
type PublisherOptions struct {
	// Kind is the archive message kind of the messages ("" means Kind),
	// and of those whose event has no kind when ByEventKind is set.
	Kind string
	// ByEventKind enqueues each message under EventKind(its event's
	// kind) rather than under Kind, so that a worker's archive.Mux hands
	// each event type to a handler of its own. (EventKind("message") is
	// the default Kind: an event kind named "message" shares it.)
	ByEventKind bool
	// Enqueue configures each message's Enqueue (delay, time-to-live);
	// nil means archive's defaults.
	Enqueue *archive.EnqueueOptions
}

// NewPublisher returns a Publisher that enqueues through client. It sends
// nothing.
func NewPublisher(client *archive.Client, opts *PublisherOptions) (*Publisher, error) {
	if client == nil {
		return nil, &tablekit.ValidationError{Op: "outbox.NewPublisher", Property: "client", Detail: "nil archive.Client", Err: tablekit.ErrInvalidInput}
	}
	p := &Publisher{client: client, kind: Kind}
	if opts != nil {
		if opts.Kind != "" {
			p.kind = opts.Kind
		}
		p.byEvent = opts.ByEventKind
		p.eopts = opts.Enqueue
	}
	return p, nil
}

// Handle enqueues change c as a Message under the Publisher's kind
// (EventKind(c.Kind) with PublisherOptions.ByEventKind). An error (the
// event does not encode as JSON, the enqueue failed or its outcome is
// unknown) leaves the stream's checkpoint where it was, so the relay
// hands c over again in its next round. Costs: 1 storage transaction (2
// with a claim-check blob).
func (p *Publisher) Handle(ctx context.Context, c feed.Change) error {
	if p == nil || p.client == nil {
		return &tablekit.ValidationError{Op: "outbox.Publisher.Handle", Detail: "zero Publisher: make one with outbox.NewPublisher", Err: tablekit.ErrInvalidInput}
	}
	data, err := json.Marshal(c.Data)
	if err != nil {
		return fmt.Errorf("outbox: Publisher.Handle: message %s: %w", MessageID(c.Stream, c.Version), err)
	}
	m := Message{ID: MessageID(c.Stream, c.Version), Stream: c.Stream, Version: c.Version, EventID: c.EventID, Kind: c.Kind, Data: data}
	kind := p.kind
	if p.byEvent && c.Kind != "" {
		kind = EventKind(c.Kind)
	}
	if _, err := p.client.Enqueue(ctx, kind, m, p.eopts); err != nil {
		return fmt.Errorf("outbox: Publisher.Handle: message %s: %w", m.ID, err)
	}
	return nil
}

// NewHandler returns the archive.Handler that applies each outbox message
// once by its id: apply returns the message's effect as actions in one
// partition of w's table, and the handler commits them in one transaction
// keyed by the message id (coord.Write{Key: m.ID}; an id too long for a
// record's RowKey, from a stream partition of hundreds of bytes, by its
// SHA-256 instead), so the effect is applied
// exactly once per id however often the message is delivered (see the
// package doc for how long: w's KeyTTL). A repeat, or apply returning no
// actions, writes nothing and the message is deleted. An error of apply is
// the handler's (the worker retries the message; archive.Permanent poisons
// it). It sends nothing.
//
// Costs per message: apply's reads, + 1 keyed transaction (+1 read after a
// lost answer); a repeat: 1 refused transaction.
func NewHandler(w *coord.Writer[tablekit.Entity], apply func(ctx context.Context, m Message) ([]tablekit.Action[tablekit.Entity], error)) (archive.Handler, error) {
	if w == nil {
		return nil, &tablekit.ValidationError{Op: "outbox.NewHandler", Property: "w", Detail: "nil coord.Writer", Err: tablekit.ErrInvalidInput}
	}
	if apply == nil {
		return nil, &tablekit.ValidationError{Op: "outbox.NewHandler", Property: "apply", Detail: "nil apply function", Err: tablekit.ErrInvalidInput}
	}
	return archive.HandlerFunc(func(ctx context.Context, am *archive.Message) error {
		var m Message
		if err := am.Decode(&m); err != nil {
			return err
		}
		if m.ID == "" || m.ID != MessageID(m.Stream, m.Version) {
			return archive.Permanent(fmt.Errorf("outbox: Handler: queue message %s is not an outbox message (id %q)", am.ID, m.ID))
		}
		acts, err := apply(ctx, m)
		if err != nil || len(acts) == 0 {
			return err
		}
		if _, err := w.Transaction(ctx, coord.Write{Key: recordKey(m.ID)}, acts...); err != nil {
			err = fmt.Errorf("outbox: Handler: message %s: %w", m.ID, err)
			var ve *tablekit.ValidationError
			if errors.As(err, &ve) { // apply's actions or the id refused as input: a retry cannot help
				return archive.Permanent(err)
			}
			return err
		}
		return nil
	}), nil
}
