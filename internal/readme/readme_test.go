// Package readme_test checks README.md against the code, from a module of
// its own: it loads every module of the workspace with go/packages, which
// the core module must not require.
package readme_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/go/packages"
)

// The README's Go must not drift from the code (issue 25): these tests
// compile every ```go block of README.md, resolve every API name it quotes
// in `code` (tablekit.Open, index.NewSamePartition, FrontOptions.Paging,
// ...) and check the verb table's shapes against *tablekit.Table[T].

const modulePath = "github.com/tablekit/tablekit"

// root is the repository's root (the core module's folder), from this
// test's folder; readmeModule is this test's module.
const (
	root         = "../.."
	readmeModule = modulePath + "/internal/readme"
)

// readmeImports are the package names a snippet may use without importing
// them: the test adds the import when the name is used.
var readmeImports = map[string]string{
	"tablekit": modulePath, "azurite": modulePath + "/azurite", "index": modulePath + "/index",
	"patterns": modulePath + "/patterns", "archive": modulePath + "/archive", "logtail": modulePath + "/logtail",
	"transfer": modulePath + "/transfer", "keys": modulePath + "/keys", "sas": modulePath + "/sas",
	"queryplan": modulePath + "/queryplan", "keyring": modulePath + "/keyring", "otelkit": modulePath + "/otelkit",
	"wherecheck": modulePath + "/cmd/tablekit-vet/wherecheck",
	"azcore":     "github.com/Azure/azure-sdk-for-go/sdk/azcore",
	"policy":     "github.com/Azure/azure-sdk-for-go/sdk/azcore/policy",
	"aztables":   "github.com/Azure/azure-sdk-for-go/sdk/data/aztables",
	"sdktrace":   "go.opentelemetry.io/otel/sdk/trace",
	"context":    "context", "errors": "errors", "fmt": "fmt", "os": "os", "slog": "log/slog", "time": "time", "testing": "testing",
}

// readmeGivens are what snippets use without declaring it, as a reader
// would assume: a context, a connection string, a test, an exporter and
// the README's entity types.
var readmeGivens = []struct{ name, decl string }{
	{"ctx", "var ctx context.Context"},
	{"conn", "var conn string"},
	{"t", "var t *testing.T"},
	{"exporter", "var exporter sdktrace.SpanExporter"},
	{"Employee", "type Employee struct {\n\tDepartment string `table:\",pk\"`\n\tID string `table:\",rk\"`\n\tEmail string\n}"},
	{"Order", "type Order struct {\n\tCustomer string `table:\",pk\"`\n\tID string `table:\",rk\"`\n}"},
}

// goBlocks returns the ```go blocks of README.md with their first lines.
func goBlocks(t *testing.T, readme string) (blocks []string, lines []int) {
	t.Helper()
	var cur *strings.Builder
	for i, line := range strings.Split(readme, "\n") {
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &strings.Builder{}
			lines = append(lines, i+2)
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	if cur != nil {
		t.Fatal("README.md: a ```go block is not closed")
	}
	return blocks, lines
}

// snippetFile makes a Go file of package name from a README snippet: a
// file as it stands when it declares things, else the body of a function;
// the imports of the package names it uses are added, and the givens it
// does not declare itself go to a second file.
func snippetFile(name, code string) (file, givens string, err error) {
	src := code
	if !strings.HasPrefix(strings.TrimSpace(src), "package ") {
		src = "package " + name + "\n\n" + src
	}
	var body strings.Builder
	if f, err := parser.ParseFile(token.NewFileSet(), "", src, 0); err == nil && len(f.Decls) > 0 {
		body.WriteString(src) // declarations: a file as it stands
	} else {
		fmt.Fprintf(&body, "package %s\n\nfunc _() {\n%s\n}\n", name, code)
	}
	declared := map[string]bool{}
	imported := map[string]bool{}
	if full, err := parser.ParseFile(token.NewFileSet(), "", body.String(), 0); err == nil {
		for _, d := range full.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				declared[d.Name.Name] = true
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						declared[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declared[n.Name] = true
						}
					case *ast.ImportSpec:
						imported[strings.Trim(s.Path.Value, `"`)] = true
					}
				}
			}
		}
	} else {
		return "", "", err
	}
	var imports []string
	for pkgName, path := range readmeImports {
		if !imported[path] && regexp.MustCompile(`\b`+pkgName+`\.`).MatchString(code) {
			imports = append(imports, fmt.Sprintf("import %s %q", pkgName, path))
		}
	}
	slices.Sort(imports)
	file = body.String()
	if len(imports) > 0 {
		head, rest, _ := strings.Cut(file, "\n")
		file = head + "\n\n" + strings.Join(imports, "\n") + "\n" + rest
	}
	var g strings.Builder
	fmt.Fprintf(&g, "package %s\n\nimport (\n\t\"context\"\n\t\"testing\"\n\n\tsdktrace %q\n)\n\n", name, readmeImports["sdktrace"])
	g.WriteString("var _ context.Context\nvar _ *testing.T\nvar _ sdktrace.SpanExporter\n\n")
	for _, given := range readmeGivens {
		if !declared[given.name] {
			g.WriteString(given.decl + "\n")
		}
	}
	return file, g.String(), nil
}

