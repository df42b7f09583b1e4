package keys

import (
	"unicode/utf8"
)

// The compound key format.
//
// A compound key is its components joined by Separator ('!'). Inside a
// component, the three characters that sort at or below the separator among
// the characters Azure accepts — space, '!' and '"' — are written with
// Escape ('"') in front of them:
//
//	' ' -> `" `    '!' -> `"!`    '"' -> `""`
//
// Every other character is written as is, so ordinary components stay
// readable: ("empid", "000223") is "empid!000223". Characters Azure refuses
// in keys ('/', '\\', '#', '?', U+0000–U+001F, U+007F–U+009F, invalid UTF-8)
// are rejected with a *ComponentError, not escaped: an order-preserving
// escape for them would need escapes for common characters such as '.'.
//
// Why the order is preserved: every encoded character of a component starts
// with a byte above the separator ('"' = 0x22, or an unescaped character,
// which is '$' = 0x24 or above), the escaped characters keep their relative
// order (space < '!' < '"') and sort between the characters below and above
// them ('"' < '$'), and the encoding of each character is prefix-free. So
// where two tuples first differ, their encodings first differ in the same
// way: at an end of component the shorter side has the separator or the end
// of the key, both below any encoded character. The same argument holds in
// UTF-16 order, so the encoding preserves order both in Go (byte order) and
// in Azure/Azurite (UTF-16 order), for the component order of each.
//
// Why not '_' as the separator: a separator must sort below every character
// left unescaped, and '_' (0x5F) sorts above the digits and upper-case
// letters: ("a", "z") < ("a0", "") but "a_z" > "a0_".
const (
	// Separator separates the components of a compound key.
	Separator = '!'
	// Escape precedes a space, '!' or '"' inside a component.
	Escape = '"'
)

