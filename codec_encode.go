package tablekit

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

	"github.com/tablekit/tablekit/keys"
)

// Storage limits, checked before anything is sent.
const (
	// MaxCustomProperties is the most custom properties an entity can have
	// (255 including PartitionKey, RowKey and Timestamp).
	MaxCustomProperties = 252
	// MaxPropertyBytes is the largest Edm.String or Edm.Binary value:
	// 64 KiB (a string counts 2 bytes per UTF-16 code unit).
	MaxPropertyBytes = 64 * 1024
	// MaxEntityBytes is the largest entity, measured as Azure does.
	MaxEntityBytes = 1024 * 1024

	maxCustomProperties = MaxCustomProperties
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
	// cosmos adds the limits of Azure Cosmos DB for Table where they are
	// stricter (a RowKey of at most 255 bytes).
	cosmos bool
}

func (s *encodeState) fail(prop, limit string, size int, detail string, sentinel error) error {
	return &ValidationError{Entity: s.describe(), Property: prop, Limit: limit, Size: size, Detail: detail, Err: sentinel}
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
	if err := keys.Validate(pk); err != nil {
		return s.fail("PartitionKey", "<= 1 KiB, no / \\ # ? or control characters", 0, err.Error(), ErrInvalidKey)
	}
	if err := keys.Validate(rk); err != nil {
		return s.fail("RowKey", "<= 1 KiB, no / \\ # ? or control characters", 0, err.Error(), ErrInvalidKey)
	}
	if s.cosmos && len(rk) > MaxCosmosRowKeyBytes {
		return s.fail("RowKey", "<= 255 bytes on Azure Cosmos DB for Table", len(rk), "RowKey too long", ErrInvalidKey)
	}
	return nil
}

// addProperty accounts for one property in the entity limits.
func (s *encodeState) addProperty(name string, valueSize int) error {
	s.props++
	if s.props > MaxCustomProperties && !s.unchecked {
		return s.fail("", fmt.Sprintf("<= %d custom properties", MaxCustomProperties), s.props, "too many properties", ErrTooLarge)
	}
	s.size += 8 + 2*len(name) + valueSize
	return nil
}

func (s *encodeState) finish() error {
	if s.size > MaxEntityBytes && !s.unchecked {
		return s.fail("", "<= 1 MiB per entity", s.size, "entity too large", ErrTooLarge)
	}
	return nil
}

// encodeStruct appends the OData JSON of the struct v to dst.
func (p *typePlan) encodeStruct(dst []byte, v reflect.Value, s *encodeState) ([]byte, error) {
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
		if dst, err = fp.encode(dst, fv, s); err != nil {
			return dst, err
		}
	}
	if err := s.finish(); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

