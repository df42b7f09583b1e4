// Package keyring holds the keys of tablekit's client-side property
// encryption in the process: a [KeyRing] is a set of AES-256 keys by id,
// one of which is current, and implements [tablekit.KeyResolver], so it
// plugs into [tablekit.Encryption]:
//
//	var ring keyring.KeyRing
//	ring.Add("2025-q1", key1)       // the first key added becomes current
//	tbl, err := tablekit.OpenTable[Patient](acct, "Patients", &tablekit.TableOptions{
//		Encryption: &tablekit.Encryption{Keys: &ring},
//	})
//	...
//	ring.Rotate("2025-q2", key2)    // new writes use 2025-q2; 2025-q1 values still decrypt
//
// Every encrypted value names the id of the key that encrypted it, so
// rotation never rewrites anything at once: make a new key current, keep
// the old ones until nothing uses them (tablekit.CiphertextKeyID finds the
// values that still do), then [KeyRing.Remove] them.
//
// Keys come from a secret store or a key service (Azure Key Vault: unwrap
// the data keys at start-up), or from [GenerateKey] for a new one. A key
// service that must be asked at run time implements tablekit.KeyResolver
// itself instead of filling a ring.
package keyring

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/cryptkey"
)

// KeySize is the size of a property encryption key: 32 bytes (AES-256).
const KeySize = 32

// MaxKeyIDLength is the longest key id an encrypted value can name, in
// bytes; long enough for an Azure Key Vault key URL.
const MaxKeyIDLength = 255

// The root package checks keys and ids against internal/cryptkey: these
// fail to compile unless the two agree.
var (
	_ = [1]struct{}{}[KeySize-cryptkey.Size]
	_ = [1]struct{}{}[MaxKeyIDLength-cryptkey.MaxIDLength]
)

// GenerateKey returns a new random KeySize-byte key from crypto/rand.
func GenerateKey() []byte {
	k := make([]byte, KeySize)
	rand.Read(k) // never fails (crypto/rand aborts the program instead)
	return k
}

// KeyRing is a [tablekit.KeyResolver] that holds its keys in memory: a set
// of keys by id, one of which is current (new values are encrypted with
// it). The zero KeyRing is empty and ready to use; a KeyRing must not be
// copied after first use. It is safe for concurrent use.
//
// A KeyRing printed with fmt, or logged with log/slog, shows no key
// material: it holds each key behind a pointer, which fmt prints as an
// address and encoding/json does not print at all.
type KeyRing struct {
	mu      sync.RWMutex
	keys    map[string]*[KeySize]byte
	current string
}

// Compile-time check: a *KeyRing is a tablekit.KeyResolver.
var _ tablekit.KeyResolver = (*KeyRing)(nil)

func keyRingError(op, detail string, sentinel error) error {
	return &tablekit.ValidationError{Op: op, Property: "key", Detail: detail, Err: sentinel}
}

// Add adds a key. Key ids are 1-255 bytes of printable ASCII without
// spaces (e.g. "2025-06" or a Key Vault key URL); keys are KeySize bytes.
// Adding an id again is allowed only with the same key: an id must always
// name one key, or values written with the first would no longer decrypt
// (an error matching [tablekit.ErrAlreadyExists]). The first key added
// becomes current. The key is copied.
func (r *KeyRing) Add(id string, key []byte) error {
	if p := cryptkey.IDProblem(id); p != "" {
		return keyRingError("keyring.KeyRing.Add", p, tablekit.ErrInvalidInput)
	}
	if len(key) != KeySize {
		return keyRingError("keyring.KeyRing.Add", fmt.Sprintf("key %q is %d bytes; AES-256 keys are %d bytes (use GenerateKey)", id, len(key), KeySize), tablekit.ErrInvalidInput)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.keys[id]; ok {
		if string(old[:]) != string(key) {
			return keyRingError("keyring.KeyRing.Add", fmt.Sprintf("key id %q is already in the ring with a different key", id), tablekit.ErrAlreadyExists)
		}
		return nil
	}
	if r.keys == nil {
		r.keys = map[string]*[KeySize]byte{}
	}
	k := new([KeySize]byte)
	copy(k[:], key)
	r.keys[id] = k
	if r.current == "" {
		r.current = id
	}
	return nil
}

// SetCurrent makes the key with this id the one new values are encrypted
// with. It fails with an error matching [tablekit.ErrKeyNotFound] if there
// is none.
func (r *KeyRing) SetCurrent(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keys[id]; !ok {
		return keyRingError("keyring.KeyRing.SetCurrent", fmt.Sprintf("no key %q in the ring", id), tablekit.ErrKeyNotFound)
	}
	r.current = id
	return nil
}

// Rotate adds a key and makes it current. Values encrypted with earlier
// keys still decrypt as long as those keys stay in the ring; rewrite them
// (read, then update) to move them to the new key.
func (r *KeyRing) Rotate(id string, key []byte) error {
	if err := r.Add(id, key); err != nil {
		return err
	}
	return r.SetCurrent(id)
}

// Remove drops a retired key and wipes its copy. Values still encrypted
// with it can no longer be read (they fail with an error matching
// [tablekit.ErrKeyNotFound]), so remove a key only after every value has
// been rewritten with a newer one. The current key cannot be removed.
func (r *KeyRing) Remove(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.keys[id]
	if !ok {
		return keyRingError("keyring.KeyRing.Remove", fmt.Sprintf("no key %q in the ring", id), tablekit.ErrKeyNotFound)
	}
	if id == r.current {
		return keyRingError("keyring.KeyRing.Remove", fmt.Sprintf("key %q is current; make another key current first", id), tablekit.ErrInvalidInput)
	}
	clear(k[:])
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

// CurrentKey implements [tablekit.KeyResolver]. It returns a copy of the
// key; an empty ring fails with an error matching [tablekit.ErrKeyNotFound].
func (r *KeyRing) CurrentKey(ctx context.Context) (string, []byte, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.current == "" {
		return "", nil, keyRingError("keyring.KeyRing.CurrentKey", "the key ring is empty: add a key first", tablekit.ErrKeyNotFound)
	}
	return r.current, slices.Clone(r.keys[r.current][:]), nil
}

// ResolveKey implements [tablekit.KeyResolver]. It returns a copy of the
// key, or an error matching [tablekit.ErrKeyNotFound].
func (r *KeyRing) ResolveKey(ctx context.Context, id string) ([]byte, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.keys[id]
	if !ok {
		return nil, keyRingError("keyring.KeyRing.ResolveKey", fmt.Sprintf("no key %q in the ring", id), tablekit.ErrKeyNotFound)
	}
	return slices.Clone(k[:]), nil
}
