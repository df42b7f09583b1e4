package codec

import (
	"context"
	"errors"
)

// ErrKeyNotFound is matched (with [errors.Is]) by the errors a
// [KeyResolver] returns for a key id it does not know, and by the errors of
// reads that meet a value encrypted with such a key.
var ErrKeyNotFound = errors.New("tablekit: encryption key not found")

// KeyResolver supplies the keys of client-side property encryption (see
// [Encryption]). Every encrypted value names the id of the key that
// encrypted it, so old values keep decrypting after the current key
// changes: rotation is "make a new key current, keep the old ones
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
type KeyResolver interface {
	// CurrentKey returns the id and the 32-byte key that new values are
	// encrypted with.
	CurrentKey(ctx context.Context) (id string, key []byte, err error)
	// ResolveKey returns the key with the given id, or an error matching
	// ErrKeyNotFound if there is none.
	ResolveKey(ctx context.Context, id string) (key []byte, err error)
}