func appendKeys(dst []byte, pk, rk string) []byte {
	dst = append(dst, `{"PartitionKey":`...)
	dst = appendJSONString(dst, pk)
	dst = append(dst, `,"RowKey":`...)
	return appendJSONString(dst, rk)
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
		return s.appendValue(dst, fp, string(b))
	}
	if fp.omitEmpty && fv.IsZero() {
		return dst, nil
	}
	switch fp.kind {
	case kindString:
		return s.appendValue(dst, fp, fv.String())
	case kindGUIDString:
		if fv.Len() == 0 {
			return dst, nil // an empty GUID string is absent
		}
		return s.appendValue(dst, fp, fv.String())
	case kindBool:
		return s.appendValue(dst, fp, fv.Bool())
	case kindInt:
		return s.appendValue(dst, fp, fv.Int())
	case kindUint:
		u := fv.Uint()
		if u > math.MaxInt64 {
			return dst, s.fail(fp.name, "Edm.Int64 range", 0, fmt.Sprintf("value %d does not fit in a signed 64-bit integer", u), ErrInvalidInput)
		}
		return s.appendValue(dst, fp, int64(u))
	case kindFloat:
		return s.appendValue(dst, fp, fv.Float())
	case kindTime:
		return s.appendValue(dst, fp, fv.Interface().(time.Time))
	case kindBytes:
		if fv.IsNil() {
			return dst, nil
		}
		return s.appendValue(dst, fp, fv.Bytes())
	case kindGUIDArray:
		var g GUID
		reflect.Copy(reflect.ValueOf(&g).Elem(), fv)
		return s.appendValue(dst, fp, g)
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
		return s.appendValue(dst, fp, string(b))
	}
	return dst, s.fail(fp.name, "", 0, "unsupported field kind", ErrInvalidInput)
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
func (s *encodeState) appendProperty(dst []byte, name string, edm EdmType, v any) ([]byte, error) {
	mark := len(dst)
	dst = append(dst, ',')
	dst = appendJSONString(dst, name)
	dst = append(dst, ':')
	var valueSize int
	switch edm {
	case EdmString:
		str, ok := v.(string)
		if !ok {
			return dst[:mark], s.typeMismatch(name, edm, v)
		}
		if !utf8.ValidString(str) {
			return dst[:mark], s.fail(name, "valid UTF-8", 0, "string is not valid UTF-8", ErrInvalidInput)
		}
		n := utf16Len(str)
		if 2*n > MaxPropertyBytes && !s.unchecked {
			return dst[:mark], s.fail(name, "<= 64 KiB per property (32,768 UTF-16 characters)", 2*n, "string too large", ErrTooLarge)
		}
		valueSize = 4 + 2*n
		dst = appendJSONString(dst, str)
	case EdmBinary:
		b, ok := v.([]byte)
		if !ok {
			return dst[:mark], s.typeMismatch(name, edm, v)
		}
		if len(b) > MaxPropertyBytes && !s.unchecked {
			return dst[:mark], s.fail(name, "<= 64 KiB per property", len(b), "binary value too large", ErrTooLarge)
		}
		valueSize = 4 + len(b)
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, b)
		dst = append(dst, `","`...)
		dst = append(dst, name...)
		dst = append(dst, `@odata.type":"Edm.Binary"`...)
	case EdmBoolean:
		b, ok := v.(bool)
		if !ok {
			return dst[:mark], s.typeMismatch(name, edm, v)
		}
		valueSize = 1
		dst = strconv.AppendBool(dst, b)
	case EdmInt32:
		i, ok := asInt64(v)
		if !ok {
			return dst[:mark], s.typeMismatch(name, edm, v)
		}
		if i < math.MinInt32 || i > math.MaxInt32 {
			return dst[:mark], s.fail(name, "Edm.Int32 range", 0, fmt.Sprintf("value %d does not fit in Edm.Int32", i), ErrInvalidInput)
		}
		valueSize = 4
		dst = strconv.AppendInt(dst, i, 10)
	case EdmInt64:
		i, ok := asInt64(v)
		if !ok {
			return dst[:mark], s.typeMismatch(name, edm, v)
		}
		valueSize = 8
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, i, 10)
		dst = appendAnnotation(dst, name, "Edm.Int64")
	case EdmDouble:
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
	case EdmDateTime:
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
	case EdmGUID:
		var g GUID
		switch x := v.(type) {
		case GUID:
			g = x
		case string:
			var ok bool
			if g, ok = parseGUIDBytes([]byte(x)); !ok {
				return dst[:mark], s.fail(name, "", 0, fmt.Sprintf("%s is not a GUID", quoteForError(x)), ErrInvalidInput)
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

func (s *encodeState) typeMismatch(name string, edm EdmType, v any) error {
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

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. s must be valid UTF-8
// (callers check; invalid bytes are replaced by U+FFFD as encoding/json does).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// utf16Len is the length of s in UTF-16 code units, which is how the service
// measures strings.
func utf16Len(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x80 || c >= 0xC0 { // count lead bytes and ASCII
			n++
			if c >= 0xF0 { // 4-byte sequence: a surrogate pair
				n++
			}
		}
	}
	return n
}

// encodeEntity appends the OData JSON of a property-bag entity to dst.
func encodeEntity(dst []byte, e *Entity, s *encodeState) ([]byte, error) {
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
		edm, val, ok := edmOf(v)
		if !ok {
			return dst, s.fail(name, "", 0, fmt.Sprintf("a %T value cannot be stored (use string, int32, int64, int, float64, bool, time.Time, GUID, [16]byte or []byte)", v), ErrInvalidInput)
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

// edmOf maps an Entity property value to its EDM type and canonical value.
func edmOf(v any) (EdmType, any, bool) {
	switch x := v.(type) {
	case string:
		return EdmString, x, true
	case int32:
		return EdmInt32, x, true
	case int64:
		return EdmInt64, x, true
	case int:
		return EdmInt64, int64(x), true
	case float64:
		return EdmDouble, x, true
	case bool:
		return EdmBoolean, x, true
	case time.Time:
		return EdmDateTime, x, true
	case GUID:
		return EdmGUID, x, true
	case []byte:
		return EdmBinary, x, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Array && rv.Len() == 16 && rv.Type().Elem().Kind() == reflect.Uint8 {
		var g GUID
		reflect.Copy(reflect.ValueOf(&g).Elem(), rv)
		return EdmGUID, g, true
	}
	return 0, nil, false
}
