package tablekit

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/keys"
)

// Kinds of entity: the rows of one table (often of one partition, so that
// one entity group transaction can change several of them) may hold several
// Go types, each row saying what it is, either by an EntityType property or
// by a prefix of its RowKey (the guide's "heterogeneous entity types"). A
// Registry maps those kinds to Go types; package patterns' Mixed reads and
// writes such a table, and an event store keys each event's row by its
// version and records its kind.

// defaultTypeProperty is the property that holds an entity's type value.
const defaultTypeProperty = "EntityType"

// Registry maps the kinds of entity in a table to Go types ([Register]).
// A row's type value, stored in the type property ("EntityType"), is its
// kind and version, "Employee.v2"; a value without a version ("Employee",
// as other programs may write) counts as version 1. With KindInRowKey, the
// kind is the RowKey's first component instead, so that a prefix query
// reads one kind.
//
// The zero Registry is ready to use. Set its fields before the first
// Register; after that a Registry is safe for concurrent use, and must not
// be copied.
type Registry struct {
	// TypeProperty names the property holding type values ("" means
	// "EntityType"). It is written whatever KindInRowKey says.
	TypeProperty string
	// KindInRowKey reads the kind from the first component of the RowKey,
	// a compound key (kind, id...) as keys.Compound(kind, id) builds,
	// instead of from the type property; the version still comes from the
	// type property.
	KindInRowKey bool

	mu    sync.RWMutex
	kinds map[kindVersion]*kindInfo
	types map[reflect.Type]*kindInfo
}

type kindVersion struct {
	kind    string
	version int
}

type kindInfo struct {
	kindVersion
	typ    reflect.Type
	decode func(Entity) (any, error)
	encode func(any) (Entity, error)
}

// prop returns the name of the type property.
func (r *Registry) prop() string {
	if r.TypeProperty == "" {
		return defaultTypeProperty
	}
	return r.TypeProperty
}

// typeValue returns the type value stored for a kind and version:
// "Employee.v2".
func typeValue(kind string, version int) string { return kind + ".v" + strconv.Itoa(version) }

// parseTypeValue splits a type value into kind and version; a value
// without a version suffix is version 1.
func parseTypeValue(s string) (kind string, version int, ok bool) {
	if i := strings.LastIndex(s, ".v"); i > 0 {
		if v, err := strconv.Atoi(s[i+2:]); err == nil && v >= 1 && s[i+2] != '+' {
			return s[:i], v, true
		}
	}
	if validKind(s) {
		return s, 1, true
	}
	return "", 0, false
}

