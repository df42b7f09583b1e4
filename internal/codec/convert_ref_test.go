package codec

// The codec as it was before ToEntity and Decode became direct: frozen
// copies of the JSON route (struct -> OData JSON -> Entity, and
// Entity -> OData JSON -> struct), kept as the reference the equivalence
// tests and FuzzConvertEquivalence compare the direct conversions with.
// Only the copies' names changed (ref...); the helpers they call (key and
// limit checks, appendEncrypted, the JSON scanner, parsers) are the live ones.

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/jsonw"
	"github.com/tablekit/tablekit/internal/limits"
)

// (frozen) encodeStruct appends the OData JSON of the struct v to dst.
func (p *typePlan) refEncodeStruct(dst []byte, v reflect.Value, s *encodeState) ([]byte, error) {
	pk, rk := "", ""
	if p.pk != nil {
		pk = fieldByPath(v, p.pk).String()
	}
	if p.rk != nil {
		rk = fieldByPath(v, p.rk).String()
	}
	if err := s.checkKeys(pk, rk); err != nil {
		return dst, err
	}
	dst = appendKeys(dst, pk, rk)
	var err error
	for i := range p.fields {
		fp := &p.fields[i]
		fv := fieldByPath(v, fp.path)
		if dst, err = fp.refEncode(dst, fv, s); err != nil {
			return dst, err
		}
	}
	if err := s.finish(); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// (frozen) encode appends one field as a property, unless it is absent.
func (fp *fieldPlan) refEncode(dst []byte, fv reflect.Value, s *encodeState) ([]byte, error) {
	if fp.ptr {
		if fv.IsNil() {
			return dst, nil
		}
		fv = fv.Elem()
	}
	if fp.kind == kindJSON {
		if fp.omitEmpty && fv.IsZero() {
			return dst, nil
		}
		if (fv.Kind() == reflect.Pointer || fv.Kind() == reflect.Interface || fv.Kind() == reflect.Map || fv.Kind() == reflect.Slice) && fv.IsNil() {
			return dst, nil
		}
		b, err := json.Marshal(fv.Interface())
		if err != nil {
			return dst, s.fail(fp.name, "", 0, "json tag: "+err.Error(), ErrInvalidInput)
		}
		return s.refAppendValue(dst, fp, string(b))
	}
	if fp.omitEmpty && fv.IsZero() {
		return dst, nil
	}
	switch fp.kind {
	case kindString:
		return s.refAppendValue(dst, fp, fv.String())
	case kindGUIDString:
		if fv.Len() == 0 {
			return dst, nil // an empty GUID string is absent
		}
		return s.refAppendValue(dst, fp, fv.String())
	case kindBool:
		return s.refAppendValue(dst, fp, fv.Bool())
	case kindInt:
		return s.refAppendValue(dst, fp, fv.Int())
	case kindUint:
		u := fv.Uint()
		if u > math.MaxInt64 {
			return dst, s.fail(fp.name, "Edm.Int64 range", 0, fmt.Sprintf("value %d does not fit in a signed 64-bit integer", u), ErrInvalidInput)
		}
		return s.refAppendValue(dst, fp, int64(u))
	case kindFloat:
		return s.refAppendValue(dst, fp, fv.Float())
	case kindTime:
		return s.refAppendValue(dst, fp, fv.Interface().(time.Time))
	case kindBytes:
		if fv.IsNil() {
			return dst, nil
		}
		return s.refAppendValue(dst, fp, fv.Bytes())
	case kindGUIDArray:
		var g GUID
		reflect.Copy(reflect.ValueOf(&g).Elem(), fv)
		return s.refAppendValue(dst, fp, g)
	case kindText:
		tm, ok := fv.Interface().(encoding.TextMarshaler)
		if !ok && fv.CanAddr() {
			tm, ok = fv.Addr().Interface().(encoding.TextMarshaler)
		}
		if !ok {
			return dst, s.fail(fp.name, "", 0, "value does not implement encoding.TextMarshaler", ErrInvalidInput)
		}
		b, err := tm.MarshalText()
		if err != nil {
			return dst, s.fail(fp.name, "", 0, "MarshalText: "+err.Error(), ErrInvalidInput)
		}
		return s.refAppendValue(dst, fp, string(b))
	}
	return dst, s.fail(fp.name, "", 0, "unsupported field kind", ErrInvalidInput)
}

// (frozen) appendValue converts a Go value to the field's EDM type and appends it.
func (s *encodeState) refAppendValue(dst []byte, fp *fieldPlan, v any) ([]byte, error) {
	if fp.encrypt {
		return s.appendEncrypted(dst, fp.name, fp.edm, v)
	}
	return s.refAppendProperty(dst, fp.name, fp.edm, v)
}

// (frozen) appendProperty appends `,"name":value` (with its type annotation) for a
// value of a Go type the EDM type accepts, checking property limits.
func (s *encodeState) refAppendProperty(dst []byte, name string, edm edmType, v any) ([]byte, error) {
	mark := len(dst)
	dst = append(dst, ',')
	dst = jsonw.AppendString(dst, name)
	dst = append(dst, ':')
	var valueSize int
	switch edm {
	case edmString:
		str, ok := v.(string)
		if !ok {
			return dst[:mark], s.typeMismatch(name, edm, v)
		}
		if !utf8.ValidString(str) {
			return dst[:mark], s.fail(name, "valid UTF-8", 0, "string is not valid UTF-8", ErrInvalidInput)
		}
		n := utf16Len(str)
		if 2*n > limits.PropertyBytes && !s.unchecked {
			return dst[:mark], s.tooLarge(name, "<= 64 KiB per property (32,768 UTF-16 characters)", 2*n, "bytes of UTF-16", "string too large", ErrTooLarge)
		}
		valueSize = 4 + 2*n
		dst = jsonw.AppendString(dst, str)
	case edmBinary:
		b, ok := v.([]byte)
		if !ok {
			return dst[:mark], s.typeMismatch(name, edm, v)
		}
		if len(b) > limits.PropertyBytes && !s.unchecked {
			return dst[:mark], s.tooLarge(name, "<= 64 KiB per property", len(b), "bytes", "binary value too large", ErrTooLarge)
		}
		valueSize = 4 + len(b)
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, b)
		dst = append(dst, `","`...)
		dst = append(dst, name...)
		dst = append(dst, `@odata.type":"Edm.Binary"`...)
	case edmBoolean:
		b, ok := v.(bool)
		if !ok {
			return dst[:mark], s.typeMismatch(name, edm, v)
		}
		valueSize = 1
		dst = strconv.AppendBool(dst, b)
	case edmInt32:
		i, ok := refAsInt64(v)
		if !ok {
			return dst[:mark], s.typeMismatch(name, edm, v)
		}
		if i < math.MinInt32 || i > math.MaxInt32 {
			return dst[:mark], s.fail(name, "Edm.Int32 range", 0, fmt.Sprintf("value %d does not fit in Edm.Int32", i), ErrInvalidInput)
		}
		valueSize = 4
		dst = strconv.AppendInt(dst, i, 10)
	case edmInt64:
		i, ok := refAsInt64(v)
		if !ok {
			return dst[:mark], s.typeMismatch(name, edm, v)
		}
		valueSize = 8
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, i, 10)
		dst = appendAnnotation(dst, name, "Edm.Int64")
	case edmDouble:
		f, ok := v.(float64)
		if !ok {
			return dst[:mark], s.typeMismatch(name, edm, v)
		}
		valueSize = 8
		switch {
		case math.IsNaN(f):
			dst = append(dst, `"NaN`...)
		case math.IsInf(f, 1):
			dst = append(dst, `"Infinity`...)
		case math.IsInf(f, -1):
			dst = append(dst, `"-Infinity`...)
		default:
			// Always annotated: the SDK re-encodes entity JSON through
			// map[string]any, which turns 1.0 into 1 (an Int32) otherwise.
			dst = strconv.AppendFloat(dst, f, 'g', -1, 64)
			dst = append(dst, `,"`...)
			dst = append(dst, name...)
			dst = append(dst, `@odata.type":"Edm.Double"`...)
			return dst, s.addProperty(name, valueSize)
		}
		dst = appendAnnotation(dst, name, "Edm.Double")
	case edmDateTime:
		t, ok := v.(time.Time)
		if !ok {
			return dst[:mark], s.typeMismatch(name, edm, v)
		}
		if t.IsZero() {
			// The zero time.Time (year 1) is outside Edm.DateTime; it is
			// stored as absent and decodes back to the zero time.
			return dst[:mark], nil
		}
		t = t.UTC()
		if t.Before(minDateTime) || t.Year() > 9999 {
			return dst[:mark], s.fail(name, "Edm.DateTime range 1601-01-01 to 9999-12-31 UTC", 0, fmt.Sprintf("time %s is outside the range", t.Format(time.RFC3339)), ErrInvalidInput)
		}
		valueSize = 8
		dst = append(dst, '"')
		dst = appendDateTime(dst, t)
		dst = appendAnnotation(dst, name, "Edm.DateTime")
	case edmGUID:
		var g GUID
		switch x := v.(type) {
		case GUID:
			g = x
		case string:
			var ok bool
			if g, ok = parseGUIDBytes([]byte(x)); !ok {
				return dst[:mark], s.fail(name, "", 0, fmt.Sprintf("%s is not a GUID", Quote(x)), ErrInvalidInput)
			}
		default:
			return dst[:mark], s.typeMismatch(name, edm, v)
		}
		valueSize = 16
		dst = append(dst, '"')
		dst = appendGUID(dst, g)
		dst = appendAnnotation(dst, name, "Edm.Guid")
	default:
		return dst[:mark], s.typeMismatch(name, edm, v)
	}
	return dst, s.addProperty(name, valueSize)
}

func refAsInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int:
		return int64(x), true
	}
	return 0, false
}

// (frozen) encodeEntity appends the OData JSON of a property-bag entity to dst.
func refEncodeEntityJSON(dst []byte, e *Entity, s *encodeState) ([]byte, error) {
	if err := s.checkKeys(e.PartitionKey, e.RowKey); err != nil {
		return dst, err
	}
	dst = appendKeys(dst, e.PartitionKey, e.RowKey)
	var err error
	for name, v := range e.Properties {
		if v == nil {
			continue
		}
		if err := validPropertyName(name); err != nil {
			return dst, s.fail(name, "", 0, err.Error(), ErrInvalidInput)
		}
		edm, val, ok := refEdmOf(v)
		if !ok {
			return dst, s.fail(name, "", 0, fmt.Sprintf("a %T value cannot be stored (use string, int32, int64, int, float64, bool, time.Time, GUID, [16]byte or []byte)", v), ErrInvalidInput)
		}
		if s.crypt != nil && s.crypt.encrypts(name) {
			dst, err = s.appendEncrypted(dst, name, edm, val)
		} else {
			dst, err = s.refAppendProperty(dst, name, edm, val)
		}
		if err != nil {
			return dst, err
		}
	}
	if err := s.finish(); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// (frozen) edmOf maps an Entity property value to its EDM type and canonical value.
func refEdmOf(v any) (edmType, any, bool) {
	switch x := v.(type) {
	case string:
		return edmString, x, true
	case int32:
		return edmInt32, x, true
	case int64:
		return edmInt64, x, true
	case int:
		return edmInt64, int64(x), true
	case float64:
		return edmDouble, x, true
	case bool:
		return edmBoolean, x, true
	case time.Time:
		return edmDateTime, x, true
	case GUID:
		return edmGUID, x, true
	case []byte:
		return edmBinary, x, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Array && rv.Len() == 16 && rv.Type().Elem().Kind() == reflect.Uint8 {
		var g GUID
		reflect.Copy(reflect.ValueOf(&g).Elem(), rv)
		return edmGUID, g, true
	}
	return 0, nil, false
}

// (frozen) decodeStruct decodes one entity object into the struct v.
func (p *typePlan) refDecodeStruct(data []byte, v reflect.Value, d *decodeState) error {
	r := rawEntityPool.Get().(*rawEntity)
	defer func() { r.reset(); rawEntityPool.Put(r) }()
	if err := r.parse(data); err != nil {
		return err
	}
	return p.refDecodeRaw(r, v, d)
}

func (p *typePlan) refDecodeRaw(r *rawEntity, v reflect.Value, d *decodeState) error {
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
		if err := fp.refFieldDecode(rp, fieldByPath(v, fp.path), d); err != nil {
			return err
		}
	}
	return nil
}

// (frozen) decode stores one property into the field fv.
func (fp *fieldPlan) refFieldDecode(rp *rawProp, fv reflect.Value, d *decodeState) error {
	if fp.encrypt {
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
		if err := fp.refDecodeValue(rp, nv.Elem(), d); err != nil {
			return err
		}
		fv.Set(nv)
		return nil
	}
	return fp.refDecodeValue(rp, fv, d)
}

func (fp *fieldPlan) refDecodeValue(rp *rawProp, fv reflect.Value, d *decodeState) error {
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
		g, ok := parseGUIDBytes(rp.val)
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
			i, err := strconv.ParseInt(string(rp.val), 10, fp.bits)
			if err != nil {
				return bad(fmt.Sprintf("an integer that fits in %d bits", fp.bits))
			}
			fv.SetInt(i)
		} else {
			u, err := strconv.ParseUint(string(rp.val), 10, fp.bits)
			if err != nil {
				return bad(fmt.Sprintf("a non-negative integer that fits in %d bits", fp.bits))
			}
			fv.SetUint(u)
		}
	case kindFloat:
		f, err := refParseDouble(rp)
		if err != nil {
			return bad("a number")
		}
		fv.SetFloat(f)
	case kindTime:
		if rp.kind != tokString {
			return bad("a date-time")
		}
		t, err := parseDateTime(rp.val)
		if err != nil {
			return bad("a date-time")
		}
		fv.Set(reflect.ValueOf(t))
	case kindBytes:
		if rp.kind != tokString {
			return bad("base64 binary")
		}
		b, err := decodeBase64(rp.bytesValue())
		if err != nil {
			return bad("base64 binary")
		}
		fv.SetBytes(b)
	case kindGUIDArray:
		if rp.kind != tokString {
			return bad("a GUID")
		}
		g, ok := parseGUIDBytes(rp.val)
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

func refParseDouble(rp *rawProp) (float64, error) {
	switch rp.kind {
	case tokNumber:
		return strconv.ParseFloat(string(rp.val), 64)
	case tokString:
		switch string(rp.val) {
		case "NaN":
			return math.NaN(), nil
		case "Infinity", "INF":
			return math.Inf(1), nil
		case "-Infinity", "-INF":
			return math.Inf(-1), nil
		}
		if rp.edm == edmDouble {
			return strconv.ParseFloat(string(rp.val), 64)
		}
	}
	return 0, fmt.Errorf("not a number")
}

// (frozen) decodeEntity decodes one entity object into a property bag.
func refDecodeEntity(data []byte, e *Entity, d *decodeState) error {
	r := rawEntityPool.Get().(*rawEntity)
	defer func() { r.reset(); rawEntityPool.Put(r) }()
	if err := r.parse(data); err != nil {
		return err
	}
	return refDecodeRawEntity(r, e, d)
}

func refDecodeRawEntity(r *rawEntity, e *Entity, d *decodeState) error {
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
		v, err := rp.refEntityValue()
		if err != nil {
			return d.fail(name, "%v", err)
		}
		e.Properties[name] = v
	}
	return nil
}

