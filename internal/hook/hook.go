// Package hook lends package tablekit's internals to its sibling packages
// (index, patterns, archive, logtail, transfer, sas, otelkit) without
// exporting them: what only those packages need stays out of the root's
// API. It is the pattern of grpc's internal package.
//
// Package tablekit sets every variable here in its init (hooks.go), so they
// are set before any code of another package runs; nothing else sets them.
// Sibling packages call them through package internal/core, which gives
// the root's types back: a parameter or result typed any is the root type
// its comment names. The root cannot import internal/core (which imports
// the root), so the variables live here, in a package that imports
// nothing of tablekit's.
package hook

import (
	"context"
	"log/slog"
)

var (
	// GetSelect reads the entity pk/rk of table (a *tablekit.Table[T]) with
	// only the properties props (keys and ETag always), into dst (a *T), as
	// Table.Get reads: one GetEntity request with $select, an error matching
	// tablekit.ErrNotFound when there is no entity. A service error names
	// the request ("Get"); other errors name no operation, for the caller
	// to name its own (see internal/opname).
	GetSelect func(ctx context.Context, table any, pk, rk string, props []string, dst any) error

	// PaceBulkWriter makes writer (a *tablekit.BulkWriter[T]) pace its
	// transactions with gov (a *tablekit.Governor) instead of its
	// Account's, and log to logger instead of its Account's Logger.
	PaceBulkWriter func(writer, gov any, logger *slog.Logger)
)