// TestReadmeSnippetsCompile type-checks every ```go block of README.md.
// A "declared and not used" variable is allowed: a snippet shows a call,
// not a whole program.
func TestReadmeSnippetsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the README's snippets with go/packages, which runs go list: skipped in -short")
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, lines := goBlocks(t, string(readme))
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```go block")
	}
	// A folder inside this test's module, so that the snippets import
	// tablekit as users do; removed when the test ends.
	dir, err := os.MkdirTemp(".", "snippets")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var patterns []string
	pkgLine := map[string]int{}
	for i, code := range blocks {
		name := fmt.Sprintf("snippet%d", i)
		file, givens, err := snippetFile(name, code)
		if err != nil {
			t.Errorf("README.md:%d: the ```go block does not parse: %v", lines[i], err)
			continue
		}
		sub := filepath.Join(dir, name)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for fname, text := range map[string]string{"snippet.go": file, "givens.go": givens} {
			if err := os.WriteFile(filepath.Join(sub, fname), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		patterns = append(patterns, "./"+filepath.ToSlash(sub))
		pkgLine[readmeModule+"/"+filepath.ToSlash(sub)] = lines[i]
	}
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedSyntax | packages.NeedTypesInfo}, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			if strings.Contains(e.Msg, "declared and not used") {
				continue
			}
			pos := e.Pos
			if i := strings.Index(pos, "snippet.go:"); i >= 0 {
				pos = pos[i:]
			}
			t.Errorf("README.md:%d: the ```go block does not compile: %s: %s", pkgLine[p.PkgPath], pos, e.Msg)
		}
	}
}

var (
	publicOnce sync.Once
	public     []*packages.Package
	publicErr  error
)

// publicPackages loads the module's packages a user imports (the folders
// of the module's root with a package, but internal, cmd and examples).
func publicPackages(t *testing.T) []*packages.Package {
	t.Helper()
	publicOnce.Do(func() {
		patterns := []string{"."}
		entries, err := os.ReadDir(root)
		if err != nil {
			publicErr = err
			return
		}
		for _, e := range entries {
			if n := e.Name(); e.IsDir() && n != "internal" && n != "cmd" && n != "examples" && n != "testdata" && !strings.HasPrefix(n, ".") {
				if gofiles, _ := filepath.Glob(filepath.Join(root, n, "*.go")); len(gofiles) > 0 {
					patterns = append(patterns, "./"+n)
				}
			}
		}
		// The vet command's analyzer, which the README quotes, lives with
		// its command.
		patterns = append(patterns, "./cmd/tablekit-vet/wherecheck")
		public, publicErr = packages.Load(&packages.Config{Dir: root, Mode: packages.NeedName | packages.NeedTypes}, patterns...)
	})
	if publicErr != nil {
		t.Fatal(publicErr)
	}
	return public
}

