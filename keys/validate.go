package keys

import "unicode/utf8"

// MaxKeyLen is the size limit of a PartitionKey or RowKey: 1 KiB, measured
// as the service stores keys, in UTF-16 (see [KeySize]). That is 512
// characters of the Basic Multilingual Plane, ASCII included, or 256
// characters outside it; Azure and Azurite refuse a 513-character ASCII key.
const MaxKeyLen = 1024

// KeySize returns the size of key as the service measures it against
// MaxKeyLen: two bytes per UTF-16 code unit.
func KeySize[S ~string | ~[]byte](key S) int {
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

// tooLongKey returns a *KeyError when key is larger than MaxKeyLen. A key
// of at most MaxKeyLen/2 bytes of UTF-8 never is (KeySize counts at most
// two per byte), so only longer keys are measured.
func tooLongKey[S ~string | ~[]byte](key S) error {
	if len(key) > MaxKeyLen/2 {
		if n := KeySize(key); n > MaxKeyLen {
			return tooLong(n)
		}
	}
	return nil
}

// Validate reports whether key is acceptable to Azure Table storage as a
// PartitionKey or RowKey. It returns nil or a *KeyError that names the
// offending character and its byte offset. Refused are: '/', '\\', '#',
// '?', the control characters U+0000–U+001F and U+007F–U+009F, invalid
// UTF-8, and keys larger than MaxKeyLen (1 KiB in UTF-16, see KeySize). The
// empty key is valid (Azure allows empty keys).
func Validate(key string) error {
	if err := tooLongKey(key); err != nil {
		return err
	}
	return checkChars(key, len(key))
}

// checkChars checks the characters of s; n is reported as KeyError.Len.
func checkChars(s string, n int) error {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if refusedASCII[c] {
				return charError(i, rune(c), n)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return &KeyError{Component: -1, Pos: i, Char: utf8.RuneError, Reason: reasonUTF8, Len: n, Err: ErrKeyCharacter}
		}
		if r <= 0x9F { // U+0080–U+009F (U+007F is ASCII)
			return charError(i, r, n)
		}
		i += size
	}
	return nil
}

func charError(pos int, r rune, n int) *KeyError {
	reason := reasonReserved
	if r < 0x20 || r >= 0x7F {
		reason = reasonControl
	}
	return &KeyError{Component: -1, Pos: pos, Char: r, Reason: reason, Len: n, Err: ErrKeyCharacter}
}

// refusedASCII marks the ASCII bytes Azure refuses in keys.
var refusedASCII = [utf8.RuneSelf]bool{
	0x00: true, 0x01: true, 0x02: true, 0x03: true, 0x04: true, 0x05: true, 0x06: true, 0x07: true,
	0x08: true, 0x09: true, 0x0A: true, 0x0B: true, 0x0C: true, 0x0D: true, 0x0E: true, 0x0F: true,
	0x10: true, 0x11: true, 0x12: true, 0x13: true, 0x14: true, 0x15: true, 0x16: true, 0x17: true,
	0x18: true, 0x19: true, 0x1A: true, 0x1B: true, 0x1C: true, 0x1D: true, 0x1E: true, 0x1F: true,
	'/': true, '\\': true, '#': true, '?': true, 0x7F: true,
}

// refused reports whether Azure refuses the character r in a key.
func refused(r rune) bool {
	if r < utf8.RuneSelf {
		return refusedASCII[r]
	}
	return r <= 0x9F
}
