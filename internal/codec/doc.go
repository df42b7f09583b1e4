// Package codec is tablekit's one EDM codec: the entity types (Entity,
// GUID), the struct tags and the type plans built from them, the entity
// JSON encoder and decoder, the storage limits checked before sending
// (EntitySize, PropertySize, key and property rules), client-side
// encryption (Encryption, KeyResolver, the cipher), and the errors of bad
// input and unreadable entities (ValidationError, DecodeError and their
// sentinels).
//
// Package tablekit declares aliases of its public names (tablekit.Entity
// is codec.Entity, tablekit.ErrTooLarge is codec.ErrTooLarge, ...), so
// values and errors.Is hold across; tablekit's Table[T] encodes, decodes
// and checks every entity through a Codec[T]. The sibling packages
// (patterns, stream, transfer, logtail, ...) call Encode, Decode,
// EntitySize and the rest here directly. It imports no public tablekit
// package: only internal leaves (limits, keyrule, jsonw, cryptkey, opname).
package codec
