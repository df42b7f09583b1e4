package keys

import "github.com/tablekit/tablekit/internal/keyrule"

// MaxKeyLen is the size limit of a PartitionKey or RowKey: 1 KiB, measured
// as the service stores keys, in UTF-16 (see [KeySize]). That is 512
// characters of the Basic Multilingual Plane, ASCII included, or 256
// characters outside it; Azure and Azurite refuse a 513-character ASCII key.
const MaxKeyLen = keyrule.MaxLen

// KeySize returns the size of key as the service measures it against
// MaxKeyLen: two bytes per UTF-16 code unit.
func KeySize[S ~string | ~[]byte](key S) int { return keyrule.Size(key) }

// tooLongKey returns a *KeyError when key is larger than MaxKeyLen.
func tooLongKey[S ~string | ~[]byte](key S) error {
	if n, over := keyrule.TooLong(key); over {
		return tooLong(n)
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
	if pos, r, reason, found := keyrule.BadChar(s); found {
		return &KeyError{Component: -1, Pos: pos, Char: r, Reason: reason, Len: n, Err: ErrKeyCharacter}
	}
	return nil
}

// refused reports whether Azure refuses the character r in a key.
func refused(r rune) bool { return keyrule.Refused(r) }
