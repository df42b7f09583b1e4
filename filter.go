package tablekit

import (
	"bytes"
	"encoding"
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/odata"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/queryplan"
)

// Filter is an OData $filter expression for a table query, built with
// [Where], the combinators [And], [Or] and [Not], or the query-shape helpers
// ([PointQuery], [PartitionEq], [RowKeyRange], [RowKeyPrefix],
// [PartitionRange]). Values only ever enter a Filter as typed literals that
// are escaped by construction, never by string concatenation.
//
// Filter is a small value type and safe to copy and share. The zero Filter
// means "no filter": it matches every entity. A Filter that could not be
// built carries its error, reported by [Filter.Err] (and
// so by any query it is passed to); it is never sent to the service.
type Filter struct {
	text string
	err  error
}

// filterContract describes the contract of [Where] in error messages.
const filterContract = "one supported argument per '?' placeholder outside quoted literals"

// Where builds a Filter from expr, a trusted OData expression written by the
// programmer (property names, operators, parentheses, constant literals), in
// which each '?' is replaced by the matching argument rendered as a typed
// OData literal:
//
//	string                      'text' with every ' doubled (must be valid UTF-8)
//	int32, int16, int8,
//	uint16, uint8               Edm.Int32: 123
//	int, int64, uint32          Edm.Int64: 123L (tablekit stores these as Edm.Int64)
//	uint, uint64                Edm.Int64 when it fits in int64, else an error
//	float64, float32            Edm.Double, always with a decimal point and no
//	                            exponent (1.0, 0.1, -2.5e-7 as -0.00000025), so
//	                            the service parses it as a double equal to the
//	                            argument; a float32 is widened to float64
//	                            exactly; NaN and ±Inf are errors
//	bool                        true / false
//	time.Time                   datetime'2006-01-02T15:04:05.0000000Z' in UTC,
//	                            truncated to 100 ns; years 1-9999 only
//	[]byte                      X'0a1b…' (lower-case hex)
//	[16]byte, uuid.UUID         guid'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx' (any [16]byte)
//
// Other types, quoting and placeholder rules: "Filters" in the package
// documentation. An error gives a Filter whose [Filter.Err] is a
// *[ValidationError] matching [ErrInvalidInput], never turned into query
// text. An empty expr with no arguments gives the zero Filter (everything).
func Where(expr string, args ...any) Filter {
	var b strings.Builder
	arg, last := 0, 0
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; c {
		case '\'', '"':
			end, ok := odata.ClosingQuote(expr, i)
			if !ok {
				return filterWhereError(expr, fmt.Sprintf("unterminated quoted literal starting at byte %d", i))
			}
			if j := strings.IndexByte(expr[i:end], '?'); j >= 0 {
				return filterWhereError(expr, fmt.Sprintf("'?' at byte %d is inside a quoted literal; put the value in an argument instead", i+j))
			}
			i = end
		case '?':
			if !filterPlaceholderBoundary(expr, i-1) || !filterPlaceholderBoundary(expr, i+1) {
				return filterWhereError(expr, fmt.Sprintf("placeholder at byte %d must be separated from its neighbours by white space or parentheses", i))
			}
			if arg >= len(args) {
				return filterWhereError(expr, fmt.Sprintf("%d placeholders, %d arguments", filterCountPlaceholders(expr), len(args)))
			}
			if arg == 0 {
				b.Grow(filterEstimateSize(expr, args))
			}
			b.WriteString(expr[last:i])
			if err := filterAppendLiteral(&b, args[arg], true); err != nil {
				return filterWhereError(expr, fmt.Sprintf("argument %d: %v", arg+1, err))
			}
			arg++
			last = i + 1
		}
	}
	if arg != len(args) {
		return filterWhereError(expr, fmt.Sprintf("%d placeholders, %d arguments", arg, len(args)))
	}
	if arg == 0 {
		if strings.TrimSpace(expr) == "" {
			return Filter{}
		}
		return Filter{text: expr}
	}
	b.WriteString(expr[last:])
	return Filter{text: b.String()}
}

// filterEstimateSize estimates the length of the text Where builds, so that it
// usually needs one allocation.
func filterEstimateSize(expr string, args []any) int {
	size := len(expr)
	for _, a := range args {
		if s, ok := a.(string); ok {
			size += len(s) + 4
		} else {
			size += 40
		}
	}
	return size
}

