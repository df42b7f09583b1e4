// Package names holds the naming rules of the storage services for tables,
// queues and blob containers, for the root package and for package sas
// (which signs tokens for such names without reaching into the root).
// Azure and Azurite refuse a bad name with 400 OutOfRangeInput and no hint
// of the rule, so tablekit checks names itself and says which rule failed.
//
// Each check returns a message and the rule broken; CheckTable,
// CheckQueue and CheckContainer wrap them in the error every package
// documents: a *codec.ValidationError (tablekit.ValidationError) matching
// ErrInvalidKey that says which rule failed. It imports only
// internal/codec, for that error.
package names

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tablekit/tablekit/internal/codec"
)

// CheckTable, CheckQueue and CheckContainer check a name of their kind
// (see Table, Queue and Container), returning nil for a good name, else a
// *codec.ValidationError matching codec.ErrInvalidKey whose Limit is the
// rule and whose Detail says what is wrong. It names no operation: the
// caller names its own.
func CheckTable(name string) error     { return check(Table(name)) }
func CheckQueue(name string) error     { return check(Queue(name)) }
func CheckContainer(name string) error { return check(Container(name)) }

func check(problem, rule string) error {
	if problem == "" {
		return nil
	}
	return &codec.ValidationError{Limit: rule, Detail: problem, Err: codec.ErrInvalidKey}
}

// The rules, as a tablekit.ValidationError's Limit states them.
const (
	TableRule     = "table names: 3-63 letters and digits, starting with a letter"
	QueueRule     = "queue names: 3-63 lowercase letters, digits and single hyphens, starting and ending with a letter or digit"
	ContainerRule = "container names: 3-63 lowercase letters, digits and single hyphens, starting and ending with a letter or digit (or $root, $logs, $web)"
)

// Table checks name against the table service's rules: 3 to 63 ASCII
// letters and digits, starting with a letter, and not the reserved name
// "tables". It returns "" for a good name, else what is wrong (e.g.
// `table name "ab" is 2 characters long, not 3-63`) and [TableRule].
func Table(name string) (problem, rule string) {
	bad := func(detail string, args ...any) (string, string) {
		return "table name " + quote(name) + " " + fmt.Sprintf(detail, args...), TableRule
	}
	if n := len(name); n < 3 || n > 63 {
		return bad("is %d characters long, not 3-63", len(name))
	}
	if !isLetter(name[0]) {
		return bad("starts with %s, not a letter", describeByte(name, 0))
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isLetter(c) && !isDigit(c) {
			return bad("has %s at byte %d; only letters and digits are allowed", describeByte(name, i), i)
		}
	}
	if strings.EqualFold(name, "tables") {
		return bad("is reserved")
	}
	return "", ""
}

// Queue checks name against the queue service's rules: 3 to 63 lowercase
// ASCII letters, digits and hyphens, starting and ending with a letter or
// digit, with no two hyphens in a row. It returns "" for a good name, else
// what is wrong and [QueueRule].
func Queue(name string) (problem, rule string) {
	return dnsName("queue", QueueRule, name)
}

// Container checks name against the blob service's rules for containers:
// as [Queue], and also the special containers "$root", "$logs" and "$web".
// It returns "" for a good name, else what is wrong and [ContainerRule].
func Container(name string) (problem, rule string) {
	switch name {
	case "$root", "$logs", "$web":
		return "", ""
	}
	return dnsName("container", ContainerRule, name)
}

// dnsName checks the shared rules of queue and container names.
func dnsName(kind, rule, name string) (string, string) {
	bad := func(detail string, args ...any) (string, string) {
		return kind + " name " + quote(name) + " " + fmt.Sprintf(detail, args...), rule
	}
	if n := len(name); n < 3 || n > 63 {
		return bad("is %d characters long, not 3-63", len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case isLower(c) || isDigit(c):
		case c >= 'A' && c <= 'Z':
			return bad("has uppercase %q at byte %d; use lowercase", rune(c), i)
		case c == '-':
			if i == 0 {
				return bad("starts with a hyphen")
			}
			if i == len(name)-1 {
				return bad("ends with a hyphen")
			}
			if name[i-1] == '-' {
				return bad("has two hyphens in a row at byte %d", i-1)
			}
		default:
			return bad("has %s at byte %d; only lowercase letters, digits and hyphens are allowed", describeByte(name, i), i)
		}
	}
	return "", ""
}

// quote quotes s for a message, shortening very long values (as the root's
// errors do).
func quote(s string) string {
	const max = 80
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}

// describeByte describes the character at byte i of s for a message.
func describeByte(s string, i int) string {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return fmt.Sprintf("%q", r)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isLower(c byte) bool  { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// ReservedRowKeyPrefix starts the RowKey of every row tablekit keeps in a
// user's partition: coord's fence rows and idempotency records
// (coord.ReservedPrefix). The root's reads leave such rows out unless
// asked for them (tablekit.QueryOptions.Reserved).
const ReservedRowKeyPrefix = "~coord~"