// Compound encodes a tuple of components as one key whose string order is
// the tuple order: component by component, each compared as strings, a
// tuple sorting before its extensions. At least one component is needed
// (the tuple ("") is the empty key). The result passes Validate; a
// component holding a character Azure refuses gives a *ComponentError
// (ErrKeyCharacter), a result over MaxKeyLen (see KeySize) a *KeyError
// (ErrKeyTooLong). See Separator for the format.
func Compound(components ...string) (string, error) {
	var buf [128]byte
	b, err := AppendCompound(buf[:0], components...)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// AppendCompound appends Compound(components...) to dst. On error, dst is
// returned unchanged.
func AppendCompound(dst []byte, components ...string) ([]byte, error) {
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
	if n := KeySize(dst[start:]); n > MaxKeyLen {
		return dst[:start], &KeyError{Pos: -1, Reason: reasonTooLong, Len: n, Err: ErrKeyTooLong}
	}
	return dst, nil
}

var errNoComponents = wrapf(ErrInvalidArgument, "a compound key needs at least one component")

// AppendComponent appends one escaped component (without a separator) to
// dst: the building block of AppendCompound, Range and Builder.Add. It does
// not check the key length. On error, dst is returned unchanged.
func AppendComponent(dst []byte, component string) ([]byte, error) {
	return appendComponent(dst, component, 0)
}

// appendComponent escapes c onto dst; index is reported in errors.
func appendComponent(dst []byte, c string, index int) ([]byte, error) {
	start := len(dst)
	run := 0 // start of the pending unescaped run
	for i := 0; i < len(c); {
		b := c[i]
		if b < utf8.RuneSelf {
			if b <= Escape || refusedASCII[b] {
				if refusedASCII[b] {
					return dst[:start], &ComponentError{Index: index, Err: charError(i, rune(b), len(c))}
				}
				dst = append(dst, c[run:i]...)
				dst = append(dst, Escape, b)
				run = i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(c[i:])
		if r == utf8.RuneError && size == 1 {
			return dst[:start], &ComponentError{Index: index, Err: &KeyError{Pos: i, Char: r, Reason: reasonUTF8, Len: len(c), Err: ErrKeyCharacter}}
		}
		if r <= 0x9F {
			return dst[:start], &ComponentError{Index: index, Err: charError(i, r, len(c))}
		}
		i += size
	}
	return append(dst, c[run:]...), nil
}

// Split decodes a compound key into its components: the inverse of
// Compound. It accepts exactly the strings Compound produces (so
// Compound(Split(k)...) == k); anything else gives an error matching
// ErrMalformed, ErrKeyCharacter or ErrKeyTooLong. The empty key is the
// tuple (""). Components without escapes share memory with key.
func Split(key string) ([]string, error) {
	n := 1
	for i := 0; i < len(key); i++ {
		switch key[i] {
		case Separator:
			n++
		case Escape:
			i++
		}
	}
	return AppendSplit(make([]string, 0, n), key)
}

// AppendSplit appends the components of key to dst, like Split. On error,
// dst is returned unchanged.
func AppendSplit(dst []string, key string) ([]string, error) {
	if err := Validate(key); err != nil {
		return dst, err
	}
	start := len(dst)
	compStart := 0
	escapes := 0
	for i := 0; i <= len(key); i++ {
		if i < len(key) {
			switch key[i] {
			case Escape:
				if i+1 == len(key) {
					return dst[:start], malformed("compound key", key, "ends in the escape character")
				}
				if e := key[i+1]; e != ' ' && e != Separator && e != Escape {
					return dst[:start], malformed("compound key", key, "escape character followed by something other than space, '!' or '\"'")
				}
				escapes++
				i++
				continue
			case ' ':
				return dst[:start], malformed("compound key", key, "unescaped space")
			case Separator:
			default:
				continue
			}
		}
		comp := key[compStart:i]
		if escapes > 0 {
			comp = unescape(comp, escapes)
		}
		dst = append(dst, comp)
		compStart = i + 1
		escapes = 0
	}
	return dst, nil
}

// unescape removes the escape characters from a well-formed component.
func unescape(s string, escapes int) string {
	b := make([]byte, 0, len(s)-escapes)
	for i := 0; i < len(s); i++ {
		if s[i] == Escape {
			i++
		}
		b = append(b, s[i])
	}
	return string(b)
}

// Range returns the bounds of the keys whose tuples begin with components:
// the tuple itself and every longer tuple extending it. Query them with
//
//	RowKey ge 'lo' and RowKey lt 'hi'
//
// hi is lo followed by '"' (the character after the separator), so it may be
// one character longer than MaxKeyLen when lo is at the limit. With no
// components, lo and hi are "" and there is no upper bound: every key
// matches. Errors are those of Compound.
func Range(components ...string) (lo, hi string, err error) {
	if len(components) == 0 {
		return "", "", nil
	}
	var buf [128]byte
	b, err := AppendCompound(buf[:0], components...)
	if err != nil {
		return "", "", err
	}
	lo = string(b)
	return lo, string(append(b, Escape)), nil
}

// PrefixRange returns the bounds of the keys whose tuples begin with
// components followed by (at least) one more component that starts with
// prefix, as a string. For example PrefixRange([]string{"email"}, "jones")
// selects ("email", "jones@contoso.com", ...) and ("email", "jonesj"), not
// ("email") nor ("emailx", ...). Query with "RowKey ge 'lo'", plus "and
// RowKey lt 'hi'" when hi is not empty: hi is empty when there is no upper
// bound (only when the encoded lower bound is made of U+FFFF/U+10FFFF
// characters; see PrefixEnd, whose ordering caveat applies). Errors are those
// of Compound.
func PrefixRange(components []string, prefix string) (lo, hi string, err error) {
	var buf [128]byte
	b, err := appendPrefixLo(buf[:0], components, prefix)
	if err != nil {
		return "", "", err
	}
	lo = string(b)
	b, ok := AppendPrefixEnd(b, lo)
	if !ok {
		return lo, "", nil
	}
	return lo, string(b[len(lo):]), nil
}

func appendPrefixLo(dst []byte, components []string, prefix string) ([]byte, error) {
	start := len(dst)
	var err error
	if len(components) > 0 {
		if dst, err = AppendCompound(dst, components...); err != nil {
			return dst, err
		}
		dst = append(dst, Separator)
	}
	if dst, err = appendComponent(dst, prefix, len(components)); err != nil {
		return dst[:start], err
	}
	if n := KeySize(dst[start:]); n > MaxKeyLen {
		return dst[:start], &KeyError{Pos: -1, Reason: reasonTooLong, Len: n, Err: ErrKeyTooLong}
	}
	return dst, nil
}
