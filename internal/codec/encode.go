package codec

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

	"github.com/tablekit/tablekit/internal/jsonw"
	"github.com/tablekit/tablekit/internal/keyrule"
	"github.com/tablekit/tablekit/internal/limits"
)

// Dates before 1601-01-01 cannot be stored in Edm.DateTime.
var minDateTime = time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)

// encodeState carries one encode's context and running totals.
type encodeState struct {
	table   string
	entity  string // "pk/rk" once known, for messages
	crypt   *cryptContext
	pk, rk  string
	size    int // Azure's entity size formula
	props   int
	scratch []byte
	// unchecked skips the storage limits, for conversions that store
	// nothing (Decode).
	unchecked bool
	// plaintext converts fields tagged encrypt like the others, for an
	// Entity that a table's Entities view encrypts when it writes it
	// (Table.ToEntity).
	plaintext bool
	// cosmos adds the limits of Azure Cosmos DB for Table where they are
	// stricter (a RowKey of at most 255 bytes, its reserved property
	// names).
	cosmos bool
}

func (s *encodeState) fail(prop, limit string, size int, detail string, sentinel error) error {
	return &ValidationError{Entity: s.describe(), Property: prop, Limit: limit, Size: size, Detail: detail, Err: sentinel}
}

// tooLarge is fail for a size limit: size counts unit.
func (s *encodeState) tooLarge(prop, limit string, size int, unit, detail string, sentinel error) error {
	return &ValidationError{Entity: s.describe(), Property: prop, Limit: limit, Size: size, Unit: unit, Detail: detail, Err: sentinel}
}

func (s *encodeState) describe() string {
	if s.entity == "" {
		s.entity = s.pk + "/" + s.rk
	}
	if s.table != "" {
		return s.table + ":" + s.entity
	}
	return s.entity
}

// checkKeys validates PartitionKey and RowKey and starts the size count.
func (s *encodeState) checkKeys(pk, rk string) error {
	s.pk, s.rk = pk, rk
	s.size = 4 + 2*utf16Len(pk) + 2*utf16Len(rk)
	if s.unchecked {
		return nil
	}
	if problem := keyrule.Problem(pk); problem != "" {
		return s.fail("PartitionKey", "<= 1 KiB, no / \\ # ? or control characters", 0, problem, ErrInvalidKey)
	}
	if problem := keyrule.Problem(rk); problem != "" {
		return s.fail("RowKey", "<= 1 KiB, no / \\ # ? or control characters", 0, problem, ErrInvalidKey)
	}
	if s.cosmos && len(rk) > limits.CosmosRowKeyBytes {
		return s.tooLarge("RowKey", "<= 255 bytes on Azure Cosmos DB for Table", len(rk), "bytes", "RowKey too long", ErrInvalidKey)
	}
	return nil
}

// addProperty accounts for one property in the entity limits.
func (s *encodeState) addProperty(name string, valueSize int) error {
	if s.cosmos && !s.unchecked && cosmosReservedName(name) {
		return s.fail(name, "not "+cosmosReservedNames+" on Azure Cosmos DB for Table", 0,
			"property name "+name+" is reserved by Azure Cosmos DB for Table, which would refuse the write", ErrInvalidInput)
	}
	s.props++
	if s.props > limits.CustomProperties && !s.unchecked {
		return s.tooLarge("", fmt.Sprintf("<= %d custom properties", limits.CustomProperties), s.props, "properties", "too many properties", ErrTooLarge)
	}
	s.size += 8 + 2*len(name) + valueSize
	return nil
}

func (s *encodeState) finish() error {
	if s.size > limits.EntityBytes && !s.unchecked {
		return s.tooLarge("", "<= 1 MiB per entity", s.size, "bytes", "entity too large", ErrTooLarge)
	}
	return nil
}

