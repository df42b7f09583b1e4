// Package wherecheck is a go/analysis analyzer that checks calls of
// [tablekit.Where] at build time, where the format is a constant:
//
//   - the number of '?' placeholders against the number of arguments, and
//     the rest of Where's contract (no '?' inside a quoted literal, a '?'
//     set apart from its neighbours, no unterminated quote);
//   - arguments Where refuses whatever their value: an untyped nil, or a
//     type it cannot render as a literal (a map, a struct that is not an
//     encoding.TextMarshaler, ...);
//   - text that [tablekit.Filter.Explain] cannot parse;
//   - where the filter goes straight to a method of a *tablekit.Table[T]
//     whose T is a struct (tbl.Query(ctx, tablekit.Where(...), nil), also
//     through And/Or/Not or a local variable assigned once), the property
//     names against T's `table` struct tags, filters on properties tagged
//     encrypt (which the table refuses at run time: the service stores
//     only ciphertext), and the type of each argument compared with a
//     property against the EDM type the property is stored as (the Go
//     type of its field and its tag, as tablekit's codec maps them: string
//     to Edm.String, int and int64 to Edm.Int64, int32 to Edm.Int32, float64
//     to Edm.Double, time.Time to Edm.DateTime, []byte to Edm.Binary,
//     [16]byte and guid-tagged strings to Edm.Guid, json-tagged fields to
//     Edm.String, ...): the service compares a property only with values of
//     its own type, so Where("LastName eq ?", 3) on a string property is
//     sent, accepted, and matches nothing;
//   - where the Where call is the whole filter of such a method, a table
//     scan (Explain's class queryplan.TableScan), unless the call passes
//     &tablekit.QueryOptions{AllowTableScan: true} or the -scan=false flag
//     is given.
//
// Run it with the command github.com/tablekit/tablekit/cmd/tablekit-vet,
// or add [Analyzer] to a multichecker of your own.
package wherecheck

import (
	"go/ast"
	"go/constant"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
	"golang.org/x/tools/go/types/typeutil"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/queryplan"
)

// tablekitPath is the import path of package tablekit; codecPath that of
// internal/codec, whose types tablekit declares as its own (tablekit.Entity
// is an alias of codec.Entity).
const (
	tablekitPath = "github.com/tablekit/tablekit"
	codecPath    = tablekitPath + "/internal/codec"
)

// Analyzer checks tablekit.Where calls; see the package documentation.
var Analyzer = &analysis.Analyzer{
	Name:     "wherecheck",
	Doc:      doc,
	URL:      "https://pkg.go.dev/github.com/tablekit/tablekit/cmd/tablekit-vet/wherecheck",
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      run,
}

const doc = `check tablekit.Where calls

wherecheck checks calls of tablekit.Where whose format is a constant: the
number of '?' placeholders against the arguments, arguments Where refuses,
text tablekit cannot parse, property names against the table struct tags of
the *tablekit.Table[T] the filter is passed to, filters on properties tagged
encrypt, argument types against the EDM types of the properties they are
compared with (a mismatch matches nothing), and table scans (a Where call that is the whole filter of a Table
query and has no usable PartitionKey condition; silence one with
&tablekit.QueryOptions{AllowTableScan: true}, or all with -scan=false).`

// reportScans is the -scan flag.
var reportScans = true

func init() {
	Analyzer.Flags.BoolVar(&reportScans, "scan", true, "report Where calls that make a table scan")
}

// use is what the analyzer knows about where a Where call's filter goes.
type use struct {
	table  *types.Struct // the T of the *tablekit.Table[T] it is passed to, nil if unknown
	tname  string        // T's name, for messages
	whole  bool          // the Where call is the method's whole filter
	scanOK bool          // the method call allows table scans (or may: opts not a literal)
}

func run(pass *analysis.Pass) (any, error) {
	if !importsTablekit(pass.Pkg) {
		return nil, nil
	}
	ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	vars := whereVars(pass, ins)
	uses := map[*ast.CallExpr]*use{}

	ins.Preorder([]ast.Node{(*ast.CallExpr)(nil)}, func(n ast.Node) {
		call := n.(*ast.CallExpr)
		st, tname, ok := tableMethod(pass, call)
		if !ok {
			return
		}
		sig, _ := pass.TypesInfo.TypeOf(call.Fun).(*types.Signature)
		if sig == nil {
			return
		}
		scanOK := allowsScan(pass, call, sig)
		for i, arg := range call.Args {
			if i >= sig.Params().Len() || !isTablekitNamed(sig.Params().At(i).Type(), "Filter") {
				continue
			}
			u := use{table: st, tname: tname, scanOK: scanOK}
			root := ast.Unparen(arg)
			if id, ok := root.(*ast.Ident); ok {
				if c := vars[pass.TypesInfo.Uses[id]]; c != nil {
					root = c
				}
			}
			if c, ok := root.(*ast.CallExpr); ok && isTablekitFunc(pass, c, "Where") {
				whole := u
				whole.whole = true
				uses[c] = &whole
				continue
			}
			ast.Inspect(root, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok && isTablekitFunc(pass, c, "Where") {
					if uses[c] == nil {
						part := u
						uses[c] = &part
					}
				}
				return true
			})
		}
	})

	ins.Preorder([]ast.Node{(*ast.CallExpr)(nil)}, func(n ast.Node) {
		call := n.(*ast.CallExpr)
		if isTablekitFunc(pass, call, "Where") {
			checkWhere(pass, call, uses[call])
		}
	})
	return nil, nil
}

