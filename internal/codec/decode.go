package codec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// tokenKind is the JSON kind of a property value.
type tokenKind uint8

const (
	tokString tokenKind = iota
	tokNumber
	tokTrue
	tokFalse
	tokNull
	tokOther // object or array: never a valid entity property
)

// rawProp is one property of an entity as it appears in the JSON, or one
// property of an Entity as its JSON would carry it (ev set).
type rawProp struct {
	name    []byte
	val     []byte // string content without quotes (escapes intact), or the literal
	kind    tokenKind
	escaped bool
	edm     edmType
	typed   bool // edm came from an @odata.type annotation
	// ev, when set, is the value of an Entity property (Decode): name and
	// val are then unset, kind and edm are its JSON's, and the accessors
	// below give what they would read from that JSON.
	ev *edmValue
}

// rawEntity is one decoded-but-not-converted entity object.
type rawEntity struct {
	pk, rk, etag, ts rawProp
	hasPK, hasRK     bool
	hasETag, hasTS   bool
	props            []rawProp
	annots           []rawProp // name = property name, val = type name
}

var rawEntityPool = sync.Pool{New: func() any { return &rawEntity{props: make([]rawProp, 0, 32)} }}

func (r *rawEntity) reset() {
	r.props = r.props[:0]
	r.annots = r.annots[:0]
	r.hasPK, r.hasRK, r.hasETag, r.hasTS = false, false, false, false
}

var annotationSuffix = []byte("@odata.type")

func decodeError(format string, args ...any) error {
	return &DecodeError{Detail: "malformed entity JSON: " + fmt.Sprintf(format, args...)}
}

// parse reads one flat JSON object into r.
func (r *rawEntity) parse(data []byte) error {
	s := scanner{b: data}
	if err := s.expect('{'); err != nil {
		return err
	}
	s.ws()
	if s.peek() == '}' {
		s.i++
		return s.end()
	}
	for {
		s.ws()
		key, kesc, err := s.str()
		if err != nil {
			return err
		}
		if kesc {
			key = unescapeBytes(key)
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		s.ws()
		val, kind, esc, err := s.value()
		if err != nil {
			return err
		}
		p := rawProp{name: key, val: val, kind: kind, escaped: esc}
		switch {
		case bytes.HasSuffix(key, annotationSuffix):
			if kind != tokString {
				return decodeError("annotation %q is not a string", key)
			}
			p.name = key[:len(key)-len(annotationSuffix)]
			r.annots = append(r.annots, p)
		case string(key) == "PartitionKey":
			r.pk, r.hasPK = p, true
		case string(key) == "RowKey":
			r.rk, r.hasRK = p, true
		case string(key) == "Timestamp":
			r.ts, r.hasTS = p, true
		case string(key) == "odata.etag":
			r.etag, r.hasETag = p, true
		case bytes.HasPrefix(key, []byte("odata.")):
		default:
			r.props = append(r.props, p)
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return r.applyAnnotations(s.end())
		default:
			return decodeError("expected , or } at offset %d", s.i)
		}
	}
}

func (r *rawEntity) applyAnnotations(err error) error {
	if err != nil {
		return err
	}
	for _, a := range r.annots {
		edm, ok := parseEdmType(a.val)
		if !ok {
			return decodeError("unknown type annotation %q for property %q", a.val, a.name)
		}
		for i := range r.props {
			if bytes.Equal(r.props[i].name, a.name) {
				r.props[i].edm, r.props[i].typed = edm, true
				break
			}
		}
	}
	for i := range r.props {
		p := &r.props[i]
		if p.typed {
			continue
		}
		switch p.kind {
		case tokString:
			p.edm = edmString
		case tokTrue, tokFalse:
			p.edm = edmBoolean
		case tokNumber:
			p.edm = edmDouble
			if isIntegerLiteral(p.val) {
				if _, err := strconv.ParseInt(string(p.val), 10, 32); err == nil {
					p.edm = edmInt32
				}
			}
		}
	}
	return nil
}

func isIntegerLiteral(b []byte) bool {
	return !bytes.ContainsAny(b, ".eE")
}

// ForEachObject calls fn with each element of the "value" array of a query
// response body: each entity's JSON as the service sent it, aliasing body.
func ForEachObject(body []byte, fn func(obj []byte) error) error {
	s := scanner{b: body}
	if err := s.expect('{'); err != nil {
		return err
	}
	for {
		s.ws()
		if s.peek() == '}' {
			return nil
		}
		key, _, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		s.ws()
		if string(key) == "value" {
			if err := s.expect('['); err != nil {
				return err
			}
			for {
				s.ws()
				if s.peek() == ']' {
					s.i++
					break
				}
				start := s.i
				if err := s.skip(); err != nil {
					return err
				}
				if err := fn(s.b[start:s.i]); err != nil {
					return err
				}
				s.ws()
				if s.peek() == ',' {
					s.i++
				}
			}
		} else if _, _, _, err := s.value(); err != nil {
			return err
		}
		s.ws()
		if s.peek() == ',' {
			s.i++
		}
	}
}

// ObjectKeys reads the PartitionKey and RowKey of an entity's JSON.
func ObjectKeys(obj []byte) (pk, rk string, err error) {
	r := rawEntityPool.Get().(*rawEntity)
	defer func() { r.reset(); rawEntityPool.Put(r) }()
	if err := r.parse(obj); err != nil {
		return "", "", err
	}
	if r.hasPK {
		pk = r.pk.stringValue()
	}
	if r.hasRK {
		rk = r.rk.stringValue()
	}
	return pk, rk, nil
}

// RawKeys reads the PartitionKey and RowKey of an entity's JSON (unescaped
// when the JSON escapes them), reading no further than the second of them;
// it allocates only for keys the JSON escapes.
func RawKeys(obj []byte) (pk, rk []byte, ok bool) {
	s := scanner{b: obj}
	if s.expect('{') != nil {
		return nil, nil, false
	}
	var hasPK, hasRK bool
	for !hasPK || !hasRK {
		s.ws()
		key, kesc, err := s.str()
		if err != nil || s.expect(':') != nil {
			return nil, nil, false
		}
		s.ws()
		val, kind, vesc, err := s.value()
		if err != nil {
			return nil, nil, false
		}
		if kind == tokString && !kesc {
			if vesc {
				val = unescapeBytes(val)
			}
			switch string(key) {
			case "PartitionKey":
				pk, hasPK = val, true
			case "RowKey":
				rk, hasRK = val, true
			}
		}
		s.ws()
		if s.peek() != ',' {
			break
		}
		s.i++
	}
	return pk, rk, hasPK && hasRK
}

// scanner is a minimal JSON reader for flat entity objects.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) expect(c byte) error {
	s.ws()
	if s.peek() != c {
		return decodeError("expected %q at offset %d", c, s.i)
	}
	s.i++
	return nil
}

