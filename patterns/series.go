package patterns

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/keys"
)

// The data series pattern ("Store complete data series in a single entity
// to minimize the number of requests you make"): one entity holds a whole
// series, e.g. 24 hourly counts in properties H00..H23, read in one point
// query and updated a slot at a time.

// SeriesOptions configures a [Series]. A nil *SeriesOptions means
// defaults: 24 slots named H00..H23.
type SeriesOptions struct {
	// Prefix starts every slot's property name (default "H").
	Prefix string
	// Slots is the number of slots (default 24). An entity holds at most
	// 252 properties: a longer series needs patterns.Wide, or a blob.
	Slots int
	// Width is the number of digits of the slot number in property names
	// (default: enough for Slots-1, at least 2).
	Width int
}

// Series stores data series of int64 values (counts, sums, gauges), each
// series in one entity with one property per slot (Prefix and the slot
// number: H00..H23). Get reads a series in one point query; Modify and Add
// merge only the changed slots, conditional on the ETag read, and start
// again after a jittered pause when another writer got there first (the
// Table's TableOptions.Retry; for many writers of one series, raise its
// MaxAttempts), so concurrent increments are never lost. Absent slots read
// as 0. A Series is safe for concurrent use.
type Series struct {
	table *tablekit.Table[tablekit.Entity]
	names []string
	retry tablekit.RetryPolicy
}

// NewSeries returns a Series storing its entities in table, a property-bag
// view (tablekit.Table.AsEntities of the application's table keeps its
// client-side encryption).
func NewSeries(table *tablekit.Table[tablekit.Entity], opts *SeriesOptions) (*Series, error) {
	const op = "patterns.NewSeries"
	if table == nil {
		return nil, invalid(op, "nil table")
	}
	o := SeriesOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = "H"
	}
	if o.Slots == 0 {
		o.Slots = 24
	}
	if o.Slots < 0 {
		return nil, &tablekit.ValidationError{Op: op, Property: "Slots", Size: o.Slots, Detail: "negative slot count", Err: tablekit.ErrInvalidInput}
	}
	if o.Slots > limits.CustomProperties {
		err := seriesTooLong(table.Name(), o.Slots)
		err.Op = op
		return nil, err
	}
	if o.Width == 0 {
		o.Width = max(2, len(fmt.Sprint(o.Slots-1)))
	}
	s := &Series{table: table, retry: table.Retry()}
	for i := range o.Slots {
		n, err := keys.UintN(uint64(i), o.Width)
		if err != nil {
			return nil, &tablekit.ValidationError{Op: op, Property: "Width", Size: o.Width, Detail: "the slot numbers do not fit: " + err.Error(), Err: tablekit.ErrInvalidInput}
		}
		s.names = append(s.names, o.Prefix+n)
	}
	// Check the property names now rather than at the first write.
	probe := tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{}}
	for _, name := range s.names {
		probe.Properties[name] = int64(0)
	}
	if _, err := codec.Encode(probe); err != nil {
		return nil, withOp(op, err)
	}
	return s, nil
}

// usable refuses a Series its constructor did not make.
func (s *Series) usable(op string) error {
	if s == nil || s.table == nil {
		return unusable(op, "NewSeries")
	}
	return nil
}

// seriesTooLong is the error of a series wider than one entity.
func seriesTooLong(entity string, slots int) *tablekit.ValidationError {
	return &tablekit.ValidationError{
		Entity: entity,
		Limit:  fmt.Sprintf("<= %d custom properties per entity", limits.CustomProperties),
		Size:   slots,
		Detail: "a series needs one property per slot: store a longer series as a wide entity (patterns.Wide) or in a blob (patterns.Large)",
		Err:    tablekit.ErrTooLarge,
	}
}

func (s *Series) badSlot(op string, i int) error {
	return &tablekit.ValidationError{Op: op, Entity: s.table.Name(), Property: "slot", Limit: fmt.Sprintf("0 <= slot < %d", len(s.names)), Size: i, Detail: "slot out of range", Err: tablekit.ErrInvalidInput}
}

// Get reads a whole series in one point query. It returns an error
// matching tablekit.ErrNotFound when the series has never been written.
func (s *Series) Get(ctx context.Context, pk, rk string) ([]int64, error) {
	const op = "patterns.Series.Get"
	if err := s.usable(op); err != nil {
		return nil, err
	}
	e, err := s.table.Get(ctx, pk, rk)
	if err != nil {
		return nil, withOp(op, err)
	}
	v, err := s.values(&e)
	return v, withOp(op, err)
}