// encodeStruct appends the OData JSON of the struct v to dst.
func (p *typePlan) encodeStruct(dst []byte, v reflect.Value, s *encodeState) ([]byte, error) {
	pk, rk := p.keys(v)
	if err := s.checkKeys(pk, rk); err != nil {
		return dst, err
	}
	dst = appendKeys(dst, pk, rk)
	var err error
	for i := range p.fields {
		fp := &p.fields[i]
		fv := fieldByPath(v, fp.path)
		if dst, err = fp.encode(dst, fv, s); err != nil {
			return dst, err
		}
	}
	if err := s.finish(); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// toEntity converts the struct v to a property bag directly, giving what
// decoding encodeStruct's JSON would: each field is read by
// fieldPlan.value and checked by canonicalValue, as encodeStruct does
// through encode and appendProperty, so the checks, limits and errors are
// the same, and the values are the canonical ones that JSON reads back as.
// Nothing is encrypted (s.crypt must be nil): an encrypt field is refused
// as by a Table without TableOptions.Encryption. The ETag and Timestamp
// fields are the caller's (ToEntity).
func (p *typePlan) toEntity(v reflect.Value, s *encodeState) (Entity, error) {
	pk, rk := p.keys(v)
	if err := s.checkKeys(pk, rk); err != nil {
		return Entity{}, err
	}
	props := make(map[string]any, len(p.fields))
	for i := range p.fields {
		fp := &p.fields[i]
		val, present, err := fp.value(fieldByPath(v, fp.path), s)
		if err != nil {
			return Entity{}, err
		}
		if !present {
			continue
		}
		if fp.encrypt && !s.plaintext {
			// With no encryption configured, appendEncrypted refuses the
			// value before looking at it, with the error a Table gives.
			if _, err = s.appendEncrypted(nil, fp.name, fp.edm, val); err == nil {
				err = s.fail(fp.name, "", 0, "an encrypted property cannot be converted to an Entity", ErrInvalidInput)
			}
			return Entity{}, err
		}
		ev, size, present, err := s.canonicalValue(fp.name, fp.edm, val)
		if err != nil {
			return Entity{}, err
		}
		if !present {
			continue
		}
		if err := s.addProperty(fp.name, size); err != nil {
			return Entity{}, err
		}
		props[fp.name] = ev.entityValue()
	}
	if err := s.finish(); err != nil {
		return Entity{}, err
	}
	return Entity{PartitionKey: pk, RowKey: rk, Properties: props}, nil
}

// keys reads the PartitionKey and RowKey fields of the struct v.
func (p *typePlan) keys(v reflect.Value) (pk, rk string) {
	if p.pk != nil {
		pk = fieldByPath(v, p.pk).String()
	}
	if p.rk != nil {
		rk = fieldByPath(v, p.rk).String()
	}
	return pk, rk
}

func appendKeys(dst []byte, pk, rk string) []byte {
	dst = append(dst, `{"PartitionKey":`...)
	dst = jsonw.AppendString(dst, pk)
	dst = append(dst, `,"RowKey":`...)
	return jsonw.AppendString(dst, rk)
}

func fieldByPath(v reflect.Value, path []int) reflect.Value {
	if len(path) == 1 {
		return v.Field(path[0])
	}
	for _, i := range path {
		v = v.Field(i)
	}
	return v
}

// encode appends one field as a property, unless it is absent.
func (fp *fieldPlan) encode(dst []byte, fv reflect.Value, s *encodeState) ([]byte, error) {
	v, present, err := fp.value(fv, s)
	if err != nil || !present {
		return dst, err
	}
	return s.appendValue(dst, fp, v)
}

// value reads the field fv as the Go value its property is written from
// (for the field's EDM type, as canonicalValue and appendEncrypted take
// it). present is false when the field is absent: a nil pointer, slice or
// json value, an omitempty zero value, an empty GUID string.
func (fp *fieldPlan) value(fv reflect.Value, s *encodeState) (v any, present bool, err error) {
	if fp.ptr {
		if fv.IsNil() {
			return nil, false, nil
		}
		fv = fv.Elem()
	}
	if fp.kind == kindJSON {
		if fp.omitEmpty && fv.IsZero() {
			return nil, false, nil
		}
		if (fv.Kind() == reflect.Pointer || fv.Kind() == reflect.Interface || fv.Kind() == reflect.Map || fv.Kind() == reflect.Slice) && fv.IsNil() {
			return nil, false, nil
		}
		b, err := json.Marshal(fv.Interface())
		if err != nil {
			return nil, false, s.fail(fp.name, "", 0, "json tag: "+err.Error(), ErrInvalidInput)
		}
		return string(b), true, nil
	}
	if fp.omitEmpty && fv.IsZero() {
		return nil, false, nil
	}
	switch fp.kind {
	case kindString:
		return fv.String(), true, nil
	case kindGUIDString:
		if fv.Len() == 0 {
			return nil, false, nil // an empty GUID string is absent
		}
		return fv.String(), true, nil
	case kindBool:
		return fv.Bool(), true, nil
	case kindInt:
		return fv.Int(), true, nil
	case kindUint:
		u := fv.Uint()
		if u > math.MaxInt64 {
			return nil, false, s.fail(fp.name, "Edm.Int64 range", 0, fmt.Sprintf("value %d does not fit in a signed 64-bit integer", u), ErrInvalidInput)
		}
		return int64(u), true, nil
	case kindFloat:
		return fv.Float(), true, nil
	case kindTime:
		return fv.Interface(), true, nil // a time.Time: the kind is for that type only
	case kindBytes:
		if fv.IsNil() {
			return nil, false, nil
		}
		return fv.Bytes(), true, nil
	case kindGUIDArray:
		if fv.Type() == guidType {
			return fv.Interface(), true, nil
		}
		var g GUID
		reflect.Copy(reflect.ValueOf(&g).Elem(), fv)
		return g, true, nil
	case kindText:
		tm, ok := fv.Interface().(encoding.TextMarshaler)
		if !ok && fv.CanAddr() {
			tm, ok = fv.Addr().Interface().(encoding.TextMarshaler)
		}
		if !ok {
			return nil, false, s.fail(fp.name, "", 0, "value does not implement encoding.TextMarshaler", ErrInvalidInput)
		}
		b, err := tm.MarshalText()
		if err != nil {
			return nil, false, s.fail(fp.name, "", 0, "MarshalText: "+err.Error(), ErrInvalidInput)
		}
		return string(b), true, nil
	}
	return nil, false, s.fail(fp.name, "", 0, "unsupported field kind", ErrInvalidInput)
}

// appendValue converts a Go value to the field's EDM type and appends it.
func (s *encodeState) appendValue(dst []byte, fp *fieldPlan, v any) ([]byte, error) {
	if fp.encrypt {
		return s.appendEncrypted(dst, fp.name, fp.edm, v)
	}
	return s.appendProperty(dst, fp.name, fp.edm, v)
}

// appendProperty appends `,"name":value` (with its type annotation) for a
// value of a Go type the EDM type accepts, checking property limits.
func (s *encodeState) appendProperty(dst []byte, name string, edm edmType, v any) ([]byte, error) {
	ev, size, present, err := s.canonicalValue(name, edm, v)
	if err != nil || !present {
		return dst, err
	}
	dst = appendEdmValue(dst, name, &ev)
	return dst, s.addProperty(name, size)
}

// edmValue is a checked property value in canonical form: its EDM type and
// the Go value an Entity holds for it, unboxed.
type edmValue struct {
	edm edmType
	b   bool      // edmBoolean
	str string    // edmString
	num int64     // edmInt32, edmInt64
	f   float64   // edmDouble; a NaN is math.NaN()
	t   time.Time // edmDateTime: UTC, whole 100 ns, no monotonic reading
	g   GUID      // edmGUID
	bin []byte    // edmBinary: the caller's slice, not a copy
	// boxed is the value as given when it already was the canonical Go
	// value, so that entityValue need not box it again; nil otherwise.
	boxed any
}

// canonicalValue checks a value of a Go type the EDM type accepts (the
// type, UTF-8, the 64 KiB property limit unless s.unchecked, the Int32 and
// DateTime ranges, GUID syntax) and returns it in canonical form with its
// size in Azure's formula (see PropertySize). present is false for a value
// that is stored as absent: the zero time.Time.
//
// It is the one definition of what a property value may be: the JSON
// encoder (appendProperty) and the direct conversions between structs and
// Entity (typePlan.toEntity, typePlan.fromEntity) all go through it.
func (s *encodeState) canonicalValue(name string, edm edmType, v any) (ev edmValue, size int, present bool, err error) {
	ev.edm = edm
	switch edm {
	case edmString:
		str, ok := v.(string)
		if !ok {
			return ev, 0, false, s.typeMismatch(name, edm, v)
		}
		if !utf8.ValidString(str) {
			return ev, 0, false, s.fail(name, "valid UTF-8", 0, "string is not valid UTF-8", ErrInvalidInput)
		}
		n := utf16Len(str)
		if 2*n > limits.PropertyBytes && !s.unchecked {
			return ev, 0, false, s.tooLarge(name, "<= 64 KiB per property (32,768 UTF-16 characters)", 2*n, "bytes of UTF-16", "string too large", ErrTooLarge)
		}
		ev.str, ev.boxed = str, v
		return ev, 4 + 2*n, true, nil
	case edmBinary:
		b, ok := v.([]byte)
		if !ok {
			return ev, 0, false, s.typeMismatch(name, edm, v)
		}
		if len(b) > limits.PropertyBytes && !s.unchecked {
			return ev, 0, false, s.tooLarge(name, "<= 64 KiB per property", len(b), "bytes", "binary value too large", ErrTooLarge)
		}
		ev.bin = b // never boxed: an Entity gets its own copy
		return ev, 4 + len(b), true, nil
	case edmBoolean:
		b, ok := v.(bool)
		if !ok {
			return ev, 0, false, s.typeMismatch(name, edm, v)
		}
		ev.b, ev.boxed = b, v
		return ev, 1, true, nil
	case edmInt32:
		i, ok := asInt64(v)
		if !ok {
			return ev, 0, false, s.typeMismatch(name, edm, v)
		}
		if i < math.MinInt32 || i > math.MaxInt32 {
			return ev, 0, false, s.fail(name, "Edm.Int32 range", 0, fmt.Sprintf("value %d does not fit in Edm.Int32", i), ErrInvalidInput)
		}
		ev.num = i
		if _, ok := v.(int32); ok {
			ev.boxed = v
		}
		return ev, 4, true, nil
	case edmInt64:
		i, ok := asInt64(v)
		if !ok {
			return ev, 0, false, s.typeMismatch(name, edm, v)
		}
		ev.num = i
		if _, ok := v.(int64); ok {
			ev.boxed = v
		}
		return ev, 8, true, nil
	case edmDouble:
		f, ok := v.(float64)
		if !ok {
			return ev, 0, false, s.typeMismatch(name, edm, v)
		}
		if math.IsNaN(f) {
			f = math.NaN() // the NaN that "NaN" reads back as
		} else {
			ev.boxed = v
		}
		ev.f = f
		return ev, 8, true, nil
	case edmDateTime:
		t, ok := v.(time.Time)
		if !ok {
			return ev, 0, false, s.typeMismatch(name, edm, v)
		}
		if t.IsZero() {
			// The zero time.Time (year 1) is outside Edm.DateTime; it is
			// stored as absent and decodes back to the zero time.
			return ev, 0, false, nil
		}
		ut := t.UTC()
		if ut.Before(minDateTime) || ut.Year() > 9999 {
			return ev, 0, false, s.fail(name, "Edm.DateTime range 1601-01-01 to 9999-12-31 UTC", 0, fmt.Sprintf("time %s is outside the range", ut.Format(time.RFC3339)), ErrInvalidInput)
		}
		// Edm.DateTime keeps 100 ns: the value its text reads back as.
		ut = ut.Add(-time.Duration(ut.Nanosecond() % 100))
		if ut == t {
			ev.boxed = v
		}
		ev.t = ut
		return ev, 8, true, nil
	case edmGUID:
		switch x := v.(type) {
		case GUID:
			ev.g, ev.boxed = x, v
		case string:
			g, ok := parseGUIDBytes([]byte(x))
			if !ok {
				return ev, 0, false, s.fail(name, "", 0, fmt.Sprintf("%s is not a GUID", Quote(x)), ErrInvalidInput)
			}
			ev.g = g
		default:
			return ev, 0, false, s.typeMismatch(name, edm, v)
		}
		return ev, 16, true, nil
	}
	return ev, 0, false, s.typeMismatch(name, edm, v)
}

// entityValue returns the value as an Entity holds it (see Entity): a new
// copy for binary.
func (ev *edmValue) entityValue() any {
	if ev.boxed != nil {
		return ev.boxed
	}
	switch ev.edm {
	case edmString:
		return ev.str
	case edmBoolean:
		return ev.b
	case edmInt32:
		return int32(ev.num)
	case edmInt64:
		return ev.num
	case edmDouble:
		return ev.f
	case edmDateTime:
		return ev.t
	case edmGUID:
		return ev.g
	}
	b := make([]byte, len(ev.bin)) // non-nil when empty, as decoded JSON gives
	copy(b, ev.bin)
	return b
}

// token is the JSON kind of the value as appendEdmValue writes it.
func (ev *edmValue) token() tokenKind {
	switch ev.edm {
	case edmInt32:
		return tokNumber
	case edmBoolean:
		if ev.b {
			return tokTrue
		}
		return tokFalse
	case edmDouble:
		if !math.IsNaN(ev.f) && !math.IsInf(ev.f, 0) {
			return tokNumber
		}
	}
	return tokString
}

// appendText appends the value's text as its JSON holds it: the content of
// the string (unescaped) or the literal.
func (ev *edmValue) appendText(dst []byte) []byte {
	switch ev.edm {
	case edmString:
		return append(dst, ev.str...)
	case edmBinary:
		return base64.StdEncoding.AppendEncode(dst, ev.bin)
	case edmBoolean:
		return strconv.AppendBool(dst, ev.b)
	case edmInt32, edmInt64:
		return strconv.AppendInt(dst, ev.num, 10)
	case edmDouble:
		switch {
		case math.IsNaN(ev.f):
			return append(dst, "NaN"...)
		case math.IsInf(ev.f, 1):
			return append(dst, "Infinity"...)
		case math.IsInf(ev.f, -1):
			return append(dst, "-Infinity"...)
		}
		return strconv.AppendFloat(dst, ev.f, 'g', -1, 64)
	case edmDateTime:
		return appendDateTime(dst, ev.t)
	case edmGUID:
		return appendGUID(dst, ev.g)
	}
	return dst
}

// appendEdmValue appends `,"name":value` and the value's type annotation
// where the JSON kind does not imply its type.
func appendEdmValue(dst []byte, name string, ev *edmValue) []byte {
	dst = append(dst, ',')
	dst = jsonw.AppendString(dst, name)
	dst = append(dst, ':')
	switch ev.token() {
	case tokString:
		if ev.edm == edmString {
			return jsonw.AppendString(dst, ev.str)
		}
		dst = append(dst, '"')
		dst = ev.appendText(dst)
		return appendAnnotation(dst, name, ev.edm.String())
	case tokNumber:
		dst = ev.appendText(dst)
		if ev.edm == edmDouble {
			// Always annotated: the SDK re-encodes entity JSON through
			// map[string]any, which turns 1.0 into 1 (an Int32) otherwise.
			dst = append(dst, `,"`...)
			dst = append(dst, name...)
			dst = append(dst, `@odata.type":"Edm.Double"`...)
		}
		return dst
	}
	return ev.appendText(dst) // true, false
}

func (s *encodeState) typeMismatch(name string, edm edmType, v any) error {
	return s.fail(name, "", 0, fmt.Sprintf("a %T value cannot be stored as %s", v, edm), ErrInvalidInput)
}

// appendAnnotation closes a string value and appends its type annotation.
func appendAnnotation(dst []byte, name, edm string) []byte {
	dst = append(dst, `","`...)
	dst = append(dst, name...)
	dst = append(dst, `@odata.type":"`...)
	dst = append(dst, edm...)
	return append(dst, '"')
}

func asInt64(v any) (int64, bool) {
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

// appendDateTime appends t (UTC) as 2006-01-02T15:04:05.0000000Z.
func appendDateTime(dst []byte, t time.Time) []byte {
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	frac := t.Nanosecond() / 100
	dst = appendPadded(dst, y, 4)
	dst = append(dst, '-')
	dst = appendPadded(dst, int(mo), 2)
	dst = append(dst, '-')
	dst = appendPadded(dst, d, 2)
	dst = append(dst, 'T')
	dst = appendPadded(dst, h, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, mi, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, sec, 2)
	dst = append(dst, '.')
	dst = appendPadded(dst, frac, 7)
	return append(dst, 'Z')
}

func appendPadded(dst []byte, v, width int) []byte {
	var buf [8]byte
	for i := width - 1; i >= 0; i-- {
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, buf[:width]...)
}

// utf16Len is the length of s in UTF-16 code units, which is how the service
// measures strings.
func utf16Len(s string) int { return keyrule.Size(s) / 2 }

// encodeEntity appends the OData JSON of a property-bag entity to dst.
func encodeEntity(dst []byte, e *Entity, s *encodeState) ([]byte, error) {
	if err := s.checkKeys(e.PartitionKey, e.RowKey); err != nil {
		return dst, err
	}
	dst = appendKeys(dst, e.PartitionKey, e.RowKey)
	for name, v := range e.Properties {
		if v == nil {
			continue
		}
		edm, val, err := s.entityProperty(name, v)
		if err != nil {
			return dst, err
		}
		if s.crypt != nil && s.crypt.encrypts(name) {
			dst, err = s.appendEncrypted(dst, name, edm, val)
		} else {
			dst, err = s.appendProperty(dst, name, edm, val)
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

// entityProperty checks the name and Go type of an Entity property (not
// nil) and returns its EDM type and the value for canonicalValue.
func (s *encodeState) entityProperty(name string, v any) (edmType, any, error) {
	if err := validPropertyName(name); err != nil {
		return 0, nil, s.fail(name, "", 0, err.Error(), ErrInvalidInput)
	}
	edm, val, ok := edmOf(v)
	if !ok {
		return 0, nil, s.fail(name, "", 0, fmt.Sprintf("a %T value cannot be stored (use string, int32, int64, int, float64, bool, time.Time, GUID, [16]byte or []byte)", v), ErrInvalidInput)
	}
	return edm, val, nil
}

// edmOf maps an Entity property value to its EDM type and canonical value
// (v itself, not boxed again, unless it is an int or a [16]byte type).
func edmOf(v any) (edmType, any, bool) {
	switch x := v.(type) {
	case string:
		return edmString, v, true
	case int32:
		return edmInt32, v, true
	case int64:
		return edmInt64, v, true
	case int:
		return edmInt64, int64(x), true
	case float64:
		return edmDouble, v, true
	case bool:
		return edmBoolean, v, true
	case time.Time:
		return edmDateTime, v, true
	case GUID:
		return edmGUID, v, true
	case []byte:
		return edmBinary, v, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Array && rv.Len() == 16 && rv.Type().Elem().Kind() == reflect.Uint8 {
		var g GUID
		reflect.Copy(reflect.ValueOf(&g).Elem(), rv)
		return edmGUID, g, true
	}
	return 0, nil, false
}

// cosmosReservedNames are the property names Azure Cosmos DB for Table
// refuses ("Frequently asked questions about Azure Cosmos DB for Table",
// learn.microsoft.com/azure/cosmos-db/table/faq; package azurite's front
// refuses them too, with Cosmos DB's 400 PropertyNameInvalid), in the case
// given there: other cases are other names.
const cosmosReservedNames = "Id, rid, etag or ResourceId"

// cosmosReservedName reports whether name is one of cosmosReservedNames.
func cosmosReservedName(name string) bool {
	switch name {
	case "Id", "rid", "etag", "ResourceId":
		return true
	}
	return false
}
