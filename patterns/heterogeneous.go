package patterns

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/keys"
)

// The heterogeneous entity types pattern ("Work with heterogeneous entity
// types"): entities of several types share a table — often a partition, so
// that one entity group transaction can change several of them — and each
// row says what it is, either by an EntityType property or by a prefix of
// its RowKey (the guide shows both).

// defaultTypeProperty is the property that holds an entity's type value
// when the Registry names none (tablekit.Registry.TypeProperty).
const defaultTypeProperty = "EntityType"

// typeProperty returns the name of reg's type property.
func typeProperty(reg *tablekit.Registry) string {
	if reg.TypeProperty == "" {
		return defaultTypeProperty
	}
	return reg.TypeProperty
}

// validKind reports whether kind is a letter followed by letters, digits
// and underscores (a kind as tablekit.Register takes it, or a property
// name used in a filter).
func validKind(kind string) bool {
	for i, c := range kind {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return kind != ""
}

// decodeKind is reg.Decode for operation op.
func decodeKind(op string, reg *tablekit.Registry, e tablekit.Entity) (any, error) {
	v, err := reg.Decode(e)
	return v, registryOp(op, err)
}

// encodeRow is reg.Encode for operation op, which writes v as a row with
// its own keys: a registered type without key fields (an event type,
// whose store sets its keys) is refused.
func encodeRow(op string, reg *tablekit.Registry, v any) (tablekit.Entity, error) {
	if _, _, ok := reg.KindOf(v); ok {
		if _, err := codec.Encode(reflect.Zero(reflect.TypeOf(v)).Interface()); err != nil { // refuses a struct without key fields alone
			return tablekit.Entity{}, &tablekit.ValidationError{Op: op, Detail: fmt.Sprintf("type %T has no key fields (`table:\",pk\"`, `table:\",rk\"`): it can be an event of a stream, whose Store sets its row's keys, not a row written with its own keys", v), Err: tablekit.ErrInvalidInput}
		}
	}
	e, err := reg.Encode(v)
	return e, registryOp(op, err)
}

// registryOp names op, rather than the Registry's method, in the
// ValidationError or DecodeError of a Registry's Encode or Decode.
func registryOp(op string, err error) error {
	if err == nil {
		return nil
	}
	var ve *tablekit.ValidationError
	if errors.As(err, &ve) && strings.HasPrefix(ve.Op, "tablekit.Registry.") {
		ve.Op = op
	}
	var de *tablekit.DecodeError
	if errors.As(err, &de) && strings.HasPrefix(de.Op, "tablekit.Registry.") {
		de.Op = op
	}
	return withOp(op, err)
}

// Mixed is a table of heterogeneous entities: reads decode every row
// through a tablekit.Registry into its own Go type (or tablekit.Entity for kinds it
// does not know), writes take any registered value. Its verbs are
// tablekit.Table's, each one request: Get, Insert, Upsert and Update
// (which replace), Merge, Delete (with an ETag), DeleteIfExists, Query and
// Transaction; [QueryKind] reads one kind as its type. A Mixed is safe for
// concurrent use.
type Mixed struct {
	table *tablekit.Table[tablekit.Entity]
	reg   *tablekit.Registry
	keyed bool   // made by WithKey: every write carries key
	key   string // the idempotency key of a WithKey copy
}

// NewMixed returns a Mixed over table, a property-bag view
// (tablekit.Table.AsEntities of the application's table keeps its
// client-side encryption), decoding with reg.
func NewMixed(table *tablekit.Table[tablekit.Entity], reg *tablekit.Registry) (*Mixed, error) {
	if table == nil || reg == nil {
		return nil, invalid("patterns.NewMixed", "nil table or registry")
	}
	return &Mixed{table: table, reg: reg}, nil
}

// usable refuses a Mixed its constructor did not make.
func (m *Mixed) usable(op string) error {
	if m == nil || m.table == nil || m.reg == nil {
		return unusable(op, "NewMixed")
	}
	return nil
}

// WithKey returns a copy of m whose writes carry the idempotency key key:
// each write (a verb, or Transaction) is one entity group transaction that
// also inserts the key's record in the write's partition (the RowKey
// coord.ReservedPrefix+"key~"+key), so a write repeated with the same key,
// by a retry or by the caller, is not applied again. The copy shares
// everything else with m; m is unchanged.
//
// A key names one write: use one WithKey copy per logical write (a
// message id, say). The record keeps a fingerprint of the write's actions
// (verbs, keys and properties, not ETags). Within the record's life (24 h,
// coord's default KeyTTL; coord.Sweep deletes expired records) a repeat
// writes nothing: with the same actions (at stale ETags too) it returns a
// nil error, empty ETags (Transaction: one "" per action), false from
// DeleteIfExists; with other actions (a retry that recomputed them from
// state that changed since) it fails with an error matching
// coord.ErrKeyReused: the first write with the key was applied. A keyed
// write never ends in tablekit.ErrOutcomeUnknown
// after a lost answer: it reads the record (1 read) and sends again only
// when nothing was applied; applied, it returns a nil error and empty
// ETags (read the entities for their versions). Only when every read
// that settles it fails is the outcome unknown.
//
// Costs are the unkeyed write's, 1 transaction (a verb becomes a
// transaction of one action), but a keyed DeleteIfExists that finds
// nothing sends the record alone (1 more); a repeat costs the refused
// transaction and 1 read of the record. The record takes one of a transaction's 100 actions: 99
// are left to the caller. Refused before anything is sent: an empty key
// (tablekit.ErrInvalidInput), one that makes an invalid RowKey
// (tablekit.ErrInvalidKey), actions in several partitions, and RowKeys
// starting with coord.ReservedPrefix, tablekit's own rows, which Query
// leaves out. WithKey on a zero Mixed returns one that refuses every call.
func (m *Mixed) WithKey(key string) *Mixed {
	if m == nil {
		return nil
	}
	c := *m
	c.keyed, c.key = true, key
	return &c
}

// keyedTransaction sends conv, actions of one partition, with m's key's
// record in one transaction, and sends again while the record shows that
// a try whose answer was lost was not applied. It returns the actions'
// ETags ("" each when replayed, or applied after a lost answer). With
// missingOK, a delete refused because the entity is missing (a keyed
// DeleteIfExists) is sent again as the record alone, and missing says so.
func (m *Mixed) keyedTransaction(ctx context.Context, op string, conv []tablekit.Action[tablekit.Entity], missingOK bool) (etags []azcore.ETag, replayed, missing bool, err error) {
	if err := codec.WithOp(op, coord.CheckKey(m.table, m.key)); err != nil {
		return nil, false, false, err
	}
	if len(conv) == 0 {
		return nil, false, false, invalid(op, "no actions")
	}
	if len(conv) > coord.MaxKeyedActions {
		return nil, false, false, &tablekit.ValidationError{Op: op, Limit: "<= 100 actions per entity group transaction, one of them the idempotency record of WithKey", Size: len(conv) + 1, Unit: "actions", Detail: fmt.Sprintf("%d actions and the record", len(conv)), Err: tablekit.ErrTooLarge}
	}
	pk := conv[0].Value().PartitionKey
	for i, a := range conv {
		v := a.Value()
		if v.PartitionKey != pk {
			return nil, false, false, invalid(op, fmt.Sprintf("action %d: PartitionKey %q, action 0's %q: a transaction is one partition", i, v.PartitionKey, pk))
		}
		if strings.HasPrefix(v.RowKey, coord.ReservedPrefix) {
			return nil, false, false, &tablekit.ValidationError{Op: op, Entity: pk + "/" + v.RowKey, Property: "RowKey", Detail: fmt.Sprintf("action %d: RowKeys starting with %q are reserved for tablekit's own rows", i, coord.ReservedPrefix), Err: tablekit.ErrInvalidKey}
		}
	}
	n := len(conv)
	kx := coord.NewKeyedTx(m.table, pk, m.key, coord.FingerprintActions(m.table, conv), nil)
	policy := tablekit.RetryPolicy(timing.Policy(tablekit.RetryPolicy{}).WithDefaults(timing.Policy(tablekit.RetryPolicy(timing.Conflict))))
	for range timing.Policy(policy).Attempts(ctx) {
		var o coord.Outcome
		etags, o, err = kx.Send(ctx, conv...)
		var te *tablekit.TransactionError
		switch {
		case missingOK && errors.As(err, &te) && te.Index == 0 && errors.Is(err, tablekit.ErrNotFound):
			conv, missing = nil, true // nothing to delete: record the key alone
			continue
		case o == coord.NotApplied:
			continue // nothing was applied: send again
		case err != nil:
			return nil, false, false, err
		}
		if etags == nil || missing {
			etags = make([]azcore.ETag, n)
		}
		return etags, o == coord.Replayed, missing && o != coord.Replayed, nil
	}
	if ctx.Err() != nil {
		return nil, false, false, ctx.Err()
	}
	return nil, false, false, fmt.Errorf("not applied: gave up after %d tries; the last: %w", policy.MaxAttempts, err)
}

// keyedWrite is a verb of a WithKey copy: a keyed transaction of a.
func (m *Mixed) keyedWrite(ctx context.Context, op string, a tablekit.Action[tablekit.Entity]) (azcore.ETag, error) {
	etags, _, _, err := m.keyedTransaction(ctx, op, []tablekit.Action[tablekit.Entity]{a}, false)
	if err != nil {
		return "", withOp(op, err)
	}
	return etags[0], nil
}

// Get reads one entity and decodes it into its type; the ETag is in the
// type's etag field when it has one. It returns an error matching
// tablekit.ErrNotFound when the entity does not exist.
func (m *Mixed) Get(ctx context.Context, pk, rk string) (any, error) {
	const op = "patterns.Mixed.Get"
	if err := m.usable(op); err != nil {
		return nil, err
	}
	e, err := m.table.Get(ctx, pk, rk)
	if err != nil {
		return nil, withOp(op, err)
	}
	return decodeKind(op, m.reg, e)
}

// Insert inserts v, a value of a registered type, and returns its ETag; it
// fails with an error matching tablekit.ErrAlreadyExists when the entity
// exists.
func (m *Mixed) Insert(ctx context.Context, v any) (azcore.ETag, error) {
	const op = "patterns.Mixed.Insert"
	if err := m.usable(op); err != nil {
		return "", err
	}
	e, err := encodeRow(op, m.reg, v)
	if err != nil {
		return "", err
	}
	if m.keyed {
		return m.keyedWrite(ctx, op, tablekit.InsertAction(e))
	}
	etag, err := m.table.Insert(ctx, e)
	return etag, withOp(op, err)
}

// Upsert inserts v, a value of a registered type, or replaces whatever
// version is stored, and returns the new ETag.
func (m *Mixed) Upsert(ctx context.Context, v any) (azcore.ETag, error) {
	const op = "patterns.Mixed.Upsert"
	if err := m.usable(op); err != nil {
		return "", err
	}
	e, err := encodeRow(op, m.reg, v)
	if err != nil {
		return "", err
	}
	if m.keyed {
		return m.keyedWrite(ctx, op, tablekit.UpsertAction(e))
	}
	etag, err := m.table.Upsert(ctx, e)
	return etag, withOp(op, err)
}

// Update replaces the stored entity with v's keys if its ETag is still
// etag (azcore.ETagAny: any version), and returns the new ETag; see
// tablekit.Table.Update.
func (m *Mixed) Update(ctx context.Context, v any, etag azcore.ETag) (azcore.ETag, error) {
	const op = "patterns.Mixed.Update"
	if err := m.usable(op); err != nil {
		return "", err
	}
	e, err := encodeRow(op, m.reg, v)
	if err != nil {
		return "", err
	}
	if m.keyed {
		if etag == "" {
			return "", invalid(op, "Update needs the ETag read with the entity (or azcore.ETagAny)")
		}
		return m.keyedWrite(ctx, op, tablekit.UpdateAction(e, etag))
	}
	etag, err = m.table.Update(ctx, e, etag)
	return etag, withOp(op, err)
}

// Merge merges v's properties into the stored entity with v's keys, and
// returns the new ETag; etag says which version it may merge into, as for
// tablekit.Table.Merge ("": insert or merge).
func (m *Mixed) Merge(ctx context.Context, v any, etag azcore.ETag) (azcore.ETag, error) {
	const op = "patterns.Mixed.Merge"
	if err := m.usable(op); err != nil {
		return "", err
	}
	e, err := encodeRow(op, m.reg, v)
	if err != nil {
		return "", err
	}
	if m.keyed {
		return m.keyedWrite(ctx, op, tablekit.MergeAction(e, etag))
	}
	etag, err = m.table.Merge(ctx, e, etag)
	return etag, withOp(op, err)
}

// Delete deletes an entity if its ETag is still etag (azcore.ETagAny: any
// version); see tablekit.Table.Delete.
func (m *Mixed) Delete(ctx context.Context, pk, rk string, etag azcore.ETag) error {
	const op = "patterns.Mixed.Delete"
	if err := m.usable(op); err != nil {
		return err
	}
	if m.keyed {
		if etag == "" {
			return invalid(op, "Delete needs the ETag read with the entity (or azcore.ETagAny)")
		}
		_, err := m.keyedWrite(ctx, op, tablekit.DeleteAction(tablekit.Entity{PartitionKey: pk, RowKey: rk}, etag))
		return err
	}
	return withOp(op, m.table.Delete(ctx, pk, rk, etag))
}

// DeleteIfExists deletes an entity whatever its version and reports
// whether it existed; see tablekit.Table.DeleteIfExists.
func (m *Mixed) DeleteIfExists(ctx context.Context, pk, rk string) (existed bool, err error) {
	const op = "patterns.Mixed.DeleteIfExists"
	if err := m.usable(op); err != nil {
		return false, err
	}
	if m.keyed {
		_, replayed, missing, err := m.keyedTransaction(ctx, op, []tablekit.Action[tablekit.Entity]{tablekit.DeleteAction(tablekit.Entity{PartitionKey: pk, RowKey: rk}, azcore.ETagAny)}, true)
		return err == nil && !replayed && !missing, withOp(op, err)
	}
	existed, err = m.table.DeleteIfExists(ctx, pk, rk)
	return existed, withOp(op, err)
}

// Query returns the entities matching f, each decoded into its type: one
// query for a partition of mixed kinds. Use a type switch on the values.
// The idempotency records of WithKey (RowKeys starting with
// coord.ReservedPrefix) are left out.
func (m *Mixed) Query(ctx context.Context, f tablekit.Filter, opts *tablekit.QueryOptions) iter.Seq2[any, error] {
	const op = "patterns.Mixed.Query"
	return func(yield func(any, error) bool) {
		if err := m.usable(op); err != nil {
			yield(nil, err)
			return
		}
		var o tablekit.QueryOptions
		if opts != nil {
			o = *opts
		}
		limit := max(o.Limit, 0) // Limit counts the entities yielded, not the records skipped
		if o.Limit > 0 {
			o.Limit = 0
		}
		n := 0
		for e, err := range m.table.Query(ctx, f, &o) {
			if err == nil && strings.HasPrefix(e.RowKey, coord.ReservedPrefix) {
				continue // tablekit's own row (an idempotency record)
			}
			var v any
			if err == nil {
				v, err = decodeKind(op, m.reg, e)
			}
			err = withOp(op, err)
			if !yield(v, err) || err != nil {
				return
			}
			if n++; limit > 0 && n >= limit {
				return
			}
		}
	}
}

// kindFilter returns the filter of the entities of one kind (any version)
// in partition pk: a RowKey prefix range with KindInRowKey, a filter on
// the type property otherwise.
func (m *Mixed) kindFilter(op, pk, kind string) (tablekit.Filter, error) {
	if !validKind(kind) {
		return tablekit.Filter{}, &tablekit.ValidationError{Op: op, Property: "kind", Detail: fmt.Sprintf("%q is not a valid kind (a letter followed by letters, digits and _)", kind), Err: tablekit.ErrInvalidInput}
	}
	if m.reg.KindInRowKey {
		lo, hi, err := keys.TupleRange(kind)
		if err != nil {
			return tablekit.Filter{}, &tablekit.ValidationError{Op: op, Property: "kind", Detail: err.Error(), Err: tablekit.ErrInvalidKey}
		}
		return tablekit.RowKeyRange(pk, lo, hi), nil
	}
	p := typeProperty(m.reg)
	if !validKind(p) {
		return tablekit.Filter{}, &tablekit.ValidationError{Op: op, Property: p, Detail: "the type property's name is not an identifier", Err: tablekit.ErrInvalidInput}
	}
	return tablekit.Where("PartitionKey eq ? and ("+p+" eq ? or ("+p+" ge ? and "+p+" lt ?))", pk, kind, kind+".v", kind+".w"), nil
}

// QueryKind returns the entities of partition pk stored as T's kind and
// version, decoded as T: with KindInRowKey one RowKey prefix range, else a
// filter on the type property. Rows of the kind with another version are
// not T's and are skipped.
func QueryKind[T any](ctx context.Context, m *Mixed, pk string, opts *tablekit.QueryOptions) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		const op = "patterns.QueryKind"
		if err := m.usable(op); err != nil {
			yield(zero, err)
			return
		}
		kind, version, ok := m.reg.KindOf(zero)
		if !ok {
			yield(zero, &tablekit.ValidationError{Op: op, Detail: fmt.Sprintf("type %s is not registered (tablekit.Register)", reflect.TypeFor[T]()), Err: tablekit.ErrInvalidInput})
			return
		}
		f, err := m.kindFilter(op, pk, kind)
		if err != nil {
			yield(zero, err)
			return
		}
		for e, err := range m.table.Query(ctx, f, opts) {
			if err != nil {
				yield(zero, withOp(op, err))
				return
			}
			if k, v, ok := m.reg.Kind(e); !ok || k != kind || v != version {
				continue
			}
			t, err := codec.DecodeBody[T](e)
			if !yield(t, withOp(op, err)) || err != nil {
				return
			}
		}
	}
}

