package keys

import "unicode/utf8"

// Compare compares two keys in the order the service sorts them: by UTF-16
// code units, as Azure and Azurite do. It returns a negative number when
// a sorts first, zero when they are equal, and a positive number when b
// sorts first. It differs from Go's string comparison (code points, i.e.
// UTF-8 bytes) only between characters outside the Basic Multilingual
// Plane (surrogate pairs in UTF-16) and U+E000–U+FFFF. It does not
// allocate.
func Compare(a, b string) int {
	for i := 0; i < len(a) && i < len(b); {
		if a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
			if a[i] != b[i] {
				return int(a[i]) - int(b[i])
			}
			i++
			continue
		}
		ra, na := utf8.DecodeRuneInString(a[i:])
		rb, nb := utf8.DecodeRuneInString(b[i:])
		if ra != rb {
			if (ra >= 0x10000) == (rb >= 0x10000) {
				return int(ra - rb) // same plane: code point order is UTF-16 order
			}
			return firstUnit(ra) - firstUnit(rb)
		}
		if na != nb { // equal runes of different lengths: invalid UTF-8
			return na - nb
		}
		i += na
	}
	return len(a) - len(b)
}

// firstUnit returns the first UTF-16 code unit of r: its high surrogate
// for a supplementary character.
func firstUnit(r rune) int {
	if r >= 0x10000 {
		return 0xD800 + int((r-0x10000)>>10)
	}
	return int(r)
}
