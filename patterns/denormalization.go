package patterns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/timing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
)

// The denormalization pattern ("Combine related data together in a single
// entity to enable you to retrieve all the data you need with a single
// point query"): e.g. a department entity keeps a copy of its manager's
// name and email, so that one point query answers "who manages Sales and
// how do I reach them". The copy must change when the original does: with
// both in one partition, one entity group transaction updates them
// together, so no reader ever sees them disagree.

// DenormalizeOptions configures a [Denormalizer]. A nil
// *DenormalizeOptions means defaults.
type DenormalizeOptions struct {
	// Registry, when set, encodes sources through it (setting their type
	// property), for a table of heterogeneous entities (see Mixed).
	Registry *tablekit.Registry
}

// Denormalizer writes source entities of type S together with copies of
// some of their properties held by other entities of the same partition,
// in one entity group transaction. The copies are renamed as the mapping
// says: {"Name": "ManagerName", "Email": "ManagerEmail"} copies the
// source's Name into the copy's ManagerName. S is a struct as for
// [tablekit.Table], or tablekit.Entity. A Write that must re-read copies
// retries as the Table's TableOptions.Retry says. A Denormalizer is safe
// for concurrent use.
type Denormalizer[S any] struct {
	table   *tablekit.Table[tablekit.Entity]
	mapping map[string]string
	sources []string // sorted source property names
	encode  func(S) (tablekit.Entity, error)
	retry   tablekit.RetryPolicy
}

// NewDenormalizer returns a Denormalizer writing to table, a property-bag
// view (tablekit.Table.AsEntities of the application's table keeps its
// client-side encryption), with mapping (source property -> property of
// the copy).
func NewDenormalizer[S any](table *tablekit.Table[tablekit.Entity], mapping map[string]string, opts *DenormalizeOptions) (*Denormalizer[S], error) {
	const op = "patterns.NewDenormalizer"
	if table == nil || len(mapping) == 0 {
		return nil, invalid(op, "nil table or empty mapping")
	}
	d := &Denormalizer[S]{table: table, mapping: maps.Clone(mapping), retry: table.Retry()}
	d.sources = slices.Sorted(maps.Keys(mapping))
	seen := map[string]string{}
	for _, src := range d.sources {
		dst := mapping[src]
		if !validKind(src) || !validKind(dst) {
			return nil, &tablekit.ValidationError{Op: op, Property: src + " -> " + dst, Detail: "property names are identifiers (letters, digits and _)", Err: tablekit.ErrInvalidInput}
		}
		if other, dup := seen[dst]; dup {
			return nil, &tablekit.ValidationError{Op: op, Property: dst, Detail: fmt.Sprintf("both %s and %s are copied into %s", other, src, dst), Err: tablekit.ErrInvalidInput}
		}
		seen[dst] = src
	}
	d.encode = codec.Encode[S]
	if opts != nil && opts.Registry != nil {
		reg := opts.Registry
		d.encode = func(v S) (tablekit.Entity, error) { return encodeRow("patterns.Denormalizer.Write", reg, v) }
	}
	var zero S
	if _, err := codec.Encode(zero); err != nil {
		return nil, withOp(op, err)
	}
	return d, nil
}

// Write stores src (replacing it; conditional on its ETag when S has an
// etag field that is set) and copies its mapped properties into the
// entities of src's partition with the given RowKeys, all in one entity
// group transaction: all of it happens, or none. The copies must exist
// (else the transaction fails with an error matching tablekit.ErrNotFound)
// and keep their other properties.
//
// When src lacks a mapped property, its copy must be removed, which a merge
// cannot do: Write then reads the copies (one query) and replaces them,
// conditional on their ETags, starting again if one changed meanwhile.
//
// Write returns src's new ETag (from the transaction's answer: no read),
// from which the caller can continue optimistically. Cost: one entity group
// transaction, plus one query when a copy must lose a property.
func (d *Denormalizer[S]) Write(ctx context.Context, src S, copyRowKeys ...string) (azcore.ETag, error) {
	const op = "patterns.Denormalizer.Write"
	if d == nil || d.table == nil {
		return "", unusable(op, "NewDenormalizer")
	}
	etag, err := d.write(ctx, src, copyRowKeys)
	return etag, withOp(op, err)
}

