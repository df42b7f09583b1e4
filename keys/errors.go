package keys

import (
	"errors"
	"fmt"
	"strconv"
)

// More sentinel errors (see also ErrKeyTooLong and ErrKeyCharacter).
var (
	// ErrMalformed: a string given to a decoder (Split, ParseUint, ...) is
	// not an encoding this package produces.
	ErrMalformed = errors.New("keys: malformed encoded key")
	// ErrOutOfRange: a value cannot be encoded: a time outside .NET's
	// DateTime range (0001-01-01 to 9999-12-31 UTC), or a number wider than
	// the requested width.
	ErrOutOfRange = errors.New("keys: value out of range")
	// ErrInvalidArgument: an argument is invalid, such as a shard count
	// outside 1..MaxShards, a width outside 1..20, or a compound key with no
	// components.
	ErrInvalidArgument = errors.New("keys: invalid argument")
)

// ComponentError reports which component of a compound key could not be
// encoded. Err is a *KeyError whose Pos is relative to the component; it
// matches ErrKeyCharacter with errors.Is.
type ComponentError struct {
	Index int   // 0-based index of the component
	Err   error // the cause, usually a *KeyError
}

// Error names the component and the cause.
func (e *ComponentError) Error() string {
	return "keys: component " + strconv.Itoa(e.Index) + ": " + trimPrefix(e.Err.Error())
}

// Unwrap returns Err.
func (e *ComponentError) Unwrap() error { return e.Err }

func trimPrefix(s string) string {
	if len(s) > 6 && s[:6] == "keys: " {
		return s[6:]
	}
	return s
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
