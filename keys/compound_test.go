package keys_test

import (
	"errors"
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
		{[]string{"email", "jonesj@contoso.com"}, "email!jonesj@contoso.com"},
		{[]string{"000123", "2012"}, "000123!2012"},
		{[]string{"a_b", "c-d.e"}, "a_b!c-d.e"},
		{[]string{"hello world"}, `hello" world`},
		{[]string{"wow!", `"q"`}, `wow"!!""q""`},
		{[]string{"!", "", `"`}, `"!!!""`},
		{[]string{"日本", "\U0001F600"}, "日本!\U0001F600"},
		{[]string{"trailing "}, `trailing" `},
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
		b, err := keys.AppendCompound([]byte("x"), tc.comps...)
		if err != nil || string(b) != "x"+tc.key {
			t.Errorf("AppendCompound(%q) = %q, %v", tc.comps, b, err)
		}
	}
}

func TestCompoundErrors(t *testing.T) {
	if _, err := keys.Compound(); !errors.Is(err, keys.ErrInvalidArgument) {
		t.Errorf("Compound() = %v, want ErrInvalidArgument", err)
	}
	for _, tc := range []struct {
		comps []string
		index int
		pos   int
	}{
		{[]string{"a/b"}, 0, 1},
		{[]string{"ok", "x#"}, 1, 1},
		{[]string{"ok", "ok", "?"}, 2, 0},
		{[]string{"tab\t"}, 0, 3},
		{[]string{"é\u0085"}, 0, 2},
		{[]string{"\\"}, 0, 0},
		{[]string{"ok", "\xff"}, 1, 0},
	} {
		b, err := keys.AppendCompound([]byte("keep"), tc.comps...)
		var ce *keys.ComponentError
		var ke *keys.KeyError
		if !errors.Is(err, keys.ErrKeyCharacter) || !errors.As(err, &ce) || !errors.As(err, &ke) {
			t.Errorf("Compound(%q) = %v, want *ComponentError with ErrKeyCharacter", tc.comps, err)
			continue
		}
		if ce.Index != tc.index || ke.Pos != tc.pos || string(b) != "keep" {
			t.Errorf("Compound(%q): index %d pos %d buf %q; want %d %d", tc.comps, ce.Index, ke.Pos, b, tc.index, tc.pos)
		}
		if !strings.Contains(err.Error(), "component ") {
			t.Errorf("message %q does not name the component", err)
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
		t.Errorf("1026-byte escaped key: %v", err)
	}
}

func TestSplitMalformed(t *testing.T) {
	for _, k := range []string{`"`, `a"`, `a"b`, "a b", " ", `"""`, "a!\"x", `a"$`} {
		if got, err := keys.Split(k); !errors.Is(err, keys.ErrMalformed) {
			t.Errorf("Split(%q) = %q, %v; want ErrMalformed", k, got, err)
		}
	}
	for _, k := range []string{"a/b", `a"#`, "\x00", strings.Repeat("a", 513)} {
		if got, err := keys.Split(k); err == nil {
			t.Errorf("Split(%q) = %q, want an error", k, got)
		}
	}
	dst := []string{"keep"}
	if got, err := keys.AppendSplit(dst, `a!b"`); err == nil || !slices.Equal(got, dst) {
		t.Errorf("AppendSplit on error = %q, %v", got, err)
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
		{"a0", ""},
		{"a_"},
		{"ab"},
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

func TestRange(t *testing.T) {
	tests := []struct {
		comps  []string
		lo, hi string
	}{
		{nil, "", ""},
		{[]string{"empid"}, "empid", `empid"`},
		{[]string{"a", `b"`}, `a!b""`, `a!b"""`},
		{[]string{""}, "", `"`},
	}
	for _, tc := range tests {
		lo, hi, err := keys.Range(tc.comps...)
		if err != nil || lo != tc.lo || hi != tc.hi {
			t.Errorf("Range(%q) = %q, %q, %v; want %q, %q", tc.comps, lo, hi, err, tc.lo, tc.hi)
		}
	}
	if _, _, err := keys.Range("a/"); !errors.Is(err, keys.ErrKeyCharacter) {
		t.Errorf("Range(a/) = %v", err)
	}
}

func TestPrefixRange(t *testing.T) {
	tests := []struct {
		comps  []string
		prefix string
		lo, hi string
	}{
		{nil, "", "", ""},
		{nil, "emp", "emp", "emq"},
		{[]string{"email"}, "jones", "email!jones", "email!jonet"},
		{[]string{"email"}, "", "email!", `email"`},
		{[]string{"a"}, `x"`, `a!x""`, `a!x"$`},            // prefix ending in the escape character
		{[]string{"a"}, "x!", `a!x"!`, `a!x""`},            // ... in the separator
		{[]string{"a"}, "x ", `a!x" `, `a!x"!`},            // ... in a space
		{[]string{"a"}, "x\uffff", "a!x\uffff", "a!y"},     // carry
		{[]string{`"`}, "\uffff", `""!` + "\uffff", `"""`}, // carry to the separator
		{nil, "\uffff", "\uffff", ""},                      // no upper bound
		{[]string{"", ""}, "", "!!", `!"`},
	}
	for _, tc := range tests {
		lo, hi, err := keys.PrefixRange(tc.comps, tc.prefix)
		if err != nil || lo != tc.lo || hi != tc.hi {
			t.Errorf("PrefixRange(%q, %q) = %q, %q, %v; want %q, %q", tc.comps, tc.prefix, lo, hi, err, tc.lo, tc.hi)
		}
	}
	if _, _, err := keys.PrefixRange([]string{"ok"}, "#"); !errors.Is(err, keys.ErrKeyCharacter) {
		t.Errorf("PrefixRange(#) = %v", err)
	}
	if _, _, err := keys.PrefixRange([]string{"ok"}, strings.Repeat("x", 1022)); !errors.Is(err, keys.ErrKeyTooLong) {
		t.Errorf("PrefixRange(long) = %v", err)
	}
}

func TestAppendComponent(t *testing.T) {
	b, err := keys.AppendComponent([]byte("p!"), `a "b"!`)
	if err != nil || string(b) != `p!a" ""b"""!` {
		t.Errorf("AppendComponent = %q, %v", b, err)
	}
	b, err = keys.AppendComponent([]byte("p"), "x/")
	if !errors.Is(err, keys.ErrKeyCharacter) || string(b) != "p" {
		t.Errorf("AppendComponent(x/) = %q, %v", b, err)
	}
}
