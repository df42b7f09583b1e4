// Package stream is event streams on Table storage: append-only sequences
// of typed events with versions 1, 2, 3..., appended under optimistic
// concurrency in one entity group transaction (EGT) each, idempotent when
// events carry ids, and read forward or backward in pages. It is the
// first part of tablekit's materialized views (CQRS); Append's extra
// actions are how a change record, a snapshot or a view row of the stream
// joins an append's transaction.
//
//	type Placed struct{ Item string `table:"Item"` } // an event type: no key fields needed
//	reg := &patterns.Registry{}
//	err := patterns.Register[Placed](reg, "Placed", 1)
//	s, err := stream.NewStore(table.AsEntities(), reg, nil)
//	id := stream.ID{PartitionKey: "order-17"}
//	r, err := s.Append(ctx, id, 0, []stream.Event{{ID: cmdID, Data: Placed{Item: "pen"}}})
//	// r.First == 1, r.Last == 1; the next append expects version 1
//	for ev, err := range s.Forward(ctx, id, 1) { ... ev.Version, ev.Data.(Placed) ... }
//
// # Rows
//
// A stream ([ID]) lives in one partition. Its RowKeys all start with the
// stream's Prefix and "~"; a prefix holds no "~", so several streams share
// a partition under different prefixes (the empty prefix too) without
// sharing a row. An append writes one stream: its extra actions may write
// any other row of the partition, but not another stream's rows, so the
// events of two streams never commit together (an outbox of an
// event-sourced entity is its own stream: its events are the messages,
// see package outbox):
//
//	<prefix>~ev~0000000042    the event of version 42: its data's properties, its type
//	                          value ("EntityType": "Placed.v1", as patterns.Registry
//	                          writes it), "_id" (its id, if any) and, on the first event
//	                          of each append, "_append" (a random stamp of the append)
//	<prefix>~head~0000000042  the head row: the stream is at version 42 ("Version")
//	<prefix>~id~<event id>    an event id, holding its event's version ("Version")
//
// Versions have 10 digits (up to 9,999,999,999) so that RowKey order is
// version order. Keep other rows of the partition off these forms: Append
// refuses extra actions on them, and other writes must not touch them (a
// stream whose rows were changed by others is not one this package can
// vouch for).
//
// # Appends
//
// Append(ctx, id, expectedVersion, events, extra...) is one EGT, in this
// order: an insert of each event's id row, the delete of the head row of
// expectedVersion (none for 0), the insert of the head row of the new
// version, the inserts of the event rows expectedVersion+1..., then the
// caller's extra actions. The version is in the head row's key, so the
// append is conditional on the version by the key alone (the delete finds
// the head row only at expectedVersion; an event row already there fails
// its insert): no ETag has to be read first, and an append costs 1
// transaction whoever appended last. Expected version 0 is a new stream:
// it succeeds only if the stream has no event 1. AnyVersion appends at
// the end of a stream used as a log: Append reads the version first, and
// tries again at the current version after a conflict.
//
// A stream at another version refuses the append as a whole, with a
// *[ConflictError] that says the expected and current version (matching
// tablekit.ErrPreconditionFailed). A refused extra action refuses it too
// (a *tablekit.TransactionError whose Index counts the extra actions).
//
// # Event ids and lost answers
//
// Events may carry ids (all of an append's or none). Their id rows are
// written in the append's EGT, so an id is recorded exactly when its event
// is, in the same stream. An append repeated with the same ids in the same
// order, whatever version it expects (a retry after a lost answer, a
// message handled again after a crash), finds them recorded and returns
// the first append's Result (the same versions, Replayed set; its extra
// actions are not sent). An append some of whose ids are recorded but not
// as this append (another append used them, or in another order) is
// refused with [ErrPartlyApplied]. Ids are scoped to their stream and kept
// for its life: an id row per event is the storage cost of idempotency.
//
// Streamstone, the reference event store on Table storage, records ids the
// same way but reports a repeat as a duplicate-event error (its issue #47
// asks what they are for), and its callers must settle a lost answer
// themselves. Here an append never ends in tablekit.ErrOutcomeUnknown:
// when a try's answer is lost (a broken connection, a 500 after the
// service applied it, which the SDK's retry then meets as a conflict),
// Append reads the first event's row of the versions it wrote: the
// append's stamp there means it was applied (its versions are returned);
// otherwise, with ids, the id rows tell whether an earlier append
// recorded them; else nothing was applied and Append sends it again (a try
// still in flight cannot apply as well: both are conditional on the same
// head row). Only when the settling reads fail for all of Options.Retry's
// attempts is the error ErrOutcomeUnknown. Without ids a lost answer is
// settled the same way, within the call; what ids add is that a repeat
// of the call (the caller's own retry, after its process lost the
// acknowledgement) is recognised instead of appended again. An append at
// AnyVersion settles each try so, and plans its next try at a later
// version only after it saw the stream past the version the last try
// expected, where that try can no longer land: it too is applied once.
//
// # Limits, and appends that do not fit
//
// An append is one EGT: at most 100 actions (its events, their id rows, 1
// head action for a new stream and 2 otherwise, and the extra actions: 99
// events on a new stream, 98 after, 49 with ids), at most 4 MiB (2 MB on
// Azure Cosmos DB for Table), each entity at most 1 MiB with at most 252
// properties (two of which this package may use). An append over a limit
// is refused before anything is sent, with an error naming the limit
// (tablekit.ErrTooLarge). Model around it:
//
//   - More events than fit: append them in several appends, each with ids,
//     expecting the version the previous one returned. Each append is
//     atomic and idempotent, the sequence is not: a reader may see the
//     first part before the rest, and a process that dies in between
//     leaves the rest to its retry (which the ids make safe). Make the
//     event that completes the sequence say so when readers must know.
//   - Events too large: keep the payload out of the row. Store it first
//     (patterns.Large for an entity with large properties, or a blob named
//     by the event's id, written idempotently), then append an event that
//     references it.
//   - A big extra (a snapshot over 1 MiB): patterns.Wide splits an entity
//     over several rows, but its own transaction; write snapshots every N
//     events, outside the append, at the version they hold.
//
// # Reads
//
// Forward and Backward read a stream in ranges of Options.PageSize
// versions (default 100), one range query each, and order each range
// themselves: Azure Cosmos DB for Table answers queries in no key order
// (package azurite's front in Cosmos mode does too), so a bounded range of
// versions, sorted on the client, is what makes both directions work on
// both services. A range that Cosmos DB answers in several pages while an
// append lands may show a later version without an earlier one; Forward
// then reads again from the gap. Resume a read from the last version seen
// + 1 (or - 1 backward): versions are their own cursor. Each event's Data
// is decoded by the Registry into its registered type (a struct value;
// key fields, if the type has them, hold the event row's keys), or a
// tablekit.Entity for a kind it does not know; RecordedEvent.Time is the
// row's Timestamp.
//
// # Costs, in storage transactions
//
//	Append              1 EGT, new stream or not, with ids or not, with extra actions
//	  a conflict        the refused EGT + 1 query (the head row, for Current)
//	  a repeat (ids)    the refused EGT + 2 reads (the first id row, then its events)
//	  at AnyVersion     + 1 query (the head row) first; per append that came first:
//	                    the refused EGT + 1 query, and 1 EGT again
//	  a lost answer     + the SDK's retry of the EGT (refused) + 1 read (the first event
//	                    row); when not this call's, with ids: + 1 read (the first id
//	                    row; + 1 query of its events when it is recorded); + 1 EGT to
//	                    send it again when nothing was applied
//	Version             1 query (the head row)
//	Forward             1 query per PageSize versions (+1 when the count read is a
//	                    multiple of PageSize: the empty range that ends it)
//	Backward            1 query per PageSize versions, + 1 query (the head row) from
//	                    the last version
//
// # Guarantees
//
// Under any number of concurrent appenders, in any number of processes,
// with requests failing before they are sent or after the service applied
// them (the chaos suite, TestChaosStream, checks each): a stream's
// versions are 1..n without a gap, and its head row says n; each append
// is applied whole or not at all; no event id is in a stream twice; every
// acknowledged append is in its stream exactly once, at the versions its
// Result said; a repeat returns those same versions; an append with ids
// does not end in ErrOutcomeUnknown. There is no order across streams.
//
// # Errors
//
// Every error starts "stream: <Op>: ". Input refused before sending is a
// *tablekit.ValidationError (tablekit.ErrInvalidInput, or
// tablekit.ErrTooLarge for a limit) whose Op names the operation
// ("stream.Store.Append"); a method of the zero Store refuses so too. A
// stored row this package cannot read back is a *tablekit.DecodeError.
package stream
