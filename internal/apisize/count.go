package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
)

// count is the exported API of one package.
type count struct {
	funcs, types, methods, values int
	options, optionFields         int
}

func (c count) total() int { return c.funcs + c.types + c.methods + c.values }

func (c *count) add(o count) {
	c.funcs += o.funcs
	c.types += o.types
	c.methods += o.methods
	c.values += o.values
	c.options += o.options
	c.optionFields += o.optionFields
}

// skipped are the directories whose code is not API: internal/, cmd/ and
// examples/ (at any depth), test data, node_modules, and hidden ones.
func skipped(name string) bool {
	return strings.HasPrefix(name, ".") || slices.Contains([]string{"internal", "cmd", "examples", "testdata", "node_modules"}, name)
}

// countModule counts the exported API of every package under root, by
// directory relative to root ("." for root's own package).
func countModule(root string) (map[string]count, error) {
	counts := map[string]count{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipped(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		c := counts[filepath.ToSlash(rel)]
		countFile(f, &c)
		if c.total() > 0 || c.options > 0 {
			counts[filepath.ToSlash(rel)] = c
		}
		return nil
	})
	return counts, err
}

// countFile adds the exported declarations of f to c.
func countFile(f *ast.File, c *count) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			switch {
			case !d.Name.IsExported():
			case d.Recv == nil:
				c.funcs++
			case receiverExported(d.Recv.List[0].Type):
				c.methods++
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						countType(s, c)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							c.values++
						}
					}
				}
			}
		}
	}
}

// countType adds an exported type: itself, its interface methods, and its
// fields when it is an option struct.
func countType(s *ast.TypeSpec, c *count) {
	c.types++
	switch t := s.Type.(type) {
	case *ast.InterfaceType:
		for _, m := range t.Methods.List {
			for _, n := range m.Names {
				if n.IsExported() {
					c.methods++
				}
			}
		}
	case *ast.StructType:
		if !strings.HasSuffix(s.Name.Name, "Options") {
			return
		}
		c.options++
		for _, fld := range t.Fields.List {
			if len(fld.Names) == 0 {
				c.optionFields++ // embedded
			}
			for _, n := range fld.Names {
				if n.IsExported() {
					c.optionFields++
				}
			}
		}
	}
}

// receiverExported reports whether a method's receiver type (T, *T, T[P]
// or *T[P]) is exported.
func receiverExported(t ast.Expr) bool {
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}

// sortedKeys returns the packages in order, the root first.
func sortedKeys(m map[string]count) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
