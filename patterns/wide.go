package patterns

import (
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/tablekit/tablekit/internal/limits"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
)

// The wide entities pattern ("Use multiple physical entities to store
// logical entities with more than 252 properties"): one logical entity is
// split over several physical entities of one partition whose RowKeys are
// the logical RowKey plus a part number, written together in one entity
// group transaction and read back together with one range query.

// maxWideParts is the most physical entities one logical entity may span:
// what one entity group transaction can write, so that every change of a
// logical entity is atomic.
const maxWideParts = limits.TransactionActions

// widePartWidth is the width of the part number in a physical RowKey.
const widePartWidth = 3

// widePartKey returns the RowKey of part number part (0-based) of the
// logical entity with RowKey rk: the compound key (rk, part in 3 digits),
// e.g. "meter17!000". The parts of one logical entity are exactly the
// RowKeys in keys.TupleRange(rk).
func widePartKey(rk string, part int) (string, error) {
	if part < 0 || part >= maxWideParts {
		return "", &tablekit.ValidationError{Entity: rk, Limit: fmt.Sprintf("0 <= part < %d", maxWideParts), Size: part, Detail: "part number out of range", Err: tablekit.ErrInvalidInput}
	}
	p, err := keys.UintN(uint64(part), widePartWidth)
	if err != nil {
		return "", err
	}
	k, err := keys.Compound(rk, p)
	if err != nil {
		return "", &tablekit.ValidationError{Entity: rk, Property: "RowKey", Detail: err.Error(), Err: tablekit.ErrInvalidKey}
	}
	return k, nil
}

// maxPartProperties is the most properties of the logical entity one
// physical entity holds: the service's 252 custom properties less the two
// Wide keeps for its own bookkeeping.
const maxPartProperties = limits.CustomProperties - 2

// The properties a Wide keeps in the physical entities for its consistency
// protocol (see the package doc); a logical entity cannot have properties
// of these names.
const (
	// wideStampProperty holds, in every part, the id of the write that
	// last wrote the part; in part 0 it is the version of the logical
	// entity.
	wideStampProperty = "_wide"
	// wideManifestProperty holds, in part 0, every other part of the
	// logical entity with its stamp.
	wideManifestProperty = "_wideParts"
)

// WideOptions configures a [Wide]. A nil *WideOptions means defaults.
type WideOptions struct {
	// PropertiesPerPart is the most properties of the logical entity one
	// physical entity holds: 1 to 250 (the default: the service's 252
	// less Wide's two). A smaller value leaves room to add properties to
	// a part later without moving others.
	PropertiesPerPart int
}

// Wide stores logical entities of any width (more than 252 properties, or
// more than 1 MiB) as up to 100 physical entities ("parts") of one
// partition: every write is one entity group transaction that sends part 0
// and the parts whose properties change, and every read is one range
// query, checked to be one writer's complete write (the package doc,
// "Wide entities", says how and what each verb costs).
//
// T is [tablekit.Entity], or a struct as for [tablekit.Table] that may
// have one map field tagged `wide:"Prefix"` (and `table:"-"`), whose
// entries are stored as properties named Prefix+key:
//
//	type Year struct {
//		Meter string           `table:",pk"`
//		Year  string           `table:",rk"`
//		Days  map[string]int64 `table:"-" wide:"D"` // D001 ... D366
//		ETag  azcore.ETag      `table:",etag"`
//	}
//
// Its verbs are tablekit.Table's (a Wide is a [tablekit.Store]), and Merge.
// The version of a logical entity is part 0's ETag: Get puts it in T's etag
// field, every write returns the new one, and Update and Delete take it. A
// conflict retry follows the Table's TableOptions.Retry. The properties
// "_wide" and "_wideParts" are Wide's. A Wide is safe for concurrent use.
type Wide[T any] struct {
	table    *tablekit.Table[tablekit.Entity]
	typed    *tablekit.Table[T] // converts T <-> Entity in plaintext (ToEntity, FromEntity)
	perPart  int
	retry    tablekit.RetryPolicy
	isEntity bool
	field    *wideField
	keyed    bool   // made by WithKey: every write carries key
	key      string // the idempotency key of a WithKey copy
}

// wideField describes the `wide` map field of a struct T.
type wideField struct {
	index  int
	name   string
	prefix string
	typ    reflect.Type // the map type
	elem   reflect.Type
}

