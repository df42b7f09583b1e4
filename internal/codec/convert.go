package codec

import (
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// Encode converts v, a struct value or an Entity, to its property bag,
// exactly as a table would store it without client-side encryption,
// checking the same keys and limits (tablekit.ToEntity). When T is an
// interface type, the value v holds is converted (a nil v is refused).
// Its errors name no operation: the caller names its own (WithOp). An
// Entity converts to itself.
func Encode[T any](v T) (Entity, error) { return encode(v, false) }

// EncodeBody is Encode for a struct that need not have key fields (an
// event of package stream, whose keys its Store sets): without them, the
// Entity's keys are empty.
func EncodeBody[T any](v T) (Entity, error) { return encode(v, true) }

func encode[T any](v T, keysOptional bool) (Entity, error) {
	rv := reflect.ValueOf(&v).Elem()
	if rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return Entity{}, &ValidationError{Detail: "nil value", Err: ErrInvalidInput}
		}
		dyn := reflect.New(rv.Elem().Type()).Elem()
		dyn.Set(rv.Elem())
		rv = dyn
	}
	return convertTo(rv, keysOptional)
}

// Decode converts a property bag to a T, a struct or Entity, as a table's
// read would, without checking storage limits (tablekit.FromEntity). On an
// error it returns the zero T; its errors name no operation.
func Decode[T any](e Entity) (T, error) { return decode[T](e, false) }

// DecodeBody is Decode into a struct that need not have key fields:
// without them, e's keys are not kept.
func DecodeBody[T any](e Entity) (T, error) { return decode[T](e, true) }

