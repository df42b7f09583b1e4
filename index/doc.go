// Package index implements the secondary index patterns of the Azure Table
// storage design guide: intra-partition secondary indexes kept consistent in
// one entity group transaction, inter-partition secondary indexes kept
// eventually consistent through a queue worker, and index entities for
// non-unique values.
//
// Table storage indexes only PartitionKey and RowKey. To find an employee by
// email, or every employee named Jones, without scanning a partition, the
// guide stores the entity again under other keys, or stores lists of ids.
// This package does the bookkeeping: every write keeps the extra rows in
// step with the entity, and lookups are typed.
//
// # Intra-partition: [SamePartition]
//
// All index entries live in the entity's own partition, so the entity and
// every entry change in one entity group transaction (EGT): all or nothing.
// For an employee Sales/000223 with the indexes of the guide, the partition
// Sales holds
//
//	RowKey 000223                          the employee itself
//	RowKey empid!000223                    a copy (unique index "empid")
//	RowKey email!jonesj@contoso.com        a copy (unique index "email")
//	RowKey lastname!Jones!000223           a copy, possibly projected (index "lastname")
//	RowKey surname!Jones                   an index entity listing 000223, ... (List index "surname")
//
// RowKeys are keys.Compound keys, so any value (any valid UTF-8: '/',
// '\', '#', '?' and control characters are escaped) is safe in them and
// string order is value order: By, Range and Prefix are one range query in
// index order (on Azure Cosmos DB for Table, which does not keep key
// order, the entries are sorted on the client). When an indexed value
// changes, the old entry is deleted in the same EGT. Concurrent writers
// are detected with the stored entity's ETag (and the ETags of index
// entities), and the write retried or refused with an error matching
// tablekit.ErrPreconditionFailed ([SamePartitionOptions].Retry).
// A unique value taken by another entity fails the EGT (*[UniqueError]).
// A write that would exceed 100 actions or 4 MiB (2 MB on Cosmos DB) is
// refused before it is sent, with an error saying why.
//
// # Inter-partition: [CrossPartition]
//
// Entries live in other partitions or tables: copies under
// email!Sales / jonesj@contoso.com!000223, or ids in a [listStore]. No
// transaction spans partitions, so the entries follow the entity eventually:
// a write enqueues a maintenance request for the archive package's worker
// ([archive.Worker] with the CrossPartition as handler), whose [CrossPartition.Sync] is
// idempotent; [CrossPartition.CaughtUp] tells a reader whether an entity's entries
// reflect its current version. A direct mode (no queue) syncs inline, best
// effort. See [CrossPartition] for the protocol and its crash guarantees.
//
// # Index entities: the guide's three options
//
//   - Option 1, a blob per value: an [CrossPartition] index whose List is a [blobList].
//   - Option 2, an index entity in the entities' partition, updated in the
//     same EGT with ETag optimistic concurrency: an [SamePartition] index with List.
//   - Option 3, an index entity in another partition or table, eventually
//     consistent: an [CrossPartition] index whose List is an [entityList].
//
// An index entity stores the ids one per line in the string property IDs,
// continued in IDs2, IDs3, ... (64 KiB each) up to the 1 MiB entity limit;
// growing one further fails with an error matching tablekit.ErrTooLarge that
// points to the blob option. Changing an entity's value moves its id from one
// list to the other. Updates of one list are read-modify-write cycles
// conditional on its ETag; the writers that share one SamePartition, entityList or
// blobList take turns on a list (a lock per list), so only writers in
// different processes (or using different values) ever retry.
//
// # Verbs
//
// [SamePartition] and [CrossPartition] speak the root tablekit.Table's vocabulary: Get
// (error matching tablekit.ErrNotFound when absent; T's etag field
// filled), Insert (create only; tablekit.ErrAlreadyExists), Upsert (insert
// or replace), Update(v, etag) (replace if the ETag is still etag;
// azcore.ETagAny for any version; "" refused), Modify(pk, rk, fn)
// (read-modify-write, retried on conflict, creating a missing entity as
// tablekit.Table.Modify does), Delete(pk, rk, etag) (conditional like
// Update) and DeleteIfExists (reports whether the entity existed). Writes
// return the entity's new ETag: a SamePartition takes it from its transaction's
// answer, without a read. Lookups (Find, By, Range, Prefix) give entities
// with an ETag that Update and Delete accept: see [SamePartition] and [CrossPartition].
//
// # Cost, in storage transactions
//
// SamePartition (any number of copy indexes; List indexes add one read of each
// index entity a write changes: the new value's and, when it changes, the
// old's):
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
//	a lost race                         + the refused EGT and a re-read, per retry
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
//	By, Range, Prefix                   as SamePartition
//
// In direct mode a write costs 1 plus its Sync (Modify: 2 plus its Sync).
//
// # Limitations
//
//   - Every write to the indexed entities must go through the SamePartition or
//     CrossPartition; a write made directly to the table leaves the indexes stale
//     (a CrossPartition repairs an entity with Sync).
//   - On a table with client-side encryption, the entity and every copy
//     keep the encrypted properties encrypted, each under its own keys
//     (copies are written through the table's Entities view), whether T is
//     a struct with encrypt fields or tablekit.Entity. An index value
//     derived from an encrypted property is refused (keys are stored in
//     clear).
//   - An entity's own RowKey (SamePartition) or PartitionKey (CrossPartition, when entries
//     share its table) must not fall into an index's key range; such writes
//     are refused with tablekit.ErrInvalidKey.
//   - An entity read through a SamePartition copy index carries the copy's ETag,
//     not the entity's own (a transaction cannot write the ETag it is about
//     to give the entity into the copies it writes with it); Update and
//     Delete accept it, at the cost of one query.
//   - A CrossPartition cannot enforce uniqueness, and its copies may briefly hold an
//     older version; each copy records the entity version it was made from
//     ([primaryETagProperty]), which entities read through it carry as
//     their ETag.
//   - A CrossPartition cannot fence its own index writes: an entry write of a Sync
//     that reaches the service late (delayed in the network after the Sync
//     gave up on it), after a newer Sync removed the entry, stays until the
//     entity is written again (see [CrossPartition]).
//   - A SamePartition index entity or entityList entity holds at most 1 MiB of ids,
//     and every change to it is a read-modify-write of the whole list, so
//     values shared by very many frequently changing entities contend.
package index
