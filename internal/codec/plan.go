package codec

import (
	"encoding"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tablekit/tablekit/internal/limits"
)

// The table struct tag is `table:"Name,option,option..."`. The name is the
// property name (default: the Go field name); "-" skips the field. Options:
//
//	pk, rk       the field holds the PartitionKey / RowKey (a string kind)
//	etag         the field receives the entity's ETag (azcore.ETag or string)
//	timestamp    the field receives the service's Timestamp (time.Time); never sent
//	omitempty    a zero value is not stored (absent, as null is)
//	json         the value is stored as a JSON string (Edm.String), any Go type
//	int32        store an integer field as Edm.Int32 (range-checked)
//	int64        store an integer field as Edm.Int64
//	guid         store a string field as Edm.Guid (it must hold a GUID)
//	encrypt      encrypt the value client-side (needs TableOptions.Encryption)
const tagName = "table"

type fieldRole uint8

const (
	roleProperty fieldRole = iota
	rolePK
	roleRK
	roleETag
	roleTimestamp
)

// fieldKind is how a Go field is read and written.
type fieldKind uint8

const (
	kindString     fieldKind = iota // string kinds
	kindBool                        // bool
	kindInt                         // signed integer kinds
	kindUint                        // unsigned integer kinds
	kindFloat                       // float32, float64
	kindTime                        // time.Time
	kindBytes                       // []byte
	kindGUIDArray                   // [16]byte kinds
	kindGUIDString                  // string with the guid option
	kindJSON                        // any type with the json option
	kindText                        // encoding.TextMarshaler + TextUnmarshaler (stored as Edm.String)
)

type fieldPlan struct {
	name      string
	goName    string
	index     int // index in the struct (after flattening: path below)
	path      []int
	role      fieldRole
	kind      fieldKind
	edm       edmType
	bits      int // for int/uint/float kinds
	ptr       bool
	elemType  reflect.Type // the field's type, or the pointee for pointer fields
	omitEmpty bool
	encrypt   bool
}

// typePlan is everything the codec needs to know about a Go type, computed
// once per type.
type typePlan struct {
	typ     reflect.Type
	fields  []fieldPlan // custom properties, in declaration order
	byName  map[string]int
	pk, rk  []int // field paths, nil when absent
	etag    []int
	ts      []int
	hasEncr bool
}

var planCache sync.Map // reflect.Type -> *typePlan or error

var (
	timeType          = reflect.TypeOf(time.Time{})
	bytesType         = reflect.TypeOf([]byte(nil))
	guidType          = reflect.TypeOf(GUID{})
	textMarshalerType = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
	textUnmarshalType = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
	entityType        = reflect.TypeOf(Entity{})
)

// planFor returns the cached plan of a struct type, building it on first use.
// A cached error is returned as a copy: callers name their operation in it
// (WithOp sets ValidationError.Op), which must not show in another's.
func planFor(t reflect.Type) (*typePlan, error) {
	if v, ok := planCache.Load(t); ok {
		if err, isErr := v.(error); isErr {
			return nil, copyPlanError(err)
		}
		return v.(*typePlan), nil
	}
	p, err := buildPlan(t)
	if err != nil {
		planCache.Store(t, err)
		return nil, copyPlanError(err)
	}
	v, _ := planCache.LoadOrStore(t, p)
	return v.(*typePlan), nil
}

func copyPlanError(err error) error {
	if ve, ok := err.(*ValidationError); ok {
		c := *ve
		return &c
	}
	return err
}

func planError(t reflect.Type, field, format string, args ...any) error {
	return &ValidationError{
		Property: field,
		Detail:   "type " + t.String() + ": " + fmt.Sprintf(format, args...),
		Err:      ErrInvalidInput,
	}
}

func buildPlan(t reflect.Type) (*typePlan, error) {
	if t.Kind() != reflect.Struct {
		return nil, planError(t, "", "tablekit tables hold structs or tablekit.Entity, not %s", t.Kind())
	}
	p := &typePlan{typ: t, byName: map[string]int{}}
	if err := p.addFields(t, nil); err != nil {
		return nil, err
	}
	if len(p.fields) > limits.CustomProperties {
		return nil, planError(t, "", "%d properties; Azure allows at most %d custom properties per entity", len(p.fields), limits.CustomProperties)
	}
	return p, nil
}

