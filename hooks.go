package tablekit

import (
	"context"
	"log/slog"

	"github.com/tablekit/tablekit/internal/hook"
)

// The root lends these internals to its sibling packages through
// internal/hook (see its package doc); internal/core gives them their
// types back.
func init() {
	hook.GetSelect = func(ctx context.Context, table any, pk, rk string, props []string, dst any) error {
		return table.(tableInternals).getSelect(ctx, pk, rk, props, dst)
	}
	hook.PaceBulkWriter = func(writer, gov any, logger *slog.Logger) {
		writer.(interface{ pace(*Governor, *slog.Logger) }).pace(gov.(*Governor), logger)
	}
}

// pace makes w pace its transactions with gov and log to logger (see
// internal/core.BulkWriter); a nil gov keeps the Account's.
func (w *BulkWriter[T]) pace(gov *Governor, logger *slog.Logger) {
	if gov != nil {
		w.gov = gov
	}
	w.logger = logger
}

// tableInternals is what every Table[T] lends to internal/hook, whatever
// its T.
type tableInternals interface {
	getSelect(ctx context.Context, pk, rk string, props []string, dst any) error
}

// getSelect is Get projected to props, decoding into dst, a *T.
func (t *Table[T]) getSelect(ctx context.Context, pk, rk string, props []string, dst any) error {
	if err := t.checkKeys(pk, rk); err != nil {
		return err
	}
	sel, err := selectText(props)
	if err != nil {
		return err
	}
	if sel == "" {
		sel = "PartitionKey,RowKey"
	}
	e, err := t.read(ctx, "Get", pk, rk, sel)
	if err != nil {
		return err
	}
	v := dst.(*T)
	if err := t.decode("", e.Body, v); err != nil {
		return err
	}
	t.setETag(v, e.ETag)
	return nil
}