// NewWide returns a Wide that stores values of T in table, through its
// property-bag view (table.AsEntities()): the physical entities keep
// table's client-side encryption, and its Account's settings. It fails
// when T is neither tablekit.Entity nor a struct table can store, or its
// wide map field is not as Wide's doc says.
func NewWide[T any](table *tablekit.Table[T], opts *WideOptions) (*Wide[T], error) {
	const op = "patterns.NewWide"
	if table == nil {
		return nil, invalid(op, "nil table")
	}
	w := &Wide[T]{table: table.AsEntities(), typed: table, perPart: maxPartProperties, retry: table.Retry()}
	if opts != nil {
		if opts.PropertiesPerPart < 0 || opts.PropertiesPerPart > maxPartProperties {
			return nil, &tablekit.ValidationError{Op: op, Property: "PropertiesPerPart", Limit: fmt.Sprintf("1–%d", maxPartProperties), Size: opts.PropertiesPerPart, Detail: "out of range", Err: tablekit.ErrInvalidInput}
		}
		if opts.PropertiesPerPart > 0 {
			w.perPart = opts.PropertiesPerPart
		}
	}
	typ := reflect.TypeFor[T]()
	if typ == reflect.TypeFor[tablekit.Entity]() {
		w.isEntity = true
		return w, nil
	}
	var zero T
	if _, err := table.ToEntity(zero); err != nil {
		return nil, withOp(op, err)
	}
	f, err := findWideField(typ)
	if err != nil {
		return nil, withOp(op, err)
	}
	w.field = f
	return w, nil
}

// usable refuses a Wide its constructor did not make.
func (w *Wide[T]) usable(op string) error {
	if w == nil || w.table == nil {
		return unusable(op, "NewWide")
	}
	return nil
}

// findWideField finds the map field tagged `wide`, if any, and checks it.
func findWideField(typ reflect.Type) (*wideField, error) {
	var found *wideField
	for i := range typ.NumField() {
		sf := typ.Field(i)
		prefix, ok := sf.Tag.Lookup("wide")
		if !ok {
			continue
		}
		bad := func(format string, args ...any) error {
			return &tablekit.ValidationError{Property: sf.Name, Detail: "type " + typ.String() + ": wide field: " + fmt.Sprintf(format, args...), Err: tablekit.ErrInvalidInput}
		}
		if found != nil {
			return nil, bad("only one field may be tagged wide (%s is too)", found.name)
		}
		if !sf.IsExported() {
			return nil, bad("the field must be exported")
		}
		if sf.Tag.Get("table") != "-" {
			return nil, bad("tag the field `table:\"-\"` too, so that the table codec leaves it to Wide")
		}
		if prefix == "" || !(prefix[0] == '_' || unicode.IsLetter(rune(prefix[0]))) {
			return nil, bad("the prefix %q must start with a letter or _ (property names are identifiers)", prefix)
		}
		if sf.Type.Kind() != reflect.Map || sf.Type.Key().Kind() != reflect.String {
			return nil, bad("the field must be a map with string keys, not %s", sf.Type)
		}
		if wideValueKind(sf.Type.Elem()) == "" {
			return nil, bad("map values of type %s cannot be stored (use a string, bool, int, int8–int64, float64, time.Time, []byte or [16]byte kind)", sf.Type.Elem())
		}
		found = &wideField{index: i, name: sf.Name, prefix: prefix, typ: sf.Type, elem: sf.Type.Elem()}
	}
	return found, nil
}

// wideValueKind classifies a map value type: "" when unsupported.
func wideValueKind(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[time.Time]():
		return "time"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return "bytes"
	case t.Kind() == reflect.Array && t.Len() == 16 && t.Elem().Kind() == reflect.Uint8:
		return "guid"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int64:
		return "int64"
	case reflect.Int8, reflect.Int16, reflect.Int32:
		return "int32"
	case reflect.Float64:
		return "float64"
	}
	return ""
}

// encode turns a logical value into its keys and properties.
func (w *Wide[T]) encode(v T) (pk, rk string, props map[string]any, err error) {
	if w.isEntity {
		e := any(v).(tablekit.Entity)
		props = make(map[string]any, len(e.Properties))
		for name, val := range e.Properties {
			if val != nil {
				props[name] = normalizeValue(val)
			}
		}
		return e.PartitionKey, e.RowKey, props, nil
	}
	e, err := w.typed.ToEntity(v)
	if err != nil {
		return "", "", nil, err
	}
	props = e.Properties
	if props == nil {
		props = make(map[string]any)
	}
	if w.field == nil {
		return e.PartitionKey, e.RowKey, props, nil
	}
	for name := range props {
		if strings.HasPrefix(name, w.field.prefix) {
			return "", "", nil, &tablekit.ValidationError{Entity: e.PartitionKey + "/" + e.RowKey, Property: name,
				Detail: fmt.Sprintf("the property name starts with the prefix %q of the wide map %s; choose a prefix no other property starts with", w.field.prefix, w.field.name), Err: tablekit.ErrInvalidInput}
		}
	}
	m := reflect.ValueOf(&v).Elem().Field(w.field.index)
	iter := m.MapRange()
	for iter.Next() {
		name := w.field.prefix + iter.Key().String()
		props[name] = storedValue(iter.Value())
	}
	return e.PartitionKey, e.RowKey, props, nil
}

