package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/core"
)

// FoldedProperty names the property of a view row in which a Projector
// records, as a JSON object, the last version of each stream folded into
// the row ({"s~order-17~": 42}). Fold functions never see it.
const FoldedProperty = "_folded"

// Row names a row of a Projector's view table: the keys of one entity.
type Row struct {
	PartitionKey, RowKey string
}

// Projector maintains a view table from the feed's changes: each change
// goes to the view rows its key function names (none, one, or several:
// a change that moves an item from one group to another names both),
// and fold updates each of them, once per (stream, version): each row
// records the last version it folded of each stream (FoldedProperty), a
// change at or below it is skipped, and the row is written conditionally
// on the ETag read. Use its Handle as a Subscription's. Make one with
// NewProjector; it is safe for concurrent use. The zero Projector refuses
// every call with an error matching tablekit.ErrInvalidInput.
//
// A view table belongs to one Projector (one subscription): the record of
// what a row folded is per stream, not per projector, so two Projectors
// writing the same rows would skip each other's changes for good (one
// that fails on version 2 while the other folds version 3 into the row
// finds version 2 folded when it tries again).
type Projector struct {
	t     *tablekit.Table[tablekit.Entity]
	key   func(Change) []Row
	fold  func(view *tablekit.Entity, c Change) error
	retry tablekit.RetryPolicy
}

// NewProjector returns a Projector of the view table t: key names the view
// rows a change goes to (none: the change is not for this view), and fold
// updates one of them with the change (view's keys say which row it is;
// view.Properties is empty for a new row; fold must not change the keys).
// fold must be deterministic in its arguments, and is called again for the
// same change and row when the row changed meanwhile; the table's retry
// policy (tablekit.TableOptions.Retry) paces those tries. A relay calls
// Handle, so key and fold, concurrently for different streams: they must
// be safe for concurrent use. It sends nothing.
func NewProjector(t *tablekit.Table[tablekit.Entity], key func(c Change) []Row, fold func(view *tablekit.Entity, c Change) error) (*Projector, error) {
	const op = "NewProjector"
	switch {
	case t == nil:
		return nil, invalid(op, "t", "nil table")
	case key == nil:
		return nil, invalid(op, "key", "nil key function")
	case fold == nil:
		return nil, invalid(op, "fold", "nil fold function")
	}
	return &Projector{t: t, key: key, fold: fold, retry: core.TableRetry(t)}, nil
}

// Handle folds change c into each of its view rows in turn (in the order
// key returned them), skipping a row that has folded c's version of c's
// stream already: after a failure halfway, the relay hands c over again
// and the rows folded before the failure skip it. A row with an empty
// PartitionKey is refused (the change is not folded anywhere).
// Costs, per row: 1 read, + 1 write when folded (+ 1 read and 1 write
// more per race lost with another writer of the row).
func (p *Projector) Handle(ctx context.Context, c Change) error {
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

// foldInto folds change c into view row row unless the row has folded c's
// version of c's stream already.
func (p *Projector) foldInto(ctx context.Context, row Row, c Change) error {
	const op = "Projector.Handle"
	pk, rk := row.PartitionKey, row.RowKey
	sk := streamKey(c.Stream)
	var last error
	for range core.Attempts(ctx, p.retry) {
		e, err := p.t.Get(ctx, pk, rk)
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
		if folded[sk] >= c.Version {
			return nil // folded already
		}
		view := tablekit.Entity{PartitionKey: pk, RowKey: rk, Properties: maps.Clone(e.Properties)}
		if view.Properties == nil {
			view.Properties = map[string]any{}
		}
		delete(view.Properties, FoldedProperty)
		if err := p.fold(&view, c); err != nil {
			return err
		}
		if view.PartitionKey != pk || view.RowKey != rk {
			return invalid(op, "fold", fmt.Sprintf("fold changed the view row's keys from %s/%s to %s/%s", pk, rk, view.PartitionKey, view.RowKey))
		}
		folded[sk] = c.Version
		b, err := json.Marshal(folded)
		if err != nil {
			return err
		}
		view.Properties = maps.Clone(view.Properties)
		view.Properties[FoldedProperty] = string(b)
		if isNew {
			_, err = p.t.Insert(ctx, view)
		} else {
			_, err = p.t.Update(ctx, view, e.ETag)
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
