package keys_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tablekit/tablekit/keys"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		key    string
		err    error
		pos    int
		char   rune
		reason string
	}{
		{key: ""},
		{key: "empid_000223"},
		{key: "email_jonesj@contoso.com"},
		{key: "with space and 'quote' and \"dq\" !$%&*+,-.:;<=>@[]^_`{|}~"},
		{key: "Ünïcödé ✓ 日本 \U0001F600 \u00a0 \uffff"},
		{key: strings.Repeat("a", 512)},
		{key: strings.Repeat("é", 512)}, // 512 UTF-16 code units
		{key: strings.Repeat("😀", 256)}, // 256 surrogate pairs
		{key: strings.Repeat("a", 513), err: keys.ErrKeyTooLong, pos: -1, reason: "too long"},
		{key: strings.Repeat("é", 513), err: keys.ErrKeyTooLong, pos: -1, reason: "too long"},
		{key: strings.Repeat("😀", 256) + "a", err: keys.ErrKeyTooLong, pos: -1, reason: "too long"},
		{key: strings.Repeat("é", 513), err: keys.ErrKeyTooLong, pos: -1, reason: "too long"},
		{key: "a/b", err: keys.ErrKeyCharacter, pos: 1, char: '/', reason: "reserved character"},
		{key: `a\b`, err: keys.ErrKeyCharacter, pos: 1, char: '\\', reason: "reserved character"},
		{key: "ab#", err: keys.ErrKeyCharacter, pos: 2, char: '#', reason: "reserved character"},
		{key: "?", err: keys.ErrKeyCharacter, pos: 0, char: '?', reason: "reserved character"},
		{key: "é\x00", err: keys.ErrKeyCharacter, pos: 2, char: 0, reason: "control character"},
		{key: "a\tb", err: keys.ErrKeyCharacter, pos: 1, char: '\t', reason: "control character"},
		{key: "a\x1f", err: keys.ErrKeyCharacter, pos: 1, char: 0x1f, reason: "control character"},
		{key: "a\x7f", err: keys.ErrKeyCharacter, pos: 1, char: 0x7f, reason: "control character"},
		{key: "a\u0080", err: keys.ErrKeyCharacter, pos: 1, char: 0x80, reason: "control character"},
		{key: "ab\u009f", err: keys.ErrKeyCharacter, pos: 2, char: 0x9f, reason: "control character"},
		{key: "a\xffb", err: keys.ErrKeyCharacter, pos: 1, char: utf8.RuneError, reason: "invalid UTF-8"},
		{key: "a\xed\xa0\x80", err: keys.ErrKeyCharacter, pos: 1, char: utf8.RuneError, reason: "invalid UTF-8"}, // surrogate
		{key: "a\xc3", err: keys.ErrKeyCharacter, pos: 1, char: utf8.RuneError, reason: "invalid UTF-8"},
	}
	for _, tc := range tests {
		err := keys.Validate(tc.key)
		if tc.err == nil {
			if err != nil {
				t.Errorf("Validate(%.40q) = %v, want nil", tc.key, err)
			}
			continue
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("Validate(%.40q) = %v, want %v", tc.key, err, tc.err)
			continue
		}
		var ke *keys.KeyError
		if !errors.As(err, &ke) {
			t.Fatalf("Validate(%.40q) = %T, want *KeyError", tc.key, err)
		}
		wantLen := len(tc.key)
		if tc.err == keys.ErrKeyTooLong {
			wantLen = keys.KeySize(tc.key)
		}
		if ke.Pos != tc.pos || ke.Char != tc.char || ke.Reason != tc.reason || ke.Len != wantLen || ke.Component != -1 {
			t.Errorf("Validate(%.40q) = %+v, want pos %d char %U reason %q len %d component -1", tc.key, *ke, tc.pos, tc.char, tc.reason, wantLen)
		}
		other := keys.ErrKeyTooLong
		if tc.err == keys.ErrKeyTooLong {
			other = keys.ErrKeyCharacter
		}
		if errors.Is(err, other) {
			t.Errorf("Validate(%.40q) matches %v too", tc.key, other)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "keys: ") || (tc.pos >= 0 && !strings.Contains(msg, "at byte ")) {
			t.Errorf("Validate(%.40q): message %q does not say where", tc.key, msg)
		}
	}
}

