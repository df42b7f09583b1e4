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
// the [Service] behind the table endpoint (by default found out from the
// endpoint's host and answers: Azure Cosmos DB for Table does not keep
// key order: see README's "Cosmos DB for Table").
// [TableOptions] hold only a table's own: encryption, the table-scan policy
// and the retry of [Table.Modify].
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
//
// # Filters
//
// [Where] renders each '?' as a typed OData literal of its argument.
// The literal types follow tablekit's codec, so a value compares with the
// property a struct field of the same Go type is stored as (the service
// matches only values of the same EDM type). Types defined on these kinds
// (type Dept string, type Level int32) render as their kind does; any other
// type implementing [encoding.TextMarshaler] renders as the string literal of
// its text, as the codec stores it. A non-nil pointer to a supported value is
// dereferenced once; a nil pointer, a nil argument and any other type are
// errors.
//
// Quoted literals in expr ('...' or "...", with a doubled quote inside
// standing for itself) are kept as written; a '?' inside one is an error, as
// is an unterminated quote. A '?' must stand apart from its neighbours:
// preceded and followed by white space, a parenthesis, or the start or end
// of expr. An error, a placeholder/argument count mismatch, or an unsupported
// argument gives a Filter whose [Filter.Err] is a *[ValidationError] matching
// [ErrInvalidInput]; such a Filter is never turned into query text.
//
// # Client-side encryption
//
// With [TableOptions].Encryption (an [Encryption]), the values of the
// chosen properties are encrypted before they leave the process and
// decrypted after they are read, with keys the storage account never sees.
//
// A property marked for encryption (a struct field tagged
// `table:"Name,encrypt"`, or a name in Properties for a Table[Entity]) is
// stored as an Edm.Binary value:
//
//	"TKE"                  magic
//	0x01                   format version
//	n, id[n]               the id of the key that encrypted it (1–255 bytes)
//	nonce[12]              random, fresh for every value
//	ciphertext + tag[16]   AES-256-GCM
//
// The plaintext is one byte naming the property's EDM type ('S' String,
// 'I' Int32, 'L' Int64, 'D' Double, 'B' Boolean, 'T' DateTime, 'G' Guid,
// 'X' Binary) and the value: raw UTF-8 for a string, raw bytes for binary,
// the value's OData JSON token for the others. A read therefore gives back
// the type that was written. The encryption adds 34 bytes plus the key id's
// length; the 64 KiB property limit applies to the encrypted value.
//
// The additional authenticated data is the header above followed by the
// length-prefixed PartitionKey, RowKey and property name. A ciphertext copied
// to another entity or another property, a changed byte, a changed key id,
// or the wrong key all fail authentication, and the read returns an error
// matching [ErrDecrypt] that names the entity and property (never the value
// or a key). The table name is not bound, so entities keep decrypting after
// they are copied to another table (an archive move).
//
// Merge updates work: every property is sealed on its own and bound only to
// its own entity and name, so a Merge that writes some encrypted properties
// leaves the others readable. There is no per-entity key, digest or
// metadata property that a partial update would have to rewrite (the old
// .NET client library kept one per entity, which is why it refused merges).
//
// The PartitionKey and RowKey are never encrypted: the service needs them to
// address, order and filter entities, so keep secrets out of keys. A query
// whose filter names an encrypted property is refused before it is sent
// (the service only sees ciphertext, so it could never match); select such
// properties freely. Reads of a property marked for encryption that holds a
// plain value fail, so nobody with write access to the table can substitute
// an unencrypted value.
//
// Keys come from Keys and rotate without rewriting anything at once: new
// values use the current key, old values name theirs (see package keyring,
// [CiphertextKeyID]). AES-GCM with random 96-bit nonces is safe for about
// 2^32 values per key; rotate long before that.
package tablekit
