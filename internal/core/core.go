// Package core gives tablekit's sibling packages (index, patterns, archive,
// logtail, transfer, sas, otelkit) what they need of the root package beyond
// its exported API, with the root's types: accessors of a Table's and an
// Account's internals, conversions that apply a Table's encryption, and the
// like. Users never need these; the root lends them through internal/hook,
// which it fills at init.
package core

import (
	"context"
	"log/slog"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/hook"
)

// GetSelect reads the entity pk/rk of t with only the properties props (keys
// and ETag always), in one GetEntity request: an error matching
// tablekit.ErrNotFound when there is none. Its errors name no operation:
// the caller names its own (internal/opname).
func GetSelect[T any](ctx context.Context, t *tablekit.Table[T], pk, rk string, props ...string) (T, error) {
	var v T
	if err := hook.GetSelect(ctx, t, pk, rk, props, &v); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// BulkWriter is t.BulkWriter(opts) paced by gov instead of the Account's
// Governor and logging to logger instead of the Account's Logger, for a
// job that takes both as options of its own (transfer.Purge).
func BulkWriter[T any](t *tablekit.Table[T], opts *tablekit.BulkOptions, gov *tablekit.Governor, logger *slog.Logger) *tablekit.BulkWriter[T] {
	w := t.BulkWriter(opts)
	hook.PaceBulkWriter(w, gov, logger)
	return w
}