// filterPlaceholderBoundary reports whether expr[i] may stand next to a '?': the
// start or end of expr, ASCII white space or a parenthesis.
func filterPlaceholderBoundary(expr string, i int) bool {
	if i < 0 || i >= len(expr) {
		return true
	}
	switch expr[i] {
	case ' ', '\t', '\n', '\r', '(', ')':
		return true
	}
	return false
}

// filterCountPlaceholders counts the '?' outside quoted literals, for messages.
func filterCountPlaceholders(expr string) int {
	n := 0
	for i := 0; i < len(expr); i++ {
		switch expr[i] {
		case '\'', '"':
			end, ok := odata.ClosingQuote(expr, i)
			if !ok {
				return n
			}
			i = end
		case '?':
			n++
		}
	}
	return n
}

// filterWhereError returns a Filter carrying a *ValidationError about expr.
func filterWhereError(expr, detail string) Filter {
	return Filter{err: &ValidationError{
		Op:     "Where",
		Detail: "filter " + codec.Quote(expr) + ": " + detail,
		Limit:  filterContract,
		Err:    ErrInvalidInput,
	}}
}

// filterError returns a Filter carrying a *ValidationError with detail.
func filterError(detail string) Filter {
	return Filter{err: &ValidationError{Op: "Filter", Detail: detail, Err: ErrInvalidInput}}
}

// filterAppendLiteral writes v as a typed OData literal. deref allows one pointer
// indirection.
func filterAppendLiteral(b *strings.Builder, v any, deref bool) error {
	switch x := v.(type) {
	case nil:
		return fmt.Errorf("nil value (null is not a filter literal; entities without the property never match a comparison)")
	case string:
		return filterAppendString(b, x)
	case bool:
		filterAppendBool(b, x)
	case int:
		filterAppendInt64(b, int64(x))
	case int64:
		filterAppendInt64(b, x)
	case int32:
		filterAppendInt32(b, int64(x))
	case int16:
		filterAppendInt32(b, int64(x))
	case int8:
		filterAppendInt32(b, int64(x))
	case uint8:
		filterAppendInt32(b, int64(x))
	case uint16:
		filterAppendInt32(b, int64(x))
	case uint32:
		filterAppendInt64(b, int64(x))
	case uint:
		return filterAppendUint64(b, uint64(x))
	case uint64:
		return filterAppendUint64(b, x)
	case float64:
		return filterAppendDouble(b, x)
	case float32:
		return filterAppendDouble(b, float64(x))
	case time.Time:
		return filterAppendDateTime(b, x)
	case []byte:
		filterAppendBinary(b, x)
	case [16]byte:
		filterAppendGUID(b, &x)
	default:
		return filterAppendReflect(b, v, deref)
	}
	return nil
}

// filterAppendReflect handles pointers and types defined on supported kinds.
func filterAppendReflect(b *strings.Builder, v any, deref bool) error {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			return fmt.Errorf("nil pointer %s", rv.Type())
		}
		if !deref {
			return fmt.Errorf("unsupported type %s (only one pointer indirection is followed)", rv.Type())
		}
		if tm, ok := v.(encoding.TextMarshaler); ok && !filterBasicType(rv.Type().Elem()) {
			return filterAppendText(b, tm)
		}
		return filterAppendLiteral(b, rv.Elem().Interface(), false)
	case reflect.String:
		return filterAppendString(b, rv.String())
	case reflect.Bool:
		filterAppendBool(b, rv.Bool())
	case reflect.Int, reflect.Int64:
		filterAppendInt64(b, rv.Int())
	case reflect.Int8, reflect.Int16, reflect.Int32:
		filterAppendInt32(b, rv.Int())
	case reflect.Uint8, reflect.Uint16:
		filterAppendInt32(b, int64(rv.Uint()))
	case reflect.Uint, reflect.Uint32, reflect.Uint64:
		return filterAppendUint64(b, rv.Uint())
	case reflect.Float32, reflect.Float64:
		return filterAppendDouble(b, rv.Float())
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			filterAppendBinary(b, rv.Bytes())
			return nil
		}
		return fmt.Errorf("unsupported type %s", rv.Type())
	case reflect.Array:
		if rv.Len() == 16 && rv.Type().Elem().Kind() == reflect.Uint8 {
			var g [16]byte
			for i := range g {
				g[i] = byte(rv.Index(i).Uint())
			}
			filterAppendGUID(b, &g)
			return nil
		}
		return fmt.Errorf("unsupported type %s", rv.Type())
	default:
		if tm, ok := v.(encoding.TextMarshaler); ok {
			return filterAppendText(b, tm)
		}
		return fmt.Errorf("unsupported type %s", rv.Type())
	}
	return nil
}

