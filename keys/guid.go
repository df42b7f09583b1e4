package keys

// GUIDWidth is the width of GUID and InvertedGUID.
const GUIDWidth = 36

// GUID encodes the 16 bytes of g in the standard text form, lower-case
// hexadecimal with hyphens ("xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", the form
// of .NET's Guid.ToString() and of github.com/google/uuid, whose UUID type
// converts to [16]byte). String order is the order of the bytes as written
// in the text; note that .NET's Guid.CompareTo orders differently.
func GUID(g [16]byte) string {
	var b [GUIDWidth]byte
	return string(AppendGUID(b[:0], g))
}

// AppendGUID appends GUID(g) to dst.
func AppendGUID(dst []byte, g [16]byte) []byte {
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

// InvertedGUID encodes the complement of every byte of g like GUID, so
// the order is reversed: InvertedGUID of the zero GUID is
// "ffffffff-ffff-ffff-ffff-ffffffffffff".
func InvertedGUID(g [16]byte) string {
	var b [GUIDWidth]byte
	return string(AppendInvertedGUID(b[:0], g))
}

// AppendInvertedGUID appends InvertedGUID(g) to dst.
func AppendInvertedGUID(dst []byte, g [16]byte) []byte {
	for i := range g {
		g[i] = ^g[i]
	}
	return AppendGUID(dst, g)
}

// ParseInvertedGUID decodes InvertedGUID.
func ParseInvertedGUID(s string) ([16]byte, error) {
	g, ok := parseGUID(s)
	if !ok {
		return [16]byte{}, malformed("InvertedGUID", s, "want lower-case xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
	}
	for i := range g {
		g[i] = ^g[i]
	}
	return g, nil
}

func parseGUID(s string) (g [16]byte, ok bool) {
	if len(s) != GUIDWidth {
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
