// Package outbox is the transactional outbox of tablekit's materialized
// views (CQRS): messages written in the same entity group transaction as
// the state change they belong to, relayed to an Azure queue at least once,
// in per-partition order, and handed by the archive worker to their
// handler once by their id.
//
// It adds no rows and no writer of its own: an outbox is an event stream of
// the partition whose state changes (package stream), appended through a
// feed.Feed with the state change as the append's extra actions, so a
// committed transaction's messages are in the stream and a failed one's are
// not. The outbox streams of a Store are those of one prefix, one per
// partition. A Publisher of them (NewPublisher(client, store, prefix, opts))
// has a Handle that is the feed.Subscription enqueueing each of their
// messages to an archive queue, and skipping the feed's other streams;
// NewHandler returns the archive.Handler that applies each message once.
//
//	// The state change and its messages, one EGT (the stream's partition);
//	// the order row's ETag guards the change, the outbox is a log appended
//	// at its end (stream.AnyVersion; an event-sourced entity's own stream,
//	// appended at its expected version, is its outbox too: give its prefix
//	// to NewPublisher):
//	out := stream.ID{PartitionKey: order.PK, Prefix: "outbox"}
//	_, err := f.Append(ctx, out, stream.AnyVersion, []stream.Event{{ID: cmdID, Data: OrderPlaced{...}}},
//		tablekit.MergeAction(orderRow, etag))
//	// The relay (one per feed, leased) enqueues the "outbox" streams' messages,
//	// and drops them from their streams once enqueued (see Retention):
//	pub, err := outbox.NewPublisher(client, store, "outbox", nil) // store: the feed's stream.Store
//	relay, err := f.NewRelay([]feed.Subscription{{Name: "orders-outbox", Handle: pub.Handle}},
//		&feed.RelayOptions{Trim: func(id stream.ID) bool { return id.Prefix == "outbox" }})
//	// A worker applies each once: its effect is a keyed transaction in
//	// the partition that partition(m) names (from the message alone).
//	h, err := outbox.NewHandler(effects, partition, apply, nil) // apply(ctx, m) returns the effect's actions
//	err = mux.Register(outbox.Kind, h)
//
// # A handler per event type
//
// A Publisher enqueues every message under one archive kind (Kind), so one
// handler gets them all and tells them apart by Message.Kind, the kind its
// event is registered under in the stream Store's tablekit.Registry. With
// PublisherOptions.ByEventKind it enqueues each under EventKind(that kind),
// "outbox." + kind, and the worker's archive.Mux hands each event type to
// its own handler:
//
//	pub, err := outbox.NewPublisher(client, store, "outbox", &outbox.PublisherOptions{ByEventKind: true})
//	badges, err := outbox.NewHandler(effects, byEmployee, issueBadge, nil) // decodes a Hired
//	err = mux.Register(outbox.EventKind("Hired"), badges)
//	mail, err := outbox.NewHandler(effects, byEmployee, sendWelcome, nil)  // decodes an Onboarded
//	err = mux.Register(outbox.EventKind("Onboarded"), mail)
//
// Register a handler for every kind the outbox streams hold (and Kind, for
// events without one): the Mux sends a message of a kind it does not know
// to the poison queue. Handlers of different kinds run independently, so a
// stream's messages of two kinds are applied in no set order between them
// (as messages are dequeued in no set order anyway; see below), and a
// handler sees only some versions of a stream: the check of version
// last+1 below would wait forever on a version of another kind. Where a
// handler needs its messages in order, give its kind an outbox stream of
// its own (a Prefix per kind: its versions are then consecutive), or
// only skip versions at or below the last applied. Message.Data
// is the decoded event as JSON, whatever version of its kind it was stored
// under: a handler that meets several versions decodes into a type that
// reads them all.
//
// # Message ids and order
//
// A message's id is its table, stream and version (MessageID:
// "<account>~<table>~<partition>~<prefix>~<version>", from
// feed.Change.Source, Stream and Version), the same however often the
// relay hands it over and enqueues it: the relay delivers at least once (a
// relay that dies after an enqueue and before its checkpoint, or an
// Enqueue whose answer was lost, enqueues the message again), and the id
// is what tells the copies apart from other messages, those of other
// tables on the same queue included (Message.Source names the table).
//
// Messages enqueued before Message.Source existed carry no source and the
// id "<partition>~<prefix>~<version>", which names no table: the handler
// still applies them, once per that id, as it did then. Two tables'
// messages of the same stream id and version share that id: the second
// goes to the poison queue (its data differ: coord.ErrKeyReused) instead
// of being applied, so drain the queue before upgrading if several stream
// tables share it. A message that an old relay enqueued and a new one
// enqueues again (the old one stopped between the enqueue and its
// checkpoint) carries both ids, and is applied once per id: a handler that
// checks the order (see below) applies it once.
//
// Per-partition order means enqueued in order: the relay hands a stream's
// messages to the Publisher one at a time in version order, and version v is
// enqueued only after v-1 was (its Enqueue returned nil). Azure queues do
// not keep that order on the way out: a worker may dequeue v before v-1
// (several workers, a retried message, a visibility timeout that lapsed).
// A handler that needs the order checks it with Message.Version: keep the
// last version applied per stream in the row the effect writes (in the same
// keyed transaction), return no actions for a message at or below it
// (applied already), and fail on one past last+1, which the worker then
// retries until v-1 has been applied (a Retry.BaseDelay paces that).
//
// # What "once" means
//
// NewHandler(t, partition, apply, opts)'s handler calls apply for the
// message, which returns the effect as table actions in the partition of t
// that partition(m) names, and commits them with a coord.Writer as one
// transaction keyed by the message id (coord.Write.Key) and fingerprinted
// by the message's id and data (coord.Write.Fingerprint). The key's record
// is written in the same transaction as the effect, in that partition, so
// the effect is applied exactly once per message id however often the
// message is delivered, enqueued or handled concurrently: a repeat meets
// the record and changes nothing (Result.Replayed; the same if its apply
// read state that changed since and returned other actions), and the
// message is deleted. partition is a function of the message alone, so
// that every copy meets the record: an apply whose actions are in another
// partition (it routed by state it read, which a copy may find changed) is
// refused with a permanent error, nothing written.
//
// This holds while the record lives: opts.KeyTTL, 8 days by default,
// longer than a message can be redelivered (a queue message lives 7 days,
// archive.EnqueueOptions.TimeToLive; a Publisher refuses messages that
// never expire), with a day for the relay's lag. Set it longer if the
// messages live longer, or a relay may lag more. Effects outside the
// returned actions (a mail sent, another partition written by apply
// itself) are at least once: apply runs on every delivery, copies
// included (their transaction is then refused by the record), so make
// them idempotent, and keep apply's reads free of effects.
//
// # Secrets
//
// A property that the stream table encrypts on the client
// (tablekit.Encryption) is kept encrypted at rest; a queue message or a
// claim-check blob would hold it in plaintext. The Publisher refuses to
// enqueue an event that carries one (a *tablekit.ValidationError naming
// the property): the relay reports the refusal at every round and the
// stream's later messages wait behind it. Keep secrets out of outbox
// events: carry what the handler reads them by (the keys of the row that
// holds them, in a table with the same encryption). The feed's other
// streams may hold secrets: the Publisher skips them.
//
// # Retention
//
// An outbox stream's events are messages, needed only until they are
// enqueued: a relay whose RelayOptions.Trim chooses the outbox streams
// (the wiring above) drops each one's events in the round that enqueued
// them and stored the checkpoints of every subscription of the relay
// (package feed, "Retention"); versions, appends and ids go on as before
// (TestDispatchedTrimmed). What a dispatched message then leaves is its
// event id's row, ~96 bytes (none with stream.Options.DropTrimmedIDs, at
// the price of a repeated append of trimmed events no longer being
// recognised), and each stream ~440 bytes in 4 rows whatever its length:
// 118 bytes a message in streams of 20, against 727 untrimmed
// (BENCHMARKS.md, "Retention"). A subscription added later (a second
// Publisher, a replay) finds the trimmed messages gone: it fails those
// streams with stream.ErrTrimmed unless it is feed.Subscription.FromStart.
// Trim only streams that are outboxes alone: an event-sourced entity's own
// stream, its outbox too, is its history, which reads and replays need.
//
// # Costs, in storage transactions
//
//	writing messages     none of their own: they are events of feed.Feed.Append
//	                     (its mark + the 1 EGT that holds the state change)
//	Publisher            1 per message (archive.Client.Enqueue; 2 with a
//	                     claim-check blob), none per change of another
//	                     stream, + the relay's round costs (package feed)
//	trimming             1 stream.Store.Trim per outbox stream and round that
//	                     enqueued some of its messages (~4 requests + 1 EGT per
//	                     100 events): ~0.3 per message when a round enqueues
//	                     20 of a stream, ~3.7 when it enqueues 1
//	NewHandler's handler 1 keyed transaction (+1 read after a lost answer),
//	                     + apply's reads; a repeat: 1 refused transaction
//	                     + 1 read of the record (its fingerprint);
//	                     + the worker's costs (package archive)
//
// # Guarantees
//
// With any number of writing processes, relays contending for each feed's
// lease, several Stores' outboxes on one queue and handler, any number of
// workers, requests failing before they are sent or after the service
// applied them, on Table storage and on Cosmos DB for Table
// (TestChaosOutbox checks each, TestChaosOutboxCosmos behind package
// azurite's Cosmos DB front), and worker processes SIGKILLed while their
// handlers run (TestChaosOutboxWorkerProcesses; a killed relay is the
// feed's TestChaosFeedProcesses): every message of a transaction
// acknowledged to its writer is enqueued at least once and its effect
// applied exactly once (NewHandler's key), once the relays and workers
// catch up; no message of a failed transaction is ever enqueued (it is
// not in the stream), nor its state change applied; no change of a
// stream outside the Publisher's prefix is enqueued; and no property the
// stream table encrypts reaches a queue message or a blob in plaintext.
// Not guaranteed: dequeue order (see above), exactly-once enqueueing
// (copies are expected: the id dedups them), exactly once for effects
// outside apply's actions, or once after the key's record expired.
//
// # Errors
//
// Input refused before sending is a *tablekit.ValidationError matching
// tablekit.ErrInvalidInput whose Op names the operation; a zero Publisher
// refuses so too, and so does Publisher.Handle an event that carries an
// encrypted property, or a change of another Store's table. A message the
// Handler cannot decode, whose id is not its source's, stream's and
// version's, or whose id makes no valid idempotency key, fails
// permanently (archive.Permanent): it goes to the poison queue; so does
// one whose apply returns actions outside partition(m)'s partition, and
// one whose id was applied for other data (coord.ErrKeyReused).
package outbox