func (s *scanner) end() error {
	s.ws()
	if s.i != len(s.b) {
		return decodeError("trailing data at offset %d", s.i)
	}
	return nil
}

// str reads a JSON string and returns its raw content.
func (s *scanner) str() ([]byte, bool, error) {
	if s.peek() != '"' {
		return nil, false, decodeError("expected a string at offset %d", s.i)
	}
	s.i++
	start := s.i
	esc := false
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			out := s.b[start:s.i]
			s.i++
			return out, esc, nil
		case c == '\\':
			esc = true
			if s.i+1 >= len(s.b) {
				return nil, false, decodeError("unterminated string")
			}
			s.i += 2
		case c < 0x20:
			return nil, false, decodeError("control character in string at offset %d", s.i)
		default:
			s.i++
		}
	}
	return nil, false, decodeError("unterminated string")
}

func (s *scanner) value() ([]byte, tokenKind, bool, error) {
	switch c := s.peek(); {
	case c == '"':
		v, esc, err := s.str()
		return v, tokString, esc, err
	case c == 't' && bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		return nil, tokTrue, false, nil
	case c == 'f' && bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		return nil, tokFalse, false, nil
	case c == 'n' && bytes.HasPrefix(s.b[s.i:], []byte("null")):
		s.i += 4
		return nil, tokNull, false, nil
	case c == '-' || (c >= '0' && c <= '9'):
		start := s.i
		for s.i < len(s.b) {
			c := s.b[s.i]
			if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
				s.i++
				continue
			}
			break
		}
		return s.b[start:s.i], tokNumber, false, nil
	case c == '{' || c == '[':
		start := s.i
		err := s.skip()
		return s.b[start:s.i], tokOther, false, err
	}
	return nil, 0, false, decodeError("unexpected character at offset %d", s.i)
}

