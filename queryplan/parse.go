package queryplan

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tablekit/tablekit/internal/odata"
)

// explainMaxDepth bounds the nesting of parentheses and not in a filter
// Explain parses, so that hostile text cannot exhaust the stack.
const explainMaxDepth = 500

// The tokens of a table filter.
type explainTok uint8

const (
	xtEOF explainTok = iota
	xtLParen
	xtRParen
	xtAnd
	xtOr
	xtNot
	xtCmp     // eq ne gt ge lt le
	xtIdent   // a property name
	xtString  // 'text' or "text"
	xtLiteral // any other literal: number, true, false, null, datetime'…', guid'…', X'…'
)

// explainToken is one token: its kind, its position, the operator of a
// comparison, the name of a property or the value of a string literal.
type explainToken struct {
	kind     explainTok
	pos, end int
	text     string
}

// keyCond is what a filter requires of one key: equality with a value,
// and bounds. A zero keyCond requires nothing.
type keyCond struct {
	hasEq    bool
	eq       string
	lo, hi   *KeyBound
	conflict bool // two different equalities under and
}

func (c keyCond) any() bool { return c.hasEq || c.lo != nil || c.hi != nil }

// and combines the conditions of both operands of an and.
func (c keyCond) and(d keyCond) keyCond {
	out := c
	out.conflict = c.conflict || d.conflict
	if d.hasEq {
		if c.hasEq && c.eq != d.eq {
			out.conflict = true
		} else {
			out.hasEq, out.eq = true, d.eq
		}
	}
	out.lo = tighterLower(c.lo, d.lo)
	out.hi = tighterUpper(c.hi, d.hi)
	return out
}

// or keeps what both operands of an or require, and reports whether a
// condition of either side was lost (the or defeats the key's index).
func (c keyCond) or(d keyCond) (keyCond, bool) {
	var out keyCond
	if c.hasEq && d.hasEq && c.eq == d.eq {
		out.hasEq, out.eq = true, c.eq
	}
	if sameBound(c.lo, d.lo) {
		out.lo = c.lo
	}
	if sameBound(c.hi, d.hi) {
		out.hi = c.hi
	}
	out.conflict = c.conflict && d.conflict
	lost := (c.hasEq || d.hasEq) && !out.hasEq ||
		(c.lo != nil || d.lo != nil) && out.lo == nil ||
		(c.hi != nil || d.hi != nil) && out.hi == nil
	return out, lost
}

func sameBound(a, b *KeyBound) bool {
	return a != nil && b != nil && *a == *b
}

func tighterLower(a, b *KeyBound) *KeyBound {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.Key != b.Key:
		if a.Key > b.Key {
			return a
		}
		return b
	case !a.Inclusive:
		return a
	}
	return b
}

func tighterUpper(a, b *KeyBound) *KeyBound {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.Key != b.Key:
		if a.Key < b.Key {
			return a
		}
		return b
	case !a.Inclusive:
		return a
	}
	return b
}

// keyFlags records what defeated a key's index somewhere in the filter.
type keyFlags struct {
	used, or, not, ne, notString, notLiteral bool
}

// explainSummary is what a (sub)expression requires of the keys.
type explainSummary struct {
	pk, rk keyCond
}

// explainParser parses a table filter into an explainSummary, collecting
// the properties and the flags on the way.
type explainParser struct {
	src    string
	pos    int
	tok    explainToken
	depth  int
	err    error
	pkf    keyFlags
	rkf    keyFlags
	props  []string
	stamps bool // Timestamp is tested
}

// Explain classifies the query a filter's OData text makes, without
// sending anything (see the package doc): "" (or all white space) is the
// zero filter, a table scan that reads every entity. Text it cannot parse
// gives class Unknown with Plan.Err set; it never panics.
func Explain(filterText string) Plan {
	if strings.TrimSpace(filterText) == "" {
		return Plan{Class: TableScan, Reasons: []string{reasonNoFilter}}
	}
	p := &explainParser{src: filterText}
	p.next()
	s := p.parseOr()
	if p.err == nil && p.tok.kind != xtEOF {
		p.fail(p.tok.pos, "unexpected %s", p.describe(p.tok))
	}
	if p.err != nil {
		return Plan{Class: Unknown, Properties: p.props, Err: p.err}
	}
	return p.plan(s)
}

