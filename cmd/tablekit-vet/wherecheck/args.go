package wherecheck

import (
	"go/ast"
	"go/constant"
	"go/types"
	"time"

	"golang.org/x/tools/go/analysis"
)

// dummyArg returns a value that tablekit.Where renders as the same kind of
// literal as the argument e will be at run time: the constant's value for a
// string constant, "?" for other strings and types whose kind the analyzer
// cannot know (interfaces), a zero of the same kind otherwise. It returns a
// problem instead when Where refuses e whatever its value.
func dummyArg(pass *analysis.Pass, e ast.Expr) (any, string) {
	tv := pass.TypesInfo.Types[e]
	if tv.IsNil() {
		return nil, "nil (null is not a filter literal; entities without the property never match a comparison)"
	}
	t := tv.Type
	if t == nil {
		return "?", ""
	}
	if tv.Value != nil && tv.Value.Kind() == constant.String {
		return constant.StringVal(tv.Value), ""
	}
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		if implementsTextMarshaler(p) && !basicKind(p.Elem()) && !isTime(p.Elem()) {
			return "?", "" // rendered as the string of its text
		}
		if d, ok := literalOf(p.Elem()); ok {
			return d, ""
		}
		if _, ok := p.Elem().Underlying().(*types.Interface); ok {
			return "?", ""
		}
		return nil, "unsupported type " + types.TypeString(t, types.RelativeTo(pass.Pkg)) + " (Where follows one pointer to a supported value)"
	}
	if d, ok := literalOf(t); ok {
		return d, ""
	}
	if _, ok := t.Underlying().(*types.Interface); ok {
		return "?", "" // known only at run time
	}
	return nil, "unsupported type " + types.TypeString(t, types.RelativeTo(pass.Pkg)) + " (see tablekit.Where for the types it renders)"
}

// literalOf returns a value of the literal kind Where renders a value of
// type t as, if Where supports t.
func literalOf(t types.Type) (any, bool) {
	if isTime(t) {
		return time.Time{}, true
	}
	if implementsTextMarshaler(t) && !basicKind(t) {
		return "?", true // rendered as the string of its text
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		switch {
		case u.Info()&types.IsString != 0:
			return "?", true
		case u.Info()&types.IsBoolean != 0:
			return false, true
		case u.Info()&types.IsFloat != 0:
			return 0.0, true
		case u.Kind() == types.Uintptr:
			return nil, false
		case u.Info()&types.IsInteger != 0:
			return int64(0), true
		}
	case *types.Slice:
		if isByte(u.Elem()) {
			return []byte{}, true
		}
	case *types.Array:
		if u.Len() == 16 && isByte(u.Elem()) {
			return [16]byte{}, true
		}
	}
	return nil, false
}

// basicKind reports whether values of t render by their kind rather than
// through encoding.TextMarshaler, as in tablekit's codec.
func basicKind(t types.Type) bool {
	switch u := t.Underlying().(type) {
	case *types.Basic:
		return u.Info()&(types.IsString|types.IsBoolean|types.IsInteger|types.IsFloat) != 0 && u.Kind() != types.Uintptr
	case *types.Slice:
		return isByte(u.Elem())
	case *types.Array:
		return u.Len() == 16 && isByte(u.Elem())
	}
	return false
}

func isByte(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Kind() == types.Uint8
}

// implementsTextMarshaler reports whether the method set of t has
// MarshalText() ([]byte, error), i.e. t implements encoding.TextMarshaler.
func implementsTextMarshaler(t types.Type) bool {
	obj, _, _ := types.LookupFieldOrMethod(t, false, nil, "MarshalText")
	fn, ok := obj.(*types.Func)
	if !ok {
		return false
	}
	sig := fn.Type().(*types.Signature)
	if sig.Params().Len() != 0 || sig.Results().Len() != 2 {
		return false
	}
	s, ok := sig.Results().At(0).Type().Underlying().(*types.Slice)
	return ok && isByte(s.Elem()) && types.Identical(sig.Results().At(1).Type(), types.Universe.Lookup("error").Type())
}