// skip skips one JSON value of any kind.
func (s *scanner) skip() error {
	s.ws()
	c := s.peek()
	if c != '{' && c != '[' {
		_, _, _, err := s.value()
		return err
	}
	depth := 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '{', '[':
			depth++
			s.i++
		case '}', ']':
			depth--
			s.i++
			if depth == 0 {
				return nil
			}
		case '"':
			if _, _, err := s.str(); err != nil {
				return err
			}
		default:
			s.i++
		}
	}
	return decodeError("unterminated object")
}

// unescapeBytes decodes the escapes of a JSON string's content.
func unescapeBytes(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' || i+1 >= len(b) {
			out = append(out, c)
			continue
		}
		i++
		switch b[i] {
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'u':
			r, n := decodeU(b[i+1:])
			if n == 0 {
				out = append(out, "\ufffd"...)
				continue
			}
			i += n
			if utf16.IsSurrogate(r) {
				r2, n2 := rune(-1), 0
				if i+2 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
					r2, n2 = decodeU(b[i+3:])
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError && n2 > 0 {
					i += 2 + n2
					r = dec
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, b[i])
		}
	}
	return out
}

func decodeU(b []byte) (rune, int) {
	if len(b) < 4 {
		return 0, 0
	}
	var r rune
	for _, c := range b[:4] {
		v, ok := unhex(c)
		if !ok {
			return 0, 0
		}
		r = r<<4 | rune(v)
	}
	return r, 4
}

// The accessors decodeValue reads a value with. For a property from JSON
// they parse its text; for one from an Entity they give its canonical Go
// value when its EDM type is the one asked for, and otherwise parse the
// text its JSON would hold (appendText), so that a value decodes the same
// either way.

func (p *rawProp) stringValue() string {
	if p.ev != nil {
		if p.ev.edm == edmString {
			return p.ev.str
		}
		return string(p.ev.appendText(nil))
	}
	if p.escaped {
		return string(unescapeBytes(p.val))
	}
	return string(p.val)
}

func (p *rawProp) bytesValue() []byte {
	if p.ev != nil {
		return p.ev.appendText(nil)
	}
	if p.escaped {
		return unescapeBytes(p.val)
	}
	return p.val
}

// text is the value's text as the parsers read it: the JSON string's content
// with its escapes intact, or the literal. For a value from an Entity it is
// unescaped, which reads the same: no GUID, number or date-time holds a
// character JSON escapes.
func (p *rawProp) text() []byte {
	if p.ev != nil {
		return p.ev.appendText(nil)
	}
	return p.val
}

func (p *rawProp) guidValue() (GUID, bool) {
	if p.ev != nil && p.ev.edm == edmGUID {
		return p.ev.g, true
	}
	return parseGUIDBytes(p.text())
}

var errIntRange = errors.New("integer out of range")

// intValue parses the value as a decimal integer of the given bit size.
func (p *rawProp) intValue(bits int) (int64, error) {
	if ev := p.ev; ev != nil && (ev.edm == edmInt32 || ev.edm == edmInt64) {
		if bits < 64 && (ev.num < -1<<(bits-1) || ev.num > 1<<(bits-1)-1) {
			return 0, errIntRange
		}
		return ev.num, nil
	}
	return strconv.ParseInt(string(p.text()), 10, bits)
}

// uintValue parses the value as an unsigned decimal integer of the given
// bit size.
func (p *rawProp) uintValue(bits int) (uint64, error) {
	if ev := p.ev; ev != nil && (ev.edm == edmInt32 || ev.edm == edmInt64) {
		if ev.num < 0 || (bits < 64 && uint64(ev.num) > 1<<bits-1) {
			return 0, errIntRange
		}
		return uint64(ev.num), nil
	}
	return strconv.ParseUint(string(p.text()), 10, bits)
}

// doubleValue reads a number, or a string holding NaN or an infinity, or
// an Edm.Double string.
func (p *rawProp) doubleValue() (float64, error) {
	if ev := p.ev; ev != nil {
		switch ev.edm {
		case edmDouble:
			return ev.f, nil
		case edmInt32:
			return float64(ev.num), nil
		}
	}
	switch p.kind {
	case tokNumber:
		return strconv.ParseFloat(string(p.text()), 64)
	case tokString:
		val := p.text()
		switch string(val) {
		case "NaN":
			return math.NaN(), nil
		case "Infinity", "INF":
			return math.Inf(1), nil
		case "-Infinity", "-INF":
			return math.Inf(-1), nil
		}
		if p.edm == edmDouble {
			return strconv.ParseFloat(string(val), 64)
		}
	}
	return 0, fmt.Errorf("not a number")
}

