package tablekit

import (
	"context"
	"fmt"
	"iter"

	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/keys"
)

// exists reports whether the entity with these keys exists. It costs one
// transaction and reads only the keys (as Count of a PointQuery does).
func (t *Table[T]) exists(ctx context.Context, pk, rk string) (bool, error) {
	if err := t.usable(); err != nil {
		return false, err
	}
	if err := t.checkKeys(pk, rk); err != nil {
		return false, withOp("Exists", err)
	}
	found := false
	err := t.scan(ctx, "Exists", PointQuery(pk, rk), &QueryOptions{PageSize: 1, Reserved: true}, "RowKey", func([]byte) (bool, error) {
		found = true
		return false, nil
	})
	return found, err
}

// Count returns how many entities match f, reading only their keys: one
// transaction per 1,000 entities (a table scan when f does not name a
// partition; see the Meter for what it cost). tablekit's own rows
// (QueryOptions.Reserved) are not counted: transfer.Count counts every row.
func (t *Table[T]) Count(ctx context.Context, f Filter) (int, error) {
	n := 0
	err := t.scan(ctx, "Count", f, nil, "RowKey", func([]byte) (bool, error) {
		n++
		return true, nil
	})
	return n, err
}

// Collect gathers the values of seq (a [Table.Query] or [QueryAs]) into a
// slice, stopping at the first error. It holds at most limit values (0
// means 10,000): when seq has more, it returns the first limit
// values and an error matching [ErrTooLarge], so that an unexpectedly large
// result is an error, not an exhausted heap. Use QueryOptions.Limit to ask
// for at most n values on purpose.
func Collect[V any](seq iter.Seq2[V, error], limit int) ([]V, error) {
	if seq == nil {
		return nil, &ValidationError{Op: "Collect", Detail: "nil sequence", Err: ErrInvalidInput}
	}
	if limit < 0 {
		return nil, &ValidationError{Op: "Collect", Detail: fmt.Sprintf("negative limit %d", limit), Err: ErrInvalidInput}
	}
	if limit == 0 {
		limit = limits.CollectLimit
	}
	var out []V
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		if len(out) == limit {
			return out, &ValidationError{Op: "Collect", Limit: fmt.Sprintf("<= %d values", limit), Detail: "the query has more results than the limit", Err: ErrTooLarge}
		}
		out = append(out, v)
	}
	return out, nil
}

// QueryAs is [Table.Query] with a projection: it reads only the properties
// of P (a struct with `table` tags, whose fields name the properties to
// read; keys, etag and timestamp fields are filled too) and decodes each
// entity into a P. Encrypted properties decrypt as they do for T.
func QueryAs[P, T any](ctx context.Context, t *Table[T], f Filter, opts *QueryOptions) iter.Seq2[P, error] {
	return func(yield func(P, error) bool) {
		var zero P
		var c *codec.Codec[T]
		if t != nil {
			c = t.codec
		}
		pc, sel, err := codec.Projection[P](c)
		if err != nil {
			yield(zero, withOp("QueryAs", err))
			return
		}
		err = t.scan(ctx, "QueryAs", f, opts, sel, func(obj []byte) (bool, error) {
			var v P
			if err := pc.Decode("QueryAs", obj, &v); err != nil {
				return false, err
			}
			return yield(v, nil), nil
		})
		if err != nil {
			yield(zero, err)
		}
	}
}

// compareKeys compares two entities' keys in the service's order:
// PartitionKey, then RowKey, each by UTF-16 code units.
func compareKeys(pk1, rk1, pk2, rk2 string) int {
	if c := keys.Compare(pk1, pk2); c != 0 {
		return c
	}
	return keys.Compare(rk1, rk2)
}
