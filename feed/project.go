package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/timing"
)

// FoldedProperty names the property of a view row in which a Projector
// records, as a JSON object, the last version of each stream folded into
// the row, by the stream's table and key
// ({"devstoreaccount1/orders/s~order-17~": 42}). It is kept beside the
// view's own properties: fold functions never see it.
const FoldedProperty = "_folded"

// Row names a row of a Projector's view table: the keys of one entity.
type Row struct {
	PartitionKey, RowKey string
}

// Projector maintains a view table from the feed's changes: each change
// goes to the view rows its key function names (none, one, or several:
// a change that moves an item from one group to another names both),
// and fold updates each of them, once per event: each row records the
// last version it folded of each stream (FoldedProperty, by the stream's
// table and key, so that streams of the same id in two tables are kept
// apart), a change at or below it is skipped, and the row is written
// conditionally on the ETag read. Use its Handle as a Subscription's.
// Make one with NewProjector; it is safe for concurrent use. The zero
// Projector refuses every call with an error matching
// tablekit.ErrInvalidInput.
//
// A view table belongs to one Projector (one subscription): the record of
// what a row folded is per stream, not per projector, so two Projectors
// writing the same rows would skip each other's changes for good (one
// that fails on version 2 while the other folds version 3 into the row
// finds version 2 folded when it tries again). One Projector may be fed
// by several feeds (a Subscription of each one's relay).
type Projector[V any] struct {
	t     *tablekit.Table[V]
	e     *tablekit.Table[tablekit.Entity] // t.AsEntities(): the rows, FoldedProperty included
	key   func(Change) []Row
	fold  func(view *V, c Change) error
	retry tablekit.RetryPolicy
}

// NewProjector returns a Projector of the view table t, whose rows are V
// values: a table struct (its fields tagged `table:",pk"` and `table:",rk"`
// hold the row's keys), or tablekit.Entity for a property bag. key names
// the view rows a change goes to (none: the change is not for this view),
// and fold updates one of them with the change: view is the row as t's
// codec decodes it (typed, decrypted when t encrypts), with only its keys
// set for a new row (an Entity's Properties empty, not nil), and fold must
// not change the keys. An error of fold, or a row that does not decode
// into V, fails Handle: nothing is written. fold must be deterministic in
// its arguments, and is called again for the same change and row when the
// row changed meanwhile; the table's retry policy
// (tablekit.TableOptions.Retry) paces those tries. A relay calls Handle,
// so key and fold, concurrently for different streams: they must be safe
// for concurrent use. It sends nothing.
//
// The row is written whole (a replace) with FoldedProperty beside V's
// properties: a property of the row V has no field for is dropped.
func NewProjector[V any](t *tablekit.Table[V], key func(c Change) []Row, fold func(view *V, c Change) error) (*Projector[V], error) {
	const op = "NewProjector"
	switch {
	case t == nil:
		return nil, invalid(op, "t", "nil table")
	case key == nil:
		return nil, invalid(op, "key", "nil key function")
	case fold == nil:
		return nil, invalid(op, "fold", "nil fold function")
	}
	return &Projector[V]{t: t, e: t.AsEntities(), key: key, fold: fold, retry: t.Retry()}, nil
}

// Handle folds change c into each of its view rows in turn (in the order
// key returned them), skipping a row that has folded c's version of c's
// stream already: after a failure halfway, the relay hands c over again
// and the rows folded before the failure skip it. A row with an empty
// PartitionKey is refused (the change is not folded anywhere).
// Costs, per row: 1 read, + 1 write when folded (+ 1 read and 1 write
// more per race lost with another writer of the row).
func (p *Projector[V]) Handle(ctx context.Context, c Change) error {
	const op = "Projector.Handle"
	if p == nil || p.t == nil {
		return invalid(op, "", "zero Projector: make one with feed.NewProjector")
	}
	rows := p.key(c)
	for i, row := range rows {
		if row.PartitionKey == "" {
			return invalid(op, "key", fmt.Sprintf("row %d of %d for stream %s version %d has an empty PartitionKey (return no rows for a change not for this view)", i, len(rows), name(c.Stream), c.Version))
		}
	}
	for _, row := range rows {
		if err := p.foldInto(ctx, row, c); err != nil {
			return err
		}
	}
	return nil
}

