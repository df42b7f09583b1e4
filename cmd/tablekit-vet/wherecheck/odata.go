package wherecheck

import "strings"

// The lexical rules of OData $filter text, as tablekit's filter builder
// (Where) and package queryplan follow them (tablekit's internal/odata):
// the analyzer, a tool of its own module, uses tablekit's public API
// only, so it keeps its own copy. What is a quoted literal, a typed
// literal and a number must stay the same in both.

// closingQuote returns the index of the quote closing the literal that
// opens at expr[start] (a ' or a "), where a doubled quote stands for
// itself; false if the literal is not closed.
func closingQuote(expr string, start int) (int, bool) {
	q := expr[start]
	for i := start + 1; i < len(expr); i++ {
		if expr[i] != q {
			continue
		}
		if i+1 < len(expr) && expr[i+1] == q {
			i++
			continue
		}
		return i, true
	}
	return 0, false
}

// isTypeHint reports whether w prefixes a typed literal such as guid'...'.
func isTypeHint(w string) bool {
	switch strings.ToLower(w) {
	case "datetime", "guid", "binary", "x", "datetimeoffset", "time":
		return true
	}
	return false
}

// isNumber reports whether w is a numeric literal: an optional sign,
// digits with an optional fraction and exponent, and an optional type
// suffix (L, D, F, M).
func isNumber(w string) bool {
	i := 0
	if i < len(w) && (w[i] == '-' || w[i] == '+') {
		i++
	}
	digits := 0
	for ; i < len(w) && w[i] >= '0' && w[i] <= '9'; i++ {
		digits++
	}
	if i < len(w) && w[i] == '.' {
		for i++; i < len(w) && w[i] >= '0' && w[i] <= '9'; i++ {
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(w) && (w[i] == 'e' || w[i] == 'E') {
		i++
		if i < len(w) && (w[i] == '-' || w[i] == '+') {
			i++
		}
		exp := 0
		for ; i < len(w) && w[i] >= '0' && w[i] <= '9'; i++ {
			exp++
		}
		if exp == 0 {
			return false
		}
	}
	if i < len(w) {
		switch w[i] {
		case 'L', 'l', 'D', 'd', 'F', 'f', 'M', 'm':
			i++
		}
	}
	return i == len(w)
}
