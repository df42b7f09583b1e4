// Package keys encodes PartitionKey and RowKey values whose string order is
// the order the application needs: compound keys, fixed-width numbers,
// inverted ticks for newest-first order, prefix ranges, shard buckets that
// avoid the prepend/append anti-pattern, and key validation. It is pure: no
// I/O, only the standard library.
//
// Azure Table storage keeps entities sorted by PartitionKey and then RowKey,
// compared as strings, and range queries ("RowKey ge 'a' and RowKey lt 'b'")
// are cheap. Every encoder here produces keys whose string order is the
// order of the values they encode, so that order and ranges survive the trip
// through the service.
//
// # Encoders
//
//   - Compound, AppendCompound, Split, Builder: a tuple of components as one
//     key ("empid!000223"), order preserved for any content; Range and
//     PrefixRange give the bounds of the keys that extend a tuple. See
//     Separator for the format.
//   - Uint, UintN, Int and their Inverted forms: fixed-width numbers whose
//     string order is numeric order (negative numbers included), or its
//     reverse.
//   - InvertedTicks, Ticks, Time, DescendingKey: times in .NET ticks as the
//     design guide's log tail pattern writes them (newest first), ascending
//     ticks, readable UTC text, and a newest-first key unique within a tick.
//   - GUID, InvertedGUID: GUIDs in canonical text form.
//   - Shard, ShardPrefix, ShardPrefixes: a stable hash bucket as a
//     PartitionKey prefix, and the bucket list for a fan-out query.
//   - Validate: what Azure refuses in a key, with the position.
//   - PrefixEnd: the exclusive upper bound of the keys with a string prefix.
//
// Each encoder has an AppendX(dst []byte, ...) form that does not allocate
// when dst has room, and a decoder (ParseX, Split) that accepts exactly
// what the encoder produces. Typed encodings use only digits, lower-case
// hexadecimal, '-', ':', '.', '_', 'T' and 'Z': they are valid keys and need
// no escaping inside compound keys.
//
// # Ordering
//
// Go compares strings byte by byte (code point order); Azure and Azurite
// compare UTF-16 code units. The two orders differ only between
// supplementary-plane characters (U+10000 and above) and U+E000–U+FFFF.
// The compound encoding preserves order in both; PrefixEnd (and so
// PrefixRange) is exact in both for keys without supplementary-plane
// characters; see PrefixEnd for the remaining cases.
//
// # Errors
//
// Nothing panics on bad input. Errors match the sentinels ErrKeyTooLong,
// ErrKeyCharacter (with a *KeyError giving the position, and a
// *ComponentError giving the component), ErrMalformed, ErrOutOfRange and
// ErrInvalidArgument with errors.Is.
package keys
