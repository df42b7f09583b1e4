package keys

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/tablekit/tablekit/internal/keyrule"
)

// Sentinel errors. Every error this package returns matches one of them
// with errors.Is.
var (
	// ErrKeyTooLong: a key is larger than MaxKeyLen (see KeySize). The
	// error is a *KeyError.
	ErrKeyTooLong = errors.New("keys: key too long")
	// ErrKeyCharacter: a key holds a character Azure refuses in keys: '/',
	// '\\', '#', '?', U+0000–U+001F, U+007F–U+009F, or a byte sequence that
	// is not valid UTF-8. A component of a compound key may hold any of
	// these characters (they are escaped), but not invalid UTF-8. The error
	// is a *KeyError.
	ErrKeyCharacter = errors.New("keys: character not allowed in a key")
	// ErrMalformed: a string given to a decoder (Split, ParseUint, ...) is
	// not an encoding this package produces.
	ErrMalformed = errors.New("keys: malformed encoded key")
	// ErrInvalidArgument: a value cannot be encoded or a parameter is out
	// of range: a time outside .NET's DateTime range (0001-01-01 to
	// 9999-12-31 UTC), a number wider than the requested width, a width
	// outside 1..20, a shard count outside 1..MaxShards, a bucket outside
	// 0..n-1, or a compound key with no components.
	ErrInvalidArgument = errors.New("keys: invalid argument")
)

// KeyError says why a key, or a component of a compound key, is not
// acceptable to Azure Table storage: which character and where, or the
// size. It matches ErrKeyTooLong or ErrKeyCharacter with errors.Is (see
// Err); Validate, and every encoder that checks a key, return it.
type KeyError struct {
	// Component is the 0-based index of the compound key component that
	// holds the offending character, when the error is about one (Pos and
	// Len are then the component's); -1 otherwise.
	Component int
	// Pos is the byte offset of the offending character in the checked
	// string, or -1 when the key is too long.
	Pos int
	// Char is the offending character; utf8.RuneError for invalid UTF-8.
	// Zero when the key is too long.
	Char rune
	// Reason is a short description: "reserved character", "control
	// character", "invalid UTF-8" or "too long".
	Reason string
	// Len is the length of the checked string in bytes of UTF-8, or, when
	// it is too long, its KeySize.
	Len int
	// Err is ErrKeyTooLong or ErrKeyCharacter.
	Err error
}

// Error says what is wrong and where.
func (e *KeyError) Error() string {
	return keyrule.Message(e.Component, e.Pos, e.Char, e.Reason, e.Len)
}

// Unwrap returns Err, so errors.Is(err, ErrKeyTooLong) and
// errors.Is(err, ErrKeyCharacter) work.
func (e *KeyError) Unwrap() error { return e.Err }

// tooLong is the error of a key of size n (KeySize) over MaxKeyLen.
func tooLong(n int) *KeyError {
	return &KeyError{Component: -1, Pos: -1, Reason: keyrule.ReasonTooLong, Len: n, Err: ErrKeyTooLong}
}

// malformed returns an error matching ErrMalformed that quotes (the start
// of) the input.
func malformed(what, s, detail string) error {
	return fmt.Errorf("%w: %s %s: %s", ErrMalformed, what, quote(s), detail)
}

// quote quotes s, shortened to at most 64 bytes.
func quote(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}

// wrapf returns an error matching sentinel with a message.
func wrapf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
}