// storedValue converts a wide map value to the property value it is stored as.
func storedValue(rv reflect.Value) any {
	switch wideValueKind(rv.Type()) {
	case "time":
		return rv.Interface().(time.Time)
	case "bytes":
		return rv.Bytes()
	case "guid":
		var g tablekit.GUID
		reflect.Copy(reflect.ValueOf(&g).Elem(), rv)
		return g
	case "string":
		return rv.String()
	case "bool":
		return rv.Bool()
	case "int64":
		return rv.Int()
	case "int32":
		return int32(rv.Int())
	}
	return rv.Float()
}

// decode turns properties read back into a logical value whose version
// (its etag field, if T has one) is etag.
func (w *Wide[T]) decode(pk, rk string, ts time.Time, etag azcore.ETag, props map[string]any) (T, error) {
	var zero T
	if w.isEntity {
		e := tablekit.Entity{PartitionKey: pk, RowKey: rk, Timestamp: ts, ETag: etag, Properties: props}
		return any(e).(T), nil
	}
	plain := tablekit.Entity{PartitionKey: pk, RowKey: rk, Timestamp: ts, ETag: etag, Properties: props}
	var entries map[string]any
	if w.field != nil {
		plain.Properties = make(map[string]any, len(props))
		entries = make(map[string]any)
		for name, val := range props {
			if key, ok := strings.CutPrefix(name, w.field.prefix); ok {
				entries[key] = val
			} else {
				plain.Properties[name] = val
			}
		}
	}
	v, err := w.typed.FromEntity(plain)
	if err != nil {
		return zero, err
	}
	if w.field == nil {
		return v, nil
	}
	m := reflect.MakeMapWithSize(w.field.typ, len(entries))
	for key, val := range entries {
		ev, err := fromStored(w.field.elem, val)
		if err != nil {
			return zero, &tablekit.DecodeError{Entity: pk + "/" + rk, Property: w.field.prefix + key, Detail: err.Error()}
		}
		m.SetMapIndex(reflect.ValueOf(key).Convert(w.field.typ.Key()), ev)
	}
	reflect.ValueOf(&v).Elem().Field(w.field.index).Set(m)
	return v, nil
}

// fromStored converts a stored property value to a wide map value of type t.
func fromStored(t reflect.Type, val any) (reflect.Value, error) {
	out := reflect.New(t).Elem()
	mismatch := func() (reflect.Value, error) {
		return out, fmt.Errorf("a stored %T value does not fit in a map value of type %s", val, t)
	}
	switch wideValueKind(t) {
	case "time":
		x, ok := val.(time.Time)
		if !ok {
			return mismatch()
		}
		out.Set(reflect.ValueOf(x))
	case "bytes":
		x, ok := val.([]byte)
		if !ok {
			return mismatch()
		}
		out.SetBytes(x)
	case "guid":
		x, ok := val.(tablekit.GUID)
		if !ok {
			return mismatch()
		}
		reflect.Copy(out, reflect.ValueOf(x))
	case "string":
		x, ok := val.(string)
		if !ok {
			return mismatch()
		}
		out.SetString(x)
	case "bool":
		x, ok := val.(bool)
		if !ok {
			return mismatch()
		}
		out.SetBool(x)
	case "int64", "int32":
		var n int64
		switch x := val.(type) {
		case int64:
			n = x
		case int32:
			n = int64(x)
		default:
			return mismatch()
		}
		if out.OverflowInt(n) {
			return out, fmt.Errorf("stored value %d overflows %s", n, t)
		}
		out.SetInt(n)
	default:
		x, ok := val.(float64)
		if !ok {
			return mismatch()
		}
		out.SetFloat(x)
	}
	return out, nil
}

// tooWide is the error of a logical entity one transaction cannot hold.
func (w *Wide[T]) tooWide(desc string, props int, why string) error {
	return &tablekit.ValidationError{
		Entity: desc,
		Limit:  "one entity group transaction: <= 100 entities, <= 4 MiB",
		Size:   props,
		Detail: fmt.Sprintf("a logical entity of %d properties needs %s; store its large values in blobs (patterns.Large) or split it into several logical entities", props, why),
		Err:    tablekit.ErrTooLarge,
	}
}
