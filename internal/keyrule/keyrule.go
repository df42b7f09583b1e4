// Package keyrule holds the Table service's rules for PartitionKey and
// RowKey values: their size (1 KiB in UTF-16) and the characters they may
// not hold, with the words every refusal uses. Package keys (public) and
// the entity codec (internal/codec) both check keys with it, so that a key
// is refused the same way, with the same message, wherever it is checked.
// It imports nothing of tablekit's.
package keyrule

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxLen is the size limit of a PartitionKey or RowKey: 1 KiB, measured
// as the service stores keys, in UTF-16 (see [Size]).
const MaxLen = 1024

// The reasons a key is refused, as keys.KeyError.Reason says them.
const (
	ReasonReserved = "reserved character"
	ReasonControl  = "control character"
	ReasonUTF8     = "invalid UTF-8"
	ReasonTooLong  = "too long"
)

// Size returns the size of key as the service measures it against
// MaxLen: two bytes per UTF-16 code unit.
func Size[S ~string | ~[]byte](key S) int {
	n := 0
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c < 0x80 || c >= 0xC0 && c < 0xF0:
			n += 2 // ASCII, or the lead byte of a 2- or 3-byte sequence
		case c >= 0xF0:
			n += 4 // a 4-byte sequence: a surrogate pair
		}
	}
	return n
}

// TooLong returns the size of key and true when it is larger than MaxLen.
// A key of at most MaxLen/2 bytes of UTF-8 never is (Size counts at most
// two per byte), so only longer keys are measured.
func TooLong[S ~string | ~[]byte](key S) (size int, over bool) {
	if len(key) > MaxLen/2 {
		if n := Size(key); n > MaxLen {
			return n, true
		}
	}
	return 0, false
}

// BadChar returns the first character of s that Azure refuses in a key
// ('/', '\\', '#', '?', U+0000–U+001F, U+007F–U+009F, invalid UTF-8): its
// byte offset, the character (utf8.RuneError for invalid UTF-8) and the
// reason. found is false when there is none.
func BadChar(s string) (pos int, char rune, reason string, found bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if refusedASCII[c] {
				return i, rune(c), charReason(rune(c)), true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return i, utf8.RuneError, ReasonUTF8, true
		}
		if r <= 0x9F { // U+0080–U+009F (U+007F is ASCII)
			return i, r, charReason(r), true
		}
		i += size
	}
	return 0, 0, "", false
}

// charReason is the reason a refused character r is refused.
func charReason(r rune) string {
	if r < 0x20 || r >= 0x7F {
		return ReasonControl
	}
	return ReasonReserved
}

// refusedASCII marks the ASCII bytes Azure refuses in keys.
var refusedASCII = [utf8.RuneSelf]bool{
	0x00: true, 0x01: true, 0x02: true, 0x03: true, 0x04: true, 0x05: true, 0x06: true, 0x07: true,
	0x08: true, 0x09: true, 0x0A: true, 0x0B: true, 0x0C: true, 0x0D: true, 0x0E: true, 0x0F: true,
	0x10: true, 0x11: true, 0x12: true, 0x13: true, 0x14: true, 0x15: true, 0x16: true, 0x17: true,
	0x18: true, 0x19: true, 0x1A: true, 0x1B: true, 0x1C: true, 0x1D: true, 0x1E: true, 0x1F: true,
	'/': true, '\\': true, '#': true, '?': true, 0x7F: true,
}

// Refused reports whether Azure refuses the character r in a key.
func Refused(r rune) bool {
	if r < utf8.RuneSelf {
		return refusedASCII[r]
	}
	return r <= 0x9F
}

// Message is the text of a refused key (keys.KeyError's): component is the
// index of a compound key's component at fault, or -1 for the whole key;
// pos the byte offset of char, or -1 when the key is too long; n the
// checked string's length in bytes, or, when it is too long, its Size.
func Message(component, pos int, char rune, reason string, n int) string {
	what, prefix := "key", "keys: "
	if component >= 0 {
		what, prefix = "component", "keys: component "+strconv.Itoa(component)+": "
	}
	switch {
	case pos < 0:
		return fmt.Sprintf("keys: key is %d bytes in UTF-16; the limit is %d (512 UTF-16 code units)", n, MaxLen)
	case reason == ReasonUTF8:
		return fmt.Sprintf("%sinvalid UTF-8 at byte %d of a %d-byte %s", prefix, pos, n, what)
	case reason == ReasonControl:
		return fmt.Sprintf("%scontrol character %U at byte %d is not allowed in a key (refused: / \\ # ? U+0000-U+001F U+007F-U+009F)",
			prefix, char, pos)
	default:
		return fmt.Sprintf("%s%s %q (%U) at byte %d is not allowed in a key (refused: / \\ # ? U+0000-U+001F U+007F-U+009F)",
			prefix, reason, char, char, pos)
	}
}

// Problem returns what is wrong with key as a PartitionKey or RowKey, in
// the words of keys.Validate's error, or "" when nothing is.
func Problem(key string) string {
	if n, over := TooLong(key); over {
		return Message(-1, -1, 0, ReasonTooLong, n)
	}
	if pos, r, reason, found := BadChar(key); found {
		return Message(-1, pos, r, reason, len(key))
	}
	return ""
}
