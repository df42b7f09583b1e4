package tablekit

import (
	"reflect"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// ToEntity converts a struct value to its property bag, exactly as a
// Table[T] would store it (without client-side encryption), checking the
// same keys and limits. An Entity converts to itself.
func ToEntity[T any](v T) (Entity, error) {
	e, err := toEntity(reflect.ValueOf(&v).Elem())
	return e, withOp("ToEntity", err)
}

// FromEntity converts a property bag to a struct value, as a Table[T] read
// would, without checking storage limits (nothing is stored): it is how a
// query over a table of mixed entity types (read as Table[Entity]) turns
// each row into its own Go type. On an error it returns the zero T.
func FromEntity[T any](e Entity) (T, error) {
	var v T
	if err := fromEntity(e, reflect.ValueOf(&v).Elem()); err != nil {
		var zero T
		return zero, withOp("FromEntity", err)
	}
	return v, nil
}

// toEntity is ToEntity of rv, an addressable struct or Entity value, naming
// no operation in its errors.
func toEntity(rv reflect.Value) (Entity, error) { return convertTo(rv, false) }

// convertTo is toEntity; with keysOptional, a struct without key fields
// converts too, to an Entity with empty keys (internal/core.EncodeBody).
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

// fromEntity is FromEntity into rv, an addressable struct or Entity value,
// naming no operation in its errors.
func fromEntity(e Entity, rv reflect.Value) error { return convertFrom(e, rv, false) }

// convertFrom is fromEntity; with keysOptional, into a struct without key
// fields too, which does not hold e's keys (internal/core.DecodeBody).
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

// toEntity converts v to the property bag t stores for it, before
// client-side encryption: the properties t encrypts are plaintext here,
// and are encrypted when the Entity is written through [Table.AsEntities]
// (which shares t's encryption). It checks keys and limits as a write
// does, except the size encryption adds, which the write checks. Pattern
// packages that spread or spill a T's properties over other entities or
// blobs build on it (internal/core.ToEntity). Its errors name no operation.
func (t *Table[T]) toEntity(v T) (Entity, error) {
	if e, ok := any(v).(Entity); ok {
		return e, nil
	}
	rv := reflect.ValueOf(&v).Elem()
	e, err := t.plan.toEntity(rv, &encodeState{table: t.name, plaintext: true, cosmos: t.onCosmos()})
	if err != nil {
		return Entity{}, err
	}
	e.ETag = t.etagOf(&v)
	if t.plan.ts != nil {
		e.Timestamp = fieldByPath(rv, t.plan.ts).Interface().(time.Time)
	}
	return e, nil
}

// fromEntity converts a property bag read through [Table.AsEntities]
// (decrypted) to a T, as a read of t would (internal/core.FromEntity). On
// an error it returns the zero T; its errors name no operation.
func (t *Table[T]) fromEntity(e Entity) (T, error) {
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
