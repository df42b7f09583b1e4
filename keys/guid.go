package keys

// guidWidth is the width of GUID.
const guidWidth = 36

// GUID encodes the 16 bytes of g in the standard text form, lower-case
// hexadecimal with hyphens ("xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", the form
// of .NET's Guid.ToString() and of github.com/google/uuid, whose UUID type
// converts to [16]byte). String order is the order of the bytes as written
// in the text; note that .NET's Guid.CompareTo orders differently. For the
// reverse order (newest first for time-ordered UUIDs, version 7), encode
// the complement of every byte, and complement what ParseGUID returns.
func GUID(g [16]byte) string {
	var b [guidWidth]byte
	return string(appendGUID(b[:0], g))
}

// appendGUID appends GUID(g) to dst.
func appendGUID(dst []byte, g [16]byte) []byte {
	const hex = "0123456789abcdef"
	for i, c := range g {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hex[c>>4], hex[c&0xF])
	}
	return dst
}

// ParseGUID decodes GUID. It accepts only the canonical lower-case form, so
// that one GUID has one key.
func ParseGUID(s string) ([16]byte, error) {
	g, ok := parseGUID(s)
	if !ok {
		return g, malformed("GUID", s, "want lower-case xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
	}
	return g, nil
}

func parseGUID(s string) (g [16]byte, ok bool) {
	if len(s) != guidWidth {
		return g, false
	}
	j := 0
	for i := range g {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			if s[j] != '-' {
				return [16]byte{}, false
			}
			j++
		}
		hi, ok1 := unhex(s[j])
		lo, ok2 := unhex(s[j+1])
		if !ok1 || !ok2 {
			return [16]byte{}, false
		}
		g[i] = hi<<4 | lo
		j += 2
	}
	return g, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
