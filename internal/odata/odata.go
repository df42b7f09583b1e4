// Package odata holds the lexical rules of OData $filter text that both
// the root package's filter builder (Where, Filter.Properties) and package
// queryplan's parser follow, so that they agree on what is a quoted
// literal, a typed literal and a number.
package odata

import "strings"

// ClosingQuote returns the index of the quote closing the literal that
// opens at expr[start] (a ' or a "), where a doubled quote stands for
// itself; false if the literal is not closed.
func ClosingQuote(expr string, start int) (int, bool) {
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

// IsTypeHint reports whether w prefixes a typed literal such as guid'...'.
func IsTypeHint(w string) bool {
	switch strings.ToLower(w) {
	case "datetime", "guid", "binary", "x", "datetimeoffset", "time":
		return true
	}
	return false
}

// IsNumber reports whether w is a numeric literal: an optional sign,
// digits with an optional fraction and exponent, and an optional type
// suffix (L, D, F, M).
func IsNumber(w string) bool {
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
