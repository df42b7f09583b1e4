package wherecheck_test

import (
	"os/exec"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/tablekit/tablekit/cmd/tablekit-vet/wherecheck"
)

// TestAnalyzer runs the analyzer on the samples in testdata, whose
// "// want" comments are the diagnostics expected on their lines:
//
//	count  a sample program whose placeholders and arguments disagree,
//	       and other breaches of Where's contract
//	props  property names against the table type's struct tags, and
//	       encrypted properties
//	scans  table scans, meant and unmeant, and text Explain cannot parse
//
// The samples form a module in a workspace (testdata/go.work) with this
// repository, so they import the real tablekit. analysistest loads them
// with GOPROXY=off, so the test first lets the go command fetch what the
// workspace's module graph needs (on a fresh machine, go.mod files of
// modules no build has used yet). One Run loads all three, so tablekit
// and its dependencies are type-checked once.
func TestAnalyzer(t *testing.T) {
	list := exec.Command("go", "list", "-deps", "./...")
	list.Dir = analysistest.TestData()
	if out, err := list.CombinedOutput(); err != nil {
		t.Fatalf("go list -deps in testdata: %v\n%s", err, out)
	}
	analysistest.Run(t, analysistest.TestData(), wherecheck.Analyzer, "./count", "./props", "./scans")
}
