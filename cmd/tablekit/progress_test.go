package main

import (
	"strings"
	"testing"

	"github.com/tablekit/tablekit/transfer"
)

// TestProgressLines: each operation's progress line says what it does.
// A count counts (it said "written 0"); an import whose batch is being
// written says how many entities are pending (it said "written 0" until
// the whole batch was done).
func TestProgressLines(t *testing.T) {
	for _, tc := range []struct {
		label string
		p     transfer.Progress
		want  string
		not   string
	}{
		{"count", transfer.Progress{Op: "count", Read: 5000, Total: -1}, "count: counted 5000,", "written"},
		{"purge --dry-run", transfer.Progress{Op: "count", Read: 5000, Total: -1}, "purge --dry-run: counted 5000,", "written"},
		{"export", transfer.Progress{Op: "export", Read: 300, Written: 300, Total: -1}, "export: exported 300,", "read"},
		{"import", transfer.Progress{Op: "import", Read: 20000, Written: 0, Total: -1}, "import: read 20000, written 0, pending 20000,", ""},
		{"import", transfer.Progress{Op: "import", Read: 20000, Written: 19990, Failed: 10, Done: true, Total: -1}, "import: read 20000, written 19990, failed 10,", "pending"},
		{"purge", transfer.Progress{Op: "purge", Read: 700, Written: 600, Skipped: 3, Total: -1}, "purge: listed 700, deleted 600, left alone 3,", "written"},
		{"copy", transfer.Progress{Op: "copy", Read: 10, Written: 9, Failed: 1, Total: -1}, "copy: read 10, written 9, failed 1,", ""},
	} {
		got := line(tc.label, tc.p)
		if !strings.HasPrefix(got, tc.want) || tc.not != "" && strings.Contains(got, tc.not) {
			t.Errorf("line(%q, %+v) = %q, want it to start %q", tc.label, tc.p, got, tc.want)
		}
	}
}
