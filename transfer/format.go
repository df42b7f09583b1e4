package transfer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/jsonw"
)

// formatVersion is the version of the export format this package writes
// and the only one it reads.
const formatVersion = 1

// The values of the "tablekit" member that mark the header and trailer
// lines of an export.
const (
	headerKind  = "export"
	trailerKind = "end"
)

// Header is the first line of an export.
type Header struct {
	// Version is the format version (1, the only one this package reads).
	Version int
	// Table is the name of the table exported ("" if unknown).
	Table string
	// Filter is the OData text of the filter the export applied, with the
	// PartitionKey range of the export ("" for the whole table).
	Filter string
	// Created is when the export started.
	Created time.Time
}

// trailer is the last line of a complete export.
type trailer struct {
	// Entities is the number of entity lines in the export.
	Entities int64
}

type headerJSON struct {
	Kind    string `json:"tablekit"`
	Version int    `json:"version"`
	Table   string `json:"table,omitempty"`
	Filter  string `json:"filter,omitempty"`
	Created string `json:"created,omitempty"`
}

// appendHeader appends the header line (with its newline) to dst.
func appendHeader(dst []byte, h Header) []byte {
	b, _ := json.Marshal(headerJSON{
		Kind: headerKind, Version: h.Version, Table: h.Table, Filter: h.Filter,
		Created: h.Created.UTC().Format(time.RFC3339Nano),
	})
	dst = append(dst, b...)
	return append(dst, '\n')
}

// appendTrailer appends the trailer line (with its newline) to dst.
func appendTrailer(dst []byte, t trailer) []byte {
	dst = append(dst, `{"tablekit":"end","entities":`...)
	dst = strconv.AppendInt(dst, t.Entities, 10)
	return append(dst, "}\n"...)
}

