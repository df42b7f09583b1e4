package internal_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The module path; layers name packages relative to it ("" is the root).
const module = "github.com/tablekit/tablekit"

// layers are tablekit's layers, bottom to top (ARCHITECTURE.md draws them).
// A package imports only packages of its own layer or of layers below it.
// An entry ending in "/..." names a folder and every package under it.
var layers = []struct {
	name string
	pkgs []string
}{
	{"internal leaves", []string{"internal", "internal/apisize", "internal/connstr", "internal/cryptkey",
		"internal/jsonw", "internal/keyrule", "internal/limits", "internal/logs", "internal/odata",
		"internal/opname", "internal/spans"}},
	// names and timing are rules over the codec's values (they return its
	// *ValidationError); keys and queryplan are the public leaves the root
	// itself uses.
	{"codec and rules", []string{"internal/codec", "internal/names", "internal/timing", "keys", "queryplan"}},
	{"wire", []string{"internal/wire"}},
	{"core", []string{""}},
	{"primitives", []string{"coord", "sas", "archive", "keyring"}},
	{"patterns", []string{"index", "patterns", "logtail"}},
	{"event sourcing", []string{"stream", "feed", "outbox"}},
	{"operations", []string{"transfer"}},
	{"tools (own modules)", []string{"otelkit/...", "cmd/tablekit/...", "cmd/tablekit-vet/..."}},
	{"test kit", []string{"azurite", "tablekittest", "internal/testkit/..."}},
	{"programs", []string{"examples/...", "internal/readme/..."}},
}

// forbidden are imports the layer order allows but the design does not:
// each package keeps its own vocabulary.
var forbidden = []edge{
	{"stream", "patterns"}, {"feed", "patterns"}, {"outbox", "patterns"},
}

// debts are the imports that break a rule today, each with its reason.
// They are issue 40's debts: remove the import, then its line here (the
// test fails on a debt that no longer exists, so the list stays true).
var debts = map[edge]string{
	{"coord", "transfer"}: "issue 40: coord.Sweep deletes with transfer.Purge (Sweep moves up to transfer beside Purge, coord keeping the expiry convention)",
}

type edge struct{ from, to string }

// TestLayers holds the structure: no package imports a layer above its own
// or an import the design forbids; no library package imports the test
// kit's internal/testkit; no internal package of the library imports the
// root or a public package. Test files are free to import anything below
// the test kit and the test kit itself. With go.work (the repository's
// own), the tool modules are checked too.
func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; want tablekit's", len(pkgs))
	}
	seen := map[edge]bool{}
	for _, p := range pkgs {
		from, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		fl := layerOf(from)
		if fl < 0 {
			t.Errorf("%s is in no layer: add it to layers (and ARCHITECTURE.md)", show(from))
			continue
		}
		for _, imp := range p.Imports {
			to, ok := relative(imp)
			if !ok {
				continue
			}
			e := edge{from, to}
			var broken []string
			if tl := layerOf(to); tl > fl {
				broken = append(broken, fmt.Sprintf("%s (%s) imports %s of a higher layer (%s)",
					show(from), layers[fl].name, show(to), layers[tl].name))
			}
			if slices.Contains(forbidden, e) {
				broken = append(broken, fmt.Sprintf("%s imports %s, which the design forbids", show(from), show(to)))
			}
			if inTestkit(to) && !inTestkit(from) {
				broken = append(broken, fmt.Sprintf("%s imports %s outside its tests: the test kit is for tests only", show(from), show(to)))
			}
			if p.Module.Path == module && isInternal(from) && !inTestkit(from) && !isInternal(to) {
				broken = append(broken, fmt.Sprintf("%s, an internal package, imports %s: internal packages import only internal packages", show(from), show(to)))
			}
			if len(broken) == 0 {
				continue
			}
			if _, ok := debts[e]; ok {
				seen[e] = true
				continue
			}
			for _, b := range broken {
				t.Error(b)
			}
		}
	}
	for e, why := range debts {
		if !seen[e] {
			t.Errorf("debt %s -> %s (%s) is paid: delete it from debts", show(e.from), show(e.to), why)
		}
	}
}

type listed struct {
	ImportPath string
	Module     struct{ Path string }
	Imports    []string
	Error      *struct{ Err string }
}

// listPackages lists the packages of tablekit's modules (the core module,
// and the others that go.work joins) with their non-test imports.
func listPackages(t *testing.T) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Module,Imports,Error", module+"/...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// relative returns path relative to the module path ("" for the root), and
// whether it is one of tablekit's.
func relative(path string) (string, bool) {
	if path == module {
		return "", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

// layerOf returns the index of rel's layer in layers, or -1.
func layerOf(rel string) int {
	for i, l := range layers {
		for _, p := range l.pkgs {
			if dir, ok := strings.CutSuffix(p, "/..."); ok {
				if rel == dir || strings.HasPrefix(rel, dir+"/") {
					return i
				}
			} else if rel == p {
				return i
			}
		}
	}
	return -1
}

func isInternal(rel string) bool { return rel == "internal" || strings.HasPrefix(rel, "internal/") }

func inTestkit(rel string) bool {
	return rel == "internal/testkit" || strings.HasPrefix(rel, "internal/testkit/")
}

// show names a package for a message: tablekit for the root, else its path
// relative to the module.
func show(rel string) string {
	if rel == "" {
		return "tablekit"
	}
	return rel
}