// filterBasicType reports whether values of t render by their kind (or as
// time.Time) rather than through encoding.TextMarshaler, as in the codec.
func filterBasicType(t reflect.Type) bool {
	if t == reflect.TypeFor[time.Time]() {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.Uint8
	case reflect.Array:
		return t.Len() == 16 && t.Elem().Kind() == reflect.Uint8
	}
	return false
}

// filterAppendText writes the text of tm as a string literal.
func filterAppendText(b *strings.Builder, tm encoding.TextMarshaler) error {
	text, err := tm.MarshalText()
	if err != nil {
		return fmt.Errorf("%T.MarshalText: %w", tm, err)
	}
	return filterAppendString(b, string(text))
}

func filterAppendString(b *strings.Builder, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("string %s is not valid UTF-8", codec.Quote(s))
	}
	b.WriteByte('\'')
	for {
		i := strings.IndexByte(s, '\'')
		if i < 0 {
			break
		}
		b.WriteString(s[:i+1])
		b.WriteByte('\'')
		s = s[i+1:]
	}
	b.WriteString(s)
	b.WriteByte('\'')
	return nil
}

func filterAppendBool(b *strings.Builder, v bool) {
	if v {
		b.WriteString("true")
	} else {
		b.WriteString("false")
	}
}

func filterAppendInt32(b *strings.Builder, v int64) {
	var tmp [24]byte
	b.Write(strconv.AppendInt(tmp[:0], v, 10))
}

func filterAppendInt64(b *strings.Builder, v int64) {
	var tmp [24]byte
	b.Write(append(strconv.AppendInt(tmp[:0], v, 10), 'L'))
}

func filterAppendUint64(b *strings.Builder, v uint64) error {
	if v > math.MaxInt64 {
		return fmt.Errorf("unsigned value %d does not fit in Edm.Int64", v)
	}
	filterAppendInt64(b, int64(v))
	return nil
}

// filterAppendDouble writes f in plain decimal notation with at least one digit
// after the point: the shortest digits that parse back to f, so the literal
// is a double (never an integer) and needs no exponent syntax, which Azurite
// does not parse.
func filterAppendDouble(b *strings.Builder, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%v is not a finite number", f)
	}
	var tmp [40]byte
	buf := strconv.AppendFloat(tmp[:0], f, 'f', -1, 64)
	if bytes.IndexByte(buf, '.') < 0 {
		buf = append(buf, '.', '0')
	}
	b.Write(buf)
	return nil
}

// filterDateTimeLayout is the Edm.DateTime literal layout: UTC, 100 ns.
const filterDateTimeLayout = "2006-01-02T15:04:05.0000000Z"

func filterAppendDateTime(b *strings.Builder, t time.Time) error {
	t = t.UTC()
	if y := t.Year(); y < 1 || y > 9999 {
		return fmt.Errorf("time %s is outside years 0001-9999 of Edm.DateTime", t.Format(time.RFC3339Nano))
	}
	var tmp [48]byte
	buf := append(tmp[:0], "datetime'"...)
	buf = t.AppendFormat(buf, filterDateTimeLayout)
	b.Write(append(buf, '\''))
	return nil
}

func filterAppendBinary(b *strings.Builder, p []byte) {
	var tmp [64]byte
	b.WriteString("X'")
	for len(p) > 0 {
		n := min(len(p), len(tmp)/2)
		b.Write(hex.AppendEncode(tmp[:0], p[:n]))
		p = p[n:]
	}
	b.WriteByte('\'')
}

func filterAppendGUID(b *strings.Builder, g *[16]byte) {
	var tmp [48]byte
	buf := append(tmp[:0], "guid'"...)
	buf = hex.AppendEncode(buf, g[0:4])
	buf = append(buf, '-')
	buf = hex.AppendEncode(buf, g[4:6])
	buf = append(buf, '-')
	buf = hex.AppendEncode(buf, g[6:8])
	buf = append(buf, '-')
	buf = hex.AppendEncode(buf, g[8:10])
	buf = append(buf, '-')
	buf = hex.AppendEncode(buf, g[10:16])
	b.Write(append(buf, '\''))
}

// build returns the OData $filter text, or the error the Filter carries.
// The zero Filter gives "" and nil: no filter, every entity matches.
func (f Filter) build() (string, error) {
	if f.err != nil {
		return "", f.err
	}
	return f.text, nil
}

