// Package tablekit is the typed core of the Azure Table storage design
// patterns: an [Account] opened from a connection string or a token
// credential, typed tables ([Table]) over Go structs with an exact EDM codec,
// OData filters escaped by construction ([Where]), entity group transactions
// and bulk writes, errors that work with [errors.Is] and [errors.As], and a
// [Meter] that counts the billable storage transactions each operation costs.
//
// The sub-packages build the patterns of Microsoft's "Azure Table storage
// table design guide" on this core: keys (key encoders), index (secondary
// indexes), archive (eventually consistent transactions), logtail (log tail
// and log data in blobs) and patterns (entity-shape patterns). Package azurite
// starts a real Azurite emulator for tests and examples.
//
// # One vocabulary
//
// [Table] and the pattern packages use the same verbs with the same
// meaning: Get (read one; [ErrNotFound] when absent), Insert (create only;
// [ErrAlreadyExists]), Upsert (insert or replace whatever is stored),
// Update (replace if still at an ETag; azcore.ETagAny for any version),
// Modify (read, change with a function, write conditional on the version
// read, retried on conflict), Delete (delete if still at an ETag) and
// DeleteIfExists (delete any version; reports whether it existed): the
// [Store] interface. Merge (merge some properties into the stored entity)
// is a verb of its own. Writes return the new ETag from the service's
// answer. Options retry with one [RetryPolicy] in a field named Retry and
// tell the time with a func() time.Time in a field named Clock; a refusal
// before sending is a [*ValidationError] naming the operation, a stored
// value that cannot be read a [*DecodeError], a write whose answer was
// lost an error matching [ErrOutcomeUnknown].
//
// # Set once, on the Account
//
// [Options] hold what applies to everything made from an Account: the
// Azure SDK's client options (HTTP retries, transport, policies, tracing),
// the [Meter], the [Governor] that paces writes and warns of hot
// partitions, the Logger (nil: slog.Default() at the time of logging) and
// the Cosmos DB mode. [TableOptions] hold only a table's own: encryption,
// the table-scan policy and the retry of [Table.Modify].
//
// # Limits
//
// tablekit checks Azure's limits before anything is sent, and its errors
// state them: keys up to 1 KiB (2 bytes per UTF-16 code unit) without
// '/', '\', '#', '?' or control characters; at most 252 custom
// properties; a string or binary property up to 64 KiB; an entity up to
// 1 MiB as Azure measures it; a transaction of 1 to 100 actions on one
// PartitionKey, each entity once, up to 4 MiB (2 MB on Azure Cosmos DB for
// Table, whose RowKeys are at most 255 bytes); a query page of at most
// 1,000 entities. Azure's scalability targets, which the [Governor] paces
// writes under, are 2,000 entities/s per partition and 20,000 requests/s
// per account.
package tablekit
