package outbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/stream"
)

// Kind is the archive message kind a Publisher enqueues under by default:
// register the Handler for it on the worker's archive.Mux. A Publisher
// with PublisherOptions.ByEventKind enqueues under EventKind instead.
const Kind = "outbox.message"

// EventKind returns the archive message kind under which a Publisher with
// PublisherOptions.ByEventKind enqueues the messages whose event is of
// kind (the kind it is registered under in the stream Store's
// tablekit.Registry): "outbox." + kind. Register each event type's
// handler for it on the worker's archive.Mux:
//
//	err = mux.Register(outbox.EventKind("Hired"), badges)
func EventKind(kind string) string { return "outbox." + kind }

// Message is one outbox message as it travels in an archive envelope's
// payload: the event of an outbox stream, with its id.
type Message struct {
	// ID is the message's id, MessageID(Source, Stream, Version): the
	// same for every copy of the message the relay enqueues, and
	// different for every other message, whatever table it comes from.
	ID string `json:"id"`
	// Source names the table the outbox stream is in, as
	// "<account>/<table>" (feed.Change.Source). It is "" only in a
	// message enqueued before Source existed (see NewHandler).
	Source string `json:"source,omitempty"`
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

// MessageID returns the id of the message of version v in stream id of the
// table source ("<account>/<table>", feed.Change.Source):
// "<account>~<table>~<partition>~<prefix>~<version in 10 digits>". Account
// and table names hold no "~", nor does a prefix, so the id names one
// table, stream and version: messages of two tables never share one. It
// holds no '/' (a RowKey may not), so it can key the handler's record.
func MessageID(source string, id stream.ID, v int64) string {
	return strings.Replace(source, "/", "~", 1) + "~" + legacyID(id, v)
}

// legacyID is the id of a message enqueued before Source existed:
// "<partition>~<prefix>~<version in 10 digits>", which names no table.
func legacyID(id stream.ID, v int64) string {
	return fmt.Sprintf("%s~%s~%010d", id.PartitionKey, id.Prefix, v)
}

// validSource reports whether s is a table's "<account>/<table>": two
// names, neither empty, with no "~" and nothing a RowKey refuses.
func validSource(s string) bool {
	account, table, ok := strings.Cut(s, "/")
	return ok && account != "" && table != "" && !strings.Contains(s, "~") &&
		keys.Validate(account) == nil && keys.Validate(table) == nil
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

// fingerprint returns what message m's record stands for (its
// coord.Write.Fingerprint): a SHA-256 of its id and data, the same for
// every copy of m, whatever actions apply computes for it.
func fingerprint(m Message) string {
	h := sha256.New()
	h.Write([]byte(m.ID))
	h.Write([]byte{0})
	h.Write(m.Data)
	return hex.EncodeToString(h.Sum(nil))
}

// Publisher enqueues the messages of one Store's outbox streams (those of
// one prefix) to an archive queue: its Handle is a feed.Subscription's, so
// the feed's relay hands it each message at least once, one at a time and
// in version order per stream. Make one with NewPublisher; it is safe for
// concurrent use. The zero Publisher refuses every call with an error
// matching tablekit.ErrInvalidInput.
type Publisher struct {
	client  *archive.Client
	source  string   // the Store's table, "<account>/<table>"
	prefix  string   // the outbox streams' prefix
	secret  []string // the properties the Store's table encrypts
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
	// nil means archive's defaults (7 days to live). A negative
	// TimeToLive (never expire) is refused: a message must expire before
	// its handler's record does (NewHandler's KeyTTL), or a late copy is
	// applied again.
	Enqueue *archive.EnqueueOptions
}

// NewPublisher returns a Publisher of the outbox streams of store whose
// prefix is prefix (stream.ID.Prefix: every partition's stream of that
// prefix is an outbox), enqueueing through client. Its Handle skips the
// changes of the feed's other streams, so that the subscription of a
// feed's relay publishes the outbox and nothing else. It sends nothing.
//
// A property that store's table encrypts on the client
// (tablekit.Encryption) never leaves in plaintext: Handle refuses an event
// that carries one (see Publisher.Handle).
func NewPublisher(client *archive.Client, store *stream.Store, prefix string, opts *PublisherOptions) (*Publisher, error) {
	const op = "outbox.NewPublisher"
	st := store.Table()
	switch {
	case client == nil:
		return nil, invalid(op, "client", "nil archive.Client")
	case st == nil:
		return nil, invalid(op, "store", "nil or zero stream.Store (use stream.NewStore)")
	case strings.Contains(prefix, "~"):
		return nil, invalid(op, "prefix", fmt.Sprintf("prefix %q contains \"~\", which ends a stream's prefix: no stream has it", prefix))
	case keys.Validate(prefix) != nil:
		return nil, invalid(op, "prefix", fmt.Sprintf("prefix %q: %v", prefix, keys.Validate(prefix)))
	}
	p := &Publisher{client: client, source: st.Account().Name() + "/" + st.Name(), prefix: prefix, secret: st.Encrypted(), kind: Kind}
	if !validSource(p.source) {
		return nil, invalid(op, "store", fmt.Sprintf("the store's table %q makes no message id: an account or table name with \"~\" or a character a RowKey refuses", p.source))
	}
	if opts != nil {
		if opts.Enqueue != nil && opts.Enqueue.TimeToLive < 0 {
			return nil, invalid(op, "Enqueue.TimeToLive", "messages that never expire outlive any handler's idempotency record (NewHandler's KeyTTL): a copy handled after it expired would be applied again; give them a time-to-live shorter than the handler's KeyTTL (0: 7 days)")
		}
		if opts.Kind != "" {
			p.kind = opts.Kind
		}
		p.byEvent = opts.ByEventKind
		p.eopts = opts.Enqueue
	}
	return p, nil
}

// Handle enqueues change c, an event of one of the Publisher's outbox
// streams, as a Message under the Publisher's kind (EventKind(c.Kind) with
// PublisherOptions.ByEventKind), and returns nil for a change of another
// stream, which it skips. A change of another Store's table (c.Source; ""
// is taken for the Publisher's own) is refused: the Publisher is not the
// feed's.
//
// An event that carries a property the Store's table encrypts (a field of
// its type, or of a tablekit.Entity) is refused, and nothing is
// enqueued: the message would hold its plaintext. The refusal, a
// *tablekit.ValidationError naming the property and matching
// tablekit.ErrInvalidInput, comes back at every round, and holds the
// stream's later messages back (their order is kept): keep secrets out of
// outbox events (carry what the handler reads them by).
//
// Any other error (the event does not encode as JSON, the enqueue failed
// or its outcome is unknown) leaves the stream's checkpoint where it was,
// so the relay hands c over again in its next round. Costs: 1 storage
// transaction (2 with a claim-check blob); a skipped change, none.
func (p *Publisher) Handle(ctx context.Context, c feed.Change) error {
	const op = "outbox.Publisher.Handle"
	if p == nil || p.client == nil {
		return invalid(op, "", "zero Publisher: make one with outbox.NewPublisher")
	}
	if c.Stream.Prefix != p.prefix {
		return nil // not an outbox stream
	}
	source := c.Source
	if source == "" {
		source = p.source
	}
	id := MessageID(source, c.Stream, c.Version)
	if source != p.source {
		return invalid(op, "Source", fmt.Sprintf("message %s: a change of table %s handed to the Publisher of %s: give NewPublisher the Store the feed appends to", id, source, p.source))
	}
	if err := p.check(op, id, c); err != nil {
		return err
	}
	data, err := json.Marshal(c.Data)
	if err != nil {
		return fmt.Errorf("outbox: Publisher.Handle: message %s: %w", id, err)
	}
	m := Message{ID: id, Source: source, Stream: c.Stream, Version: c.Version, EventID: c.EventID, Kind: c.Kind, Data: data}
	kind := p.kind
	if p.byEvent && c.Kind != "" {
		kind = EventKind(c.Kind)
	}
	if _, err := p.client.Enqueue(ctx, kind, m, p.eopts); err != nil {
		return fmt.Errorf("outbox: Publisher.Handle: message %s: %w", id, err)
	}
	return nil
}

// check refuses change c (message id) when its event carries a property
// the Store's table encrypts.
func (p *Publisher) check(op, id string, c feed.Change) error {
	if len(p.secret) == 0 {
		return nil
	}
	e, err := codec.EncodeBody(c.Data) // the properties the event is stored as (events need no key fields)
	if err != nil {
		return invalid(op, "Data", fmt.Sprintf("message %s: the table %s encrypts %s, and the event (%T) does not encode as a table entity, so whether it carries them cannot be told: %v",
			id, p.source, strings.Join(p.secret, ", "), c.Data, err))
	}
	for _, name := range p.secret {
		if _, ok := e.Properties[name]; ok {
			return invalid(op, name, fmt.Sprintf("message %s (event kind %q): the stream's table %s encrypts %s, which the queue message would carry in plaintext; keep secrets out of outbox events (carry what the handler reads them by, e.g. the keys of their row)",
				id, c.Kind, p.source, name))
		}
	}
	return nil
}

// defaultKeyTTL is how long NewHandler keeps a message's idempotency
// record by default: 8 days, longer than a message can be redelivered
// (a queue message lives 7 days unless PublisherOptions.Enqueue says
// otherwise), with a day for the relay's lag.
const defaultKeyTTL = 8 * 24 * time.Hour

// NewHandler returns the archive.Handler that applies each outbox message
// once by its id. partition(m) names the partition of t its effect is in,
// a function of the message alone; apply returns the effect as actions in
// that partition, and the handler commits them in one transaction keyed
// by the message id (coord.Write{Key: m.ID}; an id too long for a record's
// RowKey, from a stream partition of hundreds of bytes, by its SHA-256
// instead) and fingerprinted by the message (Write.Fingerprint: a SHA-256
// of its id and data). The key's record is in the partition too, so the
// effect is applied exactly once per id however often the message is
// delivered, for as long as the record lives (opts.KeyTTL); a copy whose
// apply computed other actions (it read state that changed since) still
// meets the record, and changes nothing. It sends nothing.
//
// An action of apply in another partition than partition(m)'s is refused,
// nothing written, with a permanent error (archive.Permanent: the message
// is poisoned): a copy whose apply read other state and routed elsewhere
// would not meet the record, and would be applied again. A message whose
// id was applied for other data (coord.ErrKeyReused: two old-format
// messages of two tables, see below) is refused permanently too, nothing
// written. A repeat, or
// apply returning no actions, writes nothing and the message is deleted.
// An error of apply is the handler's (the worker retries the message;
// archive.Permanent poisons it).
//
// opts configure the handler's coord.Writer on t (nil: the defaults), but
// a zero KeyTTL means 8 days, not coord's 24 h: longer than a message can
// be redelivered (its queue time-to-live, 7 days by default, plus the
// relay's lag). Set a longer one for messages that live longer.
//
// A message enqueued before Source existed (Source "", its id
// "<partition>~<prefix>~<version>") is accepted and recorded under that
// id, as it was then: a copy of it enqueued before the upgrade is applied
// once (see the package doc, "Message ids and order").
//
// Costs per message: apply's reads, + 1 keyed transaction (+1 read after a
// lost answer); a repeat: 1 refused transaction + 1 read of the record.
func NewHandler(t *tablekit.Table[tablekit.Entity], partition func(m Message) string, apply func(ctx context.Context, m Message) ([]tablekit.Action[tablekit.Entity], error), opts *coord.WriterOptions) (archive.Handler, error) {
	const op = "outbox.NewHandler"
	switch {
	case t == nil:
		return nil, invalid(op, "t", "nil table")
	case partition == nil:
		return nil, invalid(op, "partition", "nil partition function")
	case apply == nil:
		return nil, invalid(op, "apply", "nil apply function")
	}
	var o coord.WriterOptions
	if opts != nil {
		o = *opts
	}
	if o.KeyTTL == 0 {
		o.KeyTTL = defaultKeyTTL
	}
	w, err := coord.NewWriter(t, &o)
	if err != nil {
		var ve *tablekit.ValidationError
		if errors.As(err, &ve) {
			ve.Op = op
		}
		return nil, err
	}
	return archive.HandlerFunc(func(ctx context.Context, am *archive.Message) error {
		var m Message
		if err := am.Decode(&m); err != nil {
			return err
		}
		switch {
		case m.Source == "" && m.ID != "" && m.ID == legacyID(m.Stream, m.Version): // enqueued before Source existed
		case m.ID == "" || !validSource(m.Source) || m.ID != MessageID(m.Source, m.Stream, m.Version):
			return archive.Permanent(fmt.Errorf("outbox: Handler: queue message %s is not an outbox message (id %q, source %q)", am.ID, m.ID, m.Source))
		}
		pk := partition(m)
		acts, err := apply(ctx, m)
		if err != nil || len(acts) == 0 {
			return err
		}
		for _, a := range acts {
			if got := a.Value().PartitionKey; got != pk {
				return archive.Permanent(invalid("outbox.Handler", "PartitionKey", fmt.Sprintf("message %s: apply returned an action in partition %q, not in partition(m)'s %q, where the message's record is: a copy routed elsewhere would be applied again; route by the message alone", m.ID, got, pk)))
			}
		}
		if _, err := w.Transaction(ctx, coord.Write{Key: recordKey(m.ID), Fingerprint: fingerprint(m)}, acts...); err != nil {
			err = fmt.Errorf("outbox: Handler: message %s: %w", m.ID, err)
			var ve *tablekit.ValidationError
			if errors.As(err, &ve) || errors.Is(err, coord.ErrKeyReused) { // refused as input, or the id applied for other data: a retry cannot help
				return archive.Permanent(err)
			}
			return err
		}
		return nil
	}), nil
}

// invalid returns op's refusal of bad input.
func invalid(op, property, detail string) error {
	return &tablekit.ValidationError{Op: op, Property: property, Detail: detail, Err: tablekit.ErrInvalidInput}
}
