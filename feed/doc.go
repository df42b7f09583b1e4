// Package feed is the change feed of event streams (package stream) and the
// projections it feeds: the second part of tablekit's materialized views
// (CQRS). Appends go through a Feed, which marks each append in a
// directory of streams before appending; a Relay, one active at a time (a
// coord.Lease elects it), reads the marks, hands each Subscription the
// events of the marked streams past its checkpoint in version order, and
// clears the marks its streams have passed; a Projector is a subscription
// that folds the events into the rows of a view table, once per version.
//
//	f, err := feed.New(store, feedTable, nil)
//	r, err := f.Append(ctx, id, expected, events)        // stream.Store.Append, after the mark
//	view, err := feed.NewProjector(viewTable, key, fold) // key(c) []feed.Row; fold(row *V, c Change) error
//	relay, err := f.NewRelay([]feed.Subscription{{Name: "orders", Handle: view.Handle}}, nil)
//	err = relay.Run(ctx, lease)                           // a coord.Lease per process, one lease row
//
// # Rows
//
// The feed's table (its own, or the streams' table outside their partitions)
// holds:
//
//	dir~NN / s~<stream partition>~<prefix>   the directory row of a stream, in one of
//	                                         Options.Shards partitions (FNV-1a of the
//	                                         RowKey): "Stream", "Prefix"
//	dir~NN / p~<hash>~<target>~<stamp>       a pending mark of an append to a stream of
//	                                         shard NN: "Stream", "Prefix", "Target" and
//	                                         "Last" (the append's first and last versions);
//	                                         <hash> is 8 hex digits of the stream's directory
//	                                         RowKey, <target> 10 digits, <stamp> 8 random
//	                                         characters
//	cp~<subscription> / s~<partition>~<prefix>  a subscription's checkpoint of a stream:
//	                                         "Version", the last version it handled
//	cp~<subscription> / ~coord~...           the fence row of the relays' terms (coord)
//
// A directory row marked by an earlier version of this package also holds
// "Dirty" and "Target" (see "Marks"). A view row of a Projector holds the
// view's properties and FoldedProperty, the last version folded of each
// stream that feeds it.
//
// A stream's directory and checkpoint RowKey is "s~" + its partition key +
// "~" + its prefix, so the two together must leave room for 3 characters
// in a RowKey: 509 characters on Table storage (1 KiB of UTF-16), 252
// bytes on Cosmos DB for Table. A longer stream is refused by
// Feed.Append, before anything is sent, with an error naming the limit
// (matching tablekit.ErrInvalidKey). A pending mark's RowKey is 30
// characters whatever the stream.
//
// # Marks
//
// Feed.Append marks each append before it sends it: it writes a pending
// mark, a row of its own in the stream's directory shard, whose Target is
// the append's first version (expectedVersion + 1; at stream.AnyVersion,
// the version it read + 1). The mark is an upsert of a new row: 1 write,
// no read, and no race with other marks of the stream, which are other
// rows. The first time a Feed appends to a stream, the mark's write is an
// EGT with an insert-or-merge of the stream's directory row, the row
// Feed.Streams lists (a Feed remembers up to 4,096 streams it did that
// for). If the mark fails, nothing is appended.
//
// What becomes of the mark depends on the append's outcome:
//
//   - appended: the mark stays, and the round that hands the events over
//     deletes it;
//   - appended nothing, and that is settled (a *stream.ConflictError, a
//     Replayed result, a refused extra action, any refusal): Append
//     deletes its mark (1 write; a mark gone already is done). At
//     stream.AnyVersion, the next try's mark is written in one EGT with
//     the delete of the last one;
//   - unknown (an error matching tablekit.ErrOutcomeUnknown, a context
//     that ended, a process killed mid-append): the mark stays, since the
//     append may still land, until a round finds its stream at or past
//     its Target. An append that never lands, to a stream never appended
//     to again, so leaves a mark for good: the relay then reads that
//     stream once per round (1 query); the stream's next append that lands
//     passes the Target, and the round after clears it.
//
// A relay round reads each shard's marks, and catches each marked stream
// up for every subscription as soon as it reads its first mark, reading
// the stream to its end. It then deletes the marks it read of that
// stream that the subscriptions have passed: those whose Last is at or
// below the lowest of their checkpoints, whatever else happened; and,
// when every subscription caught up without a failure, those whose
// Target is. It deletes them at once, in one EGT (per 100 marks; a
// stream's marks are in one partition), and those it reads after the
// catch-up ended, after the page of the shard that held them (a shard of
// many marks is read in pages, so a round that is cut short still clears
// what it passed). Why that is safe: the append of such a mark expects
// version Target - 1, and its stream was at Target or past it; versions
// only grow, so the append can no longer land. If it landed, either every
// subscription has checkpointed its last event, or it is the append that
// made version Target: an append is atomic, so all its events were in
// the stream when the read met version Target, and the read went on to
// the end without a failure, handing every subscription every event of
// it. (Target alone would not do after a failure: a subscription may
// have stopped within the append.) A mark written after the round read
// its shard is not one the round deletes: the next round reads it.
//
// Directory rows that an earlier version of this package marked (Dirty
// true, with a Target that grew with each mark) are still read by every
// round and cleared as that version did, conditionally on the ETag read,
// once the subscriptions have reached their Target: upgrading, nothing
// appended through a Feed of that version is left behind, during a rolling
// upgrade too. The price: a round's query of a shard selects its pending
// marks (a RowKey range) or its dirty rows (a property the service does
// not index), so the service scans the shard's partition, as it did for
// the dirty rows alone before; a later version that drops the dirty rows'
// clause makes the query a RowKey range.
//
// # Subscriptions, checkpoints and fencing
//
// A Subscription is handed each event of each stream at least once, in
// version order per stream (never version v before v-1 was handled), with
// its stream, version, event id and decoded data (Change). A round catches
// up to 16 streams at once, so Handle runs concurrently for different
// streams (one call at a time per stream): a Handle whose state spans
// streams must lock it. Its checkpoint of a stream is written after it
// returned nil for the events of a round (one write per stream and round,
// and one per 32 changes in a long catch-up; a round cut short by the end
// of its context, Run's or a lost lease's, still writes what it handled,
// for up to 5 s more); an error stops the stream
// for that subscription until the next round, the other subscriptions and
// streams go on, and the stream's marks stay. A process that dies after
// handling and before the checkpoint hands those events again: Handle must
// be idempotent.
//
// Relay.Run campaigns with coord.Lease.Lead and runs rounds with the lease's
// term. The first round of a term fences the subscriptions' checkpoint
// partitions at the term (coord.Writer.Fence), and every checkpoint write is
// a fenced write: once a later term's relay has started, an earlier term's
// checkpoint writes are refused (coord.ErrFenced), so two relays never move
// a checkpoint backwards. Both may hand the same events to the
// subscriptions meanwhile (at least once); a Projector's folds stay exactly
// once. Relay.Replay runs in the term Run holds (or, without Run, the term
// of the latest Relay.Round), so it is fenced as the rounds are.
//
// # Projections
//
// NewProjector(table, key, fold): the view table is a tablekit.Table[V] of a
// table struct (or tablekit.Entity for a property bag); key names the view
// rows of a change (feed.Row values: none when the change is not for the
// view, several when it moves an item between groups, as a rename in a
// view by last name takes the employee out of the old name's row and into
// the new one's), fold updates one row, decoded into a V by the table's
// codec (its encryption included): a number is the field's type, and a
// stored row that does not decode is an error, not a zero. Handle takes
// the rows in turn: it reads the row, skips the change when the row has
// folded that version of that stream already (FoldedProperty), else folds
// it and writes the row whole (a replace, FoldedProperty beside V's
// properties) conditionally on the ETag read (an insert when new), reading
// again after a race or a lost answer. So each event is folded into each
// of its view rows exactly once, in version order per stream, however
// often it is handed over: when a Handle fails after its first row, the
// rows written skip the change when the relay hands it over again.
//
// FoldedProperty keys a stream by its table (Change.Source) and its
// directory key ({"<account>/<table>/s~order-17~": 42}), so one Projector
// may be fed by several feeds whose streams share ids (two event-sourced
// tables of the same customers): their records do not collide. A row
// written by an earlier version of this package keys a stream by its
// directory key alone; that record is read when the new one is absent, and
// replaced by it when the row is next written for that stream, so nothing
// is folded twice.
//
// One view table per Projector: a row's FoldedProperty records what it
// folded per stream, not per projector, so two Projectors (two
// subscriptions) writing the same rows are unsafe: one that fails on
// version 2 while the other folds version 3 into the row would find
// version 2 "folded" when it tries again, and skip it for good. A view row
// folding many streams keeps an entry per stream in FoldedProperty (a JSON
// object in one string property, at most 64 KiB: some 700 streams of short
// names in a table of a short name); give aggregates over more streams a
// row per group of streams.
//
// To rebuild a view from zero (a new fold, a lost table), make a Projector
// on a new table, add it as a Subscription with a new name to the relay,
// and call Relay.Replay with that name while the relay's Run leads (it runs
// in Run's term): it catches the new subscription up on every stream of
// the directory (Feed.Streams) from version 1, with checkpoints,
// resumably; from then on rounds keep it up to date with the old one.
// Switch the readers to the new table once Replay has returned nil (its
// checkpoints then equal the old subscription's, up to what a round has
// still to hand over), then remove the old subscription and delete its
// table and its checkpoint partition ("cp~" + name). A rebuilt row that
// folds several streams has folded each of them in version order, but may
// have met their events in another interleaving than the old row did
// (Replay goes stream by stream; there is no order across streams): give
// such rows folds that do not depend on it (counts, sums, a property per
// stream), or a row per stream. A stream the relay trims (see
// "Retention") cannot be replayed from version 1.
//
// # Lag
//
// Relay.Stats reports, by subscription, its Lag: an upper bound on the age
// of the oldest event the subscription may not have been handed. A
// subscription is reported once a round of this Relay has read every
// shard of the directory; until a round hands it every event of every
// marked stream without a failure (a directory read, a stream read, a
// Handle or a checkpoint write that failed makes the round not count for
// the subscriptions it concerns), its Lag counts from the oldest mark that
// first round read (or from the round's start, when that is sooner), then
// from the start of the latest round that did. Why that bounds: every
// event acknowledged to Feed.Append before a round starts has a mark the
// round reads, written before the event, or was handed to every
// subscription already (a mark is deleted only then); so the view holds
// everything appended more than Lag ago, from the first report on: a relay
// that just started, or took over, with a backlog waiting reports the
// backlog's age, not the time since it started.
//
// The oldest mark's age is the one figure not on the relay's clock: it is
// the relay's wall clock at the round's start minus the mark's Timestamp,
// which the service set; from then on Lag grows on the relay's monotonic
// clock. A relay whose clock is behind the service's reports that first
// bound too small by the difference (never below the time since the round
// started); one whose clock is ahead, too large. Once a round has caught
// a subscription up, its Lag is on the relay's clock alone. A dirty
// directory row of an earlier version (see "Marks") counts from its last
// mark, as it keeps no older one.
//
// It is chosen over the lag of the changes handed over (time handled minus
// Change.Time) because that figure lies when it matters: a relay that is
// stuck, failing or dead hands nothing over, and the last lag it measured
// stays small. Lag instead grows by a second per second from the last good
// round while rounds fail, a Handle fails on an event or hangs, or no
// round runs. A healthy relay reads between its rounds' duration and
// Interval plus that, idle or not; under load, rounds take longer and Lag
// with them. It is an upper bound with the round's granularity, not each
// event's delay (BENCHMARKS.md measures that: "View lag").
//
// A subscription is absent from Stats until a round of the Relay has read
// the directory, and again once Run has lost the lease, so that only the
// leading process reports a lag: a standby has nothing to say, and one
// that used to lead would report a growing Lag of a view another relay
// keeps up to date. So when the leader dies, no process reports until a
// new one leads (within the lease's Duration + RetryPeriod) and has read
// the directory: alert on the series' absence as well as on its value
// (otelkit.RegisterRelay exports it). Lag counts what rounds read, the
// marked streams: a subscription added under a new name is behind on the
// other streams until Relay.Replay has caught it up, which Lag does not
// show.
//
// # Table writes
//
// Table storage records no change of its own, so a plain Table write
// joins the feed when its writer opts in: it sends the write as an extra
// action of an append, at stream.AnyVersion, to a stream of the write's
// partition that logs its changes, with an event that says what changed:
//
//	changes := stream.ID{PartitionKey: order.Customer, Prefix: "changes"}
//	_, err := f.Append(ctx, changes, stream.AnyVersion,
//		[]stream.Event{{ID: cmdID, Data: OrderShipped{Order: order.ID}}},
//		tablekit.MergeAction(row, etag)) // the write, conditional as it would be alone
//
// The write and its change commit in one EGT, or neither does, and the
// relay hands the change to every subscription as any event: the change of
// every acknowledged write, none of a refused one, in the order of the
// partition's logged writes (Change.Version). A write that is refused (an
// ETag that no longer matches) refuses the append, with its
// *tablekit.TransactionError. The writers of a partition share its log
// and take turns on it: one whose append meets another's appends again
// after it, so a partition's logged writes go one EGT at a time. Event
// ids make the write's repeat by the caller (after a lost acknowledgement)
// a Replayed result instead of a second write. A log whose changes no
// reader needs once handed over is one for RelayOptions.Trim.
//
// # Retention
//
// Streams grow with every append; a relay can keep the ones that need not
// keep their events short: RelayOptions.Trim chooses them (an outbox's
// streams, whose events are messages sent once handed over; a log of Table
// writes). A round that catches such a stream up for every subscription
// without a failure, and moves the lowest of their checkpoints, trims the
// stream below that checkpoint + 1 (stream.Store.Trim): one Trim per
// stream and round, for every event the round handed over, however many.
// Nothing is trimmed that a subscription of the relay has not handled and
// checkpointed (a round in which one failed on the stream trims nothing),
// and a trim never changes versions: appends, marks and checkpoints go on
// as before. At a low rate this is a Trim per append; under load, one per
// round for many. Every subscription of the feed must be in the relay: one
// added later finds the trimmed events gone.
//
// A subscription whose checkpoint of a stream is below the stream's start
// (one added after a trim; Replay from version 1; a stream trimmed by the
// application, after a snapshot) is not silently moved on: it fails that
// stream, every round, with an error matching stream.ErrTrimmed that names
// it, the stream and the stream's start, and the stream's marks stay (the
// other subscriptions go on). A Subscription that needs only what is still
// there (a new publisher of an outbox, a consumer of recent changes)
// opts in with FromStart: it begins such a stream at its start. A view
// that folds a stream's whole history must not: skipping part of it
// unseen is the silent wrong result the error prevents.
//
// What stays of a trimmed stream: in its partition, its head row, the
// tombstone (the row of version 1, which records the start) and an id row
// per event that had an id (unless stream.Options.DropTrimmedIDs); in the
// feed's table, its directory row and a checkpoint row per subscription.
// Pending marks go as rounds pass them. BENCHMARKS.md ("Retention")
// measures the rows and bytes left per message of outbox streams.
//
// # Costs, in storage transactions
//
//	Feed.Append        the mark: 1 write, no read (an upsert; the first append of a Feed
//	                   to a stream: 1 EGT with its directory row), + stream.Store.Append's
//	                   1 EGT; an append that appended nothing: + 1 delete (its mark);
//	                   at stream.AnyVersion: + 1 query (the version), and per append that
//	                   came first: + 1 refused EGT and the reads that settle it
//	                   (stream.Store.Append), + 1 EGT (the next mark, and the delete of
//	                   the last)
//	Relay.Round        1 query per shard (its marks; the service scans the shard's
//	                   partition, see "Marks", and a shard of many thousands of streams
//	                   may answer in several pages); per marked stream: 1 read per
//	                   subscription of its checkpoint (once per term, then cached), the
//	                   stream's read (1 query per stream.Options.PageSize versions, + 1),
//	                   1 fenced write per subscription that advanced (+ 1 per 32 changes
//	                   it handled), 1 EGT to clear its marks (per 100; a delete for
//	                   one); 1 write per dirty row of an earlier version cleared; per
//	                   stream trimmed, stream.Store.Trim (1 query, 1 read, 1 EGT, 1 keys
//	                   query, + 1 keys query and 1 EGT per 100 more events dropped);
//	                   a term's first round: 1 read + 1 write per subscription (the fence)
//	Relay.Run          Round every RelayOptions.Interval (idle: 1 query per shard per
//	                   round), + coord.Lease.Lead's renewals
//	Relay.Replay       Feed.Streams + a round's per-stream costs on every stream
//	Feed.Streams       1 query per shard per 1,000 streams
//	Projector.Handle   per view row of the change: 1 read + 1 write; a row that
//	                   folded the change already: 1 read
//
// Storage: a directory row per stream and a checkpoint row per stream and
// subscription, for good; a pending mark per append until a round passes
// it (or for good, of an append that never landed: see "Marks").
//
// # Guarantees
//
// With any number of appending processes (appending at expected versions,
// or at stream.AnyVersion to a log of Table writes, repeats and appends
// ahead of their stream included), relays contending for the lease,
// requests failing before they are sent or after the service applied them,
// on Table storage and on Cosmos DB for Table (TestChaosFeed checks each,
// TestChaosFeedCosmos behind package azurite's Cosmos DB front), and
// processes SIGKILLed mid-work (relays, and the projectors in them:
// TestChaosFeedProcesses; appenders with an append in flight:
// TestChaosFeedAppenderProcesses): every event acknowledged to an appender
// is handed to every subscription, in version order per stream, at least
// once, once the relays catch up; an event of an append that failed is
// never handed over (it is not in the stream); an append whose appender
// was killed before its answer is in its stream whole or not at all, and
// sent again with the same ids it is stored once; a checkpoint never moves
// backwards; each view row of a Projector folds each event routed to it
// exactly once, in version order per stream; every mark is cleared once
// its stream has passed it, and an append that settled that it appended
// nothing leaves none (TestChaosFeed ends with no mark left, appending
// nothing past them). A trimmed stream loses nothing a subscription has
// not handled (TestTrimWhileAppending: 8 appenders, a relay trimming, a
// subscription replayed meanwhile).
//
// A killed appender (or one whose context ended mid-append) may leave a
// mark whose Target its stream has not reached, when its append never
// landed: the relay then reads the stream once per round until a later
// append passes the Target (TestChaosFeedAppenderProcesses checks that
// every mark left is such a mark, on a stream with such an append).
//
// Not guaranteed: any order across streams; exactly-once delivery to a
// subscription (only a Projector's folds are exactly once); a bound on the
// lag (a round every Interval, a new leader within the lease's Duration +
// RetryPeriod after one dies); progress past a subscription that fails on
// an event forever (the stream's marks stay and its events after that one
// are held back for that subscription alone); events appended to a stream
// directly through stream.Store.Append, not through a Feed, until the
// stream's next append through one (no mark, no relay read). A relay
// process killed mid-round hands the events since the last checkpoint
// again.
//
// # Errors
//
// Input refused before sending is a *tablekit.ValidationError (matching
// tablekit.ErrInvalidInput, or ErrInvalidKey / ErrTooLarge for a stream
// or events over the service's limits) whose Op names the operation
// ("feed.Feed.Append"); a method of a zero Feed, Relay or Projector
// refuses so too. Other errors start "feed: <Op>: ", except those of
// stream.Store.Append, which Append returns as they are.
package feed