// Err returns the error the Filter carries (a *[ValidationError] matching
// [ErrInvalidInput]), or nil when the Filter is usable.
func (f Filter) Err() error { return f.err }

// IsZero reports whether f is the zero Filter, which matches every entity.
// A Filter carrying an error is not zero.
func (f Filter) IsZero() bool { return f.text == "" && f.err == nil }

// String returns the OData text of f, "" for the zero Filter, or
// "<invalid filter: ...>" describing the error f carries: check
// [Filter.Err] before using the text elsewhere.
func (f Filter) String() string {
	if f.err != nil {
		return "<invalid filter: " + f.err.Error() + ">"
	}
	return f.text
}

// And returns a Filter matching the entities every one of fs matches. Each
// operand is parenthesised. Zero Filters are skipped: And of one non-zero
// Filter is that Filter, and And of none is the zero Filter (everything).
// The first operand error is returned.
func And(fs ...Filter) Filter { return filterJoin(" and ", fs) }

// Or returns a Filter matching the entities any one of fs matches. Each
// operand is parenthesised. Zero Filters are skipped (so Or(PartitionEq(a),
// Filter{}) is PartitionEq(a), not "everything"): Or of one non-zero Filter
// is that Filter, and Or of none is the zero Filter. The first operand error
// is returned.
func Or(fs ...Filter) Filter { return filterJoin(" or ", fs) }

func filterJoin(op string, fs []Filter) Filter {
	n, size, only := 0, 0, -1
	for i, f := range fs {
		if f.err != nil {
			return Filter{err: f.err}
		}
		if f.text != "" {
			n++
			size += len(f.text) + len(op) + 2
			only = i
		}
	}
	switch n {
	case 0:
		return Filter{}
	case 1:
		return fs[only]
	}
	var b strings.Builder
	b.Grow(size)
	first := true
	for _, f := range fs {
		if f.text == "" {
			continue
		}
		if !first {
			b.WriteString(op)
		}
		first = false
		b.WriteByte('(')
		b.WriteString(f.text)
		b.WriteByte(')')
	}
	return Filter{text: b.String()}
}

// Not returns a Filter matching the entities f does not match. Not of the
// zero Filter (which matches everything) is an error, as is Not of a Filter
// carrying one (that error is returned).
func Not(f Filter) Filter {
	if f.err != nil {
		return f
	}
	if f.text == "" {
		return filterError("Not of the zero filter (which matches everything) would match nothing")
	}
	return Filter{text: "not (" + f.text + ")"}
}

// PointQuery returns the filter of a point query: the one entity with
// PartitionKey pk and RowKey rk.
func PointQuery(pk, rk string) Filter {
	return filterKeyClauses(filterClause{"PartitionKey eq ", pk}, filterClause{" and RowKey eq ", rk})
}

// PartitionEq returns the filter of a partition scan: every entity whose
// PartitionKey is pk.
func PartitionEq(pk string) Filter {
	return filterKeyClauses(filterClause{"PartitionKey eq ", pk})
}

// RowKeyRange returns the filter of a range query inside one partition:
// PartitionKey eq pk and lo <= RowKey < hi. hi == "" means no upper bound;
// lo == "" means from the start of the partition (the comparison is left
// out, as every RowKey is >= "").
func RowKeyRange(pk, lo, hi string) Filter {
	pkc := filterClause{"PartitionKey eq ", pk}
	loc := filterClause{" and RowKey ge ", lo}
	hic := filterClause{" and RowKey lt ", hi}
	switch {
	case lo == "" && hi == "":
		return filterKeyClauses(pkc)
	case lo == "":
		return filterKeyClauses(pkc, hic)
	case hi == "":
		return filterKeyClauses(pkc, loc)
	}
	return filterKeyClauses(pkc, loc, hic)
}

// RowKeyPrefix returns the filter of a prefix query inside one partition:
// PartitionKey eq pk and the RowKeys starting with prefix, as raw strings,
// as RowKey ge prefix and RowKey lt [keys.PrefixEnd](prefix); the upper
// bound is left out when no string follows every key with that prefix (and
// the lower bound when prefix is ""). It knows nothing of compound keys:
// RowKeyPrefix(pk, "a") also takes in "ab" and "a_b". For the keys of a
// tuple and its extensions use [keys.TupleRange], for a component by prefix
// [keys.ComponentPrefixRange], with [RowKeyRange]; the keys package doc
// (Ranges) has a table of the three.
func RowKeyPrefix(pk, prefix string) Filter {
	end, ok := keys.PrefixEnd(prefix)
	if !ok {
		end = ""
	}
	return RowKeyRange(pk, prefix, end)
}