// plan classifies the summary of the whole filter.
func (p *explainParser) plan(s explainSummary) Plan {
	pl := Plan{Properties: p.props}
	var reasons []string
	add := func(ok bool, r string) {
		if ok {
			reasons = append(reasons, r)
		}
	}
	keyReasons := func(f keyFlags) {
		add(f.not, reasonNotOverKey)
		add(f.ne, reasonKeyNotEqual)
		add(f.notString, reasonKeyNotString)
		add(f.notLiteral, reasonKeyNotLiteral)
	}
	switch {
	case s.pk.hasEq && s.rk.hasEq:
		pl.Class, pl.PartitionKey, pl.RowKey = Point, s.pk.eq, s.rk.eq
	case s.pk.hasEq && (s.rk.lo != nil || s.rk.hi != nil):
		pl.Class, pl.PartitionKey = Range, s.pk.eq
		pl.RowKeys = KeyRange{Lower: s.rk.lo, Upper: s.rk.hi}
	case s.pk.hasEq:
		pl.Class, pl.PartitionKey = PartitionScan, s.pk.eq
		add(p.rkf.or, reasonOrRowKeys)
		keyReasons(p.rkf)
		add(!p.rkf.used, reasonNoRowKey)
		add(p.stamps, reasonTimestamp)
	case s.pk.lo != nil || s.pk.hi != nil:
		pl.Class = PartitionRange
		pl.PartitionKeys = KeyRange{Lower: s.pk.lo, Upper: s.pk.hi}
		add(true, reasonPartitionRange)
		add(p.stamps, reasonTimestamp)
	default:
		pl.Class = TableScan
		add(p.pkf.or, reasonOrPartitionKey)
		keyReasons(p.pkf)
		switch {
		case !p.pkf.used && !p.rkf.used:
			add(!p.stamps || p.hasPlainProperty(), reasonPropertiesOnly)
		case !p.pkf.used:
			add(true, reasonRowKeyOnly)
		default:
			add(true, reasonNoPartitionKey)
		}
		add(p.stamps, reasonTimestamp)
	}
	add(s.pk.conflict || s.rk.conflict, reasonContradiction)
	pl.Reasons = reasons
	return pl
}

// hasPlainProperty reports whether a property other than Timestamp is tested.
func (p *explainParser) hasPlainProperty() bool {
	for _, n := range p.props {
		if n != "Timestamp" {
			return true
		}
	}
	return false
}

func (p *explainParser) fail(pos int, format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("byte %d: %s", pos, fmt.Sprintf(format, args...))
	}
	p.tok = explainToken{kind: xtEOF, pos: len(p.src)}
	p.pos = len(p.src)
}

func (p *explainParser) describe(t explainToken) string {
	if t.kind == xtEOF {
		return "end of filter"
	}
	return quote(p.src[t.pos:t.end])
}

// parseOr parses and-expressions joined by or.
func (p *explainParser) parseOr() explainSummary {
	s := p.parseAnd()
	for p.err == nil && p.tok.kind == xtOr {
		p.next()
		r := p.parseAnd()
		var lostPK, lostRK bool
		s.pk, lostPK = s.pk.or(r.pk)
		s.rk, lostRK = s.rk.or(r.rk)
		p.pkf.or = p.pkf.or || lostPK
		p.rkf.or = p.rkf.or || lostRK
	}
	return s
}

// parseAnd parses unary expressions joined by and.
func (p *explainParser) parseAnd() explainSummary {
	s := p.parseUnary()
	for p.err == nil && p.tok.kind == xtAnd {
		p.next()
		r := p.parseUnary()
		s.pk = s.pk.and(r.pk)
		s.rk = s.rk.and(r.rk)
	}
	return s
}

// parseUnary parses not, a parenthesised expression or a comparison.
func (p *explainParser) parseUnary() explainSummary {
	if p.err != nil {
		return explainSummary{}
	}
	switch p.tok.kind {
	case xtNot, xtLParen:
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > explainMaxDepth {
			p.fail(p.tok.pos, "nested deeper than %d", explainMaxDepth)
			return explainSummary{}
		}
	}
	switch p.tok.kind {
	case xtNot:
		p.next()
		s := p.parseUnary()
		// The negation of a key condition is no key condition the
		// service can seek on.
		p.pkf.not = p.pkf.not || s.pk.any()
		p.rkf.not = p.rkf.not || s.rk.any()
		return explainSummary{}
	case xtLParen:
		open := p.tok.pos
		p.next()
		s := p.parseOr()
		if p.err == nil && p.tok.kind != xtRParen {
			p.fail(p.tok.pos, "expected ) closing the ( at byte %d, found %s", open, p.describe(p.tok))
		}
		p.next()
		return s
	}
	return p.parseComparison()
}