// Transaction runs actions on values of registered types (or
// tablekit.Entity) as one entity group transaction: several kinds of
// entity of one partition change atomically, e.g.
//
//	etags, err := m.Transaction(ctx, tablekit.InsertAction[any](emp), tablekit.MergeAction[any](dept, dept.ETag))
//
// As tablekit.Table.Transaction, it returns each action's new ETag, in
// the order of the actions ("" for a delete), so that the caller can
// continue from them without reading again.
func (m *Mixed) Transaction(ctx context.Context, actions ...tablekit.Action[any]) ([]azcore.ETag, error) {
	const op = "patterns.Mixed.Transaction"
	if err := m.usable(op); err != nil {
		return nil, err
	}
	conv := make([]tablekit.Action[tablekit.Entity], len(actions))
	for i, a := range actions {
		c, err := tablekit.MapAction(a, func(v any) (tablekit.Entity, error) { return encodeRow(op, m.reg, v) })
		if err != nil {
			return nil, withOp(op, annotate(err, fmt.Sprintf("action %d", i)))
		}
		conv[i] = c
	}
	if m.keyed {
		etags, _, _, err := m.keyedTransaction(ctx, op, conv, false)
		return etags, withOp(op, err)
	}
	etags, err := m.table.Transaction(ctx, conv...)
	return etags, withOp(op, err)
}
