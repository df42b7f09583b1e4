package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCountingRules counts a small module: every kind of exported name
// once, and what is left out.
func TestCountingRules(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", `package a

import "time"

const C, d = 1, 2
var V int
type T[P any] struct{ x P }
func (T[P]) M() {}
func (*T[P]) N() {}
type u struct{}
func (u) Hidden() {}
func F() {}
func g() {}
type I interface{ A(); b() }
type FooOptions struct {
	time.Time
	X, Y int
	z int
}
type BarOptions = FooOptions
`)
	write("a_test.go", "package a\nfunc TestX() {}\n")
	write("sub/b.go", "package b\nfunc G() {}\n")
	write("internal/c/c.go", "package c\nfunc H() {}\n")
	write("cmd/x/main.go", "package main\nfunc Main() {}\n")
	write("examples/e/e.go", "package e\nfunc E() {}\n")
	counts, err := countModule(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]count{
		// C, V; T, I, FooOptions, BarOptions; M, N, A; F. FooOptions: 3
		// fields (the embedded one counts once).
		".":   {funcs: 1, types: 4, methods: 3, values: 2, options: 1, optionFields: 3},
		"sub": {funcs: 1},
	}
	if len(counts) != len(want) {
		t.Errorf("packages %v, want %v", counts, want)
	}
	for pkg, w := range want {
		if got := counts[pkg]; got != w {
			t.Errorf("%s: %+v, want %+v", pkg, got, w)
		}
	}
	var out bytes.Buffer
	print(&out, counts)
	if !strings.Contains(out.String(), "MODULE") || !strings.Contains(out.String(), "goals (issue 25, packages without (new)): root 10/130, module 11/550") {
		t.Errorf("table:\n%s", out.String())
	}
	// A package added after issue 25 is printed and summed, not counted
	// against its goals.
	counts["coord"] = count{funcs: 5, options: 2, optionFields: 4}
	out.Reset()
	print(&out, counts)
	if s := out.String(); !strings.Contains(s, "coord (new)") || !strings.Contains(s, "module 11/550, option structs 1/28 with 3/120 fields") {
		t.Errorf("table with a later package:\n%s", s)
	}
}

// TestModule prints the module's table (go test -v ./internal/apisize).
func TestModule(t *testing.T) {
	counts, err := countModule("../..")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	print(&out, counts)
	t.Log("\n" + out.String())
	if counts["."].total() == 0 {
		t.Error("the root package counts nothing")
	}
}
