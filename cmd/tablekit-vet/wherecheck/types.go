package wherecheck

import (
	"go/ast"
	"go/constant"
	"go/types"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/tools/go/analysis"
)

// The EDM types of table properties and filter literals.
const (
	edmString   = "Edm.String"
	edmInt32    = "Edm.Int32"
	edmInt64    = "Edm.Int64"
	edmDouble   = "Edm.Double"
	edmBoolean  = "Edm.Boolean"
	edmDateTime = "Edm.DateTime"
	edmBinary   = "Edm.Binary"
	edmGUID     = "Edm.Guid"
)

// goFor says what Go value Where renders as a literal of each EDM type.
var goFor = map[string]string{
	edmString:   "a string",
	edmInt32:    "an int32",
	edmInt64:    "an int or int64",
	edmDouble:   "a float64",
	edmBoolean:  "a bool",
	edmDateTime: "a time.Time",
	edmBinary:   "a []byte",
	edmGUID:     "a [16]byte such as tablekit.GUID",
}

// checkArgTypes reports the arguments of a Where call whose literal type
// differs from the EDM type of the property they are compared with. The
// service compares a property only with a value of its own type ("the
// constant value must be of the same data type as the property in order
// for the filter to return valid results", Querying tables and entities),
// so Where("LastName eq ?", 3) on a string property is sent, accepted and
// matches nothing.
func checkArgTypes(pass *analysis.Pass, format string, args []ast.Expr, props properties, tname string) {
	for i, name := range placeholderProperties(format) {
		if i >= len(args) || name == "" {
			continue
		}
		p, ok := props.byName[name]
		if !ok || p.edm == "" || p.encrypt || p.etag {
			continue // unknown or unsupported: reported elsewhere, or not at all
		}
		lit, goType := argEDM(pass, args[i])
		if lit == "" || lit == p.edm {
			continue
		}
		pass.ReportRangef(args[i], "tablekit.Where argument %d: %s of %s is an %s property (%s), but the argument is %s, rendered as an %s literal: the service compares a property only with values of its own type, so the comparison matches nothing; pass %s",
			i+1, name, tname, p.edm, p.from, goType, lit, goFor[p.edm])
	}
}

// argEDM returns the EDM type of the literal Where renders argument e as
// (as tablekit.Where's table of types says), and e's type for messages;
// "" when it cannot be known before run time (an interface) or Where
// refuses it (reported by dummyArg).
func argEDM(pass *analysis.Pass, e ast.Expr) (edm, goType string) {
	tv := pass.TypesInfo.Types[e]
	if tv.Type == nil || tv.IsNil() {
		return "", ""
	}
	t := tv.Type
	goType = types.TypeString(t, types.RelativeTo(pass.Pkg))
	if tv.Value != nil && tv.Value.Kind() == constant.String {
		return edmString, goType
	}
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		if implementsTextMarshaler(p) && !basicKind(p.Elem()) && !isTime(p.Elem()) {
			return edmString, goType
		}
		t = p.Elem()
	}
	return literalEDM(t), goType
}

// literalEDM is the EDM type of the literal Where renders a value of type t
// as, "" if unknown.
func literalEDM(t types.Type) string {
	if isTime(t) {
		return edmDateTime
	}
	if implementsTextMarshaler(t) && !basicKind(t) {
		return edmString
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		switch {
		case u.Info()&types.IsString != 0:
			return edmString
		case u.Info()&types.IsBoolean != 0:
			return edmBoolean
		case u.Info()&types.IsFloat != 0:
			return edmDouble
		}
		switch u.Kind() {
		case types.Int8, types.Int16, types.Int32, types.Uint8, types.Uint16:
			return edmInt32
		case types.Int, types.Int64, types.Uint, types.Uint32, types.Uint64:
			return edmInt64
		}
	case *types.Slice:
		if isByte(u.Elem()) {
			return edmBinary
		}
	case *types.Array:
		if u.Len() == 16 && isByte(u.Elem()) {
			return edmGUID
		}
	}
	return ""
}

