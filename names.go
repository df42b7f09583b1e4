package tablekit

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Name rules of the storage services. Azure and Azurite refuse a bad name
// with 400 OutOfRangeInput and no hint of the rule, so tablekit checks names
// itself and says which rule failed.
const (
	tableNameRule     = "table names: 3-63 letters and digits, starting with a letter"
	queueNameRule     = "queue names: 3-63 lowercase letters, digits and single hyphens, starting and ending with a letter or digit"
	containerNameRule = "container names: 3-63 lowercase letters, digits and single hyphens, starting and ending with a letter or digit (or $root, $logs, $web)"
)

// validateTableName checks name against the table service's rules: 3 to 63
// ASCII letters and digits, starting with a letter, and not the reserved
// name "tables". A bad name gives a *[ValidationError] that matches
// [ErrInvalidKey] and says which rule failed.
func validateTableName(name string) error {
	bad := func(detail string, args ...any) error {
		return &ValidationError{Limit: tableNameRule, Detail: "table name " + quoteForError(name) + " " + fmt.Sprintf(detail, args...), Err: ErrInvalidKey}
	}
	if n := len(name); n < 3 || n > 63 {
		return bad("is %d characters long, not 3-63", len(name))
	}
	if !isASCIILetter(name[0]) {
		return bad("starts with %s, not a letter", describeByte(name, 0))
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isASCIILetter(c) && !isASCIIDigit(c) {
			return bad("has %s at byte %d; only letters and digits are allowed", describeByte(name, i), i)
		}
	}
	if strings.EqualFold(name, "tables") {
		return bad("is reserved")
	}
	return nil
}

// validateQueueName checks name against the queue service's rules: 3 to
// 63 lowercase ASCII letters, digits and hyphens, starting and ending with
// a letter or digit, with no two hyphens in a row. A bad name gives a
// *[ValidationError] that matches [ErrInvalidKey] and says which rule
// failed.
func validateQueueName(name string) error {
	return validateDNSName("queue", queueNameRule, name)
}

// validateContainerName checks name against the blob service's rules for
// containers: as [validateQueueName], and also the special containers
// "$root", "$logs" and "$web". A bad name gives a *[ValidationError] that
// matches [ErrInvalidKey] and says which rule failed.
func validateContainerName(name string) error {
	switch name {
	case "$root", "$logs", "$web":
		return nil
	}
	return validateDNSName("container", containerNameRule, name)
}

// validateDNSName checks the shared rules of queue and container names.
func validateDNSName(kind, rule, name string) error {
	bad := func(detail string, args ...any) error {
		return &ValidationError{Limit: rule, Detail: kind + " name " + quoteForError(name) + " " + fmt.Sprintf(detail, args...), Err: ErrInvalidKey}
	}
	if n := len(name); n < 3 || n > 63 {
		return bad("is %d characters long, not 3-63", len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case isASCIILower(c) || isASCIIDigit(c):
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
	return nil
}

// describeByte describes the character at byte i of s for an error.
func describeByte(s string, i int) string {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return fmt.Sprintf("%q", r)
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isASCIILower(c byte) bool  { return c >= 'a' && c <= 'z' }
func isASCIIDigit(c byte) bool  { return c >= '0' && c <= '9' }
