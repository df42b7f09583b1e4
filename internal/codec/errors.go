package codec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tablekit/tablekit/internal/opname"
)

// The sentinels of input refused before anything is sent; package
// tablekit declares them as its own (the same values), with their full
// documentation.
var (
	// ErrTooLarge: a key, property, entity, transaction or message is over a
	// storage limit; checked before sending, or reported by the service (413).
	ErrTooLarge = errors.New("tablekit: too large")
	// ErrInvalidKey: a PartitionKey, RowKey or resource name breaks the
	// service's rules, or an entity has no key where one is required.
	ErrInvalidKey = errors.New("tablekit: invalid key")
	// ErrInvalidInput: an argument or value tablekit cannot encode or send,
	// such as a filter whose placeholders and arguments disagree.
	ErrInvalidInput = errors.New("tablekit: invalid input")
)

// ValidationError reports input refused before anything was sent. It
// matches [ErrTooLarge], [ErrInvalidKey] or [ErrInvalidInput] with
// [errors.Is].
type ValidationError struct {
	// Op names the operation that refused the input as its caller wrote
	// it, qualified by its package unless it is the root's: "Insert",
	// "patterns.Wide.Merge", "archive.NewWorker". The message starts with
	// it: "tablekit: Insert: ...", "patterns: Wide.Merge: ...".
	Op string
	// Entity names the entity, as "table:PartitionKey/RowKey" or
	// "PartitionKey/RowKey" where known (the message says "entity"), or the
	// table, queue or container the input was meant for (the message says
	// "input for").
	Entity string
	// Property is the property (or field) at fault, "" when it is the whole
	// entity, transaction or message.
	Property string
	// Limit describes the rule that was broken, e.g. "<= 64 KiB per property".
	Limit string
	// Size is the measured size or count that broke a size limit, else 0,
	// in Unit.
	Size int
	// Unit is what Size counts, e.g. "bytes", "bytes of UTF-16" (a
	// string's size: 2 bytes per UTF-16 code unit, as Azure measures it),
	// "properties" or "actions"; "" when Size is a plain number.
	Unit string
	// Detail says more, for example which character is refused and where.
	Detail string
	// Err is the sentinel: ErrTooLarge, ErrInvalidKey or ErrInvalidInput.
	Err error
}

// Error names the entity, property, problem and limit.
func (e *ValidationError) Error() string {
	msg := opname.Prefix(e.Op) + ": invalid"
	switch {
	case e.Entity == "" && e.Property == "":
		msg += " input"
	case strings.Contains(e.Entity, "/"): // "table:pk/rk" or "pk/rk"
		msg += " entity " + Quote(e.Entity)
	case e.Entity != "": // a table, queue or container
		msg += " input for " + Quote(e.Entity)
	}
	if e.Property != "" {
		msg += " property " + Quote(e.Property)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Size > 0 {
		msg += fmt.Sprintf(" (size %d", e.Size)
		if e.Unit != "" {
			msg += " " + e.Unit
		}
		msg += ")"
	}
	if e.Limit != "" {
		msg += "; limit: " + e.Limit
	}
	return msg
}

// Unwrap returns the sentinel the error matches.
func (e *ValidationError) Unwrap() error { return e.Err }

// DecodeError reports a stored entity that tablekit read but cannot turn
// into the caller's value: a property whose stored type or value does not
// fit its field, an answer it cannot parse, or an encrypted property that
// cannot be decrypted. Unlike a [ValidationError] it is not about the
// caller's input: the data came from the service (or from the Entity given
// to tablekit.FromEntity), and nothing was written. A decryption failure matches
// [ErrDecrypt] (and [ErrKeyNotFound] when the key resolver lacks the key).
type DecodeError struct {
	// Op names the operation that read the entity, as ValidationError.Op
	// does: "Get", "patterns.Large.Get".
	Op string
	// Entity names the entity as "table:PartitionKey/RowKey" where known.
	Entity string
	// Property is the property at fault, "" when it is the whole entity.
	Property string
	// Detail says what is wrong; it never shows an encrypted value.
	Detail string
	// Err is ErrDecrypt (possibly joined with ErrKeyNotFound) for a
	// decryption failure, else nil.
	Err error
}

// Error names the operation, the entity, the property and the problem.
func (e *DecodeError) Error() string {
	msg := opname.Prefix(e.Op) + ": "
	if errors.Is(e.Err, ErrDecrypt) {
		msg += "cannot decrypt"
	} else {
		msg += "cannot read"
	}
	if e.Entity != "" {
		msg += " entity " + Quote(e.Entity)
	}
	if e.Property != "" {
		msg += " property " + Quote(e.Property)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns the sentinel the error matches, or nil.
func (e *DecodeError) Unwrap() error { return e.Err }

// WithOp names op, the exported operation that failed, in err's
// *ValidationError or *DecodeError when that names no operation yet, in
// place (tablekit makes these errors fresh for each call), and returns err.
// Errors that name an operation already keep it: the innermost exported
// call that refused the input names itself. A nil err gives nil. It is the
// one way every package of tablekit names its operation in these errors
// (see internal/opname for how operations are named).
func WithOp(op string, err error) error {
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if errors.As(err, &ve) && ve.Op == "" {
		ve.Op = op
	}
	var de *DecodeError
	if errors.As(err, &de) && de.Op == "" {
		de.Op = op
	}
	return err
}

// Quote quotes s for an error message, shortening very long values.
func Quote(s string) string {
	const max = 80
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}

// DescribeKeys names an entity for messages: "table:pk/rk", or "pk/rk"
// when table is "".
func DescribeKeys(table, pk, rk string) string {
	var b strings.Builder
	if table != "" {
		b.WriteString(table)
		b.WriteByte(':')
	}
	b.WriteString(pk)
	b.WriteByte('/')
	b.WriteString(rk)
	return b.String()
}
