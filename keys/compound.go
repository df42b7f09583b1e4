package keys

import (
	"slices"
	"strings"
)

// Compound encodes a tuple of components as one key whose string order is
// the tuple order: component by component, each compared as strings, a
// tuple sorting before its extensions. Any valid UTF-8 component can be
// encoded, including '/', '\\', '#', '?' and control characters: they are
// escaped (see Separator for the format and why order is preserved). At
// least one component is needed (the tuple ("") is the empty key). The
// result passes Validate; a component that is not valid UTF-8 gives a
// *KeyError (ErrKeyCharacter) naming the component, a result over
// MaxKeyLen (see KeySize) a *KeyError (ErrKeyTooLong). Builder builds the
// same keys, from typed components too, without allocating.
func Compound(components ...string) (string, error) {
	var buf [128]byte
	b, err := appendCompound(buf[:0], components)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// appendCompound appends Compound(components...) to dst. On error, dst is
// returned unchanged.
func appendCompound(dst []byte, components []string) ([]byte, error) {
	if len(components) == 0 {
		return dst, errNoComponents
	}
	start := len(dst)
	for i, c := range components {
		if i > 0 {
			dst = append(dst, Separator)
		}
		var err error
		if dst, err = appendComponent(dst, c, i); err != nil {
			return dst[:start], err
		}
	}
	if err := tooLongKey(dst[start:]); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

var errNoComponents = wrapf(ErrInvalidArgument, "a compound key needs at least one component")

// Split decodes a compound key into its components: the inverse of
// Compound. It accepts exactly the strings Compound produces (so
// Compound(Split(k)...) == k); anything else gives an error matching
// ErrMalformed, ErrKeyCharacter or ErrKeyTooLong. The empty key is the
// tuple (""). Components without escapes share memory with key, and when
// the result does not outlive the caller's function, a key of up to four
// components is split without allocating.
func Split(key string) ([]string, error) {
	// Small enough to be inlined: the slice can then live on the
	// caller's stack.
	return split(make([]string, 0, 4), key)
}

// split appends the components of key to dst, growing it at most once.
func split(dst []string, key string) ([]string, error) {
	if err := Validate(key); err != nil {
		return nil, err
	}
	compStart := 0
	escaped := false
	for i := 0; i <= len(key); i++ {
		if i < len(key) {
			switch byteClass[key[i]] {
			case classPlain:
				continue
			case classLead:
				if _, ok := unescapeAt(key, i); !ok {
					return nil, malformed("compound key", key, "escape lead "+quote(key[i:i+1])+" not followed by its code (see keys.Separator)")
				}
				escaped = true
				i++
				continue
			case classSpace:
				return nil, malformed("compound key", key, "unescaped space")
			}
		}
		comp := key[compStart:i]
		if escaped {
			comp = unescape(comp)
		}
		if len(dst) == cap(dst) {
			// Room for this component and the rest, in one allocation: the
			// separator is never part of an escape, so every '!' left
			// ends a component.
			dst = slices.Grow(dst, 1+strings.Count(key[i:], string(Separator)))
		}
		dst = append(dst, comp)
		compStart = i + 1
		escaped = false
	}
	return dst, nil
}

// Byte classes for decoding: every byte of a valid key is plain (written
// as is, or part of a multi-byte character), a lead, the separator, or an
// unescaped space (which Compound never writes).
const (
	classPlain = iota
	classLead
	classSeparator
	classSpace
)

var byteClass = func() (t [256]uint8) {
	for c, l := range leads {
		if l != 0 {
			t[c] = classLead
		}
	}
	t[Separator] = classSeparator
	t[' '] = classSpace
	return t
}()
