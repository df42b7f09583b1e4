package chaos_test

import (
	"os/exec"
	"strings"
	"testing"
)

// No library package imports internal/testkit/chaos: it is for tests only. (The
// root package cannot: chaos imports it, and Go refuses the cycle.)
func TestNoLibraryImportsChaos(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, "github.com/tablekit/tablekit/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ": ")
		if pkg != "github.com/tablekit/tablekit/internal/testkit/chaos" &&
			strings.Contains(" "+imports+" ", " github.com/tablekit/tablekit/internal/testkit/chaos ") {
			t.Errorf("%s imports internal/testkit/chaos outside its tests", pkg)
		}
	}
}
