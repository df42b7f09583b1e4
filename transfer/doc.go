// Package transfer moves whole tables, or parts of them: [Export] to a
// line-oriented file, [Import] from it, [Copy] from table to table (also
// across accounts), [Purge] (delete a scope) and [Count]. Each reads its
// scope as PartitionKey ranges in parallel, reports progress through a
// callback, and saves a [Checkpoint] so that a call stopped by a crash, a
// cancelled context or a time budget resumes where it left off (import
// reads a stream, and records how far into it everything is done). The tablekit command (cmd/tablekit) is a thin shell over it.
//
// # Format
//
// An export is UTF-8 text, one JSON object per line (JSON Lines), each line
// ended by "\n":
//
//	{"tablekit":"export","version":1,"table":"Orders","filter":"PartitionKey ge 'a'","created":"2024-05-01T10:00:00Z"}
//	{"PartitionKey":"a","RowKey":"1","Timestamp":"2024-04-30T08:00:00.1234567Z","Properties":{"Qty":["Edm.Int32",3],"Total":["Edm.Double","19.9"]}}
//	{"tablekit":"end","entities":1}
//
// The first line is the header: "tablekit":"export", the format "version"
// (1; a reader refuses other versions), and for information the table's
// name, the filter text of the exported scope and the time the export
// started. The last line is the trailer: "tablekit":"end" and the number
// of entity lines. A stream without its trailer is incomplete (an export
// that was cut short, or is being resumed): [Reader.Next] returns
// [ErrTruncated] at its end.
//
// Every other line is one entity: "PartitionKey" and "RowKey" (JSON
// strings: any Unicode, quotes and control characters escaped as JSON
// escapes them, U+2028 and U+2029 escaped too), "Timestamp" (the service's,
// for information: import ignores it, the service sets its own) and
// "Properties", an object whose members are written in name order, each a
// two-element array [type, value]:
//
//	"Edm.String"    a JSON string
//	"Edm.Int32"     a JSON integer
//	"Edm.Int64"     a JSON string of the decimal integer ("-9223372036854775808"),
//	                so that readers with float64 numbers keep every digit
//	"Edm.Double"    a JSON string: the shortest decimal that reads back as the
//	                same float64 ("1", "0.1", "1e+300", "5e-324"), or "NaN",
//	                "Infinity", "-Infinity", "-0"; a whole number stays a double
//	"Edm.Boolean"   true or false
//	"Edm.DateTime"  a JSON string, UTC, always 7 fractional digits (100 ns):
//	                "2024-02-29T23:59:59.1234567Z"
//	"Edm.Guid"      a JSON string, lower case: "01234567-89ab-cdef-fedc-ba9876543210"
//	"Edm.Binary"    a JSON string, standard base64 with padding ("" is empty)
//
// A property that is absent (null) is not written. Readers ignore members
// of a line they do not know, so that later versions can add some; they
// refuse unknown types. Lines are at most 8 MiB (an entity of 1 MiB with every byte escaped fits). The format is
// exact: every value read back has the Go type, and so the EDM type, it was
// exported with ([tablekit.Entity]'s: string, int32, int64, float64, bool,
// time.Time, tablekit.GUID, []byte).
//
// # Order of lines
//
// Lines of one range are in the order the service returns them: key order
// (PartitionKey, then RowKey) on Table storage, no order on Azure Cosmos
// DB for Table. Ranges are read in parallel and each page (up to 1,000
// entities) of a range is written at once, so pages of different ranges
// interleave. With Options.Concurrency 1 ranges run one after the
// other and, on Table storage, the whole export is in key order. Import
// does not need any order; an entity that appears twice is written in
// line order.
//
// # Splitting
//
// The key distribution of a table is not known in advance, and the service
// has no way to ask for it. A scope is therefore split in three ways:
//
//   - With Options.Boundaries the caller says where: the ranges are
//     [From, b1), [b1, b2), ..., [bn, To). Nothing else is sent.
//   - Otherwise (except for [Purge] and [Count], which read their scope
//     as one range unless asked otherwise: see [PurgeOptions] and [Count])
//     it is sampled before reading: keys-only $top=1 queries
//     ("probes", each one storage transaction) find the first key at or
//     after points chosen in the key space; the points follow the
//     character classes (digits, letters, other) seen in the keys found so
//     far, first where known keys differ, so that padded numbers, dates,
//     hex and GUIDs, and keys with a common prefix are cut after a few
//     rounds of parallel probes. The sampler aims at 2 ranges per
//     concurrent reader and sends at most Options.MaxProbes probes
//     (default 4 per reader).
//   - While reading, a reader with no range left to start splits a running
//     range: it probes for keys after the last PartitionKey that range
//     received (up to 4 probes) and takes the second half for itself; the
//     running range stops at the split key (saved as its Cap, so a resumed
//     run keeps the split). Uneven partitions and an unlucky sample are
//     evened out this way, at the cost of a few probes and at most one page
//     read twice per split. Splits stop while the run's probes would
//     outnumber the pages it has read plus MaxProbes, so probes (each a
//     storage transaction) stay a fraction of a large read's cost. This
//     needs results in key order: on Cosmos DB running ranges are not
//     split (see "Cosmos DB" below).
//
// Ranges never share a PartitionKey (they are PartitionKey ranges), and they
// always cover the whole scope, so a key inserted after sampling is read by
// exactly one range. A single partition is one range; splitting inside a
// partition is not done. Keys compare as the service compares them, by
// UTF-16 code units.
//
// # Pages
//
// The service may end a page before PageSize entities, or return one with
// no entity and a continuation token: after 5 seconds of work on the
// server, or at a partition boundary. Each page is handled as it comes,
// empty or not: its token is what a checkpoint saves, and a Budget or a
// cancelled context is checked between pages, so a long stretch of empty
// pages neither holds a job past its budget nor makes a resumed job start
// over.
//
// # Cosmos DB
//
// Azure Cosmos DB for Table returns query results in no key order, not even
// within a partition (tablekit.Options.Service says whether a table is
// there; by default the Account finds out from the endpoint's host or its
// answers). Nothing in this package relies on that order where it is not
// kept. A job whose Account does not know yet finds out from its first
// answers (the sampler's first probe, or a range's first page), before it
// handles an entity as if in key order:
//
//   - Ranges are PartitionKey ranges, each read with a query filtered to
//     it, so they cover the scope exactly whatever the order. A probe on
//     Cosmos DB finds some key of its interval rather than the first, so
//     the probes of a round are bounded to disjoint intervals, and the
//     plan aims at 4 ranges per reader instead of 2.
//   - A running range is never split: no page says which keys are still to
//     come, so its query must be read to its end, and a split would read
//     the split-off part twice without ending the range sooner. The work
//     is balanced by the plan alone: with the defaults a read runs at the
//     pace of its largest range (a single partition is never split, on
//     either service). Give Boundaries when the key distribution is known.
//   - Export and Copy read each entity once, in one page request per 1,000
//     entities plus the probes, and resume from their tokens as on Table
//     storage; Copy's BulkWriter groups each page's entities by partition.
//   - Purge groups each page's entities by partition and deletes them in
//     transactions of up to 100, carrying nothing over to the next page: a
//     partition costs ceil(n/100) transactions for each page it appears in,
//     up to one per entity when a page holds many partitions. Cosmos DB
//     charges request units per delete, batched or not.
//   - Count keeps, for each range being read, a tally of every partition
//     it has met until the range is done (memory grows with the partitions
//     of the ranges being read, about 100 bytes each), and a checkpoint
//     saves at most 256 KiB of such tallies: a range whose tally does not
//     fit is saved as not started and counted again on resume. Split a
//     scope of very many partitions into more ranges to keep both small.
//
// Cosmos DB throttles in request units per second (429), which the page
// reads and the purge's Governor treat as throttling, as they treat 503s.
//
// # Resuming
//
// A job's state (its ranges, each range's continuation token, counts, and
// for an export the size of the output, for a count each range's partial
// tally) is a small JSON document saved in a [Checkpoint] every
// JobOptions.CheckpointEvery and when the call returns:
// [NewFileCheckpoint] keeps it in a local file replaced atomically,
// [NewTableCheckpoint] in an entity of a table (for a job run from Azure
// Functions or any machine). A call with Resume goes on from it; the scope
// and table must be the same. A Scope.OlderThan cutoff is the first run's:
// the checkpoint records when the job started. An export writes the output before the
// checkpoint that counts it, so output after the last checkpoint is cut off
// on resume ([ExportResumeOffset]). A copy writes a page before its range
// moves past it (a page with entities that failed for a passing reason,
// such as throttling, is held back for a resumed run) and saves its plan
// before its first write; a resumed copy writes the pages after the
// checkpoint again (in Insert mode it first looks up what the destination
// holds: see "Resuming a copy"). A purge deletes before it moves on, and listing again what is
// already deleted finds nothing. A count saves its partial counts with
// each range's token.
//
// An import's checkpoint records the line up to which every line of the
// stream is done (written, or failed for a reason of its own) and the last
// line handed to the service; a resumed import skips the first without
// decoding them and sends the rest again, looking up in Insert mode those
// that may have been written: see "Resuming an import".
//
// # Resuming a copy
//
// With a Checkpoint, a copy saves its plan before its first write, so that
// a copy killed before its first periodic checkpoint resumes as a resumed
// copy. A resumed copy reads again the pages its ranges had read after the
// last checkpoint, and writes them again: harmless in the upsert modes.
// In Insert mode, where writing an entity again would fail with
// EntityAlreadyExists, a resumed copy first reads what dst holds for the
// entities of each range's pages, until a page of which dst holds none
// (the run being resumed wrote a range's pages in order, so it wrote none
// after that one): an entity stored with exactly the source's properties
// is counted as written (and in Verified), one stored with other values is
// a failure matching tablekit.ErrAlreadyExists, the others are inserted.
// If an insert after that meets an entity stored as the source has it (the
// run being resumed had split the range, after its last checkpoint), it
// counts as written and the look-ups start again. An insert whose answer
// was lost (tablekit.ErrOutcomeUnknown) is checked the same way. A copy
// called with Resume whose checkpoint holds nothing (the run being resumed
// was killed before it kept one, or the checkpoint was lost) plans its
// ranges afresh and looks up as a resumed copy does: what the lost run
// copied counts as written, not as conflicts.
//
// # Resuming an import
//
// With a Checkpoint, the import records the line L up to which every line
// is done: written, or failed for a reason of its own that sending it
// again would not change (a bad line, a value the service refuses, an
// insert that meets an existing entity). Lines are written out of order
// (by partition, in parallel), so lines after L may be done too; and a
// line that failed for a passing reason (throttled beyond the retries, an
// unknown outcome, a cancelled context, skipped after other refusals)
// holds L back for the rest of the run. It also records the last line S
// it has handed to the service, before it sends it.
//
// A call with Resume reads the stream from the start, skips lines up to L
// without decoding them (checking that line L ends at the byte offset
// recorded: another stream is refused with [ErrCorruptCheckpoint]), and
// sends the rest. In the upsert modes sending a line again is harmless.
// In Insert mode an entity of a line in (L, S] may already have been
// written by the run being resumed, and inserting it again would fail
// with EntityAlreadyExists: so before sending those lines the import reads
// what the table holds for them. An entity stored with exactly the line's
// properties (types and values) is counted as written (and in Verified)
// and not sent; one stored with other values is a failure of that line
// matching tablekit.ErrAlreadyExists, as an insert would report it; the
// others are inserted. An insert whose outcome is unknown (a lost answer)
// is checked the same way. Lines after S are inserted as in a first run:
// an entity that exists already fails, identical or not.
//
// # Purge
//
// Purge lists keys only and deletes what it listed in entity group
// transactions of up to 100 entities of one partition, each delete
// conditional on the ETag the entity was listed with: an entity written
// after it was listed is left alone and reported (PurgeResult.Changed,
// ChangedKeys) unless AnyETag is set; one deleted meanwhile by someone else
// is counted (Gone). A partition of n entities takes ceil(n/100)
// transactions: a page's last partial transaction waits for the next page
// of its range (on Table storage; on Cosmos DB see above), unless the
// Budget stops the listing there: it is then sent as it is. By default a purge lists its scope as one range, with no
// key probes, and runs its delete transactions in parallel (taken from the
// partitions in turn, paced by a tablekit.Governor that backs off when the
// service throttles) while the listing goes on ahead: its cost is the
// minimum, one keys-only page per 1,000 entities plus ceil(n/100)
// transactions per partition. The cost of a purge is what [Count] reports
// as Pages + DeleteTransactions when it reads the scope the same way:
// count first to see it (tablekit purge --dry-run).
//
// A delete transaction whose answer was lost is retried by the SDK, and
// the retry meets what the first try left (404, or 412 for an entity
// written again since): the BulkWriter cannot tell whether it was applied
// and says so (tablekit.ErrOutcomeUnknown). For a purge, gone is gone: it
// settles the transaction by reading the partition's entities of it, keys
// only. One still stored with the ETag it was listed with proves the
// transaction was not applied (it is sent again; the others are gone or
// changed as above); otherwise, if some are absent, it was applied and
// counts as deleted whole, and an entity stored again since was written
// after the purge deleted it and is left alone. Only when another writer
// deleted or rewrote every entity of such a transaction may Deleted count
// what was Gone.
package transfer