func (p *rawProp) dateTimeValue() (time.Time, error) {
	if p.ev != nil && p.ev.edm == edmDateTime {
		return p.ev.t, nil
	}
	return parseDateTime(p.text())
}

// binaryValue decodes base64 into a new slice.
func (p *rawProp) binaryValue() ([]byte, error) {
	if p.ev != nil && p.ev.edm == edmBinary {
		b := make([]byte, len(p.ev.bin)) // non-nil when empty, as decodeBase64 gives
		copy(b, p.ev.bin)
		return b, nil
	}
	return decodeBase64(p.bytesValue())
}

// decodeState carries one decode's context.
type decodeState struct {
	// plaintext reads fields tagged encrypt from plain values, for an
	// Entity a table's Entities view decrypted (Table.FromEntity).
	plaintext bool
	op        string // the operation reading, for errors
	table     string
	crypt     *cryptContext
	pk        string
	rk        string
}

// fail returns a *DecodeError about property prop of the entity being
// decoded.
func (d *decodeState) fail(prop string, format string, args ...any) error {
	return d.failWith(nil, prop, format, args...)
}

// failWith is fail with a sentinel for the error to match.
func (d *decodeState) failWith(sentinel error, prop string, format string, args ...any) error {
	ent := d.pk + "/" + d.rk
	if d.table != "" {
		ent = d.table + ":" + ent
	}
	return &DecodeError{Op: d.op, Entity: ent, Property: prop, Detail: fmt.Sprintf(format, args...), Err: sentinel}
}

// systemInto decodes the keys, ETag and Timestamp.
func (r *rawEntity) system(d *decodeState) (pk, rk string, etag azcore.ETag, ts time.Time, err error) {
	if r.hasPK {
		pk = r.pk.stringValue()
	}
	if r.hasRK {
		rk = r.rk.stringValue()
	}
	d.pk, d.rk = pk, rk
	if r.hasETag {
		etag = azcore.ETag(r.etag.stringValue())
	}
	if r.hasTS && r.ts.kind == tokString {
		ts, err = parseDateTime(r.ts.val)
		if err != nil {
			err = d.fail("Timestamp", "%v", err)
		}
	}
	return
}

// decodeStruct decodes one entity object into the struct v.
func (p *typePlan) decodeStruct(data []byte, v reflect.Value, d *decodeState) error {
	r := rawEntityPool.Get().(*rawEntity)
	defer func() { r.reset(); rawEntityPool.Put(r) }()
	if err := r.parse(data); err != nil {
		return err
	}
	return p.decodeRaw(r, v, d)
}

func (p *typePlan) decodeRaw(r *rawEntity, v reflect.Value, d *decodeState) error {
	pk, rk, etag, ts, err := r.system(d)
	if err != nil {
		return err
	}
	if p.pk != nil {
		fieldByPath(v, p.pk).SetString(pk)
	}
	if p.rk != nil {
		fieldByPath(v, p.rk).SetString(rk)
	}
	if p.etag != nil {
		fieldByPath(v, p.etag).SetString(string(etag))
	}
	if p.ts != nil {
		fieldByPath(v, p.ts).Set(reflect.ValueOf(ts))
	}
	for i := range r.props {
		rp := &r.props[i]
		idx, ok := p.byName[string(rp.name)]
		if !ok || rp.kind == tokNull {
			continue
		}
		fp := &p.fields[idx]
		if err := fp.decode(rp, fieldByPath(v, fp.path), d); err != nil {
			return err
		}
	}
	return nil
}