func (d *Denormalizer[S]) write(ctx context.Context, src S, copyRowKeys []string) (azcore.ETag, error) {
	e, err := d.encode(src)
	if err != nil {
		return "", err
	}
	if len(copyRowKeys)+1 > limits.TransactionActions {
		return "", &tablekit.ValidationError{Entity: e.PartitionKey + "/" + e.RowKey, Limit: "<= 99 copies (one transaction)", Size: len(copyRowKeys), Detail: "too many copies for one entity group transaction; keep fewer copies or use eventually consistent updates (package archive)", Err: tablekit.ErrTooLarge}
	}
	source := tablekit.UpsertAction(e)
	if e.ETag != "" {
		source = tablekit.UpdateAction(e, e.ETag)
	}
	copied := make(map[string]any, len(d.mapping))
	var absent []string
	for _, name := range d.sources {
		if v, ok := e.Properties[name]; ok && v != nil {
			copied[d.mapping[name]] = v
		} else {
			absent = append(absent, d.mapping[name])
		}
	}
	if len(absent) == 0 {
		actions := []tablekit.Action[tablekit.Entity]{source}
		for _, rk := range copyRowKeys {
			c := tablekit.Entity{PartitionKey: e.PartitionKey, RowKey: rk, Properties: copied}
			actions = append(actions, tablekit.MergeAction(c, azcore.ETagAny))
		}
		return sourceETag(d.table.Transaction(ctx, actions...))
	}
	var last error
	for range timing.Policy(d.retry).Attempts(ctx) {
		copies, err := d.readCopies(ctx, e.PartitionKey, copyRowKeys)
		if err != nil {
			return "", err
		}
		actions := []tablekit.Action[tablekit.Entity]{source}
		for _, c := range copies {
			maps.Copy(c.Properties, copied)
			for _, name := range absent {
				delete(c.Properties, name)
			}
			actions = append(actions, tablekit.UpdateAction(c, c.ETag))
		}
		etags, err := d.table.Transaction(ctx, actions...)
		if last = err; err == nil || !isConflict(err) || failedAction(err) == 0 {
			return sourceETag(etags, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return "", last
}

// sourceETag returns the ETag of the first action of a transaction, the
// source's.
func sourceETag(etags []azcore.ETag, err error) (azcore.ETag, error) {
	if err != nil || len(etags) == 0 {
		return "", err
	}
	return etags[0], nil
}

// failedAction returns the index of the action a transaction failed on,
// -1 when unknown. A conflict on the source (index 0) is the caller's to
// resolve: its ETag is stale.
func failedAction(err error) int {
	var te *tablekit.TransactionError
	if errors.As(err, &te) {
		return te.Index
	}
	return -1
}

// readCopies reads the copy entities in one query, in the order given.
func (d *Denormalizer[S]) readCopies(ctx context.Context, pk string, rks []string) ([]tablekit.Entity, error) {
	if len(rks) == 0 {
		return nil, nil
	}
	fs := make([]tablekit.Filter, len(rks))
	for i, rk := range rks {
		fs[i] = tablekit.Where("RowKey eq ?", rk)
	}
	found := make(map[string]tablekit.Entity, len(rks))
	for e, err := range d.table.Query(ctx, tablekit.And(tablekit.PartitionEq(pk), tablekit.Or(fs...)), nil) {
		if err != nil {
			return nil, err
		}
		if e.Properties == nil {
			e.Properties = map[string]any{}
		}
		found[e.RowKey] = e
	}
	out := make([]tablekit.Entity, len(rks))
	for i, rk := range rks {
		e, ok := found[rk]
		if !ok {
			return nil, notFound("denormalized copy", pk, rk)
		}
		out[i] = e
	}
	return out, nil
}
