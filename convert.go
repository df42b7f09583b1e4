package tablekit

import (
	"reflect"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// EncodeEntity converts a struct value to its property bag, exactly as a
// Table[T] would store it (without client-side encryption), checking the
// same keys and limits.
func EncodeEntity[T any](v T) (_ Entity, err error) {
	defer func() { err = withOp("EncodeEntity", err) }()
	if e, ok := any(v).(Entity); ok {
		return e, nil
	}
	plan, err := structPlan[T]()
	if err != nil {
		return Entity{}, err
	}
	rv := reflect.ValueOf(&v).Elem()
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

// Decode converts a property bag to a struct value, as a Table[T] read
// would, without checking storage limits (nothing is stored): it is how a query over a table of mixed entity types (read as
// Table[Entity]) turns each row into its own Go type. On an error it returns
// the zero T.
func Decode[T any](e Entity) (_ T, err error) {
	defer func() { err = withOp("Decode", err) }()
	var v T
	if out, ok := any(&v).(*Entity); ok {
		*out = e
		return v, nil
	}
	plan, err := structPlan[T]()
	if err != nil {
		return v, err
	}
	if err := plan.fromEntity(&e, reflect.ValueOf(&v).Elem(), &decodeState{op: "Decode"}); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

func structPlan[T any]() (*typePlan, error) {
	plan, err := planFor(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	if plan.pk == nil || plan.rk == nil {
		return nil, planError(plan.typ, "", "a table struct needs a string field tagged `table:\",pk\"` and one tagged `table:\",rk\"`")
	}
	return plan, nil
}

// ToEntity converts v to the property bag t stores for it, before
// client-side encryption: the properties t encrypts are plaintext here,
// and are encrypted when the Entity is written through [Table.Entities]
// (which shares t's encryption). It checks keys and limits as a write
// does, except the size encryption adds, which the write checks. Pattern
// packages that spread or spill a T's properties over other entities or
// blobs build on it.
func (t *Table[T]) ToEntity(v T) (_ Entity, err error) {
	defer func() { err = withOp("Table.ToEntity", err) }()
	if e, ok := any(v).(Entity); ok {
		return e, nil
	}
	rv := reflect.ValueOf(&v).Elem()
	e, err := t.plan.toEntity(rv, &encodeState{table: t.name, plaintext: true, cosmos: t.cosmos})
	if err != nil {
		return Entity{}, err
	}
	e.ETag = t.etagOf(&v)
	if t.plan.ts != nil {
		e.Timestamp = fieldByPath(rv, t.plan.ts).Interface().(time.Time)
	}
	return e, nil
}

// FromEntity converts a property bag read through [Table.Entities]
// (decrypted) to a T, as a read of t would. On an error it returns the
// zero T.
func (t *Table[T]) FromEntity(e Entity) (_ T, err error) {
	defer func() { err = withOp("Table.FromEntity", err) }()
	var v T
	if out, ok := any(&v).(*Entity); ok {
		*out = e
		return v, nil
	}
	if err := t.plan.fromEntity(&e, reflect.ValueOf(&v).Elem(), &decodeState{plaintext: true, table: t.name}); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}
