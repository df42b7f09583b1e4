// Package patterns implements the entity-shape patterns of the Azure Table
// storage design guide on tablekit's typed core, each with the guide's
// guarantees made explicit and tested against Azurite:
//
//   - Wide entities ([Wide]): a logical entity with more than 252
//     properties (or more than 1 MiB) split over up to 100 physical
//     entities of one partition, written in one entity group transaction
//     and read with one range query.
//   - Large entities ([Large]): string and binary properties too large for
//     a table stored in blobs, the entity keeping references.
//   - Data series ([Series]): a whole series (e.g. 24 hourly counts,
//     H00..H23) in one entity, read with one point query, changed a slot at
//     a time with ETag-conditional merges.
//   - High-volume delete ([PeriodTables]): a table per period (hour, day,
//     month or a fixed duration), writes routed by time, queries across
//     periods, and retention that deletes whole tables: one request per
//     period.
//   - The prepend/append anti-pattern ([Timeline]): a time-ordered sequence
//     spread over shard partitions (keys.ShardedKey: the bucket first), a
//     time window read by parallel per-shard range queries merged back into
//     time order.
//   - Heterogeneous entity types ([Mixed], over a [tablekit.Registry]):
//     several Go types in one table or partition, told apart by an
//     EntityType property or a RowKey prefix, with a version in the type
//     value ("Employee.v2"); one query over a mixed partition yields each
//     row as its own type.
//   - Denormalization ([Denormalizer]): copies of an entity's properties
//     kept in other entities of its partition, updated with it in one
//     entity group transaction.
//
// # Tables and settings
//
// Wide and Large take the application's own *tablekit.Table[T] and store
// T through its property-bag view ([tablekit.Table.AsEntities]), so their
// physical entities keep the table's client-side encryption. Series,
// Timeline, Mixed and Denormalizer decide their own shapes and take a
// *tablekit.Table[tablekit.Entity]: pass table.AsEntities() of the
// application's table. PeriodTables takes the *tablekit.Account its tables
// are created in. Logger, Governor, tracing and Cosmos DB mode come from
// the Account; every retry after a conflict with a concurrent writer is
// the Table's TableOptions.Retry (default 30 tries, 10 ms to 1 s apart).
// Nothing here keeps global state.
//
// # Verbs
//
// The verbs mean what they mean on [tablekit.Table]: Get reads one
// (tablekit.ErrNotFound when absent), Insert creates only
// (tablekit.ErrAlreadyExists), Upsert inserts or replaces whatever is
// stored, Update replaces the stored version if its ETag is still the one
// given (azcore.ETagAny: any version; "" is refused before sending), Modify
// is the read-modify-write of optimistic concurrency with a function,
// retried on conflict, and returns what it stored, Delete deletes a given
// version, and DeleteIfExists deletes whatever is stored and reports
// whether anything was. Merge merges v's properties into the stored entity
// (etag "": insert or merge; azcore.ETagAny: the entity must exist; a
// version: it must be current). Every write returns the version the caller
// can continue from (an ETag; for a Wide, part 0's), taken from the
// service's answer, never read again. Get fills T's etag field with the
// same version. Wide and Large are [tablekit.Store]s.
//
//	              Get  Insert  Upsert  Update  Merge  Modify  Delete  DeleteIfExists
//	Wide           ✓     ✓       ✓       ✓       ✓      ✓       ✓          ✓
//	Large          ✓     ✓       ✓       ✓       —      ✓       ✓          ✓
//	Mixed          ✓     ✓       ✓       ✓       ✓      —       ✓          ✓
//	Series         ✓     —       —       —       —      ✓       —          —
//
// [Wide.WithKey] and [Mixed.WithKey] give a Wide or a Mixed whose writes
// carry an idempotency key (coord's vocabulary: the key's record joins
// the write's one entity group transaction, a repeat of the key is not
// applied again and returns a nil error with empty ETags, or
// coord.ErrKeyReused when it writes another value than the key's first
// write, a lost answer is settled by reading the record, never
// ErrOutcomeUnknown). A keyed write costs the unkeyed one's transactions
// (a Mixed verb becomes a transaction of one action); + 1 read after a
// lost answer; a repeat: the refused transaction + 1 read of the record
// (Wide.Modify: + 1 range query, it returns the stored entity; a Wide
// Update, Merge or Delete that finds another version: 1 read of the
// record instead).
//
// Series adds Add (a Modify of one slot), Timeline Append (an Upsert of
// entries, in bulk), Denormalizer Write (an Upsert, or an Update when the
// source carries an ETag, together with its copies), and PeriodTables
// Table (the table of a time's period, whose verbs are tablekit.Table's).
// Projected reads are queries: Large.Query with QueryOptions.Select reads
// only the blobs of the properties selected.
//
// # Wide entities
//
// The parts of a logical entity have the RowKeys (RowKey, part number in 3
// digits), e.g. "meter17!000", so one range query reads them all. A write
// sends part 0 and the parts whose properties change, in one entity group
// transaction; properties stay in the part that holds them unless it
// overflows.
//
// A logical entity, as stored and as read, is always exactly one writer's
// complete write, even when concurrent writers (in any number of
// processes) change different parts:
//
//   - Every write is one entity group transaction that includes part 0:
//     inserted for a new entity, else written conditional on the ETag part
//     0 had when the writer read the entity. Two writes based on one
//     version cannot both succeed: the second one's condition fails, and
//     it reads the entity again and starts over. Changed parts carry their
//     own ETag conditions too.
//   - Each write has a random id. Every part it writes carries the id (the
//     property "_wide"); part 0 carries it as the entity's version and lists
//     every other part with the id that part carries ("_wideParts"). A
//     logical entity cannot have properties of these two names, and a part
//     holds at most 250 of its properties.
//   - Every read (Get, and the read that starts each write) checks the
//     parts it got against part 0's list. A range query that returned parts
//     of two versions (it came back in several pages while a write
//     happened) fails the check and is repeated, so a reader never returns,
//     and a writer never builds on, a mix.
//   - A write whose answer was lost, and whose retry met a conflict the
//     lost try may have caused (tablekit.ErrOutcomeUnknown), reads part 0:
//     if it carries the write's id, the write was applied and succeeds;
//     otherwise the error stands. A write that inserts the entity is
//     retried by the Azure SDK when its answer is lost, so, like any
//     retried insert, it may take effect twice around a concurrent delete,
//     unless it carries a key ([Wide.WithKey]): its record settles it.
//
// Cost, in storage transactions:
//
//	Get             one range query
//	Insert          one entity group transaction
//	Upsert, Merge   one range query + one transaction (+ one of each per conflict)
//	Modify          one range query + one transaction (+ one of each per conflict)
//	Update          one range query + one transaction (a conflict is ErrPreconditionFailed)
//	Delete          one range query + one transaction
//	DeleteIfExists  one range query (+ one transaction when it exists)
//
// The transaction carries one more (small) action when part 0's properties
// do not change: a merge of its version and list. A logical entity written
// before this protocol is read as it is, and its first write adds the
// bookkeeping. Keys containing ' can be inserted and deleted but not
// updated in a transaction (reported as tablekit.ErrInvalidKey).
//
// # Large entities
//
// Writes keep one invariant: an entity never references a blob that does
// not exist. A write (Insert, Upsert, Update, Modify) stores the new blobs,
// under new random names, first, then the entity, and only then deletes
// the blobs of the version it replaced; a delete removes the entity first,
// then its blobs. Every write but Insert first reads the references of the
// version it replaces (one point query) and is conditional on that
// version, so Update and Delete check the caller's ETag before writing any
// blob. A crash in between can only leave blobs no entity references,
// which Sweep removes once they are older than the grace period
// (LargeOptions.Grace, one hour by default).
//
// A write stores its entity within half the grace period of starting its
// blob uploads, or writes no entity and fails with an error matching
// context.DeadlineExceeded, so Sweep never removes a blob an entity
// references or is about to. An insert is sent without the Azure SDK's
// retries: a retried insert whose first try was applied would bring back
// an entity a concurrent delete removed in between, referencing the blobs
// that delete removed. When such an insert may have been applied and the
// entity is absent, the write starts again with new blobs. A write whose
// answer was lost reads the references back: its own (random) blob names
// mean it was applied; otherwise the error matches
// tablekit.ErrOutcomeUnknown and its blobs are left for Sweep.
//
// Reads never report a present entity as missing: a Get or Query that
// finds a blob gone (a concurrent write replaced the entity, or a delete
// removed it) reads the entity again, and reports tablekit.ErrNotFound only
// when the entity is gone; a blob missing from an entity that did not
// change is ErrMissingBlob.
//
// # Errors
//
// Every error of this package starts "patterns: <Op>: ", naming the
// operation the caller made ("patterns: Wide.Update: ..."), and matches
// tablekit's sentinels. Input refused before sending is a
// *tablekit.ValidationError whose Op names the operation
// ("patterns.NewWide", "patterns.Wide.Update"), matching
// tablekit.ErrInvalidInput (a method of a zero value, too); stored data a
// pattern cannot read back is a *tablekit.DecodeError; a missing entity
// matches tablekit.ErrNotFound.
//
// The runnable programs in examples/ (wideentities, largeentities,
// dataseries, highvolumedelete, timeline, heterogeneous,
// denormalization) narrate each pattern with what every step costs.
package patterns
