package tablekit

import (
	"github.com/tablekit/tablekit/internal/codec"
)

// The entity codec (EDM types, struct tags, the entity JSON, limits and
// client-side encryption) lives in internal/codec, which the root and its
// sibling packages share; these are its names as users write them.

// Entity is a table entity as a property bag, for tables that hold several
// kinds of entity or whose shape is not known at compile time. Use it as the
// type parameter of [Table] (Table[Entity]). Its fields are PartitionKey,
// RowKey, Timestamp (set by the service on every write; never sent), ETag
// (the entity's version as last read or written) and Properties (the custom
// properties by name).
//
// Property values must have one of these Go types, which fix the EDM type:
// string (Edm.String), int32 (Edm.Int32), int64 or int (Edm.Int64), float64
// (Edm.Double), bool (Edm.Boolean), time.Time (Edm.DateTime), GUID or any
// [16]byte type (Edm.Guid) and []byte (Edm.Binary). A nil value is absent.
// Decoded entities hold exactly those types, with int64 for Edm.Int64 and
// GUID for Edm.Guid, so every value round-trips with its type.
type Entity = codec.Entity

// GUID is a 128-bit identifier stored as Edm.Guid: an Entity's Edm.Guid
// values read back as GUIDs. Any Go type whose underlying type is [16]byte
// (such as github.com/google/uuid.UUID, which also parses the text form)
// maps to Edm.Guid too, and converts to and from a GUID. Its String method
// formats it as xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx in lower case.
type GUID = codec.GUID

// Encryption configures client-side property encryption for a [Table]
// (TableOptions.Encryption): the values of the chosen properties are
// encrypted before they leave the process and decrypted after they are read,
// with keys the storage account never sees.
//
// A property marked for encryption (a struct field tagged
// `table:"Name,encrypt"`, or a name in Properties for a Table[Entity]) is
// stored as an Edm.Binary value, sealed with AES-256-GCM and bound to its
// entity and property name; a read gives back the type that was written.
// Merges work, keys are never encrypted, a filter on an encrypted property
// is refused before sending, and keys rotate through Keys (package
// keyring). Its fields: Keys, the [KeyResolver] that supplies the keys
// (required; keyring.KeyRing is the in-memory one), and Properties, the
// properties to encrypt in a Table[Entity] (struct tables use the encrypt
// tag option; if set for a struct table, every name must be a field tagged
// encrypt). The format and its guarantees: "Client-side encryption" in the
// package documentation.
type Encryption = codec.Encryption

// KeyResolver supplies the keys of client-side property encryption (see
// [Encryption]): CurrentKey returns the id and the 32-byte key new values
// are encrypted with, ResolveKey the key with a given id (or an error
// matching [ErrKeyNotFound]). Every encrypted value names the id of the
// key that encrypted it, so old values keep decrypting after the current
// key changes: rotation is "make a new key current, keep the old ones
// resolvable until nothing uses them".
//
// A key id is 1-255 bytes of printable ASCII without spaces, and must
// always name the same key: tablekit caches the cipher of each id it has
// resolved for the life of the Table. Keys are 32 bytes (AES-256).
// Implementations must be safe for concurrent use and must never put key
// material in an error. keyring.KeyRing (package
// github.com/tablekit/tablekit/keyring) is the in-memory implementation;
// an adapter to a key service (Azure Key Vault: unwrap data keys, cache
// them) implements the same two methods.
//
// Table operations call the resolver while encoding and decoding entities,
// with a context that carries no deadline: a resolver that talks to a
// network service should bound its own calls and cache what it gets.
type KeyResolver = codec.KeyResolver

var (
	// ErrDecrypt is matched (with [errors.Is]) by read errors for encrypted
	// properties that cannot be decrypted: the value is not tablekit
	// ciphertext, was altered, was copied from another entity or property,
	// or was written with another key of the same id. Reads of values whose
	// key the resolver does not know match both ErrDecrypt and
	// [ErrKeyNotFound].
	ErrDecrypt = codec.ErrDecrypt
	// ErrKeyNotFound is matched (with [errors.Is]) by the errors a
	// [KeyResolver] returns for a key id it does not know, and by the
	// errors of reads that meet a value encrypted with such a key.
	ErrKeyNotFound = codec.ErrKeyNotFound
)

// CiphertextKeyID returns the id of the key that encrypted value, a raw
// Edm.Binary property value written by tablekit's encryption (as plain
// aztables or a Table without Encryption reads it). Use it to find the
// entities still encrypted with a key you want to retire. It does not
// decrypt or authenticate anything.
func CiphertextKeyID(value []byte) (string, error) { return codec.CiphertextKeyID(value) }

// ToEntity converts a struct value to its property bag, exactly as a
// Table[T] would store it (without client-side encryption), checking the
// same keys and limits. An Entity converts to itself.
func ToEntity[T any](v T) (Entity, error) {
	e, err := codec.Encode(v)
	return e, withOp("ToEntity", err)
}

// FromEntity converts a property bag to a struct value, as a Table[T] read
// would, without checking storage limits (nothing is stored): it is how a
// query over a table of mixed entity types (read as Table[Entity]) turns
// each row into its own Go type. On an error it returns the zero T.
func FromEntity[T any](e Entity) (T, error) {
	v, err := codec.Decode[T](e)
	return v, withOp("FromEntity", err)
}