// PartitionRange returns the filter of a range query across partitions:
// lo <= PartitionKey < hi. hi == "" means no upper bound and lo == "" no
// lower bound; with both empty it is the zero Filter (a table scan).
func PartitionRange(lo, hi string) Filter {
	loc := filterClause{"PartitionKey ge ", lo}
	hic := filterClause{"PartitionKey lt ", hi}
	switch {
	case lo == "" && hi == "":
		return Filter{}
	case lo == "":
		return filterKeyClauses(hic)
	case hi == "":
		return filterKeyClauses(loc)
	}
	hic.text = " and " + hic.text
	return filterKeyClauses(loc, hic)
}

// filterClause is trusted text followed by a string literal.
type filterClause struct{ text, value string }

// filterKeyClauses concatenates clauses, each value as a string literal:
// what Where does for the key helpers, without boxing their arguments.
func filterKeyClauses(cs ...filterClause) Filter {
	size := 0
	for _, c := range cs {
		size += len(c.text) + len(c.value) + 4
	}
	var b strings.Builder
	b.Grow(size)
	for i, c := range cs {
		b.WriteString(c.text)
		if err := filterAppendString(&b, c.value); err != nil {
			return filterError(fmt.Sprintf("filter %s: argument %d: %v",
				codec.Quote(strings.TrimPrefix(c.text, " and ")+"?"), i+1, err))
		}
	}
	return Filter{text: b.String()}
}

// Explain classifies the query f makes, without sending anything: a point
// query, a range query, a partition scan, a partition range scan or a
// table scan, in the terms of the table design guide, with the keys or
// ranges the service can use and the reasons the query is less efficient
// than it could be (see package queryplan, whose Explain reads f's text).
// The zero Filter is a table scan; a Filter carrying an error gives class
// queryplan.Unknown with that error.
func (f Filter) Explain() queryplan.Plan {
	if f.err != nil {
		return queryplan.Plan{Class: queryplan.Unknown, Err: f.err}
	}
	return queryplan.Explain(f.text)
}

// Properties returns the property names f's expression refers to, each once,
// in order of first appearance: the words of the expression that are not
// keywords (eq ne gt ge lt le and or not true false null), not literals
// (quoted strings, numbers, typed literals such as datetime'...') and not
// punctuation. Arguments never contribute names, as they are literals. It
// errs on the side of reporting: an unusual word is reported as a name. It
// returns nil for the zero Filter and for a Filter carrying an error.
func (f Filter) Properties() []string {
	if f.err != nil || f.text == "" {
		return nil
	}
	var names []string
	s := f.text
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsSpace(r) || r == '(' || r == ')':
			i += size
			continue
		case r == '\'' || r == '"':
			end, ok := odata.ClosingQuote(s, i)
			if !ok {
				return names
			}
			i = end + 1
			continue
		}
		start := i
		for i < len(s) {
			r, size := utf8.DecodeRuneInString(s[i:])
			if unicode.IsSpace(r) || r == '(' || r == ')' || r == '\'' || r == '"' {
				break
			}
			i += size
		}
		word := s[start:i]
		if i < len(s) && (s[i] == '\'' || s[i] == '"') && odata.IsTypeHint(word) {
			continue
		}
		if filterIsKeyword(word) || odata.IsNumber(word) || !filterHasNameRune(word) {
			continue
		}
		seen := false
		for _, n := range names {
			if n == word {
				seen = true
				break
			}
		}
		if !seen {
			names = append(names, word)
		}
	}
	return names
}

// filterIsKeyword reports whether w is an OData keyword of table filters. The
// match is case-sensitive, as in OData, so that "Not" is reported as a name.
func filterIsKeyword(w string) bool {
	switch w {
	case "eq", "ne", "gt", "ge", "lt", "le", "and", "or", "not", "true", "false", "null":
		return true
	}
	return false
}

// filterHasNameRune reports whether w contains a letter or '_', i.e. could name a
// property rather than being stray punctuation.
func filterHasNameRune(w string) bool {
	for _, r := range w {
		if r == '_' || unicode.IsLetter(r) {
			return true
		}
	}
	return false
}
