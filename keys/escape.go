package keys

import (
	"unicode/utf8"

	"github.com/tablekit/tablekit/internal/keyrule"
)

// The compound key format.
//
// A compound key is its components joined by Separator ('!'). Inside a
// component, every character is written as is except the ones in this
// table, which are written as a two-character escape: a lead character
// followed by a code.
//
//	character               escape          character        escape
//	U+0000–U+0009           "0 … "9         .                ..
//	U+000A–U+001F           "A … "V         /                .|
//	space                   "_              >                >>
//	!                       "e              ?                >|
//	"                       "q              [                [[
//	#                       "|              \                [|
//	~                       ~0              U+0080–U+0087    ~2 … ~9
//	U+007F                  ~1              U+0088–U+009F    ~A … ~X
//
// The five lead characters are '"', '.', '>', '[' and '~'. A lead doubled is
// itself ('.' is ".."); a lead followed by '|' is the character Azure
// refuses just above it ('#', '/', '?', '\'); control characters are a
// lead and one base-36 digit of their offset (U+000A is `"A`, U+0085 is
// "~7"). Every other character, including every character from U+00A0 on,
// is written as is, so ordinary components stay readable: ("empid",
// "000223") is "empid!000223" and ("email", "jonesj@contoso.com") is
// "email!jonesj@contoso..com". What it costs: space, '!', '"', '.', '>',
// '[', '~' and each character Azure refuses in keys take two characters,
// and the length limit (MaxKeyLen) applies to the encoded key. Any valid UTF-8 component can be encoded; invalid UTF-8
// is refused (keys are text). The result passes Validate: it holds none of
// the characters Azure refuses.
//
// Why the order is preserved. Write e(c) for the encoding of character c,
// and compare either bytes (Go's order, which for UTF-8 is code point
// order) or UTF-16 code units (the service's order).
//
//  1. e is increasing, in either order: if c < c' then e(c) < e(c'), and
//     neither is a prefix of the other. Below U+00A0, the first unit of e(c)
//     never decreases as c grows — it is '"' for U+0000–U+0023, c itself
//     for '$'–'-', '.' for '.' and '/', c for '0'–'=', '>' for '>' and '?',
//     c for '@'–'Z', '[' for '[' and '\', c for ']'–'}', and '~' for
//     '~'–U+009F — and characters that share a lead have codes in their own
//     order ("0"–"9" < "A"–"V" < "_" <
//     "e" < "q" < "|", and "." < "|", ">" < "|", "[" < "|", "0"–"9" <
//     "A"–"X"). From U+00A0 on, e(c) is c: it compares as c does, and
//     above every encoding of a character below U+00A0, which is ASCII
//     (bytes and code units of 0xA0 and above against ASCII ones). No escape
//     is a prefix of another (same lead, different code), and a lead never
//     stands alone, so no one-character encoding is a prefix of an escape.
//     Escapes are ASCII, so all of this holds in bytes and in code units
//     alike.
//  2. So a component's encoding preserves string order: where two
//     components first differ, by characters c < c', their encodings first
//     differ inside e(c) and e(c'), in the same direction; a component that
//     is a prefix of another encodes to a prefix of the other's encoding.
//  3. Separator ('!', 0x21) is below '"' (0x22), the smallest first unit of
//     any e(c). Where two tuples first differ: if one component is a proper
//     prefix of the other, the shorter tuple's key has the separator or its
//     end where the other has the encoding of its next character, which is
//     larger; otherwise (2) applies. A tuple that is a prefix of another
//     encodes to a prefix of the other's key.
//
// Hence Compound preserves tuple order in byte order, with components
// compared as Go strings, and in UTF-16 order, with components compared by
// UTF-16 code units. The one difference between the two orders is the
// components' own: supplementary-plane characters (U+10000 and above)
// sort after U+E000–U+FFFF in code point order and before them in UTF-16
// (see the package doc, Ordering). And since the decoding (Split) reads
// escapes left to right, it inverts the encoding exactly.
//
// Why not '_' as the separator: a separator must sort below every
// character written as is, and '_' (0x5F) sorts above the digits and
// upper-case letters: ("a", "z") < ("a0", "") but "a_z" > "a0_".
const (
	// Separator separates the components of a compound key. It is below
	// every character an encoded component starts with (see the format
	// above).
	Separator = '!'
)

// escapeOf[c] is the escape of the character c (c < U+00A0) as lead<<8 |
// code, or 0 when c is written as is.
var escapeOf = func() (t [0xA0]uint16) {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	set := func(c rune, lead, code byte) { t[c] = uint16(lead)<<8 | uint16(code) }
	for c := rune(0); c < 0x20; c++ {
		set(c, '"', digits[c])
	}
	set(' ', '"', '_')
	set('!', '"', 'e')
	set('"', '"', 'q')
	set('#', '"', '|')
	set('.', '.', '.')
	set('/', '.', '|')
	set('>', '>', '>')
	set('?', '>', '|')
	set('[', '[', '[')
	set('\\', '[', '|')
	for c := rune('~'); c < 0xA0; c++ {
		set(c, '~', digits[c-'~'])
	}
	return t
}()

// leads numbers the lead characters from 1 (0: not a lead).
var leads = [utf8.RuneSelf]uint8{'"': 1, '.': 2, '>': 3, '[': 4, '~': 5}

// unescapeOf[lead-1][code] is the escaped character plus one, or 0 when
// lead followed by code is not an escape.
var unescapeOf = func() (t [5][utf8.RuneSelf]uint8) {
	for c, e := range escapeOf {
		if e != 0 {
			t[leads[e>>8]-1][e&0xFF] = uint8(c + 1)
		}
	}
	return t
}()

// appendEscape appends the escape of c (c < U+00A0, escapeOf[c] != 0).
func appendEscape(dst []byte, e uint16) []byte {
	return append(dst, byte(e>>8), byte(e))
}

// appendComponent escapes c onto dst; index is reported in errors.
func appendComponent(dst []byte, c string, index int) ([]byte, error) {
	start := len(dst)
	run := 0 // start of the pending run written as is
	for i := 0; i < len(c); {
		b := c[i]
		if b < utf8.RuneSelf {
			if e := escapeOf[b]; e != 0 {
				dst = appendEscape(append(dst, c[run:i]...), e)
				run = i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(c[i:])
		if r == utf8.RuneError && size == 1 {
			return dst[:start], &KeyError{Component: index, Pos: i, Char: r, Reason: keyrule.ReasonUTF8, Len: len(c), Err: ErrKeyCharacter}
		}
		if r < 0xA0 { // U+0080–U+009F
			dst = appendEscape(append(dst, c[run:i]...), escapeOf[r])
			run = i + size
		}
		i += size
	}
	return append(dst, c[run:]...), nil
}

// unescapeAt decodes the escape at s[i] (a lead); ok is false when s[i+1]
// does not complete an escape.
func unescapeAt(s string, i int) (r rune, ok bool) {
	if i+1 >= len(s) || s[i+1] >= utf8.RuneSelf {
		return 0, false
	}
	v := unescapeOf[leads[s[i]]-1][s[i+1]]
	return rune(v) - 1, v != 0
}

// unescape decodes a well-formed encoded component that holds escapes.
func unescape(s string) string {
	b := make([]byte, 0, len(s)) // an escape decodes to at most 2 bytes
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < utf8.RuneSelf && leads[c] != 0 {
			r, _ := unescapeAt(s, i)
			b = utf8.AppendRune(b, r)
			i++
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}
