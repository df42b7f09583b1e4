// Package opname is the one way every package of tablekit names the
// operation that failed in its errors, so that each error starts the same
// way: "<package>: <Op>: ...", e.g. "tablekit: Get: ...",
// "patterns: Wide.Merge: ..." or "archive: NewWorker: ...".
//
// An operation is named as its caller writes it, qualified by its package
// unless it is the root's: "Get", "Table.ToEntity", "patterns.Wide.Merge",
// "index.NewIntra". The *tablekit.ValidationError and *tablekit.DecodeError
// a call returns name the exported operation the caller made: an exported
// function or method names itself in the errors it makes, and with
// internal/codec.WithOp in the errors that reach it from the calls it
// makes (the root's checks leave Op empty for that). The errors render
// their Op with [Prefix]. This package imports nothing of tablekit's, so
// internal/codec, which declares those errors, uses it too.
package opname

import "strings"

// Split returns the package an operation belongs to and its name there:
// "patterns.Wide.Merge" gives "patterns" and "Wide.Merge"; "Get" and
// "Table.Query", the root's, give "tablekit" and the name. A package name
// is the lower-case first element of a qualified name.
func Split(op string) (pkg, name string) {
	if first, rest, ok := strings.Cut(op, "."); ok && first != "" && first[0] >= 'a' && first[0] <= 'z' {
		return first, rest
	}
	return "tablekit", op
}

// Prefix returns how an error message of op starts, without the colon
// after it: "patterns: Wide.Merge", "tablekit: Get", or "tablekit" for
// op "".
func Prefix(op string) string {
	pkg, name := Split(op)
	if name == "" {
		return pkg
	}
	return pkg + ": " + name
}
