package keys_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/keys"
)

func TestCompound(t *testing.T) {
	tests := []struct {
		comps []string
		key   string
	}{
		{[]string{""}, ""},
		{[]string{"", ""}, "!"},
		{[]string{"empid", "000223"}, "empid!000223"},
		{[]string{"email", "jonesj@contoso.com"}, "email!jonesj@contoso..com"},
		{[]string{"000123", "2012"}, "000123!2012"},
		{[]string{"a_b", "c-d:e"}, "a_b!c-d:e"},
		{[]string{"hello world"}, `hello"_world`},
		{[]string{"wow!", `"q"`}, `wow"e!"qq"q`},
		{[]string{"!", "", `"`}, `"e!!"q`},
		{[]string{"日本", "\U0001F600"}, "日本!\U0001F600"},
		{[]string{"trailing "}, `trailing"_`},
		// Characters Azure refuses in keys are escaped.
		{[]string{"a/b", `c\d#e?f`}, `a.|b!c[|d"|e>|f`},
		{[]string{"docs/readme.md"}, "docs.|readme..md"},
		{[]string{"https://contoso.com/a?b=c#d"}, `https:.|.|contoso..com.|a>|b=c"|d`},
		{[]string{"#golang"}, `"|golang`},
		{[]string{"\x00\t\n\x1f\x7f\u0080\u0085\u009f\u00a0"}, `"0"9"A"V~1~2~7~X` + "\u00a0"},
		{[]string{"~.>[", "|"}, "~0..>>[[!|"},
		{[]string{"a.|b"}, "a..|b"},
		{[]string{"\U0001F600/\U0001F600"}, "\U0001F600.|\U0001F600"},
	}
	for _, tc := range tests {
		got, err := keys.Compound(tc.comps...)
		if err != nil || got != tc.key {
			t.Errorf("Compound(%q) = %q, %v; want %q", tc.comps, got, err, tc.key)
			continue
		}
		if err := keys.Validate(got); err != nil {
			t.Errorf("Compound(%q) = %q: %v", tc.comps, got, err)
		}
		back, err := keys.Split(got)
		if err != nil || !slices.Equal(back, tc.comps) {
			t.Errorf("Split(%q) = %q, %v; want %q", got, back, err, tc.comps)
		}
		// The Builder writes the same key after what its buffer holds.
		var kb keys.Builder
		kb.Reset([]byte("x"))
		for _, c := range tc.comps {
			kb.Add(c)
		}
		if b, err := kb.Bytes(); err != nil || string(b) != "x"+tc.key {
			t.Errorf("Builder.Add(%q...) = %q, %v", tc.comps, b, err)
		}
	}
}

func TestCompoundErrors(t *testing.T) {
	if _, err := keys.Compound(); !errors.Is(err, keys.ErrInvalidArgument) {
		t.Errorf("Compound() = %v, want ErrInvalidArgument", err)
	}
	// Only invalid UTF-8 is refused.
	for _, tc := range []struct {
		comps []string
		index int
		pos   int
	}{
		{[]string{"a\xffb"}, 0, 1},
		{[]string{"ok", "x\xc2"}, 1, 1},
		{[]string{"ok", "ok", "\xed\xa0\x80"}, 2, 0}, // a UTF-16 surrogate in UTF-8
		{[]string{"é\xc0\x80"}, 0, 2},                // overlong NUL
		{[]string{"ok", "\xff"}, 1, 0},
	} {
		k, err := keys.Compound(tc.comps...)
		var ke *keys.KeyError
		if !errors.Is(err, keys.ErrKeyCharacter) || !errors.As(err, &ke) {
			t.Errorf("Compound(%q) = %q, %v, want a *KeyError with ErrKeyCharacter", tc.comps, k, err)
			continue
		}
		if ke.Component != tc.index || ke.Pos != tc.pos || k != "" {
			t.Errorf("Compound(%q): component %d pos %d key %q; want %d %d", tc.comps, ke.Component, ke.Pos, k, tc.index, tc.pos)
		}
		if want := fmt.Sprintf("keys: component %d: invalid UTF-8 at byte %d of a %d-byte component", tc.index, tc.pos, len(tc.comps[tc.index])); err.Error() != want {
			t.Errorf("message %q, want %q", err, want)
		}
		if !strings.Contains(err.Error(), "component ") || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("message %q does not name the component and the cause", err)
		}
	}
	// Length: escapes count.
	if _, err := keys.Compound(strings.Repeat("a", 512)); err != nil {
		t.Errorf("512-character key: %v", err)
	}
	if _, err := keys.Compound(strings.Repeat("a", 512), ""); !errors.Is(err, keys.ErrKeyTooLong) {
		t.Errorf("513-character key: %v", err)
	}
	if _, err := keys.Compound(strings.Repeat("!", 513)); !errors.Is(err, keys.ErrKeyTooLong) {
		t.Errorf("1026-character escaped key: %v", err)
	}
	if _, err := keys.Compound(strings.Repeat("/", 256)); err != nil {
		t.Errorf("512-character escaped key: %v", err)
	}
	if _, err := keys.Compound(strings.Repeat("/", 256), ""); !errors.Is(err, keys.ErrKeyTooLong) {
		t.Errorf("513-character escaped key: %v", err)
	}
	// U+0085 is 2 bytes of UTF-8 and its escape 2 characters: 256 fit.
	if _, err := keys.Compound(strings.Repeat("\u0085", 256)); err != nil {
		t.Errorf("256 escaped C1 controls: %v", err)
	}
}

