package wire

import (
	"net/url"
	"strings"
	"testing"
)

func TestAppendKeyPredicate(t *testing.T) {
	for _, tc := range []struct{ pk, rk, want string }{
		{"p", "r", "(PartitionKey='p',RowKey='r')"},
		{"", "", "(PartitionKey='',RowKey='')"},
		{"o'k", "''", "(PartitionKey='o%27%27k',RowKey='%27%27%27%27')"},
		{"100%", "a+b", "(PartitionKey='100%25',RowKey='a%2Bb')"},
		{"a b", "ü ✓", "(PartitionKey='a%20b',RowKey='%C3%BC%20%E2%9C%93')"},
		{"A-z_0.9~", "(x),=&;$@!*[]", "(PartitionKey='A-z_0.9~',RowKey='%28x%29%2C%3D%26%3B%24%40%21%2A%5B%5D')"},
	} {
		got := string(AppendKeyPredicate(nil, tc.pk, tc.rk))
		if got != tc.want {
			t.Errorf("AppendKeyPredicate(%q, %q) = %s, want %s", tc.pk, tc.rk, got, tc.want)
		}
		if n := KeyPredicateLen(tc.pk, tc.rk); n != len(got) {
			t.Errorf("KeyPredicateLen(%q, %q) = %d, want %d", tc.pk, tc.rk, n, len(got))
		}
	}
}

// FuzzKeyPredicate: whatever the keys hold, the predicate is a valid URL
// path segment with no reserved character left bare inside a literal, and
// the service reads back exactly the keys (percent-decoding, then the
// OData literal's doubled quotes).
func FuzzKeyPredicate(f *testing.F) {
	for _, k := range []string{"", "o'k", "''", "100%", "a+b", "a b", "ü ✓ 😀", "%27", "/\\#?"} {
		f.Add(k, "x")
	}
	f.Fuzz(func(t *testing.T, pk, rk string) {
		pred := string(AppendKeyPredicate(nil, pk, rk))
		if len(pred) != KeyPredicateLen(pk, rk) {
			t.Fatalf("length %d, KeyPredicateLen %d", len(pred), KeyPredicateLen(pk, rk))
		}
		u, err := url.Parse("https://a.table.core.windows.net/t" + pred)
		if err != nil {
			t.Fatalf("not a URL: %v", err)
		}
		if u.EscapedPath() != "/t"+pred {
			t.Fatalf("the path is not sent as written: %s", u.EscapedPath())
		}
		dec, err := url.PathUnescape(pred)
		if err != nil {
			t.Fatal(err)
		}
		rest, ok := strings.CutPrefix(dec, "(PartitionKey='")
		if !ok {
			t.Fatal(dec)
		}
		gotPK, rest, ok := readLiteral(rest)
		if !ok {
			t.Fatal(dec)
		}
		rest, ok = strings.CutPrefix(rest, ",RowKey='")
		if !ok {
			t.Fatal(dec)
		}
		gotRK, rest, ok := readLiteral(rest)
		if !ok || rest != ")" || gotPK != pk || gotRK != rk {
			t.Fatalf("read back %q/%q (rest %q), want %q/%q", gotPK, gotRK, rest, pk, rk)
		}
	})
}

// readLiteral reads an OData string literal's content up to its closing
// quote (” is a quote), as the service does.
func readLiteral(s string) (lit, rest string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), s[i+1:], true
	}
	return "", "", false
}
