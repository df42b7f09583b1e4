package wire

// An entity is addressed by its keys in the request URL's path:
// "<table>(PartitionKey='<pk>',RowKey='<rk>')", each key an OData string
// literal (a ' inside it doubled) that is then percent-encoded for the
// path. The same text addresses an entity in a transaction's request lines.

// AppendKeyPredicate appends "(PartitionKey='pk',RowKey='rk')" with the
// keys as OData string literals (' doubled), percent-encoded for a URL
// path, so that the service reads back exactly pk and rk, whatever they
// hold (quotes, '%', '+', spaces, any Unicode, nothing at all).
func AppendKeyPredicate(dst []byte, pk, rk string) []byte {
	dst = append(dst, "(PartitionKey='"...)
	dst = appendKeyLiteral(dst, pk)
	dst = append(dst, "',RowKey='"...)
	dst = appendKeyLiteral(dst, rk)
	return append(dst, "')"...)
}

// KeyPredicateLen is len(AppendKeyPredicate(nil, pk, rk)).
func KeyPredicateLen(pk, rk string) int {
	return len("(PartitionKey='',RowKey='')") + KeyLiteralLen(pk) + KeyLiteralLen(rk)
}

// appendKeyLiteral appends key with ' doubled and every byte outside the
// unreserved URL characters percent-encoded.
func appendKeyLiteral(dst []byte, key string) []byte {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case unreserved(c):
			dst = append(dst, c)
		case c == '\'':
			dst = append(dst, "%27%27"...)
		default:
			dst = append(dst, '%', hexDigits[c>>4], hexDigits[c&15])
		}
	}
	return dst
}

// KeyLiteralLen is the length of key once doubled and percent-encoded as
// [AppendKeyPredicate] writes it.
func KeyLiteralLen(key string) int {
	n := 0
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case unreserved(c):
			n++
		case c == '\'':
			n += 6
		default:
			n += 3
		}
	}
	return n
}

// unreserved reports whether c is an unreserved URL character (RFC 3986),
// which needs no percent-encoding anywhere in a URL.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~'
}
