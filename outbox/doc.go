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
// not. A Publisher's Handle is the feed.Subscription that enqueues each message to an
// archive queue; NewHandler returns the archive.Handler that applies each message
// once.
//
//	// The state change and its messages, one EGT (the stream's partition);
//	// the order row's ETag guards the change, the outbox is a log appended
//	// at its end (stream.AnyVersion; an event-sourced entity's own stream,
//	// appended at its expected version, is its outbox too):
//	out := stream.ID{PartitionKey: order.PK, Prefix: "outbox"}
//	_, err := f.Append(ctx, out, stream.AnyVersion, []stream.Event{{ID: cmdID, Data: OrderPlaced{...}}},
//		tablekit.MergeAction(orderRow, etag))
//	// The relay (one per feed, leased) enqueues them:
//	pub, err := outbox.NewPublisher(client, nil)
//	relay, err := f.NewRelay([]feed.Subscription{{Name: "orders-outbox", Handle: pub.Handle}}, nil)
//	// A worker applies each once: its effect is a keyed transaction.
//	h, err := outbox.NewHandler(writer, apply) // apply(ctx, m) returns the effect's actions
//	err = mux.Register(outbox.Kind, h)
//
// # A handler per event type
//
// A Publisher enqueues every message under one archive kind (Kind), so one
// handler gets them all and tells them apart by Message.Kind, the kind its
// event is registered under in the stream Store's patterns.Registry. With
// PublisherOptions.ByEventKind it enqueues each under EventKind(that kind),
// "outbox." + kind, and the worker's archive.Mux hands each event type to
// its own handler:
//
//	pub, err := outbox.NewPublisher(client, &outbox.PublisherOptions{ByEventKind: true})
//	badges, err := outbox.NewHandler(writer, issueBadge)  // decodes a Hired
//	err = mux.Register(outbox.EventKind("Hired"), badges)
//	mail, err := outbox.NewHandler(writer, sendWelcome)   // decodes an Onboarded
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
// A message's id is its stream and version (MessageID), the same however
// often the relay hands it over and enqueues it: the relay delivers at least
// once (a relay that dies after an enqueue and before its checkpoint, or an
// Enqueue whose answer was lost, enqueues the message again), and the id is
// what tells the copies apart from other messages.
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
// NewHandler(w, apply)'s handler calls apply for the message, which returns the effect as
// table actions in one partition, and commits them with coord.Writer as one
// transaction keyed by the message id (coord.Write.Key). The key's record is
// written in the same transaction as the effect, so the effect is applied
// exactly once per message id however often the message is delivered,
// enqueued or handled concurrently: a repeat meets the record and changes
// nothing (Result.Replayed), and the message is deleted. This holds while the
// record lives: set coord.WriterOptions.KeyTTL longer than a message can be
// redelivered (the queue's time-to-live, 7 days by default, plus the relay's
// lag). Effects outside the returned actions (a mail sent, another
// partition written by apply itself) are at least once: apply runs on every
// delivery, copies included (their transaction is then refused by the
// record), so make them idempotent, and keep apply's reads free of effects.
//
// # Costs, in storage transactions
//
//	writing messages     none of their own: they are events of feed.Feed.Append
//	                     (its mark + the 1 EGT that holds the state change)
//	Publisher            1 per message (archive.Client.Enqueue; 2 with a
//	                     claim-check blob), + the relay's round costs (package feed)
//	NewHandler's handler 1 keyed transaction (+1 read after a lost answer),
//	                     + apply's reads; a repeat: 1 refused transaction;
//	                     + the worker's costs (package archive)
//
// # Guarantees
//
// With any number of writing processes, relays contending for the feed's
// lease, any number of workers, requests failing before they are sent
// or after the service applied them, on Table storage and on Cosmos DB
// for Table (TestChaosOutbox checks each, TestChaosOutboxCosmos behind
// package azurite's Cosmos DB front), and worker processes SIGKILLed while
// their handlers run (TestChaosOutboxWorkerProcesses; a killed relay is the
// feed's TestChaosFeedProcesses): every
// message of a transaction acknowledged to its writer is enqueued at least
// once and its effect applied exactly once (NewHandler's key), once the
// relays and workers catch up; no message of a failed transaction is ever
// enqueued (it is not in the stream), nor its state change applied.
// Not guaranteed: dequeue order (see above), exactly-once enqueueing
// (copies are expected: the id dedups them), exactly once for effects
// outside apply's actions, or once after the key's record expired.
//
// # Errors
//
// Input refused before sending is a *tablekit.ValidationError matching
// tablekit.ErrInvalidInput whose Op names the operation; a zero Publisher
// refuses so too. A message the Handler cannot decode, or whose id makes no
// valid idempotency key, fails permanently (archive.Permanent): it goes to
// the poison queue.
package outbox
