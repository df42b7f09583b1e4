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
//     write. Works for [tablekit.Entity] and for structs with a map field
//     tagged `wide:"Prefix"`.
//   - Large entities ([Large]): string and binary properties too large for
//     a table stored in blobs, the entity keeping references; reads restore
//     them (concurrently) and never report a present entity as missing,
//     writes never leave a reference to a missing blob, and [Large.Sweep]
//     removes blobs a crash left unreferenced once a grace period passed.
//     A Put whose insert may have been applied (its answer lost) and whose
//     entity is then absent writes again with new blobs, so, like any
//     retried insert, it may take effect twice around a concurrent Delete.
//   - Data series ([Series]): a whole series (e.g. 24 hourly counts,
//     H00..H23) in one entity, read with one point query, updated a slot at
//     a time with ETag-conditional merges and jittered retries.
//   - High-volume delete ([PeriodTables]): a table per period (hour, day,
//     month or custom), writes routed by time, queries across periods, and
//     retention that deletes whole tables: one request per period.
//   - The prepend/append anti-pattern ([Stream]): a time-ordered stream
//     spread over shard partitions ([keys.Shard]), a time window read by
//     parallel per-shard range queries merged back into time order.
//   - Heterogeneous entity types ([Registry], [Mixed]): several Go types in
//     one table or partition, told apart by an EntityType property or a
//     RowKey prefix, with a version in the type value ("Employee.v2"); one
//     query over a mixed partition yields each row as its own type.
//   - Denormalization ([Denormalizer]): copies of an entity's properties
//     kept in other entities of its partition, updated with it in one
//     entity group transaction.
//
// Every type here takes a [tablekit.Table] (usually Table[tablekit.Entity],
// since the patterns decide the physical shape) and, where needed, a
// [*tablekit.Account] or a blob container; nothing here keeps global state.
// Errors match tablekit's sentinels: input refused before sending is a
// *tablekit.ValidationError, and a missing entity matches
// tablekit.ErrNotFound.
//
// The runnable programs in examples/ (wideentities, largeentities,
// dataseries, highvolumedelete, shardedstream, heterogeneous,
// denormalization) narrate each pattern with what every step costs.
package patterns
