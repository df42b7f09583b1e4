package keys

import "unicode/utf8"

// PrefixEnd returns the smallest valid key greater than every key that
// starts with prefix, for use as the exclusive upper bound of a prefix
// query:
//
//	PartitionKey eq 'p' and RowKey ge '<prefix>' and RowKey lt '<end>'
//
// ok is false when no such bound exists, so that "RowKey ge prefix" alone
// selects the keys with that prefix: for the empty prefix, and for a prefix
// made only of U+FFFF and U+10FFFF characters.
//
// The bound is prefix with its last character replaced by the next character
// Azure accepts in keys (characters it refuses, such as '/' after '.', are
// skipped: no valid key starts with "a/", so "a0" is the bound for "a."); a
// last character that has no successor is dropped and the one before it is
// incremented. end is valid UTF-8 and holds no refused character when prefix
// holds none; it can be up to 3 bytes longer than prefix, so for a prefix
// within 3 bytes of MaxKeyLen it may exceed the key length limit, which does
// not matter for a filter bound.
//
// Ordering caveat: Go compares strings byte by byte, which is code point
// order; Azure and Azurite (a JavaScript program) compare UTF-16 code units.
// The two orders agree except between supplementary-plane characters
// (U+10000 and above, surrogate pairs in UTF-16) and U+E000–U+FFFF. The
// bound is correct in both orders for keys without supplementary-plane
// characters. With such characters it is correct in UTF-16 order (the
// service's) except after a prefix ending in U+D7FF or U+10FFFF, and correct
// in byte order except after a prefix ending in U+FFFF.
//
// If prefix is not valid UTF-8, each invalid byte is treated as U+FFFD, as
// encoding/json does when the prefix is sent, and end is valid UTF-8.
//
// PrefixEnd works on raw strings and knows nothing of compound keys: on
// compound keys, [ComponentPrefixRange] encodes the prefix and then calls
// it, and [TupleRange] needs no PrefixEnd (see the package doc, Ranges).
func PrefixEnd(prefix string) (end string, ok bool) {
	i, next, ok := prefixEnd(prefix)
	if !ok {
		return "", false
	}
	if utf8.ValidString(prefix[:i]) {
		// The common case: one allocation for the result.
		n := utf8.RuneLen(next)
		b := make([]byte, i, i+n)
		copy(b, prefix[:i])
		return string(utf8.AppendRune(b, next)), true
	}
	return string(appendPrefixHead(nil, prefix, i, next)), true
}

// appendPrefixEnd appends the bound PrefixEnd(prefix) returns to dst and
// reports whether there is one; when ok is false, dst is returned unchanged.
func appendPrefixEnd(dst []byte, prefix string) (out []byte, ok bool) {
	i, next, ok := prefixEnd(prefix)
	if !ok {
		return dst, false
	}
	return appendPrefixHead(dst, prefix, i, next), true
}

// appendPrefixHead appends prefix[:i] (invalid bytes as U+FFFD) and next.
func appendPrefixHead(dst []byte, prefix string, i int, next rune) []byte {
	head := prefix[:i]
	for len(head) > 0 {
		r, size := utf8.DecodeRuneInString(head)
		if r == utf8.RuneError && size == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, head[:size]...)
		}
		head = head[size:]
	}
	return utf8.AppendRune(dst, next)
}

// prefixEnd finds the last character of prefix that has a successor: the
// bound is prefix[:i] followed by next.
func prefixEnd(prefix string) (i int, next rune, ok bool) {
	for i = len(prefix); i > 0; {
		r, size := utf8.DecodeLastRuneInString(prefix[:i])
		i -= size
		// An invalid byte decodes as U+FFFD (size 1): treated as that character.
		if n, ok := nextKeyRune(r); ok {
			return i, n, true
		}
	}
	return 0, 0, false
}

// nextKeyRune returns the smallest character greater than r that Azure
// accepts in a key, choosing the successor that is right in both UTF-16 and
// code point order for BMP text: U+D7FF is followed by U+E000, and U+FFFF
// and U+10FFFF have no successor.
func nextKeyRune(r rune) (rune, bool) {
	for {
		switch {
		case r >= 0xFFFF && r < 0x10000, r >= utf8.MaxRune:
			return 0, false
		case r == 0xD7FF:
			return 0xE000, true
		}
		r++
		if !refused(r) {
			return r, true
		}
	}
}
