// Package hook lends package tablekit's internals to its sibling packages
// (index, patterns, archive, logtail, transfer, otelkit) without
// exporting them: what only those packages need stays out of the root's
// API. It is the pattern of grpc's internal package.
//
// Package tablekit sets every variable here in its init (hooks.go), so they
// are set before any code of another package runs; nothing else sets them.
// Sibling packages call them through package internal/core, which gives
// the root's types back: a parameter or result typed any is the root type
// its comment names, and T is a Table's type parameter. The root cannot
// import internal/core (which imports the root), so the variables live
// here, in a package that imports nothing of tablekit's.
package hook

import (
	"context"
	"log/slog"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
)

// A Table's internals; table is a *tablekit.Table[T].
var (
	// GetSelect reads the entity pk/rk of table with only the properties
	// props (keys and ETag always), into dst (a *T), as Table.Get reads:
	// one GetEntity request with $select, an error matching
	// tablekit.ErrNotFound when there is no entity. A service error names
	// the request ("Get"); other errors name no operation, for the caller
	// to name its own (see internal/opname).
	GetSelect func(ctx context.Context, table any, pk, rk string, props []string, dst any) error

	// ToEntity converts v (a T) to the tablekit.Entity table stores for it,
	// before client-side encryption; FromEntity converts e (a
	// tablekit.Entity read through the table's AsEntities, decrypted) into
	// dst (a *T). Their errors name no operation.
	ToEntity   func(table, v any) (any, error)
	FromEntity func(table, e, dst any) error

	// ETagOf returns the ETag v (a T) carries: its field tagged
	// `table:",etag"`, or "" when T has none.
	ETagOf func(table, v any) azcore.ETag

	// TableInfo returns what table takes from its Account and options.
	TableInfo func(table any) Table

	// CheckTransaction checks actions (a []tablekit.Action[T]) as
	// table.Transaction does before sending (each action, the entities'
	// keys and sizes, one partition, each entity once, the transaction's
	// count and size) and sends nothing; its errors name no operation.
	CheckTransaction func(table, actions any) error

	// PaceBulkWriter makes writer (a *tablekit.BulkWriter[T]) pace its
	// transactions with gov (a *tablekit.Governor) instead of its
	// Account's, and log to logger instead of its Account's Logger.
	PaceBulkWriter func(writer, gov any, logger *slog.Logger)
)

// Table is what a Table takes from its Account and options.
type Table struct {
	Account   string         // its storage account's name
	Tracer    tracing.Tracer // its spans' tracer (disabled when none)
	Governor  any            // its Account's *tablekit.Governor
	Meter     any            // its Account's *tablekit.Meter
	Cosmos    bool           // on Azure Cosmos DB for Table
	Encrypted []string       // the properties it encrypts, sorted
	Retry     any            // its conflict retry, a tablekit.RetryPolicy (TableOptions.Retry, defaults applied)
	Logger    *slog.Logger   // its Account's Logger (nil: slog.Default() at the time of logging)
}

// An Account's internals; acct is a *tablekit.Account.
var (
	// AccountInfo returns the Account's settings.
	AccountInfo func(acct any) Account
)

// Account is an Account's settings.
type Account struct {
	Name                        string // the storage account's name
	TableURL, QueueURL, BlobURL string // the endpoints, without a trailing slash
	Tracing                     tracing.Provider
	Governor                    any          // a *tablekit.Governor
	Logger                      *slog.Logger // nil: slog.Default() at the time of logging
	Cosmos                      bool
}

// The rest of the root's internals.
var (
	// ItemsFailed reports whether err is the error of a bulk write some of
	// whose items failed (BulkResult.Failed lists them), as opposed to one
	// whose context ended before every item was tried.
	ItemsFailed func(err error) bool

	// WrapError turns an error of the Azure SDK into tablekit's shape (a
	// *tablekit.ServiceError or *tablekit.RequestError matching the
	// sentinels), naming op; see the root's wrapError.
	WrapError func(op string, err error) error

	// Throttled reports whether err says the service was too busy
	// (tablekit.ErrThrottled), for an SDK error too.
	Throttled func(err error) bool

	// ActionOf returns the verb ("Insert", "Upsert", "Update", "Merge" or
	// "Delete"; "" for a zero Action), value (a T) and ETag of action (a
	// tablekit.Action[T]).
	ActionOf func(action any) (verb string, value any, etag azcore.ETag)

	// Governor paces one write of entities entities to partition pk of
	// table at gov (a *tablekit.Governor): Wait blocks for its turn (or
	// returns ctx's error), Done reports its outcome.
	GovernorWait func(gov any, ctx context.Context, table, pk string, entities int) error
	GovernorDone func(gov any, table, pk string, entities int, err error)
	// GovernorRate is the entities per second gov now lets through to
	// partition pk of table.
	GovernorRate func(gov any, table, pk string) float64
)