// fromEntity sets the struct v from the property bag e directly, with the
// errors and values of a decodeStruct of e's JSON as encodeEntity (with
// s.unchecked) writes it: every property is checked by entityProperty and
// canonicalValue, and a check failure wins over a decode failure, as
// encoding all of e came before decoding any of it; the properties the
// plan knows go through decode and decodeValue as JSON properties do, with
// rawProp carrying the canonical value. Nothing is decrypted (d.crypt must
// be nil): an encrypt field fails as on a Table without encryption. The
// keys are taken as they are, where JSON turned invalid UTF-8 into U+FFFD.
func (p *typePlan) fromEntity(e *Entity, v reflect.Value, d *decodeState) error {
	s := encodeState{unchecked: true}
	_ = s.checkKeys(e.PartitionKey, e.RowKey) // unchecked: only names the entity
	d.pk, d.rk = e.PartitionKey, e.RowKey
	if p.pk != nil {
		fieldByPath(v, p.pk).SetString(e.PartitionKey)
	}
	if p.rk != nil {
		fieldByPath(v, p.rk).SetString(e.RowKey)
	}
	if p.etag != nil {
		fieldByPath(v, p.etag).SetString(string(e.ETag))
	}
	if p.ts != nil {
		setTime(fieldByPath(v, p.ts), e.Timestamp)
	}
	var (
		decodeErr error
		ev        edmValue // one for all properties: decode keeps nothing of it
		present   bool
	)
	for name, val := range e.Properties {
		if val == nil {
			continue
		}
		edm, val, err := s.entityProperty(name, val)
		if err != nil {
			return err
		}
		if ev, _, present, err = s.canonicalValue(name, edm, val); err != nil {
			return err
		}
		idx, known := p.byName[name]
		if !present || !known || decodeErr != nil {
			continue
		}
		fp := &p.fields[idx]
		rp := rawProp{kind: ev.token(), edm: edm, ev: &ev}
		decodeErr = fp.decode(&rp, fieldByPath(v, fp.path), d)
	}
	return decodeErr
}

// decode stores one property into the field fv.
func (fp *fieldPlan) decode(rp *rawProp, fv reflect.Value, d *decodeState) error {
	if fp.encrypt && d.plaintext {
		// An Entity read through a table's Entities view: decrypted.
	} else if fp.encrypt {
		plain, err := d.decrypt(fp.name, rp)
		if err != nil {
			return err
		}
		rp = plain
	} else if d.crypt != nil && rp.edm == edmBinary && d.crypt.looksEncrypted(rp) {
		return d.fail(fp.name, "property holds an encrypted value but the field is not tagged encrypt")
	}
	if fp.ptr {
		nv := reflect.New(fp.elemType)
		if err := fp.decodeValue(rp, nv.Elem(), d); err != nil {
			return err
		}
		fv.Set(nv)
		return nil
	}
	return fp.decodeValue(rp, fv, d)
}

func (fp *fieldPlan) decodeValue(rp *rawProp, fv reflect.Value, d *decodeState) error {
	bad := func(want string) error {
		return d.fail(fp.name, "stored %s value cannot be decoded into %s field %s (want %s)", rp.edm, fv.Type(), fp.goName, want)
	}
	switch fp.kind {
	case kindString:
		if rp.kind != tokString {
			return bad("a string")
		}
		fv.SetString(rp.stringValue())
	case kindGUIDString:
		if rp.kind != tokString {
			return bad("a GUID string")
		}
		g, ok := rp.guidValue()
		if !ok {
			return bad("a GUID")
		}
		fv.SetString(g.String())
	case kindBool:
		if rp.kind != tokTrue && rp.kind != tokFalse {
			return bad("a boolean")
		}
		fv.SetBool(rp.kind == tokTrue)
	case kindInt, kindUint:
		if rp.kind != tokNumber && !(rp.kind == tokString && rp.edm == edmInt64) {
			return bad("an integer")
		}
		if fp.kind == kindInt {
			i, err := rp.intValue(fp.bits)
			if err != nil {
				return bad(fmt.Sprintf("an integer that fits in %d bits", fp.bits))
			}
			fv.SetInt(i)
		} else {
			u, err := rp.uintValue(fp.bits)
			if err != nil {
				return bad(fmt.Sprintf("a non-negative integer that fits in %d bits", fp.bits))
			}
			fv.SetUint(u)
		}
	case kindFloat:
		f, err := rp.doubleValue()
		if err != nil {
			return bad("a number")
		}
		fv.SetFloat(f)
	case kindTime:
		if rp.kind != tokString {
			return bad("a date-time")
		}
		t, err := rp.dateTimeValue()
		if err != nil {
			return bad("a date-time")
		}
		setTime(fv, t)
	case kindBytes:
		if rp.kind != tokString {
			return bad("base64 binary")
		}
		b, err := rp.binaryValue()
		if err != nil {
			return bad("base64 binary")
		}
		fv.SetBytes(b)
	case kindGUIDArray:
		if rp.kind != tokString {
			return bad("a GUID")
		}
		g, ok := rp.guidValue()
		if !ok {
			return bad("a GUID")
		}
		reflect.Copy(fv, reflect.ValueOf(g))
	case kindJSON:
		if rp.kind != tokString {
			return bad("a JSON string")
		}
		nv := reflect.New(fv.Type())
		if err := json.Unmarshal(rp.bytesValue(), nv.Interface()); err != nil {
			return d.fail(fp.name, "json tag: %v", err)
		}
		fv.Set(nv.Elem())
	case kindText:
		if rp.kind != tokString {
			return bad("a string")
		}
		u := fv.Addr().Interface().(interface{ UnmarshalText([]byte) error })
		if err := u.UnmarshalText(rp.bytesValue()); err != nil {
			return d.fail(fp.name, "UnmarshalText: %v", err)
		}
	}
	return nil
}