func (p *typePlan) addFields(t reflect.Type, parent []int) error {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		path := append(append([]int(nil), parent...), i)
		tag, hasTag := sf.Tag.Lookup(tagName)
		if tag == "-" {
			continue
		}
		if sf.Anonymous && !hasTag {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				return planError(p.typ, sf.Name, "embedded pointer fields are not supported; embed the struct by value")
			}
			if ft.Kind() == reflect.Struct && ft != timeType {
				if err := p.addFields(ft, path); err != nil {
					return err
				}
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		fp := fieldPlan{name: name, goName: sf.Name, index: i, path: path}
		var typeOpt string
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "":
			case "pk":
				fp.role = rolePK
			case "rk":
				fp.role = roleRK
			case "etag":
				fp.role = roleETag
			case "timestamp":
				fp.role = roleTimestamp
			case "omitempty":
				fp.omitEmpty = true
			case "encrypt":
				fp.encrypt = true
			case "json", "int32", "int64", "guid":
				if typeOpt != "" {
					return planError(p.typ, sf.Name, "tag options %q and %q conflict", typeOpt, o)
				}
				typeOpt = o
			default:
				return planError(p.typ, sf.Name, "unknown table tag option %q", o)
			}
		}
		switch fp.role {
		case rolePK, roleRK:
			if sf.Type.Kind() != reflect.String {
				return planError(p.typ, sf.Name, "a pk/rk field must be a string, not %s", sf.Type)
			}
			if fp.role == rolePK {
				if p.pk != nil {
					return planError(p.typ, sf.Name, "two fields are tagged pk")
				}
				p.pk = path
			} else {
				if p.rk != nil {
					return planError(p.typ, sf.Name, "two fields are tagged rk")
				}
				p.rk = path
			}
			continue
		case roleETag:
			if sf.Type.Kind() != reflect.String {
				return planError(p.typ, sf.Name, "an etag field must be azcore.ETag or a string, not %s", sf.Type)
			}
			p.etag = path
			continue
		case roleTimestamp:
			if sf.Type != timeType {
				return planError(p.typ, sf.Name, "a timestamp field must be a time.Time, not %s", sf.Type)
			}
			p.ts = path
			continue
		}
		if err := validPropertyName(name); err != nil {
			return planError(p.typ, sf.Name, "%v", err)
		}
		if _, dup := p.byName[name]; dup {
			return planError(p.typ, sf.Name, "property name %q is used by two fields", name)
		}
		if err := fp.setKind(sf.Type, typeOpt); err != nil {
			return planError(p.typ, sf.Name, "%v", err)
		}
		if fp.encrypt {
			p.hasEncr = true
		}
		p.byName[name] = len(p.fields)
		p.fields = append(p.fields, fp)
	}
	return nil
}

func (fp *fieldPlan) setKind(t reflect.Type, typeOpt string) error {
	if typeOpt == "json" {
		fp.kind, fp.edm, fp.elemType = kindJSON, edmString, t
		return nil
	}
	if t.Kind() == reflect.Pointer {
		fp.ptr = true
		t = t.Elem()
	}
	fp.elemType = t
	switch {
	case t == timeType:
		fp.kind, fp.edm = kindTime, edmDateTime
	case t == bytesType || (t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8):
		fp.kind, fp.edm = kindBytes, edmBinary
	case t.Kind() == reflect.Array && t.Len() == 16 && t.Elem().Kind() == reflect.Uint8:
		fp.kind, fp.edm = kindGUIDArray, edmGUID
	case t.Kind() == reflect.String:
		fp.kind, fp.edm = kindString, edmString
		if typeOpt == "guid" {
			fp.kind, fp.edm = kindGUIDString, edmGUID
		}
	case t.Kind() == reflect.Bool:
		fp.kind, fp.edm = kindBool, edmBoolean
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		fp.kind, fp.bits = kindInt, t.Bits()
		fp.edm = edmInt64
		if t.Kind() != reflect.Int && t.Kind() != reflect.Int64 {
			fp.edm = edmInt32
		}
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 && t.Kind() != reflect.Uintptr:
		fp.kind, fp.bits = kindUint, t.Bits()
		fp.edm = edmInt64
		if fp.bits <= 16 {
			fp.edm = edmInt32
		}
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		fp.kind, fp.bits, fp.edm = kindFloat, t.Bits(), edmDouble
	case reflect.PointerTo(t).Implements(textUnmarshalType) && (t.Implements(textMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType)):
		fp.kind, fp.edm = kindText, edmString
	default:
		return fmt.Errorf("field type %s is not supported (use a string, bool, integer, float, time.Time, []byte, [16]byte type, a pointer to one, or the json tag option)", t)
	}
	switch typeOpt {
	case "int32", "int64":
		if fp.kind != kindInt && fp.kind != kindUint {
			return fmt.Errorf("tag option %s needs an integer field, not %s", typeOpt, t)
		}
		fp.edm = edmInt32
		if typeOpt == "int64" {
			fp.edm = edmInt64
		}
	case "guid":
		if fp.kind != kindGUIDString && fp.kind != kindGUIDArray {
			return fmt.Errorf("tag option guid needs a string or [16]byte field, not %s", t)
		}
	}
	return nil
}

// ValidPropertyName checks name as a custom property name, by the rules
// below (a $select names properties by these rules too).
func ValidPropertyName(name string) error { return validPropertyName(name) }

// validPropertyName checks the rules Azure applies to property names: a C#
// identifier of at most 255 characters, not a system property name.
func validPropertyName(name string) error {
	if name == "" {
		return fmt.Errorf("empty property name")
	}
	if len(name) > 255 {
		return fmt.Errorf("property name is %d characters; the limit is 255", len(name))
	}
	switch name {
	case "PartitionKey", "RowKey", "Timestamp", "ETag", "odata.etag":
		return fmt.Errorf("property name %q is reserved for a system property (use the pk, rk, timestamp or etag tag option)", name)
	}
	for i, r := range name {
		ok := r == '_' || unicode.IsLetter(r) || (i > 0 && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Pc, r)))
		if !ok || r == utf8.RuneError {
			return fmt.Errorf("property name %s is not a valid identifier (letters, digits and _; not starting with a digit): character %q at byte %d", Quote(name), r, i)
		}
	}
	return nil
}
