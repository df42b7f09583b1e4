package queryplan

import (
	"strings"
	"testing"
)

// FuzzExplain feeds the filter parser arbitrary text (not only what Where
// accepts): it must never panic, and its answer must be consistent.
func FuzzExplain(f *testing.F) {
	for _, s := range []string{
		"(PartitionKey eq 'Sales') and (RowKey eq '2')",
		"PartitionKey eq 'Sales' and RowKey ge 'S' and RowKey lt 'T'",
		"PartitionKey eq 'Sales' and LastName eq 'Smith'",
		"LastName eq 'Jones'",
		"PartitionKey eq 'Sales' and (RowKey eq '121' or RowKey eq '322')",
		"not (PartitionKey eq 'a' or (RowKey gt 'b' and not X))",
		"PartitionKey eq 'a''",
		"Timestamp ge datetime'2024-01-01T00:00:00.0000000Z' and N eq 5L and G eq guid'x' and B eq X'0a'",
		"'a' lt PartitionKey and PartitionKey le \"b\"",
		"PartitionKey eq",
		"((((",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p := Explain(text) // must not panic
		if p.Class < Point || p.Class > Unknown {
			t.Fatalf("class %d", p.Class)
		}
		if (p.Class == Unknown) != (p.Err != nil) {
			t.Fatalf("class %v with err %v", p.Class, p.Err)
		}
		_ = p.String()
		_ = p.LogValue()
		if p.Class == Unknown || strings.TrimSpace(text) == "" {
			return
		}
		// The same text, parenthesised, is the same query.
		q := Explain("(" + text + ")")
		if q.Class != p.Class || q.PartitionKey != p.PartitionKey || q.RowKey != p.RowKey ||
			q.RowKeys.String() != p.RowKeys.String() || q.PartitionKeys.String() != p.PartitionKeys.String() {
			t.Fatalf("(%q) is %s, %q is %s", text, q, text, p)
		}
		// And with a condition on a property keeps the class.
		r := Explain("(" + text + ") and Zz eq 1")
		if r.Class != p.Class {
			t.Fatalf("(%q) and Zz eq 1 is %s, %q is %s", text, r, text, p)
		}
	})
}