func TestSplitMalformed(t *testing.T) {
	for _, k := range []string{
		`"`, `a"`, `a"b`, "a b", " ", `"""`, `a!"x`, `a"$`, // a bad or missing code, an unescaped space
		`" `, `"!`, `""`, // the escapes of the earlier format
		".", "a.", "a.b", ".0", ">", "a>b", "[", "a[b", "~", "~Y", "~|", `"W`, `"Z`, `"|"`,
		"a.\u00e9", "~\u00e9", // a non-ASCII code
	} {
		if got, err := keys.Split(k); !errors.Is(err, keys.ErrMalformed) {
			t.Errorf("Split(%q) = %q, %v; want ErrMalformed", k, got, err)
		}
	}
	for _, k := range []string{"a/b", `a"#`, "\x00", "a\xff", strings.Repeat("a", 513)} {
		if got, err := keys.Split(k); err == nil {
			t.Errorf("Split(%q) = %q, want an error", k, got)
		}
	}
}

// TestCompoundEveryEscape: every character below U+00A0, alone and between
// others, round-trips, and the encodings of these characters are in their
// order, as are the keys of all tuples over a small alphabet.
func TestCompoundEveryEscape(t *testing.T) {
	var chars []string
	for r := rune(0); r <= 0xA1; r++ {
		chars = append(chars, string(r))
	}
	chars = append(chars, "\ud7ff", "\ue000", "\uffff", "\U00010000", "\U0001F600", "\U0010FFFF")
	var prev string
	for i, c := range chars {
		for _, tu := range [][]string{{c}, {"x" + c + "y"}, {c, c}, {"", c + c, ""}} {
			k, err := keys.Compound(tu...)
			if err != nil {
				t.Fatalf("Compound(%q): %v", tu, err)
			}
			if err := keys.Validate(k); err != nil {
				t.Fatalf("Compound(%q) = %q: %v", tu, k, err)
			}
			back, err := keys.Split(k)
			if err != nil || !slices.Equal(back, tu) {
				t.Fatalf("Split(%q) = %q, %v; want %q", k, back, err, tu)
			}
		}
		k, _ := keys.Compound(c)
		if i > 0 {
			if got, want := sign(strings.Compare(prev, k)), sign(strings.Compare(chars[i-1], c)); got != want {
				t.Errorf("byte order: %q (%q) vs %q (%q) = %d, want %d", chars[i-1], prev, c, k, got, want)
			}
			if got, want := sign(utf16Compare(prev, k)), sign(utf16Compare(chars[i-1], c)); got != want {
				t.Errorf("UTF-16 order: %q (%q) vs %q (%q) = %d, want %d", chars[i-1], prev, c, k, got, want)
			}
		}
		prev = k
	}
	// All tuples of one or two components of up to two characters from an
	// alphabet holding every lead, its group and its neighbours.
	alphabet := []string{"", "\x00", "\x1f", " ", "!", `"`, "#", "$", "-", ".", "/", "0", "=", ">", "?", "@", "Z", "[", "\\", "]", "_", "|", "}", "~", "\x7f", "\u0080", "\u009f", "\u00a0", "\uffff", "\U0001F600"}
	var comps []string
	for _, a := range alphabet {
		for _, b := range alphabet {
			if a != "" || b == "" {
				comps = append(comps, a+b)
			}
		}
	}
	var tuples [][]string
	for _, a := range comps {
		tuples = append(tuples, []string{a})
		for _, b := range alphabet {
			tuples = append(tuples, []string{a, b})
		}
	}
	for _, o := range []struct {
		name string
		cmp  func(a, b string) int
	}{{"byte", strings.Compare}, {"UTF-16", utf16Compare}} {
		slices.SortFunc(tuples, func(a, b []string) int { return tupleCompare(a, b, o.cmp) })
		prev := ""
		for i, tu := range tuples {
			k, err := keys.Compound(tu...)
			if err != nil {
				t.Fatal(err)
			}
			if i > 0 && o.cmp(prev, k) >= 0 {
				t.Fatalf("%s order: %q = %q is not above %q = %q", o.name, tu, k, tuples[i-1], prev)
			}
			prev = k
		}
	}
}