// checkWhere checks one call of tablekit.Where.
func checkWhere(pass *analysis.Pass, call *ast.CallExpr, u *use) {
	if len(call.Args) == 0 {
		return
	}
	tv := pass.TypesInfo.Types[call.Args[0]]
	if tv.Value == nil || tv.Value.Kind() != constant.String {
		return // not a constant format: nothing to check
	}
	format := constant.StringVal(tv.Value)
	if call.Ellipsis.IsValid() {
		return // args...: the count is not known
	}
	args := call.Args[1:]
	dummies := make([]any, len(args))
	for i, a := range args {
		d, problem := dummyArg(pass, a)
		if problem != "" {
			pass.ReportRangef(a, "tablekit.Where argument %d: %s", i+1, problem)
			return
		}
		dummies[i] = d
	}
	f := tablekit.Where(format, dummies...)
	if err := f.Err(); err != nil {
		pass.ReportRangef(call, "tablekit.Where: %s", whereDetail(err))
		return
	}
	plan := f.Explain()
	if plan.Class == queryplan.Unknown {
		pass.ReportRangef(call.Args[0], "tablekit.Where: filter %q is not understood: %v", format, plan.Err)
		return
	}
	if u == nil {
		return
	}
	if u.table != nil {
		props := structProperties(u.table, types.RelativeTo(pass.Pkg))
		checkProperties(pass, call.Args[0], f.Properties(), props, u.tname)
		checkArgTypes(pass, format, args, props, u.tname)
	}
	if reportScans && u.whole && !u.scanOK && plan.IsTableScan() {
		pass.ReportRangef(call, "tablekit.Where: %s (pass &tablekit.QueryOptions{AllowTableScan: true} if the scan is meant)", plan)
	}
}

// whereDetail returns the Detail of Where's *ValidationError, or the error.
func whereDetail(err error) string {
	if ve, ok := err.(*tablekit.ValidationError); ok && ve.Detail != "" {
		return ve.Detail
	}
	return err.Error()
}

// checkProperties reports the names a filter uses that T (named tname)
// does not store, and those T encrypts.
func checkProperties(pass *analysis.Pass, at ast.Node, names []string, props properties, tname string) {
	for _, n := range names {
		p, ok := props.byName[n]
		switch {
		case !ok:
			pass.ReportRangef(at, "tablekit.Where: %s has no property %q%s", tname, n, props.hint(n))
		case p.encrypt:
			pass.ReportRangef(at, "tablekit.Where: property %q of %s is tagged encrypt: the service stores only ciphertext, and the table refuses the filter", n, tname)
		case p.etag:
			pass.ReportRangef(at, "tablekit.Where: %q of %s is the ETag, not a property a filter can test", n, tname)
		}
	}
}

// importsTablekit reports whether pkg is tablekit or imports it.
func importsTablekit(pkg *types.Package) bool {
	if pkg.Path() == tablekitPath {
		return true
	}
	for _, p := range pkg.Imports() {
		if p.Path() == tablekitPath {
			return true
		}
	}
	return false
}

// isTablekitFunc reports whether call calls the function tablekit.name.
func isTablekitFunc(pass *analysis.Pass, call *ast.CallExpr, name string) bool {
	fn := typeutil.StaticCallee(pass.TypesInfo, call)
	return fn != nil && fn.Name() == name && fn.Pkg() != nil && fn.Pkg().Path() == tablekitPath &&
		fn.Type().(*types.Signature).Recv() == nil
}

// isTablekitNamed reports whether t is the named type tablekit.name (or
// the internal/codec type tablekit.name is an alias of).
func isTablekitNamed(t types.Type, name string) bool {
	n, ok := types.Unalias(t).(*types.Named)
	if !ok {
		return false
	}
	obj := n.Obj()
	return obj.Name() == name && obj.Pkg() != nil && (obj.Pkg().Path() == tablekitPath || obj.Pkg().Path() == codecPath)
}

