package keys_test

import (
	"testing"

	"github.com/tablekit/tablekit/keys"
)

func TestCompare(t *testing.T) {
	cases := []string{"", "a", "ab", "b", "\uE000", "\uFFFF", "😀", "😁", "a😀", "a\uFFFD", "é", "z", "Ω"}
	for _, a := range cases {
		for _, b := range cases {
			if got, want := sign(keys.Compare(a, b)), sign(utf16Compare(a, b)); got != want {
				t.Errorf("Compare(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
	// The one place Go's order differs.
	if keys.Compare("😀", "\uFFFF") >= 0 || "😀" < "\uFFFF" {
		t.Error("a supplementary character must sort before U+FFFF in UTF-16 order")
	}
}

func FuzzCompare(f *testing.F) {
	f.Add("a", "b")
	f.Add("😀", "\uE000")
	f.Add("a😀x", "a\uFFFFx")
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8Valid(a) || !utf8Valid(b) {
			return
		}
		if got, want := sign(keys.Compare(a, b)), sign(utf16Compare(a, b)); got != want {
			t.Fatalf("Compare(%q, %q) = %d, want %d", a, b, got, want)
		}
	})
}

func utf8Valid(s string) bool {
	for _, r := range s {
		if r == '\uFFFD' {
			return false
		}
	}
	return true
}