func decode[T any](e Entity, keysOptional bool) (T, error) {
	var v T
	if err := convertFrom(e, reflect.ValueOf(&v).Elem(), keysOptional); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// convertTo is Encode of rv, an addressable struct or Entity value; with
// keysOptional, a struct without key fields converts too, to an Entity
// with empty keys (EncodeBody).
func convertTo(rv reflect.Value, keysOptional bool) (Entity, error) {
	if e, ok := rv.Interface().(Entity); ok {
		return e, nil
	}
	plan, err := planOf(rv.Type(), keysOptional)
	if err != nil {
		return Entity{}, err
	}
	e, err := plan.toEntity(rv, &encodeState{})
	if err != nil {
		return Entity{}, err
	}
	if plan.etag != nil {
		e.ETag = azcore.ETag(fieldByPath(rv, plan.etag).String())
	}
	if plan.ts != nil {
		e.Timestamp = fieldByPath(rv, plan.ts).Interface().(time.Time)
	}
	return e, nil
}

// convertFrom is Decode into rv, an addressable struct or Entity value;
// with keysOptional, into a struct without key fields too, which does not
// hold e's keys (DecodeBody).
func convertFrom(e Entity, rv reflect.Value, keysOptional bool) error {
	if rv.Type() == entityType {
		rv.Set(reflect.ValueOf(e))
		return nil
	}
	plan, err := planOf(rv.Type(), keysOptional)
	if err != nil {
		return err
	}
	return plan.fromEntity(&e, rv, &decodeState{})
}

// structPlan returns the plan of a table struct type.
func structPlan(typ reflect.Type) (*typePlan, error) { return planOf(typ, false) }

// planOf is structPlan; with keysOptional, of a struct type without key
// fields too.
func planOf(typ reflect.Type, keysOptional bool) (*typePlan, error) {
	plan, err := planFor(typ)
	if err != nil {
		return nil, err
	}
	if !keysOptional && (plan.pk == nil || plan.rk == nil) {
		return nil, planError(plan.typ, "", "a table struct needs a string field tagged `table:\",pk\"` and one tagged `table:\",rk\"`")
	}
	return plan, nil
}

// Codec is how one table stores values of T, a table struct or Entity:
// its type plan and its client-side encryption, named by the table for
// errors. tablekit's Table[T] encodes, decodes and checks every entity
// through its Codec. A Codec is safe for concurrent use.
type Codec[T any] struct {
	table string
	plan  *typePlan // nil when T is Entity
	crypt *cryptContext
	// projection: a Projection's Codec, whose plan's etag field Decode
	// fills from the entity's odata.etag.
	projection bool
}

// For returns the Codec of table for values of T, encrypting as enc says
// (nil: nothing). It fails, naming the field, when T is not a struct with
// `table:",pk"` and `table:",rk"` string fields (or Entity), has a field
// of an unsupported type, tags fields encrypt without enc, or when enc is
// not usable for T. Its errors name no operation.
func For[T any](table string, enc *Encryption) (*Codec[T], error) {
	c := &Codec[T]{table: table}
	typ := reflect.TypeFor[T]()
	if typ != entityType {
		plan, err := planFor(typ)
		if err != nil {
			return nil, err
		}
		if plan.pk == nil || plan.rk == nil {
			return nil, planError(typ, "", "a table struct needs a string field tagged `table:\",pk\"` and one tagged `table:\",rk\"`")
		}
		c.plan = plan
	}
	crypt, err := newCryptContext(enc, c.plan)
	if err != nil {
		return nil, err
	}
	if c.plan != nil && c.plan.hasEncr && crypt == nil {
		return nil, planError(typ, "", "fields are tagged encrypt but TableOptions.Encryption is nil")
	}
	c.crypt = crypt
	return c, nil
}

// Entities returns the Codec of c's table for property bags: the same
// table and encryption (tablekit's Table.AsEntities).
func Entities[T any](c *Codec[T]) *Codec[Entity] {
	if c == nil {
		return nil
	}
	return &Codec[Entity]{table: c.table, crypt: c.crypt}
}

// Projection returns the Codec of c's table for values of P, a struct
// with table tags that names the properties to read (keys, etag and
// timestamp fields need not be there), and the $select text of those
// properties: the table's encryption decrypts them as it does for T. Its
// errors name no operation.
func Projection[P, T any](c *Codec[T]) (*Codec[P], string, error) {
	typ := reflect.TypeFor[P]()
	if typ.Kind() != reflect.Struct || typ == entityType {
		return nil, "", &ValidationError{Entity: typ.String(), Detail: "the projection type must be a struct with table tags", Err: ErrInvalidInput}
	}
	plan, err := planFor(typ)
	if err != nil {
		return nil, "", err
	}
	names := make([]string, 0, len(plan.fields)+1)
	for i := range plan.fields {
		names = append(names, plan.fields[i].name)
	}
	if plan.ts != nil {
		names = append(names, "Timestamp")
	}
	if len(names) == 0 {
		names = append(names, "RowKey")
	}
	sel := names[0]
	for _, n := range names[1:] {
		sel += "," + n
	}
	pc := &Codec[P]{plan: plan, projection: true}
	if c != nil {
		pc.table, pc.crypt = c.table, c.crypt
	}
	return pc, sel, nil
}

// Encode appends the OData JSON of v, encrypted, to dst and returns its
// keys, checking keys and limits (those of Azure Cosmos DB for Table too,
// with cosmos).
func (c *Codec[T]) Encode(dst []byte, v *T, cosmos bool) ([]byte, string, string, error) {
	s := encodeState{table: c.table, crypt: c.crypt, cosmos: cosmos}
	var err error
	if c.plan == nil {
		dst, err = encodeEntity(dst, any(v).(*Entity), &s)
	} else {
		dst, err = c.plan.encodeStruct(dst, reflect.ValueOf(v).Elem(), &s)
	}
	return dst, s.pk, s.rk, err
}

// Decode decodes one entity's JSON, as the service sent it, into v,
// decrypting; its errors name op, the operation reading.
func (c *Codec[T]) Decode(op string, data []byte, v *T) error {
	d := decodeState{op: op, table: c.table, crypt: c.crypt}
	if c.plan == nil {
		return decodeEntity(data, any(v).(*Entity), &d)
	}
	if err := c.plan.decodeStruct(data, reflect.ValueOf(v).Elem(), &d); err != nil {
		return err
	}
	if c.projection && c.plan.etag != nil {
		var e Entity
		if err := decodeEntity(data, &e, &decodeState{table: c.table}); err == nil {
			c.SetETag(v, e.ETag)
		}
	}
	return nil
}

// Keys returns v's PartitionKey and RowKey.
func (c *Codec[T]) Keys(v *T) (pk, rk string) {
	if c.plan == nil {
		e := any(v).(*Entity)
		return e.PartitionKey, e.RowKey
	}
	return c.plan.keys(reflect.ValueOf(v).Elem())
}

// ETag returns v's ETag, or "" when T has no etag field.
func (c *Codec[T]) ETag(v *T) azcore.ETag {
	if c.plan == nil {
		return any(v).(*Entity).ETag
	}
	if c.plan.etag == nil {
		return ""
	}
	return azcore.ETag(fieldByPath(reflect.ValueOf(v).Elem(), c.plan.etag).String())
}

// SetETag sets v's ETag field to etag (none when T has none or etag is "").
func (c *Codec[T]) SetETag(v *T, etag azcore.ETag) {
	if etag == "" {
		return
	}
	if c.plan == nil {
		any(v).(*Entity).ETag = etag
		return
	}
	if c.plan.etag != nil {
		fieldByPath(reflect.ValueOf(v).Elem(), c.plan.etag).SetString(string(etag))
	}
}

// WithKeys returns a zero T with its keys set to pk and rk.
func (c *Codec[T]) WithKeys(pk, rk string) T {
	var v T
	if c.plan == nil {
		e := any(&v).(*Entity)
		e.PartitionKey, e.RowKey = pk, rk
		return v
	}
	rv := reflect.ValueOf(&v).Elem()
	fieldByPath(rv, c.plan.pk).SetString(pk)
	fieldByPath(rv, c.plan.rk).SetString(rk)
	return v
}

// CheckKeys checks pk and rk as keys of an entity of c's table (with
// cosmos, also against Azure Cosmos DB for Table's RowKey limit).
func (c *Codec[T]) CheckKeys(pk, rk string, cosmos bool) error {
	s := encodeState{table: c.table, cosmos: cosmos}
	return s.checkKeys(pk, rk)
}

// ToEntity converts v to the property bag c's table stores for it, before
// client-side encryption: the properties c encrypts are plaintext here,
// and are encrypted when the Entity is written through the table's
// Entities view (which shares c's encryption). It checks keys and limits
// as a write does, except the size encryption adds, which the write
// checks. v's ETag (and Timestamp) fields are kept. Its errors name no
// operation.
func (c *Codec[T]) ToEntity(v T, cosmos bool) (Entity, error) {
	if e, ok := any(v).(Entity); ok {
		return e, nil
	}
	rv := reflect.ValueOf(&v).Elem()
	e, err := c.plan.toEntity(rv, &encodeState{table: c.table, plaintext: true, cosmos: cosmos})
	if err != nil {
		return Entity{}, err
	}
	e.ETag = c.ETag(&v)
	if c.plan.ts != nil {
		e.Timestamp = fieldByPath(rv, c.plan.ts).Interface().(time.Time)
	}
	return e, nil
}

// FromEntity converts a property bag read through c's table's Entities
// view (decrypted) to a T, as a read of the table would. On an error it
// returns the zero T; its errors name no operation.
func (c *Codec[T]) FromEntity(e Entity) (T, error) {
	var v T
	if out, ok := any(&v).(*Entity); ok {
		*out = e
		return v, nil
	}
	if err := c.plan.fromEntity(&e, reflect.ValueOf(&v).Elem(), &decodeState{plaintext: true, table: c.table}); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// Encrypted returns the names of the properties c encrypts, sorted; nil
// when it encrypts none.
func (c *Codec[T]) Encrypted() []string {
	if c == nil || c.crypt == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(c.crypt.properties))
}

// CheckFilter refuses a filter that compares one of props, the properties
// it names, when c encrypts it: the service only sees ciphertext, so such
// a filter would silently match nothing.
func (c *Codec[T]) CheckFilter(props []string) error {
	if c == nil {
		return nil
	}
	return c.crypt.checkFilter(props)
}