// tableMethod reports whether call is a method call on a *tablekit.Table[T]
// (or Table[T]), and returns T's struct type and name when T is a struct
// other than tablekit.Entity (nil otherwise).
func tableMethod(pass *analysis.Pass, call *ast.CallExpr) (*types.Struct, string, bool) {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return nil, "", false
	}
	s := pass.TypesInfo.Selections[sel]
	if s == nil || s.Kind() != types.MethodVal {
		return nil, "", false
	}
	recv := types.Unalias(s.Recv())
	if p, ok := recv.(*types.Pointer); ok {
		recv = types.Unalias(p.Elem())
	}
	named, ok := recv.(*types.Named)
	if !ok || !isTablekitNamed(named, "Table") || named.TypeArgs().Len() != 1 {
		return nil, "", false
	}
	targ := named.TypeArgs().At(0)
	if isTablekitNamed(targ, "Entity") {
		return nil, "", true
	}
	st, ok := targ.Underlying().(*types.Struct)
	if !ok {
		return nil, "", true
	}
	return st, types.TypeString(targ, types.RelativeTo(pass.Pkg)), true
}

// allowsScan reports whether a Table method call passes query options that
// allow a table scan, or options the analyzer cannot read (a variable, a
// function call): only nil and a literal without AllowTableScan: true are
// known not to.
func allowsScan(pass *analysis.Pass, call *ast.CallExpr, sig *types.Signature) bool {
	for i, arg := range call.Args {
		if i >= sig.Params().Len() {
			break
		}
		pt, ok := types.Unalias(sig.Params().At(i).Type()).(*types.Pointer)
		if !ok || !isTablekitNamed(pt.Elem(), "QueryOptions") {
			continue
		}
		e := ast.Unparen(arg)
		if id, ok := e.(*ast.Ident); ok && id.Name == "nil" && pass.TypesInfo.Types[e].IsNil() {
			return false
		}
		u, ok := e.(*ast.UnaryExpr)
		if !ok {
			return true
		}
		lit, ok := ast.Unparen(u.X).(*ast.CompositeLit)
		if !ok {
			return true
		}
		for _, el := range lit.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "AllowTableScan" {
				v := pass.TypesInfo.Types[kv.Value].Value
				return v == nil || constant.BoolVal(v)
			}
		}
		return false
	}
	return false
}

// whereVars maps each local variable assigned exactly once, from a
// tablekit.Where call, to that call.
func whereVars(pass *analysis.Pass, ins *inspector.Inspector) map[types.Object]*ast.CallExpr {
	defs := map[types.Object]*ast.CallExpr{}
	assigned := map[types.Object]int{}
	note := func(id *ast.Ident, rhs ast.Expr, define bool) {
		obj := pass.TypesInfo.ObjectOf(id)
		if obj == nil {
			return
		}
		assigned[obj]++
		if c, ok := ast.Unparen(rhs).(*ast.CallExpr); ok && define && isTablekitFunc(pass, c, "Where") {
			defs[obj] = c
		}
	}
	ins.Preorder([]ast.Node{(*ast.AssignStmt)(nil), (*ast.ValueSpec)(nil), (*ast.UnaryExpr)(nil)}, func(n ast.Node) {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, lhs := range n.Lhs {
				id, ok := ast.Unparen(lhs).(*ast.Ident)
				if !ok {
					continue
				}
				var rhs ast.Expr
				if len(n.Rhs) == len(n.Lhs) {
					rhs = n.Rhs[i]
				}
				note(id, rhs, n.Tok.String() == ":=")
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				var rhs ast.Expr
				if len(n.Values) == len(n.Names) {
					rhs = n.Values[i]
				}
				note(id, rhs, rhs != nil)
			}
		case *ast.UnaryExpr:
			// &f may change f anywhere.
			if id, ok := ast.Unparen(n.X).(*ast.Ident); ok && n.Op.String() == "&" {
				if obj := pass.TypesInfo.ObjectOf(id); obj != nil {
					assigned[obj] += 2
				}
			}
		}
	})
	for obj := range defs {
		v, ok := obj.(*types.Var)
		if assigned[obj] != 1 || !ok || v.Parent() == nil || v.Parent() == v.Pkg().Scope() {
			delete(defs, obj) // reassigned, address taken, or package-level
		}
	}
	return defs
}

// hint suggests a property for a misspelt name.
func (ps properties) hint(name string) string {
	if p, ok := ps.goName[name]; ok {
		return "; the field " + name + " is stored as " + p
	}
	best, bestD := "", 3
	for _, n := range ps.names {
		if strings.EqualFold(n, name) {
			return "; did you mean " + n + "?"
		}
		if d := distance(strings.ToLower(n), strings.ToLower(name)); d < bestD {
			best, bestD = n, d
		}
	}
	if best != "" {
		return "; did you mean " + best + "?"
	}
	if len(ps.names) <= 12 {
		return " (it stores " + strings.Join(ps.names, ", ") + ")"
	}
	return ""
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
