package patterns

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
)

// The wide entities pattern ("Use multiple physical entities to store
// logical entities with more than 252 properties"): one logical entity is
// split over several physical entities of one partition whose RowKeys are
// the logical RowKey plus a part number, written together in one entity
// group transaction and read back together with one range query.

// MaxWideParts is the most physical entities one logical entity may span:
// what one entity group transaction can write, so that every change of a
// logical entity is atomic.
const MaxWideParts = tablekit.MaxTransactionActions

// widePartWidth is the width of the part number in a physical RowKey.
const widePartWidth = 3

// WidePartKey returns the RowKey of part number part (0-based) of the
// logical entity with RowKey rk: the compound key (rk, part in 3 digits),
// e.g. "meter17!000". The parts of one logical entity are exactly the
// RowKeys in keys.TupleRange(rk).
func WidePartKey(rk string, part int) (string, error) {
	if part < 0 || part >= MaxWideParts {
		return "", &tablekit.ValidationError{Entity: rk, Limit: fmt.Sprintf("0 <= part < %d", MaxWideParts), Size: part, Detail: "part number out of range", Err: tablekit.ErrInvalidInput}
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

// WideOptions configures a [Wide]. A nil *WideOptions means defaults.
type WideOptions struct {
	// PropertiesPerPart is the most custom properties one physical entity
	// holds: 1 to 252 (default 252). A smaller value leaves room to add
	// properties to a part later without moving others.
	PropertiesPerPart int
	// Retries is how often a write starts again, re-reading the logical
	// entity, when a concurrent writer changed it between the read and the
	// write (default 5). Negative means never.
	Retries int
}

// Wide stores logical entities of any width — more than 252 properties,
// or more than 1 MiB — each as up to 100 physical entities ("parts") in one
// partition. Every write of a logical entity is one entity group
// transaction, so readers never see half of a change, and a write sends
// only the parts whose properties changed. A read is one range query.
//
// T is [tablekit.Entity], or a struct as for [tablekit.Table] that may have
// one map field tagged `wide:"Prefix"` (and `table:"-"`), whose entries are
// stored as properties named Prefix+key: a typed way to hold hundreds of
// values, such as a counter per day of a year:
//
//	type Year struct {
//		Meter string            `table:",pk"`
//		Year  string            `table:",rk"`
//		Unit  string            `table:"Unit"`
//		Days  map[string]int64  `table:"-" wide:"D"` // D001 ... D366
//	}
//
// The map's key type is a string kind, and its value type one a property
// can hold: a string, bool, int, int8–int64, float64, time.Time, []byte or
// [16]byte kind. No other property name of T may start with the prefix.
//
// Physical entities carry ETags: Put, Update, Merge and Delete are
// optimistic and start again when another writer got there first.
// The logical entity itself has no ETag. Keys containing ' can be
// inserted and deleted but not updated in a transaction (a limitation of
// the Azure SDK for Go, reported as tablekit.ErrInvalidKey). A Wide is safe
// for concurrent use.
type Wide[T any] struct {
	table    *tablekit.Table[tablekit.Entity]
	perPart  int
	retries  int
	isEntity bool
	field    *wideField
}

// wideField describes the `wide` map field of a struct T.
type wideField struct {
	index  int
	name   string
	prefix string
	typ    reflect.Type // the map type
	elem   reflect.Type
}

// NewWide returns a Wide that stores values of T in table.
func NewWide[T any](table *tablekit.Table[tablekit.Entity], opts *WideOptions) (*Wide[T], error) {
	if table == nil {
		return nil, &tablekit.ValidationError{Detail: "patterns.NewWide: nil table", Err: tablekit.ErrInvalidInput}
	}
	w := &Wide[T]{table: table, perPart: tablekit.MaxCustomProperties, retries: 5}
	if opts != nil {
		if opts.PropertiesPerPart < 0 || opts.PropertiesPerPart > tablekit.MaxCustomProperties {
			return nil, &tablekit.ValidationError{Property: "PropertiesPerPart", Limit: "1–252", Size: opts.PropertiesPerPart, Detail: "out of range", Err: tablekit.ErrInvalidInput}
		}
		if opts.PropertiesPerPart > 0 {
			w.perPart = opts.PropertiesPerPart
		}
		if opts.Retries != 0 {
			w.retries = max(opts.Retries, 0)
		}
	}
	typ := reflect.TypeFor[T]()
	if typ == reflect.TypeFor[tablekit.Entity]() {
		w.isEntity = true
		return w, nil
	}
	var zero T
	if _, err := tablekit.EncodeEntity(zero); err != nil {
		return nil, err
	}
	f, err := findWideField(typ)
	if err != nil {
		return nil, err
	}
	w.field = f
	return w, nil
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
			return &tablekit.ValidationError{Entity: typ.String(), Property: sf.Name, Detail: "wide field: " + fmt.Sprintf(format, args...), Err: tablekit.ErrInvalidInput}
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

// PropertyName returns the property that holds the entry key of T's wide
// map: the prefix followed by key. For a Wide without a wide map field it
// returns key.
func (w *Wide[T]) PropertyName(key string) string {
	if w.field == nil {
		return key
	}
	return w.field.prefix + key
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
	e, err := tablekit.EncodeEntity(v)
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

// decode turns properties read back into a logical value.
func (w *Wide[T]) decode(pk, rk string, ts time.Time, props map[string]any) (T, error) {
	var zero T
	if w.isEntity {
		e := tablekit.Entity{PartitionKey: pk, RowKey: rk, Timestamp: ts, Properties: props}
		return any(e).(T), nil
	}
	plain := tablekit.Entity{PartitionKey: pk, RowKey: rk, Timestamp: ts, Properties: props}
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
	v, err := tablekit.Decode[T](plain)
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
			return zero, &tablekit.ValidationError{Entity: pk + "/" + rk, Property: w.field.prefix + key, Detail: err.Error(), Err: tablekit.ErrInvalidInput}
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

// widePart is one physical entity as read.
type widePart struct {
	index int
	etag  azcore.ETag
	ts    time.Time
	props map[string]any
}

// read returns the parts of a logical entity, in part order: one range
// query.
func (w *Wide[T]) read(ctx context.Context, pk, rk string) ([]*widePart, error) {
	lo, hi, err := keys.TupleRange(rk)
	if err != nil {
		return nil, &tablekit.ValidationError{Entity: pk + "/" + rk, Property: "RowKey", Detail: err.Error(), Err: tablekit.ErrInvalidKey}
	}
	var parts []*widePart
	for e, err := range w.table.Query(ctx, tablekit.RowKeyRange(pk, lo, hi), nil) {
		if err != nil {
			return nil, err
		}
		comps, err := keys.Split(e.RowKey)
		var idx uint64
		if err == nil && len(comps) == 2 && comps[0] == rk {
			idx, err = keys.ParseUintN(comps[1], widePartWidth)
		}
		if err != nil || len(comps) != 2 || comps[0] != rk || idx >= MaxWideParts {
			return nil, &tablekit.ValidationError{Entity: pk + "/" + e.RowKey, Detail: fmt.Sprintf("not a part of the wide entity %q (want RowKey %q plus a part number)", rk, lo), Err: tablekit.ErrInvalidInput}
		}
		if e.Properties == nil {
			e.Properties = make(map[string]any)
		}
		parts = append(parts, &widePart{index: int(idx), etag: e.ETag, ts: e.Timestamp, props: e.Properties})
	}
	slices.SortFunc(parts, func(a, b *widePart) int { return a.index - b.index })
	return parts, nil
}

// assemble joins parts into one property map and the latest Timestamp.
func assemble(parts []*widePart) (map[string]any, time.Time) {
	props := make(map[string]any)
	var ts time.Time
	for _, p := range parts {
		maps.Copy(props, p.props)
		if p.ts.After(ts) {
			ts = p.ts
		}
	}
	return props, ts
}

// Get reads the logical entity with one range query and reassembles it. It
// returns an error matching tablekit.ErrNotFound when there is none.
func (w *Wide[T]) Get(ctx context.Context, pk, rk string) (T, error) {
	var zero T
	parts, err := w.read(ctx, pk, rk)
	if err != nil {
		return zero, err
	}
	if len(parts) == 0 {
		return zero, notFound("wide entity", pk, rk)
	}
	props, ts := assemble(parts)
	return w.decode(pk, rk, ts, props)
}

// notFound is the error of a missing logical entity.
func notFound(what, pk, rk string) error {
	return fmt.Errorf("patterns: %s %s/%s: %w", what, pk, rk, tablekit.ErrNotFound)
}

// Parts returns the number of physical entities the logical entity spans
// now (0 when it does not exist): one range query.
func (w *Wide[T]) Parts(ctx context.Context, pk, rk string) (int, error) {
	parts, err := w.read(ctx, pk, rk)
	return len(parts), err
}

// Insert writes a new logical entity in one entity group transaction, and
// nothing else: it fails with an error matching tablekit.ErrAlreadyExists
// when the logical entity exists.
func (w *Wide[T]) Insert(ctx context.Context, v T) error {
	pk, rk, want, err := w.encode(v)
	if err != nil {
		return err
	}
	actions, err := w.plan(pk, rk, nil, want)
	if err != nil {
		return err
	}
	_, err = w.table.Transaction(ctx, actions...)
	return err
}

// Put stores v as the whole logical entity, inserting or replacing it:
// properties v does not have are removed. It reads the current parts (one
// query) and then writes, in one transaction, only the parts whose
// properties change; properties that stay keep their place.
func (w *Wide[T]) Put(ctx context.Context, v T) error {
	pk, rk, want, err := w.encode(v)
	if err != nil {
		return err
	}
	return w.write(ctx, pk, rk, func(_ []*widePart, _ map[string]any) (map[string]any, error) {
		return want, nil
	})
}

// Merge changes some properties of the logical entity, creating it if it
// does not exist: a nil value removes the property. Only the physical
// entities holding changed properties are written (none when nothing
// changes). For a wide map entry, name the property with PropertyName.
func (w *Wide[T]) Merge(ctx context.Context, pk, rk string, changes map[string]any) error {
	return w.write(ctx, pk, rk, func(_ []*widePart, current map[string]any) (map[string]any, error) {
		want := maps.Clone(current)
		for name, val := range changes {
			if val == nil {
				delete(want, name)
			} else {
				want[name] = normalizeValue(val)
			}
		}
		return want, nil
	})
}

// Update reads the logical entity, lets fn change it, and writes the
// parts whose properties changed, in one transaction. When another writer
// changed the entity in between, it reads again and calls fn again, so fn
// must only change *v. fn must not change the keys. Update fails with an
// error matching tablekit.ErrNotFound when the entity does not exist, and
// returns fn's error as is.
func (w *Wide[T]) Update(ctx context.Context, pk, rk string, fn func(v *T) error) error {
	return w.write(ctx, pk, rk, func(parts []*widePart, current map[string]any) (map[string]any, error) {
		if len(parts) == 0 {
			return nil, notFound("wide entity", pk, rk)
		}
		_, ts := assemble(parts)
		v, err := w.decode(pk, rk, ts, current)
		if err != nil {
			return nil, err
		}
		if err := fn(&v); err != nil {
			return nil, err
		}
		npk, nrk, want, err := w.encode(v)
		if err != nil {
			return nil, err
		}
		if npk != pk || nrk != rk {
			return nil, &tablekit.ValidationError{Entity: pk + "/" + rk, Detail: "Update's function changed the keys", Err: tablekit.ErrInvalidKey}
		}
		return want, nil
	})
}

// write runs the read-plan-write loop: read the parts, compute the wanted
// properties, write the difference in one transaction, start again on a
// conflict.
func (w *Wide[T]) write(ctx context.Context, pk, rk string, want func(parts []*widePart, current map[string]any) (map[string]any, error)) error {
	for attempt := 0; ; attempt++ {
		parts, err := w.read(ctx, pk, rk)
		if err != nil {
			return err
		}
		current, _ := assemble(parts)
		props, err := want(parts, current)
		if err != nil {
			return err
		}
		actions, err := w.plan(pk, rk, parts, props)
		if err != nil {
			return err
		}
		if len(actions) == 0 {
			return nil
		}
		_, err = w.table.Transaction(ctx, actions...)
		if err == nil || !isConflict(err) || attempt >= w.retries {
			return err
		}
		if err := backoff(ctx, attempt, 10*time.Millisecond, time.Second); err != nil {
			return err
		}
	}
}

// Delete deletes every part of the logical entity in one transaction and
// reports whether it existed.
func (w *Wide[T]) Delete(ctx context.Context, pk, rk string) (bool, error) {
	for attempt := 0; ; attempt++ {
		parts, err := w.read(ctx, pk, rk)
		if err != nil || len(parts) == 0 {
			return false, err
		}
		actions := make([]tablekit.Action[tablekit.Entity], 0, len(parts))
		for _, p := range parts {
			prk, err := WidePartKey(rk, p.index)
			if err != nil {
				return false, err
			}
			actions = append(actions, tablekit.DeleteAction(tablekit.Entity{PartitionKey: pk, RowKey: prk, ETag: p.etag}))
		}
		_, err = w.table.Transaction(ctx, actions...)
		if err == nil || !isConflict(err) || attempt >= w.retries {
			return err == nil, err
		}
		if err := backoff(ctx, attempt, 10*time.Millisecond, time.Second); err != nil {
			return false, err
		}
	}
}

// wideSlot is one physical entity while a write is planned.
type wideSlot struct {
	index   int
	old     *widePart // nil for a new part
	props   map[string]any
	size    int             // Azure size of props
	removed bool            // a stored property leaves the part: rewrite it whole
	changed map[string]bool // properties to send in a merge
}

func (s *wideSlot) dirty() bool { return s.old == nil || s.removed || len(s.changed) > 0 }

// plan computes the transaction that turns the stored parts old into a
// logical entity with exactly the properties want. Properties stay in the
// part that holds them unless it overflows; new and displaced properties go
// first to parts that are written anyway, then to other parts with room,
// then to new parts. Untouched parts are not written, except that a write
// placing properties also checks the first part's ETag (an empty merge).
func (w *Wide[T]) plan(pk, rk string, old []*widePart, want map[string]any) ([]tablekit.Action[tablekit.Entity], error) {
	desc := pk + "/" + rk
	rk0, err := WidePartKey(rk, 0)
	if err != nil {
		return nil, err
	}
	capBytes := tablekit.MaxEntityBytes - keysSize(pk, rk0)
	fits := func(s *wideSlot, name string, val any) bool {
		return len(s.props) < w.perPart && s.size+propertySize(name, val) <= capBytes
	}

	placed := make(map[string]bool, len(want))
	var slots []*wideSlot
	used := make(map[int]bool)
	for _, p := range old {
		s := &wideSlot{index: p.index, old: p, props: make(map[string]any, len(p.props)), changed: map[string]bool{}}
		used[p.index] = true
		for name, val := range p.props {
			nv, ok := want[name]
			if !ok || placed[name] {
				s.removed = true
				continue
			}
			placed[name] = true
			s.props[name] = nv
			s.size += propertySize(name, nv)
			if !valuesEqual(val, nv) {
				s.changed[name] = true
			}
		}
		// A grown value may overflow its part: move changed properties
		// (largest first) elsewhere until it fits.
		for len(s.props) > w.perPart || s.size > capBytes {
			victim, best := "", -1
			for name, val := range s.props {
				sz := propertySize(name, val)
				if s.changed[name] {
					sz += capBytes // prefer changed properties
				}
				if sz > best || sz == best && name < victim {
					victim, best = name, sz
				}
			}
			s.size -= propertySize(victim, s.props[victim])
			delete(s.props, victim)
			delete(s.changed, victim)
			delete(placed, victim)
			s.removed = true
		}
		slots = append(slots, s)
	}

	var homeless []string
	for name := range want {
		if !placed[name] {
			homeless = append(homeless, name)
		}
	}
	slices.Sort(homeless)
	next := 0
	for _, name := range homeless {
		val := want[name]
		if propertySize(name, val) > capBytes {
			return nil, &tablekit.ValidationError{Entity: desc, Property: name, Limit: "<= 1 MiB per physical entity", Size: propertySize(name, val), Detail: "a single property larger than an entity cannot be split; store it in a blob (patterns.Large)", Err: tablekit.ErrTooLarge}
		}
		var target *wideSlot
		for pass := 0; pass < 2 && target == nil; pass++ {
			for _, s := range slots {
				if (pass == 0) == s.dirty() && fits(s, name, val) {
					target = s
					break
				}
			}
		}
		if target == nil {
			for next < MaxWideParts && used[next] {
				next++
			}
			if next >= MaxWideParts {
				return nil, w.tooWide(desc, len(want), "more than 100 physical entities")
			}
			target = &wideSlot{index: next, props: map[string]any{}, changed: map[string]bool{}}
			used[next] = true
			slots = append(slots, target)
		}
		target.props[name] = val
		target.size += propertySize(name, val)
		target.changed[name] = true
	}
	if !used[0] {
		slots = append(slots, &wideSlot{index: 0, props: map[string]any{}, changed: map[string]bool{}})
	}
	slices.SortFunc(slots, func(a, b *wideSlot) int { return a.index - b.index })

	// The whole logical entity must fit in one transaction, so that any
	// later change of it can be written atomically.
	total := 0
	for _, s := range slots {
		if len(s.props) == 0 && s.index != 0 {
			continue
		}
		total += actionFraming + jsonEntityOverhead(pk, rk0)
		for name, val := range s.props {
			total += jsonPropertySize(name, val)
		}
	}
	if total > transactionBudget {
		return nil, w.tooWide(desc, len(want), fmt.Sprintf("about %d bytes of requests, over the 4 MiB of one transaction", total))
	}

	var actions []tablekit.Action[tablekit.Entity]
	for _, s := range slots {
		prk, err := WidePartKey(rk, s.index)
		if err != nil {
			return nil, err
		}
		e := tablekit.Entity{PartitionKey: pk, RowKey: prk}
		switch {
		case s.old == nil:
			e.Properties = s.props
			actions = append(actions, tablekit.InsertAction(e))
		case len(s.props) == 0 && s.index != 0:
			e.ETag = s.old.etag
			actions = append(actions, tablekit.DeleteAction(e))
		case s.removed:
			e.Properties = s.props
			actions = append(actions, tablekit.UpdateAction(e, tablekit.Replace, s.old.etag))
		case len(s.changed) > 0:
			e.Properties = make(map[string]any, len(s.changed))
			for name := range s.changed {
				e.Properties[name] = s.props[name]
			}
			actions = append(actions, tablekit.UpdateAction(e, tablekit.Merge, s.old.etag))
		case s.index == 0 && len(homeless) > 0:
			// Placing a property is decided on what was read: an empty
			// merge conditional on the first part's ETag makes writers
			// that place properties conflict, so that two of them
			// cannot put the same new property in two parts.
			actions = append(actions, tablekit.UpdateAction(e, tablekit.Merge, s.old.etag))
		}
	}
	return actions, nil
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