// TestCompoundOrderTable checks the cases that break naive separators.
func TestCompoundOrderTable(t *testing.T) {
	// Sorted by tuple order.
	tuples := [][]string{
		{""},
		{"", ""},
		{"", "", ""},
		{"", "a"},
		{" "},
		{" ", ""},
		{"  "},
		{"!"},
		{"!", ""},
		{"!!"},
		{`"`},
		{`"`, "!"},
		{`"!`},
		{"$"},
		{"0"},
		{"a"},
		{"a", ""},
		{"a", "", "z"},
		{"a", " "},
		{"a", "!"},
		{"a", `"`},
		{"a", "0"},
		{"a", "z"},
		{"a "},
		{"a!"},
		{"a!", ""},
		{`a"`},
		{"a#"},
		{"a."},
		{"a.", ""},
		{"a./"},
		{"a/"},
		{"a0", ""},
		{"a>"},
		{"a?"},
		{"a["},
		{"a\\"},
		{"a_"},
		{"ab"},
		{"a|"},
		{"a~"},
		{"a~", "~"},
		{"a\x7f"},
		{"a\u0080"},
		{"a\u009f"},
		{"a\u00a0"},
		{"a\uffff"},
	}
	var prev string
	for i, tu := range tuples {
		k, err := keys.Compound(tu...)
		if err != nil {
			t.Fatalf("Compound(%q): %v", tu, err)
		}
		if i > 0 && !(prev < k) {
			t.Errorf("tuple %d %q: key %q not after %q", i, tu, k, prev)
		}
		prev = k
	}
}

func TestTupleRange(t *testing.T) {
	tests := []struct {
		comps  []string
		lo, hi string
	}{
		{nil, "", ""},
		{[]string{"empid"}, "empid", `empid"`},
		{[]string{"a", `b"`}, `a!b"q`, `a!b"q"`},
		{[]string{""}, "", `"`},
		{[]string{"a/"}, "a.|", `a.|"`},
	}
	for _, tc := range tests {
		lo, hi, err := keys.TupleRange(tc.comps...)
		if err != nil || lo != tc.lo || hi != tc.hi {
			t.Errorf("TupleRange(%q) = %q, %q, %v; want %q, %q", tc.comps, lo, hi, err, tc.lo, tc.hi)
		}
	}
	if _, _, err := keys.TupleRange("a\xff"); !errors.Is(err, keys.ErrKeyCharacter) {
		t.Errorf("TupleRange(invalid UTF-8) = %v", err)
	}
}

func TestComponentPrefixRange(t *testing.T) {
	tests := []struct {
		comps  []string
		prefix string
		lo, hi string
	}{
		{nil, "", "", ""},
		{nil, "emp", "emp", "emq"},
		{[]string{"email"}, "jones", "email!jones", "email!jonet"},
		{[]string{"email"}, "", "email!", `email"`},
		{[]string{"a"}, `x"`, `a!x"q`, `a!x"r`},            // prefix ending in an escaped character
		{[]string{"a"}, "x!", `a!x"e`, `a!x"f`},            // ... in the separator
		{[]string{"a"}, "x ", `a!x"_`, "a!x\"`"},           // ... in a space
		{[]string{"a"}, "x.", "a!x..", "a!x.0"},            // ... in '.': '/' is skipped
		{[]string{"a"}, "x/", "a!x.|", "a!x.}"},            // ... in a refused character
		{[]string{"a"}, "x\uffff", "a!x\uffff", "a!y"},     // carry
		{[]string{`"`}, "\uffff", `"q!` + "\uffff", `"q"`}, // carry to the separator
		{nil, "\uffff", "\uffff", ""},                      // no upper bound
		{[]string{"", ""}, "", "!!", `!"`},
	}
	for _, tc := range tests {
		lo, hi, err := keys.ComponentPrefixRange(tc.comps, tc.prefix)
		if err != nil || lo != tc.lo || hi != tc.hi {
			t.Errorf("ComponentPrefixRange(%q, %q) = %q, %q, %v; want %q, %q", tc.comps, tc.prefix, lo, hi, err, tc.lo, tc.hi)
		}
	}
	if _, _, err := keys.ComponentPrefixRange([]string{"ok"}, "\xff"); !errors.Is(err, keys.ErrKeyCharacter) {
		t.Errorf("ComponentPrefixRange(invalid UTF-8) = %v", err)
	}
	if _, _, err := keys.ComponentPrefixRange([]string{"ok"}, strings.Repeat("x", 510)); !errors.Is(err, keys.ErrKeyTooLong) {
		t.Errorf("ComponentPrefixRange(long) = %v", err)
	}
	if _, _, err := keys.ComponentPrefixRange([]string{"ok"}, strings.Repeat("x", 509)); err != nil {
		t.Errorf("ComponentPrefixRange(512 characters) = %v", err)
	}
}

// TestSplitMany: keys of more components than Split's first guess (four)
// are split into one slice of the right size.
func TestSplitMany(t *testing.T) {
	for n := 1; n <= 9; n++ {
		comps := make([]string, n)
		for i := range comps {
			comps[i] = strings.Repeat("c/", i)
		}
		k, err := keys.Compound(comps...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := keys.Split(k)
		if err != nil || !slices.Equal(got, comps) {
			t.Errorf("Split(%q) = %q, %v; want %q", k, got, err, comps)
		}
	}
}