// parseComparison parses operand [op operand]: a comparison, or a lone
// property or literal used as a boolean.
func (p *explainParser) parseComparison() explainSummary {
	left := p.tok
	if !p.isOperand(left) {
		p.fail(left.pos, "expected a property, a value, not or (, found %s", p.describe(left))
		return explainSummary{}
	}
	p.next()
	if p.tok.kind != xtCmp {
		p.operand(left)
		return explainSummary{}
	}
	op := p.tok.text
	p.next()
	right := p.tok
	if !p.isOperand(right) {
		p.fail(right.pos, "expected a property or a value after %s, found %s", op, p.describe(right))
		return explainSummary{}
	}
	p.next()
	p.operand(left)
	p.operand(right)
	if left.kind != xtIdent || !isKeyName(left.text) {
		if right.kind != xtIdent || !isKeyName(right.text) {
			return explainSummary{}
		}
		left, right, op = right, left, flipOp(op)
	}
	var s explainSummary
	cond, flags := &s.pk, &p.pkf
	if left.text == "RowKey" {
		cond, flags = &s.rk, &p.rkf
	}
	switch {
	case right.kind == xtIdent:
		flags.notLiteral = true
	case right.kind != xtString:
		flags.notString = true
	default:
		switch op {
		case "eq":
			cond.hasEq, cond.eq = true, right.text
		case "ne":
			flags.ne = true
		case "gt", "ge":
			cond.lo = &KeyBound{Key: right.text, Inclusive: op == "ge"}
		case "lt", "le":
			cond.hi = &KeyBound{Key: right.text, Inclusive: op == "le"}
		}
	}
	return s
}

func (p *explainParser) isOperand(t explainToken) bool {
	return t.kind == xtIdent || t.kind == xtString || t.kind == xtLiteral
}

// operand records a property or key an operand names.
func (p *explainParser) operand(t explainToken) {
	if t.kind != xtIdent {
		return
	}
	switch t.text {
	case "PartitionKey":
		p.pkf.used = true
		return
	case "RowKey":
		p.rkf.used = true
		return
	case "Timestamp":
		p.stamps = true
	}
	for _, n := range p.props {
		if n == t.text {
			return
		}
	}
	p.props = append(p.props, t.text)
}

func isKeyName(s string) bool { return s == "PartitionKey" || s == "RowKey" }

// flipOp returns the operator of the comparison with its operands swapped.
func flipOp(op string) string {
	switch op {
	case "gt":
		return "lt"
	case "ge":
		return "le"
	case "lt":
		return "gt"
	case "le":
		return "ge"
	}
	return op
}

// next reads the next token into p.tok.
func (p *explainParser) next() {
	if p.err != nil {
		return
	}
	p.scan()
	p.tok.end = p.pos
}

// scan reads the next token into p.tok, all but its end.
func (p *explainParser) scan() {
	s := p.src
	for p.pos < len(s) {
		r, size := utf8.DecodeRuneInString(s[p.pos:])
		if !unicode.IsSpace(r) {
			break
		}
		p.pos += size
	}
	start := p.pos
	if start >= len(s) {
		p.tok = explainToken{kind: xtEOF, pos: start}
		return
	}
	switch s[start] {
	case '(':
		p.pos++
		p.tok = explainToken{kind: xtLParen, pos: start}
		return
	case ')':
		p.pos++
		p.tok = explainToken{kind: xtRParen, pos: start}
		return
	case '\'', '"':
		end, ok := odata.ClosingQuote(s, start)
		if !ok {
			p.fail(start, "unterminated quoted literal")
			return
		}
		q := s[start : start+1]
		p.pos = end + 1
		p.tok = explainToken{kind: xtString, pos: start, text: strings.ReplaceAll(s[start+1:end], q+q, q)}
		return
	}
	for p.pos < len(s) {
		r, size := utf8.DecodeRuneInString(s[p.pos:])
		if unicode.IsSpace(r) || r == '(' || r == ')' || r == '\'' || r == '"' {
			break
		}
		p.pos += size
	}
	word := s[start:p.pos]
	if p.pos < len(s) && (s[p.pos] == '\'' || s[p.pos] == '"') {
		if !odata.IsTypeHint(word) {
			p.fail(start, "unexpected quote after %q", word)
			return
		}
		end, ok := odata.ClosingQuote(s, p.pos)
		if !ok {
			p.fail(p.pos, "unterminated quoted literal")
			return
		}
		p.pos = end + 1
		p.tok = explainToken{kind: xtLiteral, pos: start}
		return
	}
	switch word {
	case "and":
		p.tok = explainToken{kind: xtAnd, pos: start}
	case "or":
		p.tok = explainToken{kind: xtOr, pos: start}
	case "not":
		p.tok = explainToken{kind: xtNot, pos: start}
	case "eq", "ne", "gt", "ge", "lt", "le":
		p.tok = explainToken{kind: xtCmp, pos: start, text: word}
	case "true", "false", "null":
		p.tok = explainToken{kind: xtLiteral, pos: start}
	default:
		switch {
		case odata.IsNumber(word):
			p.tok = explainToken{kind: xtLiteral, pos: start}
		case isExplainIdent(word):
			p.tok = explainToken{kind: xtIdent, pos: start, text: word}
		default:
			p.fail(start, "unexpected %q", word)
		}
	}
}

// isExplainIdent reports whether w can name a property: a letter or '_',
// then letters, digits and '_'.
func isExplainIdent(w string) bool {
	for i, r := range w {
		if !(r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))) {
			return false
		}
	}
	return w != ""
}
