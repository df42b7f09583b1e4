package keys

// TupleRange returns the bounds of the keys whose tuples begin with
// components: the tuple itself and every longer tuple extending it, whole
// components compared (see the package doc, Ranges). TupleRange("a")
// selects ("a") and ("a", "b"), not ("ab"). Query them with
//
//	RowKey ge 'lo' and RowKey lt 'hi'
//
// lo is Compound(components...) and hi is lo followed by '"' (the
// character after the separator), so hi may be one character longer than
// MaxKeyLen when lo is at the limit. With no components, lo and hi are ""
// and there is no upper bound: every key matches. Errors are those of
// Compound.
func TupleRange(components ...string) (lo, hi string, err error) {
	if len(components) == 0 {
		return "", "", nil
	}
	var buf [128]byte
	b, err := appendCompound(buf[:0], components)
	if err != nil {
		return "", "", err
	}
	lo = string(b)
	return lo, string(append(b, '"')), nil
}

// ComponentPrefixRange returns the bounds of the keys whose tuples begin
// with components followed by (at least) one more component that starts
// with prefix, as a string (see the package doc, Ranges). For example
// ComponentPrefixRange([]string{"email"}, "jones") selects ("email",
// "jones@contoso.com", ...) and ("email", "jonesj"), not ("email") nor
// ("emailx", ...). The prefix is encoded like a component, so it may hold
// any character, '/' and the separator included. Query with "RowKey ge
// 'lo'", plus "and RowKey lt 'hi'" when hi is not empty: hi is empty when
// there is no upper bound (only when the encoded lower bound is made of
// U+FFFF/U+10FFFF characters; see PrefixEnd, whose ordering caveat
// applies). Errors are those of Compound.
func ComponentPrefixRange(components []string, prefix string) (lo, hi string, err error) {
	var buf [128]byte
	b, err := appendPrefixLo(buf[:0], components, prefix)
	if err != nil {
		return "", "", err
	}
	lo = string(b)
	b, ok := appendPrefixEnd(b, lo)
	if !ok {
		return lo, "", nil
	}
	return lo, string(b[len(lo):]), nil
}

// appendPrefixLo appends the encoded components, a separator and the
// encoded prefix: every key of the range starts with it, because the
// encoding of a component is the concatenation of the encodings of its
// characters, and a decoder reading left to right splits the key where it
// splits the bound.
func appendPrefixLo(dst []byte, components []string, prefix string) ([]byte, error) {
	start := len(dst)
	var err error
	if len(components) > 0 {
		if dst, err = appendCompound(dst, components); err != nil {
			return dst, err
		}
		dst = append(dst, Separator)
	}
	if dst, err = appendComponent(dst, prefix, len(components)); err != nil {
		return dst[:start], err
	}
	if err := tooLongKey(dst[start:]); err != nil {
		return dst[:start], err
	}
	return dst, nil
}