// goStrings returns the string literals of the form "Type.Member" in the
// module's non-test Go files: span names (Large.Spill, Worker.Handle), which
// the README quotes as the code names them.
func goStrings(t *testing.T) map[string]bool {
	t.Helper()
	lit := regexp.MustCompile(`"([A-Z][A-Za-z0-9]*\.[A-Z][A-Za-z0-9]*)"`)
	found := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		data, err := os.ReadFile(path)
		for _, m := range lit.FindAllStringSubmatch(string(data), -1) {
			found[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// hasMember reports whether the named type obj has a field or method
// member (on its pointer, so that both receivers count).
func hasMember(obj types.Object, member string) bool {
	tn, ok := obj.(*types.TypeName)
	if !ok {
		return false
	}
	found, _, _ := types.LookupFieldOrMethod(types.NewPointer(tn.Type()), true, tn.Pkg(), member)
	return found != nil
}

// codeSpan is a `code` span of the README; apiRef a name of tablekit's API
// in it: pkg.Name, pkg.Name.Member or Type.Member.
var (
	codeSpan = regexp.MustCompile("`[^`\n]+`")
	apiRef   = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.])([A-Za-z][A-Za-z0-9]*)\.([A-Z][A-Za-z0-9]*)(?:\.([A-Z][A-Za-z0-9]*))?`)
)

// TestReadmeNamesExist resolves every API name the README quotes in code
// spans and tables, so that a rename elsewhere (index.Intra ->
// index.SamePartition, a removed option) fails here until the README says
// the new name.
func TestReadmeNamesExist(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the module with go/packages, which runs go list: skipped in -short")
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*types.Package{}
	var all []*types.Package
	for _, p := range publicPackages(t) {
		byName[p.Types.Name()] = p.Types
		all = append(all, p.Types)
	}
	// Outside ```go blocks, which TestReadmeSnippetsCompile checks whole.
	prose := strings.Split(string(readme), "\n")
	inBlock := false
	for i, line := range prose {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			prose[i] = ""
		} else if inBlock {
			prose[i] = ""
		}
	}
	spanNames := goStrings(t)
	checked := 0
	for i, line := range prose {
		var refs [][]string
		for _, span := range codeSpan.FindAllString(line, -1) {
			refs = append(refs, apiRef.FindAllStringSubmatch(strings.Trim(span, "`"), -1)...)
		}
		for _, m := range refs {
			first, name, member := m[1], m[2], m[3]
			ref := first + "." + name
			if member != "" {
				ref += "." + member
			}
			var ok bool
			switch pkg, isPkg := byName[first]; {
			case isPkg:
				obj := pkg.Scope().Lookup(name)
				ok = obj != nil && (member == "" || hasMember(obj, member))
			case first[0] >= 'A' && first[0] <= 'Z':
				// Type.Member: some public package has the type with it.
				for _, p := range all {
					if obj := p.Scope().Lookup(first); obj != nil && hasMember(obj, name) {
						ok = true
						break
					}
				}
			default:
				continue // another module's (azcore.ETag, slog.Default, ...)
			}
			// Span names: the Meter's "Tables.<Operation>" for each REST
			// call, and the names the code gives its own spans.
			ok = ok || first == "Tables" || spanNames[ref]
			checked++
			if !ok {
				t.Errorf("README.md:%d: `%s` names nothing in tablekit's public packages", i+1, ref)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d API names found in README.md: the pattern is broken", checked)
	}
}

// verbRow is a row of the README's verb table: | `Verb` | meaning | `shape` |.
var verbRow = regexp.MustCompile("^\\| `([A-Za-z]+)` \\|.*\\| `([A-Za-z]+)\\(([^)]*)\\)(?: \\(([^)]*)\\)| ([a-z]+))?` \\|$")

// TestReadmeVerbTable checks the verb table's shapes against
// *tablekit.Table[T]'s methods: the parameters by name count, the results
// by type.
func TestReadmeVerbTable(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the module with go/packages: skipped in -short")
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var root *types.Package
	for _, p := range publicPackages(t) {
		if p.PkgPath == modulePath {
			root = p.Types
		}
	}
	table := root.Scope().Lookup("Table").(*types.TypeName)
	rows := 0
	for line := range strings.Lines(string(readme)) {
		m := verbRow.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil || m[1] != m[2] {
			continue
		}
		rows++
		verb, params, results := m[1], strings.Split(m[3], ","), m[4]
		if results == "" {
			results = m[5]
		}
		obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(table.Type()), true, root, verb)
		fn, ok := obj.(*types.Func)
		if !ok {
			t.Errorf("README verb table: Table has no method %s", verb)
			continue
		}
		sig := fn.Type().(*types.Signature)
		if sig.Params().Len() != len(params) {
			t.Errorf("README verb table: %s(%s) has %d parameters; Table.%s has %d (%s)", verb, m[3], len(params), verb, sig.Params().Len(), sig)
		}
		var got []string
		for v := range sig.Results().Variables() {
			got = append(got, types.TypeString(v.Type(), func(p *types.Package) string { return p.Name() }))
		}
		want := strings.Split(strings.ReplaceAll(results, " ", ""), ",")
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("README verb table: %s returns (%s); Table.%s returns (%s)", verb, results, verb, strings.Join(got, ", "))
		}
	}
	if rows < 8 {
		t.Fatalf("found %d rows of the verb table, want 8: the pattern is broken", rows)
	}
}
