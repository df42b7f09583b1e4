package opname

import "testing"

func TestPrefix(t *testing.T) {
	for op, want := range map[string]string{
		"":                       "tablekit",
		"Get":                    "tablekit: Get",
		"Table.Query":            "tablekit: Table.Query",
		"patterns.Wide.Merge":    "patterns: Wide.Merge",
		"index.NewIntra":         "index: NewIntra",
		"archive.Client.Enqueue": "archive: Client.Enqueue",
	} {
		if got := Prefix(op); got != want {
			t.Errorf("Prefix(%q) = %q, want %q", op, got, want)
		}
	}
}
