package tablekit

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// KeySize is the size of a property encryption key: 32 bytes (AES-256).
const KeySize = 32

// MaxKeyIDLength is the longest key id an encrypted value can name, in
// bytes; long enough for an Azure Key Vault key URL.
const MaxKeyIDLength = 255

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
// A key id must always name the same key: tablekit caches the cipher of
// each id it has resolved for the life of the Table. Implementations must be
// safe for concurrent use and must never put key material in an error.
// [KeyRing] is the local implementation; an adapter to a key service (Azure
// Key Vault: unwrap data keys, cache them) implements the same two methods.
//
// Table operations call the resolver while encoding and decoding entities,
// with a context that carries no deadline: a resolver that talks to a
// network service should bound its own calls and cache what it gets.
type KeyResolver interface {
	// CurrentKey returns the id and the KeySize-byte key that new values
	// are encrypted with.
	CurrentKey(ctx context.Context) (id string, key []byte, err error)
	// ResolveKey returns the key with the given id, or an error matching
	// ErrKeyNotFound if there is none.
	ResolveKey(ctx context.Context, id string) (key []byte, err error)
}

// GenerateKey returns a new random KeySize-byte key from crypto/rand.
func GenerateKey() []byte {
	k := make([]byte, KeySize)
	rand.Read(k) // never fails (crypto/rand aborts the program instead)
	return k
}

// KeyRing is a local [KeyResolver]: a set of keys by id, one of which is
// current. It is safe for concurrent use. Its String method (and so %v and
// slog) shows the key ids, never the keys.
//
//	ring := tablekit.NewKeyRing()
//	ring.Add("k1", key1)        // the first key added becomes current
//	...
//	ring.Rotate("k2", key2)     // new writes use k2; k1 values still decrypt
type KeyRing struct {
	mu      sync.RWMutex
	keys    map[string][]byte
	current string
}

// NewKeyRing returns an empty KeyRing.
func NewKeyRing() *KeyRing { return &KeyRing{keys: map[string][]byte{}} }

// keyIDProblem says what is wrong with a key id, or returns "".
func keyIDProblem(id string) string {
	if id == "" {
		return "key id is empty"
	}
	if len(id) > MaxKeyIDLength {
		return fmt.Sprintf("key id is %d bytes; the limit is %d", len(id), MaxKeyIDLength)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= 0x20 || c >= 0x7f {
			return fmt.Sprintf("key id has a character that is not printable ASCII at byte %d", i)
		}
	}
	return ""
}

func keyRingError(op, detail string, sentinel error) error {
	return &ValidationError{Op: op, Property: "key", Detail: detail, Err: sentinel}
}

// Add adds a key. Key ids are 1–255 bytes of printable ASCII without spaces
// (e.g. "2025-06" or a Key Vault key URL); keys are KeySize bytes. Adding an
// id again is allowed only with the same key: an id must always name one
// key, or values written with the first would no longer decrypt. The first
// key added becomes current. The key is copied.
func (r *KeyRing) Add(id string, key []byte) error {
	if p := keyIDProblem(id); p != "" {
		return keyRingError("KeyRing.Add", p, ErrInvalidInput)
	}
	if len(key) != KeySize {
		return keyRingError("KeyRing.Add", fmt.Sprintf("key %q is %d bytes; AES-256 keys are %d bytes (use GenerateKey)", id, len(key), KeySize), ErrInvalidInput)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = map[string][]byte{}
	}
	if old, ok := r.keys[id]; ok {
		if string(old) != string(key) {
			return keyRingError("KeyRing.Add", fmt.Sprintf("key id %q is already in the ring with a different key", id), ErrAlreadyExists)
		}
		return nil
	}
	r.keys[id] = slices.Clone(key)
	if r.current == "" {
		r.current = id
	}
	return nil
}

// SetCurrent makes the key with this id the one new values are encrypted
// with. It fails with an error matching ErrKeyNotFound if there is none.
func (r *KeyRing) SetCurrent(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keys[id]; !ok {
		return keyRingError("KeyRing.SetCurrent", fmt.Sprintf("no key %q in the ring", id), ErrKeyNotFound)
	}
	r.current = id
	return nil
}

// Rotate adds a key and makes it current. Values encrypted with earlier
// keys still decrypt as long as those keys stay in the ring; rewrite them
// (read, then Update with Replace or Merge) to move them to the new key.
func (r *KeyRing) Rotate(id string, key []byte) error {
	if err := r.Add(id, key); err != nil {
		return err
	}
	return r.SetCurrent(id)
}

// Remove drops a retired key. Values still encrypted with it can no longer
// be read (they fail with an error matching ErrKeyNotFound), so remove a key
// only after every value has been rewritten with a newer one. The current
// key cannot be removed.
func (r *KeyRing) Remove(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keys[id]; !ok {
		return keyRingError("KeyRing.Remove", fmt.Sprintf("no key %q in the ring", id), ErrKeyNotFound)
	}
	if id == r.current {
		return keyRingError("KeyRing.Remove", fmt.Sprintf("key %q is current; make another key current first", id), ErrInvalidInput)
	}
	clear(r.keys[id])
	delete(r.keys, id)
	return nil
}

// Current returns the id of the current key, or "" for an empty ring.
func (r *KeyRing) Current() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.current
}

// IDs returns the ids of the keys in the ring, sorted.
func (r *KeyRing) IDs() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ids := make([]string, 0, len(r.keys))
	for id := range r.keys {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// CurrentKey implements KeyResolver. It returns a copy of the key.
func (r *KeyRing) CurrentKey(ctx context.Context) (string, []byte, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.current == "" {
		return "", nil, keyRingError("KeyRing.CurrentKey", "the key ring is empty: add a key first", ErrKeyNotFound)
	}
	return r.current, slices.Clone(r.keys[r.current]), nil
}

// ResolveKey implements KeyResolver. It returns a copy of the key.
func (r *KeyRing) ResolveKey(ctx context.Context, id string) ([]byte, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.keys[id]
	if !ok {
		return nil, keyRingError("KeyRing.ResolveKey", fmt.Sprintf("no key %q in the ring", id), ErrKeyNotFound)
	}
	return slices.Clone(k), nil
}

// String describes the ring by its key ids; it never shows a key.
func (r *KeyRing) String() string {
	ids := r.IDs()
	return fmt.Sprintf("KeyRing{current: %q, keys: [%s]}", r.Current(), strings.Join(ids, " "))
}

// GoString is String, so that %#v does not print keys either.
func (r *KeyRing) GoString() string { return r.String() }

// LogValue makes slog log the ring by its key ids only.
func (r *KeyRing) LogValue() slog.Value {
	return slog.GroupValue(slog.String("current", r.Current()), slog.Any("keys", r.IDs()))
}