// values reads the slots of an entity.
func (s *Series) values(e *tablekit.Entity) ([]int64, error) {
	out := make([]int64, len(s.names))
	for i, name := range s.names {
		switch v := e.Properties[name].(type) {
		case nil:
		case int64:
			out[i] = v
		case int32:
			out[i] = int64(v)
		default:
			return nil, &tablekit.DecodeError{Entity: e.PartitionKey + "/" + e.RowKey, Property: name, Detail: fmt.Sprintf("a series slot holds a %T, not an integer", v)}
		}
	}
	return out, nil
}

// Add adds delta to one slot (0-based) and returns the slot's new value: a
// Modify of that slot, with its cost. To set a slot, Modify it.
func (s *Series) Add(ctx context.Context, pk, rk string, slot int, delta int64) (int64, error) {
	const op = "patterns.Series.Add"
	if err := s.usable(op); err != nil {
		return 0, err
	}
	if slot < 0 || slot >= len(s.names) {
		return 0, s.badSlot(op, slot)
	}
	values, err := s.modify(ctx, op, pk, rk, func(v []int64) error {
		v[slot] += delta
		return nil
	})
	if err != nil {
		return 0, err
	}
	return values[slot], nil
}

// Modify changes a series by a function, the read-modify-write of
// optimistic concurrency: it reads the series (all zeros if it does not
// exist yet: like tablekit.Table.Modify, Modify creates the entity), lets
// fn change any of its values, and writes the changed slots with a merge
// conditional on the ETag read (an insert for a new series). When another
// writer changed the series in between, it waits a random, growing pause,
// reads again and calls fn again (the Table's TableOptions.Retry), so fn must
// only change the slice. It returns the values stored, and fn's error as is
// (nothing is then written). Cost: one point query and one merge (or
// insert), none when nothing changes, and one more of each per conflict.
func (s *Series) Modify(ctx context.Context, pk, rk string, fn func(values []int64) error) ([]int64, error) {
	const op = "patterns.Series.Modify"
	if err := s.usable(op); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, invalid(op, "nil function")
	}
	return s.modify(ctx, op, pk, rk, fn)
}

func (s *Series) modify(ctx context.Context, op, pk, rk string, fn func(values []int64) error) ([]int64, error) {
	var last error
	for range timing.Policy(s.retry).Attempts(ctx) {
		e, err := s.table.Get(ctx, pk, rk)
		exists := err == nil
		if err != nil && !errors.Is(err, tablekit.ErrNotFound) {
			return nil, withOp(op, err)
		}
		var old []int64
		if exists {
			if old, err = s.values(&e); err != nil {
				return nil, withOp(op, err)
			}
		} else {
			old = make([]int64, len(s.names))
		}
		values := slices.Clone(old)
		if err := fn(values); err != nil {
			return nil, err
		}
		if len(values) != len(s.names) {
			return nil, &tablekit.ValidationError{Op: op, Entity: pk + "/" + rk, Detail: "the function changed the length of the series", Err: tablekit.ErrInvalidInput}
		}
		w := tablekit.Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{}}
		for i, v := range values {
			if v != old[i] {
				w.Properties[s.names[i]] = v
			}
		}
		if exists && len(w.Properties) == 0 {
			return values, nil
		}
		if exists {
			// A merge sends only the changed slots: count what the
			// entity will hold (Azurite does not enforce the limit).
			total := len(e.Properties)
			for name := range w.Properties {
				if _, ok := e.Properties[name]; !ok {
					total++
				}
			}
			if total > limits.CustomProperties {
				err := seriesTooLong(pk+"/"+rk, len(s.names))
				err.Op = op
				err.Size = total
				err.Detail = fmt.Sprintf("the entity would hold %d properties, %d of them not slots of the series; ", total, total-len(s.names)) + err.Detail
				return nil, err
			}
		}
		if exists {
			_, err = s.table.Merge(ctx, w, e.ETag)
		} else {
			_, err = s.table.Insert(ctx, w)
		}
		if err == nil {
			return values, nil
		}
		if errors.Is(err, tablekit.ErrTooLarge) {
			return nil, withOp(op, fmt.Errorf("%w (%s)", err, seriesTooLong(pk+"/"+rk, len(s.names)).Detail))
		}
		if !isConflict(err) {
			return nil, withOp(op, err)
		}
		last = err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, withOp(op, last)
}