// setTime sets a time.Time field, without boxing t when it can.
func setTime(fv reflect.Value, t time.Time) {
	if fv.CanAddr() {
		*fv.Addr().Interface().(*time.Time) = t
		return
	}
	fv.Set(reflect.ValueOf(t))
}

// parseDateTime parses an OData date-time such as 2006-01-02T15:04:05.1234567Z.
func parseDateTime(b []byte) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// decodeEntity decodes one entity object into a property bag.
func decodeEntity(data []byte, e *Entity, d *decodeState) error {
	r := rawEntityPool.Get().(*rawEntity)
	defer func() { r.reset(); rawEntityPool.Put(r) }()
	if err := r.parse(data); err != nil {
		return err
	}
	return decodeRawEntity(r, e, d)
}

func decodeRawEntity(r *rawEntity, e *Entity, d *decodeState) error {
	var err error
	e.PartitionKey, e.RowKey, e.ETag, e.Timestamp, err = r.system(d)
	if err != nil {
		return err
	}
	e.Properties = make(map[string]any, len(r.props))
	for i := range r.props {
		rp := &r.props[i]
		if rp.kind == tokNull {
			continue
		}
		name := string(rp.name)
		if d.crypt.encrypts(name) || (d.crypt != nil && rp.edm == edmBinary && d.crypt.looksEncrypted(rp)) {
			plain, err := d.decrypt(name, rp)
			if err != nil {
				return err
			}
			rp = plain
		}
		v, err := rp.entityValue()
		if err != nil {
			return d.fail(name, "%v", err)
		}
		e.Properties[name] = v
	}
	return nil
}

// entityValue converts a raw property to the Go value Entity uses for its
// EDM type.
func (rp *rawProp) entityValue() (any, error) {
	wrong := func() error { return fmt.Errorf("value does not match its type %s", rp.edm) }
	switch rp.edm {
	case edmString:
		if rp.kind != tokString {
			return nil, wrong()
		}
		return rp.stringValue(), nil
	case edmBoolean:
		if rp.kind != tokTrue && rp.kind != tokFalse {
			return nil, wrong()
		}
		return rp.kind == tokTrue, nil
	case edmInt32:
		i, err := strconv.ParseInt(string(rp.val), 10, 32)
		if err != nil || (rp.kind != tokNumber && rp.kind != tokString) {
			return nil, wrong()
		}
		return int32(i), nil
	case edmInt64:
		i, err := strconv.ParseInt(string(rp.val), 10, 64)
		if err != nil || (rp.kind != tokNumber && rp.kind != tokString) {
			return nil, wrong()
		}
		return i, nil
	case edmDouble:
		f, err := rp.doubleValue()
		if err != nil {
			return nil, wrong()
		}
		return f, nil
	case edmDateTime:
		if rp.kind != tokString {
			return nil, wrong()
		}
		t, err := parseDateTime(rp.val)
		if err != nil {
			return nil, wrong()
		}
		return t, nil
	case edmGUID:
		g, ok := parseGUIDBytes(rp.val)
		if !ok || rp.kind != tokString {
			return nil, wrong()
		}
		return g, nil
	case edmBinary:
		if rp.kind != tokString {
			return nil, wrong()
		}
		b, err := decodeBase64(rp.bytesValue())
		if err != nil {
			return nil, wrong()
		}
		return b, nil
	}
	return nil, wrong()
}

// decodeBase64 decodes standard base64; an empty value gives an empty,
// non-nil slice so that []byte{} round-trips.
func decodeBase64(src []byte) ([]byte, error) {
	return base64.StdEncoding.AppendDecode(make([]byte, 0, base64.StdEncoding.DecodedLen(len(src))), src)
}
