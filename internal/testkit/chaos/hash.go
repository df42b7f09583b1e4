package chaos

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

// hasher hashes a sequence of fields, each length-prefixed so that no two
// sequences give the same input.
type hasher struct{ h hash.Hash }

func newHasher() hasher { return hasher{sha256.New()} }

func (h hasher) u64(v uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	h.h.Write(b[:])
}

func (h hasher) bytes(b []byte) {
	h.u64(uint64(len(b)))
	h.h.Write(b)
}

func (h hasher) str(s string) { h.bytes([]byte(s)) }

func (h hasher) sum() [32]byte {
	var out [32]byte
	h.h.Sum(out[:0])
	return out
}
