// Package feed is the change feed of event streams (package stream) and the
// projections it feeds: the second part of tablekit's materialized views
// (CQRS). Appends go through a Feed, which marks each stream dirty in a
// directory before appending; a Relay, one active at a time (a coord.Lease
// elects it), reads the dirty streams, hands each Subscription the events
// past its checkpoint in version order, and clears the marks; a Projector is
// a subscription that folds the events into the rows of a view table, once
// per version.
//
//	f, err := feed.New(store, feedTable, nil)
//	r, err := f.Append(ctx, id, expected, events)         // stream.Store.Append, after the mark
//	view, err := feed.NewProjector(viewTable, key, fold)  // key(c) []feed.Row; fold(row *tablekit.Entity, c Change) error
//	relay, err := f.NewRelay([]feed.Subscription{{Name: "orders", Handle: view.Handle}}, nil)
//	err = relay.Run(ctx, lease)                            // a coord.Lease per process, one lease row
//
// # Rows
//
// The feed's table (its own, or the streams' table outside their partitions)
// holds:
//
//	dir~NN / s~<stream partition>~<prefix>   the directory row of a stream, in one of
//	                                         Options.Shards partitions (FNV-1a of the
//	                                         RowKey): "Stream", "Prefix", "Dirty" (bool),
//	                                         "Target" (the version it is dirty up to)
//	cp~<subscription> / s~<partition>~<prefix>  a subscription's checkpoint of a stream:
//	                                         "Version", the last version it handled
//	cp~<subscription> / ~coord~...           the fence row of the relays' terms (coord)
//
// A view row of a Projector holds the fold's properties and FoldedProperty,
// the last version folded of each stream that feeds it.
//
// A stream's directory and checkpoint RowKey is "s~" + its partition key +
// "~" + its prefix, so the two together must leave room for 3 characters in
// a RowKey: 509 characters on Table storage (1 KiB of UTF-16), 252 bytes
// on Cosmos DB for Table. A longer stream is refused at its first mark,
// before anything is sent, with an error naming the limit.
//
// # The dirty mark
//
// Feed.Append marks the stream before it appends: it reads the stream's
// directory row and, unless the row is dirty already with a Target at or past
// the append's last version (expectedVersion + len(events)), writes it dirty
// with that Target (the higher of the two), conditionally on the ETag read
// (an insert when absent); a race with another mark reads again. If the mark
// fails, nothing is appended. If the append fails after it, the mark stays:
// harmless to correctness, but the relay reads the stream once more per round
// (1 query) until the stream reaches the Target (see below): an application
// that gives up on an append for good leaves that cost behind until its
// stream's next append.
//
// A relay round reads each shard's dirty rows (the shards concurrently),
// catches each stream up for every subscription (up to 16 streams at once,
// each stream's events in order), and clears its row (Dirty false),
// conditionally on the ETag it read, only when every subscription's
// checkpoint is at or past the row's Target. Why the Target: a mark written before the relay read the
// row may belong to an append that lands after the relay read the stream
// (the writer paused between mark and append); an ETag alone would let the
// relay clear the mark and leave those events unpublished until the stream's
// next append. With the Target, such a mark is kept until the stream has
// passed it; and an append whose Target a caught-up stream has passed can
// no longer land (it expects a version the stream has left, and versions only
// grow), so clearing then is safe. A mark written after the relay read the
// row changes the ETag, and the clear is refused: the stream stays dirty.
// The Target only grows while the row is dirty, which is why a mark reads
// before it writes instead of upserting blindly.
//
// # Subscriptions, checkpoints and fencing
//
// A Subscription is handed each event of each stream at least once, in
// version order per stream (never version v before v-1 was handled), with
// its stream, version, event id and decoded data (Change). A round catches
// up to 16 streams at once, so Handle runs concurrently for different
// streams (one call at a time per stream): a Handle whose state spans
// streams must lock it. Its checkpoint
// of a stream is written after it returned nil for the events of a round
// (one write per stream and round, and one per 32 changes in a long
// catch-up); an error stops the stream for that
// subscription until the next round, the other subscriptions and streams
// go on, and the stream stays dirty. A process that dies after handling and
// before the checkpoint hands those events again: Handle must be idempotent.
//
// Relay.Run campaigns with coord.Lease.Lead and runs rounds with the lease's
// term. The first round of a term fences the subscriptions' checkpoint
// partitions at the term (coord.Writer.Fence), and every checkpoint write is
// a fenced write: once a later term's relay has started, an earlier term's
// checkpoint writes are refused (coord.ErrFenced), so two relays never move
// a checkpoint backwards. Both may hand the same events to the
// subscriptions meanwhile (at least once); a Projector's folds stay exactly
// once.
//
// # Projections
//
// NewProjector(table, key, fold): key names the view rows of a change
// (feed.Row values: none when the change is not for the view, several when
// it moves an item between groups, as a rename in a view by last name takes
// the employee out of the old name's row and into the new one's), fold
// updates one row. Handle takes the rows in turn: it reads the row, skips
// the change when the row has folded that version of that stream already
// (FoldedProperty), else folds it and writes the row conditionally on the
// ETag read (an insert when new), reading again after a race or a lost
// answer. So each event is folded into each of its view rows exactly once,
// in version order per stream, however often it is handed over: when a
// Handle fails after its first row, the rows written skip the change when
// the relay hands it over again.
//
// One view table per Projector: a row's FoldedProperty records what it
// folded per stream, not per projector, so two Projectors (two
// subscriptions) writing the same rows are unsafe: one that fails on
// version 2 while the other folds version 3 into the row would find
// version 2 "folded" when it tries again, and skip it for good. A view row folding many streams keeps an entry per stream in
// FoldedProperty (a JSON object in one string property, at most 64 KiB: some
// 1,500 streams of short names); give aggregates over more streams a row per
// group of streams.
//
// To rebuild a view from zero (a new fold, a lost table), make a Projector on
// a new table, add it as a Subscription with a new name to the relay, and
// call Relay.Replay with that name from the leader: it catches the new
// subscription up on every stream of the directory (Feed.Streams) from
// version 1, with checkpoints, resumably; from then on rounds keep it up to
// date with the old one. Switch the readers to the new table once Replay
// has returned nil (its checkpoints then equal the old subscription's, up to
// what a round has still to hand over), then remove the old subscription and
// delete its table and its checkpoint partition ("cp~" + name). A rebuilt
// row that folds several streams has folded each of them in version
// order, but may have met their events in another interleaving than the
// old row did (Replay goes stream by stream; there is no order across
// streams): give such rows folds that do not depend on it (counts, sums,
// a property per stream), or a row per stream.
//
// # Lag
//
// Relay.Stats reports, by subscription, its Lag: the time since the start
// of the latest round of that Relay which handed the subscription every
// event of every dirty stream without a failure (a directory read, a
// stream read, a Handle or a checkpoint write that failed makes the
// round not count for the subscriptions it concerns). Every event
// acknowledged to Feed.Append before a round starts is in a stream that
// round finds dirty, so Lag is an upper bound on the age of the oldest
// event the subscription may not have been handed: "the view holds
// everything appended more than Lag ago". It is measured on the relay's
// clock alone (no service timestamp), so clock skew does not enter it.
//
// It is chosen over the lag of the changes handed over (time handled
// minus Change.Time) because that figure lies when it matters: a relay
// that is stuck, failing or dead hands nothing over, and the last lag it
// measured stays small. Lag instead grows by a second per second from the
// last good round while rounds fail, a Handle fails on an event or hangs,
// or no round runs. A healthy relay reads between its rounds' duration
// and Interval plus that, idle or not; under load, rounds take longer and
// Lag with them. It is an upper bound with the round's granularity, not
// each event's delay (BENCHMARKS.md measures that: "View lag").
//
// A subscription is absent from Stats until the Relay starts its first
// round (from then on its Lag counts from that round's start until a
// round has caught it up), and again once Run has lost the lease, so
// that only the leading process reports a lag: a standby has nothing to
// say, and one that used to lead would report a growing Lag of a view
// another relay keeps up to date. So when the leader dies, no process
// reports until a new one leads (within the lease's Duration +
// RetryPeriod): alert on the series' absence as well as on its value
// (otelkit.RegisterRelay exports it). Lag counts what rounds read, the
// dirty streams: a subscription added under a new name is behind on the
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
// a Replayed result instead of a second write.
//
// # Costs, in storage transactions
//
//	Feed.Append        the mark: 1 read + 1 write (1 read when the stream is dirty at
//	                   or past the append's version), + stream.Store.Append's 1 EGT;
//	                   a mark that lost a race with another: + 1 read + 1 write per try;
//	                   at stream.AnyVersion: + 1 query (the version), and per append
//	                   that came first: + 1 refused EGT, 1 query and the mark again
//	Relay.Round        1 query per shard (the dirty rows: Dirty is not indexed, so the
//	                   service scans the shard's partition, and a shard of many
//	                   thousands of streams may answer in several pages); per dirty
//	                   stream: 1 read per subscription of its checkpoint (once per
//	                   term, then cached), the stream's read (1 query per
//	                   stream.Options.PageSize versions, + 1), 1 fenced write per
//	                   subscription that advanced (+ 1 per 32 changes it handled),
//	                   1 write to clear; a term's first round: 1 read + 1 write per
//	                   subscription (the fence)
//	Relay.Run          Round every RelayOptions.Interval (idle: 1 query per shard per
//	                   round), + coord.Lease.Lead's renewals
//	Relay.Replay       Feed.Streams + a round's per-stream costs on every stream
//	Feed.Streams       1 query per shard per 1,000 streams
//	Projector.Handle   per view row of the change: 1 read + 1 write; a row that
//	                   folded the change already: 1 read
//
// # Guarantees
//
// With any number of appending processes (appending at expected versions,
// or at stream.AnyVersion to a log of Table writes), relays contending for the lease,
// requests failing before they are sent or after the service applied them,
// on Table storage and on Cosmos DB for Table (TestChaosFeed checks each,
// TestChaosFeedCosmos behind package azurite's Cosmos DB front), and
// processes SIGKILLed mid-work (relays, and the projectors in them:
// TestChaosFeedProcesses; appenders with an append in flight:
// TestChaosFeedAppenderProcesses): every event
// acknowledged to an appender is handed to every subscription, in version
// order per stream, at least once, once the relays catch up; an event of an
// append that failed is never handed over (it is not in the stream); an
// append whose appender was killed before its answer is in its stream
// whole or not at all, and sent again with the same ids it is stored once;
// a checkpoint never moves backwards; each view row of a Projector folds
// each event routed to it exactly once, in version order per stream.
//
// A killed appender may leave its stream's mark dirty with a Target the
// stream has not reached (the append never landed): the relay then reads
// the stream once more per round, and clears the mark once a later append
// passes the Target (TestChaosFeedAppenderProcesses appends past every
// Target at the end and checks that no mark is left).
//
// Not guaranteed: any order across streams; exactly-once delivery to a
// subscription (only a Projector's folds are exactly once); a bound on the
// lag (a round every Interval, a new leader within the lease's Duration +
// RetryPeriod after one dies); progress past a subscription that fails on
// an event forever (the stream stays dirty and its events after that one are
// held back for that subscription alone); events appended to a stream
// directly through stream.Store.Append, not through a Feed, until the
// stream's next append through one (no mark, no relay read). A relay
// process killed mid-round hands the events since the last checkpoint again.
//
// # Errors
//
// Input refused before sending is a *tablekit.ValidationError (matching
// tablekit.ErrInvalidInput) whose Op names the operation ("feed.Feed.Append");
// a method of a zero Feed, Relay or Projector refuses so too. Other errors
// start "feed: <Op>: ", except those of stream.Store.Append, which Append
// returns as they are.
package feed
