// Package stream is event streams on Table storage: append-only sequences
// of typed events with versions 1, 2, 3..., appended under optimistic
// concurrency in one entity group transaction (EGT) each, idempotent when
// events carry ids, and read forward or backward in pages. It is the
// first part of tablekit's materialized views (CQRS); Append's extra
// actions are how a change record, a snapshot or a view row of the stream
// joins an append's transaction.
//
//	type Placed struct{ Item string `table:"Item"` } // an event type: no key fields needed
//	reg := &tablekit.Registry{}
//	err := tablekit.Register[Placed](reg, "Placed", 1)
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
//	                          value ("EntityType": "Placed.v1", as tablekit.Registry
//	                          writes it), "_id" (its id, if any) and, on the first event
//	                          of each append, "_append" (a random stamp of the append)
//	<prefix>~head~0000000042  the head row: the stream is at version 42 ("Version")
//	<prefix>~id~<event id>    an event id, holding its event's version ("Version")
//	<prefix>~ev~0000000001    once the stream is trimmed: its tombstone, the stream's
//	                          first version ("_start"), in place of event 1 (see Trimming)
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
// for its life, also when Trim drops their events (unless
// Options.DropTrimmedIDs): an id row per event is the storage cost of
// idempotency. A repeat whose events were trimmed is recognised by its id
// rows alone (Replayed, with the first append's versions).
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
// (tablekit.ErrTooLarge), and so is an append whose stream ID or event ids
// make keys the service refuses (tablekit.ErrInvalidKey): an event id is
// in its id row's RowKey, prefix + "~id~" + id, so it holds no / \ # ? or
// control characters, and with the prefix it is at most 1 KiB (255 bytes
// on Azure Cosmos DB for Table). Store.Check tells without appending, with
// the same verdict (package feed checks before it marks a stream). Model
// around the limits:
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
// # Trimming
//
// Trim(ctx, id, before) drops a stream's events below version before: after
// a snapshot of the state up to before-1, or once every reader has passed
// it (package feed's subscriptions, an outbox's dispatched messages). The
// stream then starts at before ([Store.Start]); Version, Append and reads
// from before on are as they were. Trim writes a tombstone in place of the
// row of event 1 (which stays, so that an append expecting version 0 is
// still refused), conditional on its ETag and in one transaction with the
// delete of the event before-1, then deletes the events in between, 100
// per transaction. The start only moves up, whatever Trims run at once;
// Trim is idempotent, and a Trim that failed or whose process was killed
// is finished by running it again (with any before up to the start,
// 1 included). It runs beside appends and reads:
//
//   - Forward from below the start ends in a *[TrimmedError] (matching
//     [ErrTrimmed]) that says the start: before any event once the Trim is
//     done; while a Trim is under way (or after one was killed, until it
//     runs again), after the events below the start not deleted yet, or
//     the read ends short of them (its next read from there ends in
//     ErrTrimmed). It never passes the start, nor skips a version: the
//     version just below the start goes with the tombstone's write.
//   - A read under way that meets versions a Trim deleted ends in
//     ErrTrimmed at the first one, or short of them as above (Forward), or
//     at the start (Backward, which stops there without an error).
//   - The id rows stay: a repeat of a trimmed append is still Replayed.
//     With Options.DropTrimmedIDs, Trim deletes each event's id row in its
//     event's transaction, and a trimmed stream keeps nothing per event;
//     the price is that idempotency stops at the start: a repeat of an
//     append whose ids were dropped is appended again at AnyVersion (or at
//     the current version), refused as a conflict at its old one, and one
//     the start cuts through is refused with ErrPartlyApplied.
//   - An append without ids whose answer was lost, and whose first event
//     a Trim took before Append could read it back, ends in
//     tablekit.ErrOutcomeUnknown: with ids, the id rows settle it; without,
//     trim behind the stream's end rather than at it.
//
// What stays of a trimmed stream: its head row, the tombstone and, unless
// dropped, an id row per event that had an id.
//
// # Costs, in storage transactions
//
//	Append              1 EGT, new stream or not, with ids or not, with extra actions
//	  a conflict        the refused EGT + 1 query (the head row, for Current)
//	  a repeat (ids)    the refused EGT + 2 reads (the first id row, then its events);
//	                    when Trim took its events: + 1 read (the start) + 1 read per
//	                    other event (its id row)
//	  at AnyVersion     + 1 query (the head row) first; per append that came first:
//	                    the refused EGT + 1 query, and 1 EGT again
//	  a lost answer     + the SDK's retry of the EGT (refused) + 1 read (the first event
//	                    row); when not this call's, with ids: + 1 read (the first id
//	                    row; + 1 query of its events when it is recorded); + 1 EGT to
//	                    send it again when nothing was applied
//	Check               nothing sent
//	Version             1 query (the head row)
//	Start               1 read (the row of version 1)
//	Forward             1 query per PageSize versions (+1 when the count read is a
//	                    multiple of PageSize: the empty range that ends it); + 1 read
//	                    (the start) when a range from version 2 on comes back empty
//	                    (that end, or from past the end) or with a gap twice
//	Backward            1 query per PageSize versions, + 1 query (the head row) from
//	                    the last version, or + 1 read (the start) from another,
//	                    unless its range reaches version 1; + 1 read (the start)
//	                    where it stops on a trimmed stream
//	Trim                1 query (the version; none for before 1) + 1 read (the
//	                    tombstone), + 1 EGT (the tombstone and the version below the
//	                    start) when the start moves, + 1 keys-only query per 1,000
//	                    events deleted and 1 that finds none, + 1 EGT per 100 rows
//	                    deleted (50 events with DropTrimmedIDs, which also reads the
//	                    row below the start)
//
// # Guarantees
//
// Under any number of concurrent appenders and Trims, in any number of
// processes, with requests failing before they are sent or after the
// service applied them (the chaos suite, TestChaosStream, checks each): a
// stream's versions are start..n without a gap (start is 1 until a Trim
// moves it, only up, to at least the before of every Trim that returned),
// and its head row says n; each append is applied whole or not at all; no
// event id is in a stream twice; every acknowledged append is in its
// stream exactly once, at the versions its Result said, or was trimmed
// (its ids' rows still say those versions, unless dropped); a repeat
// returns those same versions; an append with ids does not end in
// ErrOutcomeUnknown; a forward read yields versions in order, without a
// gap, and ends in ErrTrimmed where it meets trimmed versions. There is no
// order across streams.
//
// # Errors
//
// Every error starts "stream: <Op>: ". Input refused before sending is a
// *tablekit.ValidationError (tablekit.ErrInvalidInput; tablekit.ErrTooLarge
// for a limit, tablekit.ErrInvalidKey for a key the service refuses) whose
// Op names the operation ("stream.Store.Append"; Check's are Append's); a
// method of the zero Store refuses so too, and so does Trim a before
// below 1 or past the stream's version + 1 (after reading the version). A
// version conflict is a *[ConflictError], a read from below a trimmed
// stream's start a *[TrimmedError] ([ErrTrimmed]), ids recorded by another
// append [ErrPartlyApplied]. A stored row this package cannot read back,
// or a version missing above the start (rows deleted outside the Store),
// is a *tablekit.DecodeError.
package stream