// (frozen) entityValue converts a raw property to the Go value Entity uses for its
// EDM type.
func (rp *rawProp) refEntityValue() (any, error) {
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
		f, err := refParseDouble(rp)
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

// (frozen) ToEntity converts a struct value to its property bag, exactly as a
// Table[T] would store it (without client-side encryption), checking the
// same keys and limits.
func refEncodeEntity[T any](v T) (_ Entity, err error) {
	defer func() { err = WithOp("ToEntity", err) }()
	if e, ok := any(v).(Entity); ok {
		return e, nil
	}
	plan, err := structPlan(reflect.TypeFor[T]())
	if err != nil {
		return Entity{}, err
	}
	data, err := plan.refEncodeStruct(nil, reflect.ValueOf(&v).Elem(), &encodeState{})
	if err != nil {
		return Entity{}, err
	}
	var e Entity
	if err := refDecodeEntity(data, &e, &decodeState{op: "ToEntity"}); err != nil {
		return Entity{}, err
	}
	rv := reflect.ValueOf(&v).Elem()
	if plan.etag != nil {
		e.ETag = azcore.ETag(fieldByPath(rv, plan.etag).String())
	}
	if plan.ts != nil {
		e.Timestamp = fieldByPath(rv, plan.ts).Interface().(time.Time)
	}
	return e, nil
}

// (frozen) Decode converts a property bag to a struct value, as a Table[T] read
// would, without checking storage limits (nothing is stored): it is how a query over a table of mixed entity types (read as
// Table[Entity]) turns each row into its own Go type.
func refDecode[T any](e Entity) (_ T, err error) {
	defer func() { err = WithOp("FromEntity", err) }()
	var v T
	if out, ok := any(&v).(*Entity); ok {
		*out = e
		return v, nil
	}
	plan, err := structPlan(reflect.TypeFor[T]())
	if err != nil {
		return v, err
	}
	data, err := refEncodeEntityJSON(nil, &e, &encodeState{unchecked: true})
	if err != nil {
		return v, err
	}
	rv := reflect.ValueOf(&v).Elem()
	if err := plan.refDecodeStruct(data, rv, &decodeState{op: "FromEntity"}); err != nil {
		return v, err
	}
	if plan.etag != nil {
		fieldByPath(rv, plan.etag).SetString(string(e.ETag))
	}
	if plan.ts != nil {
		fieldByPath(rv, plan.ts).Set(reflect.ValueOf(e.Timestamp))
	}
	return v, nil
}