// AppendEntity appends e as one line of the export format, with its
// newline, to dst. Properties are written in name order; a nil value is
// left out (absent). It fails, naming the property, on a value of a Go type
// that [tablekit.Entity] does not allow, and on a string or key that is not
// valid UTF-8.
func AppendEntity(dst []byte, e *tablekit.Entity) ([]byte, error) {
	if e == nil {
		return dst, validation("transfer.AppendEntity", "nil *tablekit.Entity")
	}
	if !utf8.ValidString(e.PartitionKey) || !utf8.ValidString(e.RowKey) {
		return dst, fmt.Errorf("transfer: AppendEntity: entity %q/%q: keys must be valid UTF-8: %w", e.PartitionKey, e.RowKey, tablekit.ErrInvalidKey)
	}
	dst = append(dst, `{"PartitionKey":`...)
	dst = jsonw.AppendString(dst, e.PartitionKey)
	dst = append(dst, `,"RowKey":`...)
	dst = jsonw.AppendString(dst, e.RowKey)
	if !e.Timestamp.IsZero() {
		dst = append(dst, `,"Timestamp":"`...)
		dst = appendDateTime(dst, e.Timestamp)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"Properties":{`...)
	names := make([]string, 0, len(e.Properties))
	for n, v := range e.Properties {
		if v != nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for i, n := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		if !utf8.ValidString(n) {
			return dst, fmt.Errorf("transfer: AppendEntity: entity %q/%q: property name %q is not valid UTF-8: %w", e.PartitionKey, e.RowKey, n, tablekit.ErrInvalidInput)
		}
		dst = jsonw.AppendString(dst, n)
		dst = append(dst, `:["`...)
		var err error
		dst, err = appendValue(dst, e.Properties[n])
		if err != nil {
			return dst, fmt.Errorf("transfer: AppendEntity: entity %q/%q property %q: %w", e.PartitionKey, e.RowKey, n, err)
		}
		dst = append(dst, ']')
	}
	return append(dst, "}}\n"...), nil
}

// appendValue appends `Edm.Type",value` for one property value.
func appendValue(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		if !utf8.ValidString(x) {
			return dst, fmt.Errorf("string is not valid UTF-8: %w", tablekit.ErrInvalidInput)
		}
		dst = append(dst, `Edm.String",`...)
		return jsonw.AppendString(dst, x), nil
	case int32:
		dst = append(dst, `Edm.Int32",`...)
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		dst = append(dst, `Edm.Int64","`...)
		return append(strconv.AppendInt(dst, x, 10), '"'), nil
	case int:
		dst = append(dst, `Edm.Int64","`...)
		return append(strconv.AppendInt(dst, int64(x), 10), '"'), nil
	case float64:
		dst = append(dst, `Edm.Double","`...)
		return append(appendDouble(dst, x), '"'), nil
	case bool:
		dst = append(dst, `Edm.Boolean",`...)
		return strconv.AppendBool(dst, x), nil
	case time.Time:
		dst = append(dst, `Edm.DateTime","`...)
		return append(appendDateTime(dst, x), '"'), nil
	case tablekit.GUID:
		dst = append(dst, `Edm.Guid","`...)
		return append(append(dst, x.String()...), '"'), nil
	case []byte:
		dst = append(dst, `Edm.Binary","`...)
		return append(base64.StdEncoding.AppendEncode(dst, x), '"'), nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Array && rv.Len() == 16 && rv.Type().Elem().Kind() == reflect.Uint8 {
		var g tablekit.GUID
		reflect.Copy(reflect.ValueOf(&g).Elem(), rv)
		dst = append(dst, `Edm.Guid","`...)
		return append(append(dst, g.String()...), '"'), nil
	}
	return dst, fmt.Errorf("a %T value has no EDM type: %w", v, tablekit.ErrInvalidInput)
}

// appendDouble writes NaN, Infinity, -Infinity, -0 or the shortest decimal
// that parses back to the same float64.
func appendDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case f == 0 && math.Signbit(f):
		return append(dst, "-0"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// appendDateTime appends t in UTC as 2006-01-02T15:04:05.1234567Z: always
// seven fractional digits (100 ns, the precision of Edm.DateTime).
func appendDateTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	dst = t.AppendFormat(dst, "2006-01-02T15:04:05")
	dst = append(dst, '.')
	frac := t.Nanosecond() / 100
	var buf [7]byte
	for i := 6; i >= 0; i-- {
		buf[i] = byte('0' + frac%10)
		frac /= 10
	}
	dst = append(dst, buf[:]...)
	return append(dst, 'Z')
}

// lineJSON is any line of an export: the header and trailer have the
// "tablekit" member, entity lines have the keys.
type lineJSON struct {
	Kind         *string                      `json:"tablekit"`
	Version      int                          `json:"version"`
	Table        string                       `json:"table"`
	Filter       string                       `json:"filter"`
	Created      string                       `json:"created"`
	Entities     *int64                       `json:"entities"`
	PartitionKey *string                      `json:"PartitionKey"`
	RowKey       *string                      `json:"RowKey"`
	Timestamp    string                       `json:"Timestamp"`
	Properties   map[string][]json.RawMessage `json:"Properties"`
}

// lineKind says what a parsed line is.
type lineKind uint8

const (
	lineEntity lineKind = iota
	lineHeader
	lineTrailer
)

// parseLine parses one line (without its newline).
func parseLine(line []byte) (lineKind, *lineJSON, error) {
	var l lineJSON
	if err := json.Unmarshal(line, &l); err != nil {
		return 0, nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if l.Kind != nil {
		switch *l.Kind {
		case headerKind:
			return lineHeader, &l, nil
		case trailerKind:
			if l.Entities == nil {
				return 0, nil, fmt.Errorf("trailer without an entity count")
			}
			return lineTrailer, &l, nil
		}
		return 0, nil, fmt.Errorf("unknown line kind %q", *l.Kind)
	}
	if l.PartitionKey == nil || l.RowKey == nil {
		return 0, nil, fmt.Errorf("entity line without PartitionKey and RowKey")
	}
	return lineEntity, &l, nil
}

func (l *lineJSON) header() (Header, error) {
	h := Header{Version: l.Version, Table: l.Table, Filter: l.Filter}
	if l.Version != formatVersion {
		return h, fmt.Errorf("format version %d is not supported (this tablekit reads version %d)", l.Version, formatVersion)
	}
	if l.Created != "" {
		t, err := time.Parse(time.RFC3339Nano, l.Created)
		if err != nil {
			return h, fmt.Errorf("header: created: %v", err)
		}
		h.Created = t
	}
	return h, nil
}

// entity converts an entity line to an Entity with exactly typed values.
func (l *lineJSON) entity() (tablekit.Entity, error) {
	e := tablekit.Entity{PartitionKey: *l.PartitionKey, RowKey: *l.RowKey}
	if l.Timestamp != "" {
		t, err := time.Parse(time.RFC3339Nano, l.Timestamp)
		if err != nil {
			return e, fmt.Errorf("bad Timestamp: %v", err)
		}
		e.Timestamp = t.UTC()
	}
	e.Properties = make(map[string]any, len(l.Properties))
	for name, pair := range l.Properties {
		if len(pair) != 2 {
			return e, fmt.Errorf("property %q: want [\"Edm.Type\", value], got %d elements", name, len(pair))
		}
		var typ string
		if err := json.Unmarshal(pair[0], &typ); err != nil {
			return e, fmt.Errorf("property %q: the type is not a string", name)
		}
		v, err := parseValue(typ, pair[1])
		if err != nil {
			return e, fmt.Errorf("property %q (%s): %v", name, typ, err)
		}
		e.Properties[name] = v
	}
	return e, nil
}

// parseValue converts the JSON value of a property of type typ.
func parseValue(typ string, raw json.RawMessage) (any, error) {
	str := func() (string, error) {
		var s string
		if len(raw) == 0 || raw[0] != '"' {
			return "", fmt.Errorf("want a JSON string, got %s", short(raw))
		}
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	switch typ {
	case "Edm.String":
		return str()
	case "Edm.Int32":
		i, err := strconv.ParseInt(string(raw), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("want a JSON integer in the Int32 range, got %s", short(raw))
		}
		return int32(i), nil
	case "Edm.Int64":
		s, err := str()
		if err != nil {
			return nil, err
		}
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want a decimal Int64 in a string, got %s", short(raw))
		}
		return i, nil
	case "Edm.Double":
		s, err := str()
		if err != nil {
			return nil, err
		}
		switch s {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("want a decimal number, NaN, Infinity or -Infinity in a string, got %s", short(raw))
		}
		return f, nil
	case "Edm.Boolean":
		switch string(raw) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("want true or false, got %s", short(raw))
	case "Edm.DateTime":
		s, err := str()
		if err != nil {
			return nil, err
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("want an RFC 3339 date-time, got %s", short(raw))
		}
		return t.UTC(), nil
	case "Edm.Guid":
		s, err := str()
		if err != nil {
			return nil, err
		}
		return codec.ParseGUID(s)
	case "Edm.Binary":
		s, err := str()
		if err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.AppendDecode(make([]byte, 0, base64.StdEncoding.DecodedLen(len(s))), []byte(s))
		if err != nil {
			return nil, fmt.Errorf("want standard base64: %v", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("unknown type (want Edm.String, Edm.Int32, Edm.Int64, Edm.Double, Edm.Boolean, Edm.DateTime, Edm.Guid or Edm.Binary)")
}

// short shows at most 40 bytes of a JSON value in a message.
func short(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 40 {
		return string(raw[:40]) + "…"
	}
	if len(raw) == 0 {
		return "nothing"
	}
	return string(raw)
}