// validKind reports whether kind is a letter followed by letters, digits
// and underscores.
func validKind(kind string) bool {
	for i, c := range kind {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return kind != ""
}

// Register maps kind and version (>= 1) to T, a struct as for
// [Table]: entities of that kind and version decode to T, and
// values of T encode with that type value. A kind may have several
// versions, each its own Go type; a Go type has one kind and version.
//
// T may lack key fields (`table:",pk"` and `table:",rk"`) when what
// stores it sets the keys: an event type of package stream, whose Store
// keys each event's row by its version. Such a type encodes to an Entity
// with empty keys (set them before writing it) and decodes without them;
// package patterns' Mixed and Denormalizer, which write a value as a row
// with its own keys, refuse it.
func Register[T any](r *Registry, kind string, version int) error {
	const op = "tablekit.Register"
	typ := reflect.TypeFor[T]()
	bad := func(detail string) error {
		return &ValidationError{Op: op, Property: "kind", Detail: fmt.Sprintf("type %s as kind %q: %s", typ, kind, detail), Err: ErrInvalidInput}
	}
	if r == nil {
		return &ValidationError{Op: op, Detail: "nil *Registry", Err: ErrInvalidInput}
	}
	if !validKind(kind) {
		return bad("a kind is a letter followed by letters, digits and _")
	}
	if version < 1 {
		return bad("versions start at 1")
	}
	if typ == reflect.TypeFor[Entity]() {
		return bad("tablekit.Entity is what unknown kinds decode to; register struct types")
	}
	var zero T
	if _, err := codec.EncodeBody(zero); err != nil {
		return withOp(op, err)
	}
	kv := kindVersion{kind, version}
	info := &kindInfo{
		kindVersion: kv,
		typ:         typ,
		decode:      func(e Entity) (any, error) { return codec.DecodeBody[T](e) },
		encode:      func(v any) (Entity, error) { return codec.EncodeBody(v.(T)) },
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kinds == nil {
		r.kinds = map[kindVersion]*kindInfo{}
		r.types = map[reflect.Type]*kindInfo{}
	}
	if old, ok := r.kinds[kv]; ok {
		return bad(fmt.Sprintf("%s is already registered to %s", typeValue(kind, version), old.typ))
	}
	if old, ok := r.types[typ]; ok {
		return bad(fmt.Sprintf("the type is already registered as %s", typeValue(old.kind, old.version)))
	}
	r.kinds[kv] = info
	r.types[typ] = info
	return nil
}

// Kind returns the kind and version of an entity, and false when it has
// none the Registry can read (registered or not).
func (r *Registry) Kind(e Entity) (kind string, version int, ok bool) {
	if r == nil {
		return "", 0, false
	}
	tv, _ := e.Properties[r.prop()].(string)
	kind, version, ok = parseTypeValue(tv)
	if r.KindInRowKey {
		comps, err := keys.Split(e.RowKey)
		if err != nil || len(comps) < 2 || !validKind(comps[0]) {
			return "", 0, false
		}
		if !ok || kind != comps[0] {
			version = 1
		}
		return comps[0], version, true
	}
	return kind, version, ok
}

// Decode returns the entity as a value of the Go type registered for its
// kind and version (the struct, not a pointer), or e itself, an Entity,
// when none is.
func (r *Registry) Decode(e Entity) (any, error) {
	const op = "tablekit.Registry.Decode"
	if r == nil {
		return nil, &ValidationError{Op: op, Detail: "nil *Registry", Err: ErrInvalidInput}
	}
	kind, version, ok := r.Kind(e)
	if !ok {
		return e, nil
	}
	r.mu.RLock()
	info := r.kinds[kindVersion{kind, version}]
	r.mu.RUnlock()
	if info == nil {
		return e, nil
	}
	v, err := info.decode(e)
	if err != nil {
		return nil, withOp(op, annotateDetail(err, fmt.Sprintf("decode %s as %s", e.PartitionKey+"/"+e.RowKey, typeValue(kind, version))))
	}
	return v, nil
}

// Encode converts a value of a registered type to its entity, with the
// type property set: for writes of a Table[Entity] or a BulkWriter. With
// KindInRowKey, the RowKey must start with the kind (keys.Compound(kind,
// id...)). An Entity passes through as it is. A type without key fields
// gives an Entity with empty keys: set them before writing it.
func (r *Registry) Encode(v any) (Entity, error) {
	const op = "tablekit.Registry.Encode"
	if r == nil {
		return Entity{}, &ValidationError{Op: op, Detail: "nil *Registry", Err: ErrInvalidInput}
	}
	if e, ok := v.(Entity); ok {
		return e, nil
	}
	typ := reflect.TypeOf(v)
	r.mu.RLock()
	info := r.types[typ]
	r.mu.RUnlock()
	if info == nil {
		return Entity{}, &ValidationError{Op: op, Detail: fmt.Sprintf("type %v is not registered (tablekit.Register)", typ), Err: ErrInvalidInput}
	}
	e, err := info.encode(v)
	if err != nil {
		return e, withOp(op, err)
	}
	if r.KindInRowKey {
		comps, err := keys.Split(e.RowKey)
		if err != nil || len(comps) < 2 || comps[0] != info.kind {
			return e, &ValidationError{Op: op, Entity: e.PartitionKey + "/" + e.RowKey, Property: "RowKey", Detail: fmt.Sprintf("the RowKey of a %s must be a compound key starting with the kind (keys.Compound(%q, id))", typ, info.kind), Err: ErrInvalidKey}
		}
	}
	if e.Properties == nil {
		e.Properties = map[string]any{}
	}
	e.Properties[r.prop()] = typeValue(info.kind, info.version)
	return e, nil
}

// KindOf returns the kind and version v's type is registered as, and
// false when it is not registered (a tablekit.Entity never is).
func (r *Registry) KindOf(v any) (kind string, version int, ok bool) {
	if r == nil || v == nil {
		return "", 0, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	info := r.types[reflect.TypeOf(v)]
	if info == nil {
		return "", 0, false
	}
	return info.kind, info.version, true
}

// annotateDetail prefixes the Detail of a ValidationError or DecodeError in
// err with context, or wraps another error with it.
func annotateDetail(err error, context string) error {
	var ve *ValidationError
	if errors.As(err, &ve) {
		ve.Detail = context + ": " + ve.Detail
		return err
	}
	var de *DecodeError
	if errors.As(err, &de) {
		de.Detail = context + ": " + de.Detail
		return err
	}
	return fmt.Errorf("%s: %w", context, err)
}