func TestValidateMessages(t *testing.T) {
	for key, want := range map[string]string{
		"a/b":                    `keys: reserved character '/' (U+002F) at byte 1 is not allowed in a key`,
		"a\x01":                  `keys: control character U+0001 at byte 1 is not allowed in a key`,
		"ab\xff":                 `keys: invalid UTF-8 at byte 2 of a 3-byte key`,
		strings.Repeat("x", 2e3): `keys: key is 4000 bytes in UTF-16; the limit is 1024 (512 UTF-16 code units)`,
	} {
		if got := keys.Validate(key).Error(); !strings.HasPrefix(got, want) {
			t.Errorf("Validate(%.20q) = %q, want prefix %q", key, got, want)
		}
	}
}

// slowValid is an independent statement of the rules Validate enforces.
func slowValid(key string) bool {
	if !utf8.ValidString(key) || 2*len(utf16.Encode([]rune(key))) > 1024 {
		return false
	}
	for _, r := range key {
		if r <= 0x1f || (r >= 0x7f && r <= 0x9f) || strings.ContainsRune(`/\#?`, r) {
			return false
		}
	}
	return true
}

func TestValidateAllBMP(t *testing.T) {
	for r := rune(0); r <= 0xFFFF; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		s := "k" + string(r)
		if got, want := keys.Validate(s) == nil, slowValid(s); got != want {
			t.Errorf("Validate(%q) ok=%v, want %v", s, got, want)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	tests := []struct {
		prefix, end string
		ok          bool
	}{
		{"", "", false},
		{"a", "b", true},
		{"empid_", "empid`", true},
		{"abc", "abd", true},
		{"a.", "a0", true},      // '/' is skipped
		{"a\"", "a$", true},     // '#' is skipped
		{"a>", "a@", true},      // '?' is skipped
		{"a[", "a]", true},      // '\\' is skipped
		{"a~", "a\u00a0", true}, // U+007F–U+009F are skipped
		{"a\x1e", "a ", true},   // from a refused prefix to the first allowed character
		{"a z", "a {", true},
		{"é", "ê", true},
		{"a\u07ff", "a\u0800", true},
		{"a\ud7ff", "a\ue000", true},
		{"a\ufffe", "a\uffff", true},
		{"a\uffff", "b", true},          // U+FFFF has no successor
		{"a\uffff\uffff", "b", true},    // carries over several
		{"a\U0010ffff", "b", true},      // nor has U+10FFFF
		{"\uffff", "", false},           // no bound at all
		{"\U0010ffff\uffff", "", false}, // no bound at all
		{"a\U0001f600", "a\U0001f601", true},
		{"x\xff", "x\ufffe", true}, // invalid byte = U+FFFD
		{"\xffx\xfe\uffff", "\ufffdx\ufffe", true},
	}
	for _, tc := range tests {
		end, ok := keys.PrefixEnd(tc.prefix)
		if end != tc.end || ok != tc.ok {
			t.Errorf("PrefixEnd(%q) = %q, %v; want %q, %v", tc.prefix, end, ok, tc.end, tc.ok)
		}
		if ok && !utf8.ValidString(end) {
			t.Errorf("PrefixEnd(%q) = %q: invalid UTF-8", tc.prefix, end)
		}
		if ok && keys.Validate(tc.prefix) == nil && keys.Validate(end) != nil {
			t.Errorf("PrefixEnd(%q) = %q: %v", tc.prefix, end, keys.Validate(end))
		}
	}
}

// TestPrefixEndExhaustive checks every BMP character as the last character
// of a prefix against every BMP character as the next character of a key.
func TestPrefixEndExhaustive(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	var bmp []string
	for r := rune(0); r <= 0xFFFF; r++ {
		if r < 0xD800 || r > 0xDFFF {
			bmp = append(bmp, string(r))
		}
	}
	// A key "a"+c sorts in [prefix, end) exactly when it starts with prefix.
	for _, p := range []string{"a", "b", "\u00a0", "~", ".", "\ud7ff", "\ue000", "\uffff", "\ufffe"} {
		prefix := "a" + p
		end, ok := keys.PrefixEnd(prefix)
		if !ok {
			t.Fatalf("PrefixEnd(%q): no bound", prefix)
		}
		for _, c := range bmp {
			for _, k := range []string{"a" + c, "a" + c + "z", "a" + c + "\uffff"} {
				if keys.Validate(k) != nil {
					continue
				}
				in := k >= prefix && k < end
				if want := strings.HasPrefix(k, prefix); in != want {
					t.Fatalf("key %q in [%q, %q) = %v, want %v", k, prefix, end, in, want)
				}
			}
		}
	}
}
