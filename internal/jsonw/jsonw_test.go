package jsonw

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote\back`, "tab\tnl\ncr\r", "\x00\x01\x1f\x7f", "é中😀", "\u2028\u2029", "bad\xffbyte", "\xe2\x82"} {
		got := string(AppendString(nil, s))
		want, _ := json.Marshal(s)
		if got != string(want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("a\"b\\c\x00\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		// encoding/json also escapes < > & for HTML; the decoded strings
		// must agree.
		got := AppendString(nil, s)
		want, _ := json.Marshal(s)
		var back, wantBack string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q: %s is not a JSON string: %v", s, got, err)
		}
		json.Unmarshal(want, &wantBack)
		if back != wantBack || (utf8.ValidString(s) && back != s) {
			t.Fatalf("%q: decodes to %q, want %q", s, back, wantBack)
		}
	})
}
