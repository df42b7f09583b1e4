package keys

import (
	"math"
	"strconv"
)

// Fixed-width numbers. Every encoding here has a fixed width and uses only
// digits (and '-'), so string order is numeric order, the encodings need no
// escaping inside compound keys, and they pass Validate.
//
// For descending order (larger numbers first), encode the complement:
// Uint(math.MaxUint64-v) and Int(^v) (^v is -1-v, which reverses the order
// of every int64 without overflow), and decode with the same operation.

// uintWidth is the width of Uint and Int: the 20 digits of math.MaxUint64.
const uintWidth = 20

// Uint encodes v as 20 decimal digits, zero-padded: 223 is
// "00000000000000000223". String order is numeric order; for the reverse,
// encode math.MaxUint64-v (Uint(math.MaxUint64) is "18446744073709551615").
func Uint(v uint64) string {
	var b [uintWidth]byte
	return string(appendDigits(b[:0], v, uintWidth))
}

// ParseUint decodes Uint: exactly 20 digits.
func ParseUint(s string) (uint64, error) {
	v, ok := parseDigits(s, uintWidth)
	if !ok {
		return 0, malformed("Uint", s, "want 20 decimal digits not above 18446744073709551615")
	}
	return v, nil
}

// UintN encodes v as width decimal digits, zero-padded, the guide's style
// for short keys: UintN(223, 6) is "000223". width must be 1..20 and v
// must fit in it (ErrInvalidArgument).
func UintN(v uint64, width int) (string, error) {
	var b [uintWidth]byte
	out, err := appendUintN(b[:0], v, width)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// appendUintN appends UintN(v, width) to dst. On error, dst is returned
// unchanged.
func appendUintN(dst []byte, v uint64, width int) ([]byte, error) {
	if err := checkWidth(width); err != nil {
		return dst, err
	}
	if width < uintWidth && v >= pow10[width] {
		return dst, wrapf(ErrInvalidArgument, "%d does not fit in %d digits", v, width)
	}
	return appendDigits(dst, v, width), nil
}

func checkWidth(width int) error {
	if width < 1 || width > uintWidth {
		return wrapf(ErrInvalidArgument, "width %d outside 1..%d", width, uintWidth)
	}
	return nil
}

// ParseUintN decodes UintN: exactly width digits.
func ParseUintN(s string, width int) (uint64, error) {
	if err := checkWidth(width); err != nil {
		return 0, err
	}
	v, ok := parseDigits(s, width)
	if !ok {
		return 0, malformed("UintN", s, "want "+strconv.Itoa(width)+" decimal digits")
	}
	return v, nil
}

// tenTo19 is 10^19: negative v is written as v + 10^19.
const tenTo19 = 10_000_000_000_000_000_000

// Int encodes a signed v in 20 characters whose string order is numeric
// order, negative numbers included. A non-negative v is 20 zero-padded
// digits (the first is always 0): 42 is "00000000000000000042". A negative v
// is '-' (which sorts below '0') followed by the 19 digits of v + 10^19:
// -1 is "-9999999999999999999", -42 is "-9999999999999999958", and
// math.MinInt64 is "-0776627963145224192". For the reverse order, encode
// ^v: Int(^0) is "-9999999999999999999", Int(^-1) is
// "00000000000000000000".
func Int(v int64) string {
	var b [uintWidth]byte
	return string(appendInt(b[:0], v))
}

// appendInt appends Int(v) to dst.
func appendInt(dst []byte, v int64) []byte {
	if v >= 0 {
		return appendDigits(dst, uint64(v), uintWidth)
	}
	// v + 10^19, computed in uint64: 10^19 - |v|, with |MinInt64| = 2^63.
	return appendDigits(append(dst, '-'), tenTo19-uint64(-(v+1))-1, uintWidth-1)
}

// ParseInt decodes Int.
func ParseInt(s string) (int64, error) {
	v, ok := parseInt(s)
	if !ok {
		return 0, malformed("Int", s, "want 20 digits below 09223372036854775808, or '-' and 19 digits from 0776627963145224192")
	}
	return v, nil
}

func parseInt(s string) (int64, bool) {
	if len(s) != uintWidth {
		return 0, false
	}
	switch s[0] {
	case '0':
		u, ok := parseDigits(s[1:], uintWidth-1)
		if !ok || u > math.MaxInt64 {
			return 0, false
		}
		return int64(u), true
	case '-':
		u, ok := parseDigits(s[1:], uintWidth-1)
		if !ok || u < tenTo19-(1<<63) {
			return 0, false
		}
		d := tenTo19 - u // 1..2^63
		return -int64(d-1) - 1, true
	}
	return 0, false
}

// pow10[i] is 10^i for i in 0..19.
var pow10 = [...]uint64{
	1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000,
	1_000_000_000, 10_000_000_000, 100_000_000_000, 1_000_000_000_000,
	10_000_000_000_000, 100_000_000_000_000, 1_000_000_000_000_000,
	10_000_000_000_000_000, 100_000_000_000_000_000, 1_000_000_000_000_000_000,
	tenTo19,
}

// appendDigits appends v as exactly width decimal digits (v must fit).
func appendDigits(dst []byte, v uint64, width int) []byte {
	n := len(dst)
	for range width {
		dst = append(dst, '0')
	}
	d := dst[n:]
	for i := width - 1; i >= 0 && v > 0; i-- {
		d[i] = byte('0' + v%10)
		v /= 10
	}
	return dst
}

// parseDigits parses exactly width decimal digits into a uint64, refusing
// values that overflow.
func parseDigits(s string, width int) (uint64, bool) {
	if len(s) != width {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		if v > (math.MaxUint64-uint64(c))/10 {
			return 0, false
		}
		v = v*10 + uint64(c)
	}
	return v, true
}