// propertyEDM returns the EDM type tablekit's codec stores a field of type
// t as, given the field's type tag option (json, int32, int64, guid or
// ""), or "" for a type the codec refuses.
func propertyEDM(t types.Type, typeOpt string) string {
	if typeOpt == "json" {
		return edmString
	}
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	edm := ""
	isInt := false
	switch u := t.Underlying().(type) {
	case *types.Basic:
		switch {
		case u.Info()&types.IsString != 0:
			edm = edmString
			if typeOpt == "guid" {
				edm = edmGUID
			}
		case u.Info()&types.IsBoolean != 0:
			edm = edmBoolean
		case u.Info()&types.IsFloat != 0:
			edm = edmDouble
		default:
			switch u.Kind() {
			case types.Int8, types.Int16, types.Int32, types.Uint8, types.Uint16:
				edm, isInt = edmInt32, true
			case types.Int, types.Int64, types.Uint, types.Uint32, types.Uint64:
				edm, isInt = edmInt64, true
			}
		}
	case *types.Slice:
		if isByte(u.Elem()) {
			edm = edmBinary
		}
	case *types.Array:
		if u.Len() == 16 && isByte(u.Elem()) {
			edm = edmGUID
		}
	}
	switch {
	case isTime(t):
		edm = edmDateTime
	case edm == "" && implementsTextMarshaler(types.NewPointer(t)) && hasUnmarshalText(t):
		edm = edmString
	}
	switch typeOpt {
	case "int32", "int64":
		if !isInt {
			return "" // the codec refuses the field
		}
		if typeOpt == "int32" {
			return edmInt32
		}
		return edmInt64
	case "guid":
		if edm != edmGUID {
			return ""
		}
	}
	return edm
}

// hasUnmarshalText reports whether *t has an UnmarshalText method.
func hasUnmarshalText(t types.Type) bool {
	obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(t), false, nil, "UnmarshalText")
	_, ok := obj.(*types.Func)
	return ok
}

// placeholderProperties returns, for each '?' of a Where format (outside
// quoted literals), the property it is compared with: the name on the
// other side of the comparison operator next to it ("Age gt ?", "? lt
// Age"), or "" when it is not compared with a property directly.
func placeholderProperties(format string) []string {
	type token struct{ kind, text string } // kind: "(", ")", "?", "op", "name", "other"
	var toks []token
	for i := 0; i < len(format); {
		r, size := utf8.DecodeRuneInString(format[i:])
		switch {
		case unicode.IsSpace(r):
			i += size
			continue
		case r == '(' || r == ')':
			toks = append(toks, token{kind: string(r)})
			i++
			continue
		case r == '\'' || r == '"':
			end, ok := closingQuote(format, i)
			if !ok {
				return nil // Where refuses it
			}
			toks = append(toks, token{kind: "other"})
			i = end + 1
			continue
		}
		start := i
		for i < len(format) {
			r, size := utf8.DecodeRuneInString(format[i:])
			if unicode.IsSpace(r) || r == '(' || r == ')' || r == '\'' || r == '"' {
				break
			}
			i += size
		}
		word := format[start:i]
		if i < len(format) && (format[i] == '\'' || format[i] == '"') && isTypeHint(word) {
			end, ok := closingQuote(format, i)
			if !ok {
				return nil
			}
			toks = append(toks, token{kind: "other"})
			i = end + 1
			continue
		}
		switch {
		case word == "?":
			toks = append(toks, token{kind: "?"})
		case word == "eq" || word == "ne" || word == "gt" || word == "ge" || word == "lt" || word == "le":
			toks = append(toks, token{kind: "op"})
		case word == "and" || word == "or" || word == "not" || word == "true" || word == "false" || word == "null" || isNumber(word):
			toks = append(toks, token{kind: "other"})
		case strings.IndexFunc(word, func(r rune) bool { return r == '_' || unicode.IsLetter(r) }) >= 0:
			toks = append(toks, token{kind: "name", text: word})
		default:
			toks = append(toks, token{kind: "other"})
		}
	}
	var names []string
	for j, t := range toks {
		if t.kind != "?" {
			continue
		}
		name := ""
		switch {
		case j >= 2 && toks[j-1].kind == "op" && toks[j-2].kind == "name":
			name = toks[j-2].text
		case j+2 < len(toks) && toks[j+1].kind == "op" && toks[j+2].kind == "name":
			name = toks[j+2].text
		}
		names = append(names, name)
	}
	return names
}
