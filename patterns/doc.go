// Package patterns implements the entity-shape patterns of the Azure Table
// storage design guide on tablekit's typed core, each with the guide's
// guarantees made explicit and tested against Azurite:
//
//   - Wide entities ([Wide]): a logical entity with more than 252
//     properties (or more than 1 MiB) split over up to 100 physical
//     entities of one partition, written in one entity group transaction
//     and read with one range query; a change rewrites only part 0 and the
//     physical entities whose properties changed. Every write is
//     conditional on the version it read and every read is checked to be
//     one version, so a logical entity is always one writer's complete
//     write. Its version is part 0's ETag. Works for [tablekit.Entity] and
//     for structs with a map field tagged `wide:"Prefix"`. A write that
//     inserts the entity is retried by the Azure SDK when its answer is
//     lost, so, like any retried insert, it may take effect twice around a
//     concurrent delete.
//   - Large entities ([Large]): string and binary properties too large for
//     a table stored in blobs, the entity keeping references; reads restore
//     them (concurrently) and never report a present entity as missing,
//     writes never leave a reference to a missing blob, and [Large.Sweep]
//     removes blobs a crash left unreferenced once a grace period passed.
//     A write whose insert may have been applied (its answer lost) and
//     whose entity is then absent writes again with new blobs, so, like any
//     retried insert, it may take effect twice around a concurrent delete.
//   - Data series ([Series]): a whole series (e.g. 24 hourly counts,
//     H00..H23) in one entity, read with one point query, changed a slot at
//     a time with ETag-conditional merges and jittered retries.
//   - High-volume delete ([PeriodTables]): a table per period (hour, day,
//     month or custom), writes routed by time, queries across periods, and
//     retention that deletes whole tables: one request per period.
//   - The prepend/append anti-pattern ([Stream]): a time-ordered stream
//     spread over shard partitions (keys.ShardedKey: the bucket first), a
//     time window read by parallel per-shard range queries merged back into
//     time order.
//   - Heterogeneous entity types ([Registry], [Mixed]): several Go types in
//     one table or partition, told apart by an EntityType property or a
//     RowKey prefix, with a version in the type value ("Employee.v2"); one
//     query over a mixed partition yields each row as its own type.
//   - Denormalization ([Denormalizer]): copies of an entity's properties
//     kept in other entities of its partition, updated with it in one
//     entity group transaction.
//
// # Tables
//
// Every constructor takes the application's own *tablekit.Table[T] (for
// [PeriodTables], the *tablekit.Account its tables are created in) and
// stores through its property-bag view, [tablekit.Table.AsEntities]: the
// pattern's physical entities keep the table's client-side encryption,
// tracing, logger, governor and Cosmos DB mode. Wide and Large store T
// itself; Series, Stream, Mixed and Denormalizer decide their own shapes,
// so the table's type does not matter to them. Nothing here keeps global
// state.
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
// whether anything was. Every write returns the version the caller can
// continue from (an ETag; for a Wide, part 0's), taken from the service's
// answer (tablekit.Table.Transaction returns each action's ETag), never
// read again. Get fills T's etag field with the same version.
//
//	              Get  Insert  Upsert  Update  Modify  Delete  DeleteIfExists
//	Wide           ✓     ✓       ✓       ✓       ✓       ✓          ✓
//	Large          ✓     ✓       ✓       ✓       ✓       ✓          ✓
//	Series         ✓     —       —       —       ✓       —          —
//	Mixed          ✓     ✓       ✓       ✓       —       ✓          ✓
//	PeriodTables   —     ✓       ✓       —       —       —          —
//
// Wide.Merge is an insert-or-merge of some properties (tablekit.Table.Merge); Series
// adds Add and Set (a Modify of one slot), Stream Append (an Upsert of
// events, in bulk) and Denormalizer Write (an Upsert, or an Update when
// the source carries an ETag, together with its copies). Each type's
// documentation gives every operation's cost in storage transactions.
//
// # Errors
//
// Errors match tablekit's sentinels. Input refused before sending is a
// *tablekit.ValidationError whose Op names the operation
// ("patterns.NewWide", "patterns.Wide.Update"); stored data a pattern cannot read
// back is a *tablekit.DecodeError; a missing entity matches
// tablekit.ErrNotFound.
//
// The runnable programs in examples/ (wideentities, largeentities,
// dataseries, highvolumedelete, shardedstream, heterogeneous,
// denormalization) narrate each pattern with what every step costs.
package patterns
