// Package index implements the secondary index patterns of the Azure Table
// storage design guide: copies of each entity under other keys, kept in
// the entity's own partition and consistent in one entity group
// transaction ([SamePartition]), or kept in other partitions or tables and
// eventually consistent through a queue worker ([CrossPartition]); and
// index entities, lists of ids per value, for values many entities share.
//
// Table storage indexes only PartitionKey and RowKey. To find an employee
// by email, or every employee named Jones, without scanning a partition,
// the guide stores the entity again under other keys, or stores lists of
// ids. This package does the bookkeeping: every write keeps the extra rows
// in step with the entity, and lookups are typed. One [Index] describes an
// index of either kind.
//
// # Same partition: SamePartition
//
// All index entries live in the entity's own partition, so the entity and
// every entry change in one entity group transaction (EGT): all or
// nothing. For an employee Sales/000223 with the indexes of the guide, the
// partition Sales holds these RowKeys (keys.Compound keys, as stored: a
// '.' in a value is doubled, see keys.Separator):
//
//	000223                      the employee itself
//	empid!000223                a copy (unique index "empid")
//	email!jonesj@contoso..com   a copy (unique index "email", value jonesj@contoso.com)
//	lastname!Jones!000223       a copy, possibly projected (index "lastname")
//	surname!Jones               an index entity listing 000223, ... (List index "surname")
//
// Any value (any valid UTF-8: '/', '\', '#', '?' and control characters
// are escaped) is safe in these keys and string order is value order: By,
// Range and Prefix are one range query in index order (on Azure Cosmos DB
// for Table, which does not keep key order, the entries are sorted on the
// client). When an indexed value changes, the old entry is deleted in the
// same EGT. Concurrent writers are detected with the stored entity's ETag
// (and the ETags of index entities), and the write retried or refused with
// an error matching tablekit.ErrPreconditionFailed
// ([SamePartitionOptions].Retry). A unique value taken by another entity
// fails the EGT (*[UniqueError]). A write that would exceed 100 actions or
// 4 MiB (2 MB on Cosmos DB) is refused before it is sent, with an error
// saying why.
//
// The index rows share the partition with the entities: a plain
// tablekit.Table.Query of the partition returns them too, decoded as if
// they were entities. [SamePartition.Query] returns the entities only.
//
// # Cross partition: CrossPartition
//
// Entries live in other partitions or tables: copies in the partition
// email!Sales under the RowKey jonesj@contoso..com!000223 (a Global index:
// partition email, RowKey jonesj@contoso..com!Sales!000223), or lists of
// ids. No transaction spans partitions, so the entries follow the entity
// eventually: a write enqueues a maintenance request for the archive
// package's worker ([archive.Worker] with the CrossPartition as handler),
// whose [CrossPartition.Sync] is idempotent; [CrossPartition.CaughtUp]
// tells a reader whether an entity's entries reflect its current version.
// A direct mode (no queue) syncs inline, best effort. The sync records
// (which entries may exist for each entity) live in the partitions
// IndexState!<kind>!<entity PartitionKey> of the State table.
// [CrossPartition.Query] skips every row the index keeps in the entities'
// table.
//
// Queued mode (CrossPartitionOptions.Queue set). A write first enqueues a
// maintenance request hidden for Delay (the safety net), then writes the
// entity, then enqueues a request visible at once. A worker runs
// [CrossPartition.Sync] for each request. A writer that crashes after the
// first step leaves at worst a request that syncs an unchanged entity, and
// one that crashes after writing leaves the safety net, which syncs the
// new version once Delay has passed.
//
// A write can also reach the service after its safety net ran: the writer
// gave up waiting (a timeout, a lost connection) while its request was
// still on its way, in a retransmitting TCP stack, a proxy or the
// service's front end, and it reports an error without sending the second
// request. Bounding the write on the client cannot prevent that: a
// deadline stops the client waiting and sending, not a request already
// sent. So the safety net checks the version it guards instead of trusting
// time:
//
//   - Every write is conditional on the version it replaces: Update and
//     Delete on the caller's ETag, Upsert, Modify and DeleteIfExists on the
//     ETag they read just before (and they read again and retry when
//     another writer got in between), Insert on the entity's absence. The
//     safety net carries that version.
//   - When it runs, the safety net first fences the version: a Merge of no
//     properties conditional on it. If the entity is still at that
//     version, the Merge gives it a new ETag, and the write, conditional
//     on the old ETag, fails with 412 whenever it arrives. If the entity
//     has changed, the write has been applied or can never be (ETags do
//     not recur). Either way the write can no longer change the entity
//     after the fence, and the Sync that follows sees its final effect.
//     The fence costs one transaction; when the write did not land it
//     also changes the entity's ETag and Timestamp (not its properties),
//     which a concurrent Update made with that ETag then sees as a
//     conflict, as it would have seen the write.
//   - An insert (no version yet) cannot be fenced: only the entity's
//     existence makes an insert fail, and Table storage has no condition
//     on absence that a writer could invalidate. So while the new entity
//     is missing, the safety net of an insert syncs and then looks again,
//     with doubling waits, until it finds the entity (and syncs it) or
//     until Delay + InsertHorizon have passed. The writer gives its write
//     at most Delay from before it sends the safety net, so no try of the
//     insert is signed after the safety net became visible, and Azure
//     refuses a Shared Key request that arrives more than 15 minutes after
//     it was signed; the default InsertHorizon, 20 minutes, covers that
//     with 5 minutes for clock skew. With other credentials the service
//     documents no such limit: an insert that arrives later still leaves
//     the entity unindexed until it is written again or Sync runs.
//
// Every write that reaches the service is therefore followed by a Sync
// that sees it, and the indexes never stay behind the entity once the
// queue is drained. A hazard remains that belongs to Table storage
// itself, not to the index: an insert that arrives after a later delete
// of the same entity re-creates it (no condition can stop it). A write
// whose answer was lost, and whose SDK retry met the change it may have
// made, reports an error matching tablekit.ErrOutcomeUnknown
// (DeleteIfExists reports success, and false: the entity is gone either
// way); its safety net brings the indexes up to date whatever happened.
//
// Direct mode (CrossPartitionOptions.Queue nil). A write writes the entity
// and then runs Sync itself. This is best effort, not atomic: if Sync
// fails or the process dies in between, the entity is stored but its
// index entries are stale until the next write of the entity or an
// explicit Sync.
//
// Sync and the sync record. Sync is idempotent and safe to run
// concurrently for one entity. It reads the entity and its sync record,
// which lists every index entry that may exist for the entity (property
// Entries; Synced holds the ETag last synced): it first adds the entries
// it is about to create to the record (conditional on the record's ETag),
// then writes the entries of the current version (copies:
// insert-or-replace; ids: add to list), deletes the others the record
// lists (delete-if-exists; remove from list), then records the entity's
// ETag as synced with exactly the current entries, and checks that the
// entity did not change meanwhile; a lost race starts the pass again, and
// removes the entries it created that the entity no longer has. An entry
// therefore exists without being in the record only while the Sync that
// created it runs (a Sync that read an older version and lost the race to
// a newer one), and [CrossPartition.CaughtUp] compares the record with the
// entity. A pass that may have created entries and then fails (no answer,
// a lost answer, throttling, a server error) is made again within the
// same Sync (CrossPartitionOptions.Retry): a newer Sync may have removed
// those entries meanwhile and recorded the entity without them, and only
// this Sync knows that it created them; the next pass removes them if the
// entity no longer has their values.
//
// What Sync cannot cover: an entry write of a Sync that reaches the
// service late, after the Sync gave up on it (a request delayed in the
// network, as above) and a newer Sync removed that entry, or a worker that
// dies between creating an entry and finishing its pass while a newer Sync
// of the entity ran. No condition can fence a write to another partition
// or table, so the entry then stays until the entity is written again (or
// Sync is run after the entity changed).
//
// # Index entities: the guide's three options
//
//   - Option 1, a blob per value: a CrossPartition index with List and
//     Blobs (the blob "<Index>/<Value>", or "<Index>/<Partition>/<Value>"
//     per partition, each part path-escaped, one "PartitionKey<TAB>RowKey"
//     per line).
//   - Option 2, an index entity in the entities' partition, updated in the
//     same EGT with ETag optimistic concurrency: a SamePartition index with
//     List.
//   - Option 3, an index entity in another partition or table, eventually
//     consistent: a CrossPartition index with List (and Table for another
//     table), under PartitionKey <Index>!<Partition> (or <Index> when
//     Global) and RowKey <Value>.
//
// An index entity stores the ids one per line in the string property IDs
// (PartitionKey and RowKey separated by a tab when the list spans
// partitions), continued in IDs2, IDs3, ... (64 KiB each) up to the 1 MiB
// entity limit, and their number in Count; growing one further fails with
// an error matching tablekit.ErrTooLarge that points to the blob option.
// Changing an entity's value moves its id from one list to the other.
// Updates of one list are read-modify-write cycles conditional on its
// ETag; the writers that share one index take turns on a list (a lock per
// list), so only writers in different processes (or using different
// values) ever retry.
//
// # Versions and ETags
//
// [SamePartition] and [CrossPartition] are tablekit.Store values: Get
// (error matching tablekit.ErrNotFound when absent; T's etag field
// filled), Insert (create only; tablekit.ErrAlreadyExists), Upsert (insert
// or replace), Update(v, etag) (replace if the ETag is still etag;
// azcore.ETagAny for any version; "" refused), Modify(pk, rk, fn)
// (read-modify-write, retried on conflict, creating a missing entity as
// tablekit.Table.Modify does), Delete(pk, rk, etag) (conditional like
// Update) and DeleteIfExists (reports whether the entity existed). Writes
// return the entity's new ETag: a SamePartition takes it from its
// transaction's answer, without a read.
//
// Lookups (Find, By, Range, Prefix) give entities with an ETag that Update
// and Delete accept. Through a SamePartition copy, it is the copy's ETag:
// every write of the entity rewrites all its copies in the same
// transaction, so that ETag changes exactly when the entity does (Update
// and Delete then cost one query more, to find the copy). Through a
// CrossPartition copy, it is the ETag of the version the copy was made
// from (kept in the copy's property PrimaryETag), so Update and Delete with
// it succeed only while the copy is up to date. Through a List index, the
// entity is read itself, with its own ETag.
//
// Copies carry the entity's keys in the properties PrimaryPartitionKey
// (CrossPartition) and PrimaryRowKey: an entity type must not have
// properties with these names, nor PrimaryETag.
//
// # Cost, in storage transactions
//
// SamePartition (any number of copy indexes; List indexes add one read of
// each index entity a write changes: the new value's and, when it changes,
// the old's):
//
//	Insert, or Upsert of a new entity   1 (the EGT)
//	Upsert of an existing entity        3 (refused insert, read, EGT)
//	Update, Delete                      2 (read, EGT); 3 with the ETag of a
//	                                    copy index (read, query, EGT)
//	Modify                              2 (read, EGT)
//	DeleteIfExists                      2 (read, EGT); 1 when missing
//	Get, Find/By on a unique index      1 (point query)
//	By, Range, Prefix                   1 per 1,000 results; List index: 1 +
//	                                    1 per entity, 16 at once
//	Query                               as tablekit.Table.Query, counting the
//	                                    index rows it reads and skips
//	a lost race                         + the refused EGT and a re-read, per retry
//	a keyed write (WithKey)             as unkeyed (the record joins the EGT);
//	                                    + 1 read after a lost answer; a keyed
//	                                    DeleteIfExists of nothing: 1 (the record)
//	a repeat of a key (a replay, or     the refused EGT + 1 read of the record
//	coord.ErrKeyReused)                 (+ 1 read for Modify's replay, which
//	                                    returns the stored entity)
//	a keyed Update or Delete refused    + 1 read of the record, which tells a
//	for a stale ETag or a missing       replay (nil error, no EGT sent) from a
//	entity                              refusal
//
// # Idempotent writes
//
// [SamePartition.WithKey] returns a copy whose writes carry an idempotency
// key, in coord's vocabulary: the key's record is inserted in the
// entity's partition, in the write's one EGT, so a write repeated with
// the key (a retry, or the caller sending it again) is not applied twice,
// and a write whose answer was lost is settled by reading the record
// instead of ending in tablekit.ErrOutcomeUnknown. A key names one
// write: use one WithKey copy per logical write (a message id). The
// record keeps a fingerprint of what the caller wrote (its value, not
// the index actions derived from it): a repeat with another value fails
// with coord.ErrKeyReused. Records live 24 h; coord.Sweep removes them.
// Their RowKeys start with coord.ReservedPrefix ("~coord~"), reserved:
// Query, the lookups and the ranges never return them (nor does
// tablekit's Table.Query), and entities and index names may not use it.
//
// CrossPartition (queued mode):
//
//	Insert, Update, Delete              3 (safety-net message, conditional
//	                                    write, message)
//	Upsert, Modify, DeleteIfExists,     4 (read, safety-net message,
//	Update/Delete with ETagAny            conditional write, message)
//	DeleteIfExists of a missing entity  2 (read, message)
//	worker, per message                 1 dequeue share + 1 delete + Sync
//	worker, per safety net              + 1 (the fence); an insert's: + 1 read,
//	                                    and while the entity is missing, a new
//	                                    message and Sync per look
//	Sync, nothing to do                 2 (entity and sync record reads)
//	Sync, new entity                    5 + 1 per copy + 2 per list change
//	CaughtUp                            2
//	By, Range, Prefix, Query            as SamePartition
//
// In direct mode a write costs 1 plus its Sync (Modify: 2 plus its Sync).
//
// # Limitations
//
//   - Every write to the indexed entities must go through the
//     SamePartition or CrossPartition; a write made directly to the table
//     leaves the indexes stale (a CrossPartition repairs an entity with
//     Sync).
//   - On a table with client-side encryption, the entity and every copy
//     keep the encrypted properties encrypted, each under its own keys
//     (copies are written through the table's AsEntities view), whether T is
//     a struct with encrypt fields or tablekit.Entity. An index value
//     derived from an encrypted property is refused (keys are stored in
//     clear).
//   - An entity's own RowKey (SamePartition) or PartitionKey
//     (CrossPartition, when entries share its table) must not fall into an
//     index's key range; such writes are refused with
//     tablekit.ErrInvalidKey.
//   - An entity read through a SamePartition copy index carries the copy's
//     ETag, not the entity's own (a transaction cannot write the ETag it is
//     about to give the entity into the copies it writes with it); Update
//     and Delete accept it, at the cost of one query.
//   - A CrossPartition cannot enforce uniqueness, and its copies may
//     briefly hold an older version; each copy records the entity version it was made from
//     (property PrimaryETag), which entities read through it carry as
//     their ETag.
//   - A CrossPartition cannot fence its own index writes: an entry write of
//     a Sync that reaches the service late (delayed in the network after the Sync
//     gave up on it), after a newer Sync removed the entry, stays until the
//     entity is written again (see Sync above).
//   - An index entity holds at most 1 MiB of ids, and every change to it
//     is a read-modify-write of the whole list, so values shared by very
//     many frequently changing entities contend (blobs have no such limit).
package index