// foldKey returns the key of change c's stream in FoldedProperty: its
// table (c.Source), "/" and its stream key; the stream key alone when
// c.Source is empty, which is also how rows written before the table was
// part of the key hold it.
func foldKey(c Change) string {
	if c.Source == "" {
		return streamKey(c.Stream)
	}
	return c.Source + "/" + streamKey(c.Stream)
}

// foldInto folds change c into view row row unless the row has folded c's
// version of c's stream already.
func (p *Projector[V]) foldInto(ctx context.Context, row Row, c Change) error {
	const op = "Projector.Handle"
	pk, rk := row.PartitionKey, row.RowKey
	fk, old := foldKey(c), streamKey(c.Stream)
	var last error
	for range timing.Policy(p.retry).Attempts(ctx) {
		e, err := p.e.Get(ctx, pk, rk)
		isNew := errors.Is(err, tablekit.ErrNotFound)
		if err != nil && !isNew {
			return fmt.Errorf("feed: %s: reading view row %s/%s: %w", op, pk, rk, err)
		}
		folded := map[string]int64{}
		if s, ok := e.Properties[FoldedProperty].(string); ok {
			if err := json.Unmarshal([]byte(s), &folded); err != nil {
				return &tablekit.DecodeError{Op: "feed." + op, Entity: p.t.Name() + ":" + pk + "/" + rk, Property: FoldedProperty, Detail: err.Error()}
			}
		}
		v, ok := folded[fk]
		if !ok {
			v = folded[old] // a row written before the key named the table
		}
		if v >= c.Version {
			return nil // folded already
		}
		props := maps.Clone(e.Properties)
		if props == nil {
			props = map[string]any{}
		}
		delete(props, FoldedProperty)
		view, err := p.t.FromEntity(tablekit.Entity{PartitionKey: pk, RowKey: rk, Timestamp: e.Timestamp, ETag: e.ETag, Properties: props})
		if err != nil {
			return fmt.Errorf("feed: %s: view row %s/%s: %w", op, pk, rk, err)
		}
		if ev, ok := any(&view).(*tablekit.Entity); ok && ev.Properties == nil {
			ev.Properties = map[string]any{}
		}
		if err := p.fold(&view, c); err != nil {
			return err
		}
		out, err := p.t.ToEntity(view)
		if err != nil {
			var ve *tablekit.ValidationError
			if errors.As(err, &ve) {
				ve.Op = "feed." + op
			}
			return fmt.Errorf("feed: %s: the folded view row %s/%s: %w", op, pk, rk, err)
		}
		if out.PartitionKey != pk || out.RowKey != rk {
			return invalid(op, "fold", fmt.Sprintf("fold changed the view row's keys from %s/%s to %s/%s", pk, rk, out.PartitionKey, out.RowKey))
		}
		delete(folded, old)
		folded[fk] = c.Version
		b, err := json.Marshal(folded)
		if err != nil {
			return err
		}
		out.Properties = maps.Clone(out.Properties)
		if out.Properties == nil {
			out.Properties = map[string]any{}
		}
		out.Properties[FoldedProperty] = string(b)
		if isNew {
			_, err = p.e.Insert(ctx, out)
		} else {
			_, err = p.e.Update(ctx, out, e.ETag)
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, tablekit.ErrAlreadyExists), errors.Is(err, tablekit.ErrPreconditionFailed), errors.Is(err, tablekit.ErrNotFound), errors.Is(err, tablekit.ErrOutcomeUnknown):
			last = err // the row changed meanwhile (or this write landed, its answer lost): read again
			continue
		default:
			return fmt.Errorf("feed: %s: writing view row %s/%s: %w", op, pk, rk, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("feed: %s: view row %s/%s: gave up after %d tries; the last: %w", op, pk, rk, p.retry.MaxAttempts, last)
}
