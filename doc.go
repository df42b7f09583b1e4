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
// DeleteIfExists (delete any version; reports whether it existed). Writes
// return the new ETag from the service's answer. Options retry with one
// [RetryPolicy] in a field named Retry and tell the time with one [Clock]
// in a field named Clock; a refusal before sending is a [*ValidationError]
// naming the operation, a stored value that cannot be read a
// [*DecodeError], a write whose answer was lost an error matching
// [ErrOutcomeUnknown].
package tablekit
