// Package core gives tablekit's sibling packages (index, patterns, archive,
// logtail, transfer, otelkit) what they need of the root package beyond
// its exported API, with the root's types: accessors of a Table's and an
// Account's internals, conversions that apply a Table's encryption, the
// retry and clock logic behind tablekit.RetryPolicy, and the like. Users
// never need these; the root lends them through internal/hook, which it
// fills at init.
package core

import (
	"context"
	"iter"
	"log/slog"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/hook"
	"github.com/tablekit/tablekit/internal/names"
	"github.com/tablekit/tablekit/internal/timing"
)

// GetSelect reads the entity pk/rk of t with only the properties props (keys
// and ETag always), in one GetEntity request: an error matching
// tablekit.ErrNotFound when there is none. Its errors name no operation
// but the request's: the caller names its own (internal/opname).
func GetSelect[T any](ctx context.Context, t *tablekit.Table[T], pk, rk string, props ...string) (T, error) {
	var v T
	if err := hook.GetSelect(ctx, t, pk, rk, props, &v); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// ToEntity converts v to the property bag t stores for it, before
// client-side encryption: the properties t encrypts are plaintext here, and
// are encrypted when the Entity is written through t.AsEntities() (which
// shares t's encryption). It checks keys and limits as a write does, except
// the size encryption adds, which the write checks. Its errors name no
// operation.
func ToEntity[T any](t *tablekit.Table[T], v T) (tablekit.Entity, error) {
	e, err := hook.ToEntity(t, v)
	return e.(tablekit.Entity), err
}

// FromEntity converts a property bag read through t.AsEntities()
// (decrypted) to a T, as a read of t would. On an error it returns the
// zero T; its errors name no operation.
func FromEntity[T any](t *tablekit.Table[T], e tablekit.Entity) (T, error) {
	var v T
	err := hook.FromEntity(t, e, &v)
	return v, err
}

// ETagOf returns the ETag v carries: its field tagged `table:",etag"` (the
// ETag field of a tablekit.Entity), or "" when T has none.
func ETagOf[T any](t *tablekit.Table[T], v T) azcore.ETag { return hook.ETagOf(t, v) }

// Tracer returns the tracer of t's spans: its Account's (a disabled tracer
// when the Account traces nothing).
func Tracer[T any](t *tablekit.Table[T]) tracing.Tracer { return hook.TableInfo(t).Tracer }

// Governor returns the Governor that paces t's writes: its Account's.
func Governor[T any](t *tablekit.Table[T]) *tablekit.Governor {
	g, _ := hook.TableInfo(t).Governor.(*tablekit.Governor)
	return g
}

// TableRetry returns t's conflict retry: its TableOptions.Retry, each
// zero field taken from ConflictRetry (a zero or nil t: ConflictRetry).
func TableRetry[T any](t *tablekit.Table[T]) tablekit.RetryPolicy {
	p, _ := hook.TableInfo(t).Retry.(tablekit.RetryPolicy)
	return WithDefaults(p, ConflictRetry)
}

// Meter returns the Meter of t's Account, which counts t's requests.
func Meter[T any](t *tablekit.Table[T]) *tablekit.Meter {
	m, _ := hook.TableInfo(t).Meter.(*tablekit.Meter)
	return m
}

// AccountOf returns the name of the storage account t is in
// ("devstoreaccount1" for Azurite).
func AccountOf[T any](t *tablekit.Table[T]) string { return hook.TableInfo(t).Account }

// TableLogger returns the Logger of t's Account (see
// tablekit.Options.Logger); nil means slog.Default() at the time of
// logging (see internal/logs).
func TableLogger[T any](t *tablekit.Table[T]) *slog.Logger { return hook.TableInfo(t).Logger }

// Cosmos reports whether t is on Azure Cosmos DB for Table, whose query
// results are not in key order, as far as its Account knows now: with
// tablekit.ServiceAuto an answer may show it later, so code whose result
// depends on key order asks again after it has read.
func Cosmos[T any](t *tablekit.Table[T]) bool { return hook.TableInfo(t).Cosmos }

// EncryptedProperties returns the names of the properties t encrypts on
// the client, sorted; none when t has no encryption. Code that copies
// entities between tables checks with it that the destination encrypts at
// least what the source does.
func EncryptedProperties[T any](t *tablekit.Table[T]) []string { return hook.TableInfo(t).Encrypted }

// BulkWriter is t.BulkWriter(opts) paced by gov instead of the Account's
// Governor (nil: the Account's) and logging to logger instead of the
// Account's Logger, for a job that takes both as options of its own
// (transfer.Purge).
func BulkWriter[T any](t *tablekit.Table[T], opts *tablekit.BulkOptions, gov *tablekit.Governor, logger *slog.Logger) *tablekit.BulkWriter[T] {
	w := t.BulkWriter(opts)
	hook.PaceBulkWriter(w, gov, logger)
	return w
}

// TracingProvider returns the tracing provider acct was opened with (the
// zero Provider, which traces nothing, by default).
func TracingProvider(acct *tablekit.Account) tracing.Provider { return hook.AccountInfo(acct).Tracing }

// AccountGovernor returns acct's Governor (see tablekit.Options.Governor).
func AccountGovernor(acct *tablekit.Account) *tablekit.Governor {
	g, _ := hook.AccountInfo(acct).Governor.(*tablekit.Governor)
	return g
}

// AccountLogger returns acct's Logger (see tablekit.Options.Logger); nil
// means slog.Default() at the time of logging (see internal/logs).
func AccountLogger(acct *tablekit.Account) *slog.Logger { return hook.AccountInfo(acct).Logger }

// AccountCosmos reports whether acct's tables are on Azure Cosmos DB for
// Table now (see tablekit.Options.Service: an Account may find it out
// from its answers).
func AccountCosmos(acct *tablekit.Account) bool { return hook.AccountInfo(acct).Cosmos }

// AccountName returns the storage account's name ("devstoreaccount1" for
// Azurite).
func AccountName(acct *tablekit.Account) string { return hook.AccountInfo(acct).Name }

// Endpoints returns acct's service URLs, without a trailing slash, e.g.
// "https://myaccount.table.core.windows.net" or, for Azurite,
// "http://127.0.0.1:10002/devstoreaccount1".
func Endpoints(acct *tablekit.Account) (table, queue, blob string) {
	a := hook.AccountInfo(acct)
	return a.TableURL, a.QueueURL, a.BlobURL
}

// Encode is tablekit.ToEntity naming no operation in its errors, for a
// conversion made on the caller's behalf.
func Encode[T any](v T) (tablekit.Entity, error) { return codec.Encode(v) }

// EncodeBody is Encode for a struct that need not have key fields (an
// event of package stream, whose keys its Store sets): without them, the
// Entity's keys are empty.
func EncodeBody[T any](v T) (tablekit.Entity, error) { return codec.EncodeBody(v) }

// Decode is tablekit.FromEntity naming no operation in its errors.
func Decode[T any](e tablekit.Entity) (T, error) { return codec.Decode[T](e) }

// DecodeBody is Decode into a struct that need not have key fields:
// without them, e's keys are not kept.
func DecodeBody[T any](e tablekit.Entity) (T, error) { return codec.DecodeBody[T](e) }

// WrapError turns an error of the Azure SDK into tablekit's shape: a
// service failure becomes a *tablekit.ServiceError matching the sentinel
// for its status and code, a transport failure a *tablekit.RequestError;
// context errors are returned bare, errors already in tablekit's shape as
// they are. op names the operation, as tablekit.ValidationError.Op does.
// A nil err gives nil.
func WrapError(op string, err error) error { return hook.WrapError(op, err) }

// IsThrottled reports whether err says the service was too busy for the
// request (tablekit.ErrThrottled: 503, 429, 500 OperationTimedOut), also
// for an error of the Azure SDK that tablekit has not wrapped.
func IsThrottled(err error) bool { return hook.Throttled(err) }

// ValidateTableName, ValidateQueueName and ValidateContainerName check a
// name against the service's rules (tables: 3-63 letters and digits,
// starting with a letter; queues and containers: 3-63 lowercase letters,
// digits and single hyphens, containers also $root, $logs, $web), with a
// *tablekit.ValidationError matching tablekit.ErrInvalidKey that says
// which rule failed. The rules are internal/names', which package sas
// shares.
func ValidateTableName(name string) error     { return nameError(names.Table(name)) }
func ValidateQueueName(name string) error     { return nameError(names.Queue(name)) }
func ValidateContainerName(name string) error { return nameError(names.Container(name)) }

// nameError is the error of a name check of internal/names: nil for a
// good name.
func nameError(problem, rule string) error {
	if problem == "" {
		return nil
	}
	return &tablekit.ValidationError{Limit: rule, Detail: problem, Err: tablekit.ErrInvalidKey}
}

// CheckTransaction checks actions as t.Transaction does before sending
// (each action's entity, keys and size, one PartitionKey, each entity once,
// at most 100 actions and 4 MiB, 2 MB on Azure Cosmos DB for Table) and
// sends nothing: the error Transaction would return before sending, or
// nil. A package that must refuse bad input before a write of its own
// (stream.Store.Check, before package feed's mark) reaches the
// transaction's verdict so. Its errors name no operation.
func CheckTransaction[T any](t *tablekit.Table[T], actions ...tablekit.Action[T]) error {
	return hook.CheckTransaction(t, actions)
}

// ActionOf returns the verb of a ("Insert", "Upsert", "Update", "Merge" or
// "Delete"; "" for the zero Action), its value and its ETag.
func ActionOf[T any](a tablekit.Action[T]) (verb string, v T, etag azcore.ETag) {
	verb, value, etag := hook.ActionOf(a)
	v, _ = value.(T)
	return verb, v, etag
}

// ActionValue returns the value a writes (or, for a delete, whose keys it
// deletes).
func ActionValue[T any](a tablekit.Action[T]) T {
	_, v, _ := ActionOf(a)
	return v
}

// IsDelete reports whether a is a DeleteAction.
func IsDelete[T any](a tablekit.Action[T]) bool {
	verb, _, _ := hook.ActionOf(a)
	return verb == "Delete"
}

// MapAction returns the action that does what a does (the same verb and
// ETag) with the value f(v) in place of a's value v.
func MapAction[T, U any](a tablekit.Action[T], f func(T) (U, error)) (tablekit.Action[U], error) {
	verb, v, etag := ActionOf(a)
	u, err := f(v)
	if err != nil {
		return tablekit.Action[U]{}, err
	}
	switch verb {
	case "Insert":
		return tablekit.InsertAction(u), nil
	case "Upsert":
		return tablekit.UpsertAction(u), nil
	case "Update":
		return tablekit.UpdateAction(u, etag), nil
	case "Merge":
		return tablekit.MergeAction(u, etag), nil
	case "Delete":
		return tablekit.DeleteAction(u, etag), nil
	}
	return tablekit.Action[U]{}, nil // a zero Action stays zero, and is refused where it is used
}

// Wait blocks until a write of entities entities to partition pk of table
// may go at gov's pace, or ctx ends (then it returns ctx's error). Every
// Wait that returns nil must be followed by a Done with the write's
// outcome. tablekit.Governor.Do does both around one function.
func Wait(ctx context.Context, gov *tablekit.Governor, table, pk string, entities int) error {
	return hook.GovernorWait(gov, ctx, table, pk, entities)
}

// Done reports the outcome of a write Wait let through: err is its error,
// or nil.
func Done(gov *tablekit.Governor, table, pk string, entities int, err error) {
	hook.GovernorDone(gov, table, pk, entities, err)
}

// Rate returns the entities per second gov now lets through to partition
// pk of table: its ceiling, less each cut since the service throttled.
func Rate(gov *tablekit.Governor, table, pk string) float64 { return hook.GovernorRate(gov, table, pk) }

// Default retry policies of tablekit's options.
var (
	// ConflictRetry is the default of every optimistic-concurrency retry
	// (index entities, wide entities, data series, Modify, ...): 30
	// attempts, 10 ms to 1 s apart.
	ConflictRetry = tablekit.RetryPolicy(timing.Conflict)
	// ThrottleRetry is the default retry of work the service throttled
	// after the SDK's own retries (bulk paths): 6 attempts, 1 s to 30 s
	// apart.
	ThrottleRetry = tablekit.RetryPolicy(timing.Throttle)
)

// WithDefaults returns p with each zero field taken from def.
func WithDefaults(p, def tablekit.RetryPolicy) tablekit.RetryPolicy {
	return tablekit.RetryPolicy(timing.Policy(p).WithDefaults(timing.Policy(def)))
}

// ValidateRetry reports a negative field of p as a
// *tablekit.ValidationError naming op, the operation p was given to.
func ValidateRetry(op string, p tablekit.RetryPolicy) error {
	if problem := timing.Policy(p).Problem(); problem != "" {
		return &tablekit.ValidationError{Op: op, Property: "Retry", Detail: problem, Err: tablekit.ErrInvalidInput}
	}
	return nil
}

// Attempts yields the try numbers 1, 2, ... up to p.MaxAttempts (apply
// WithDefaults first: a policy with MaxAttempts 0 tries once), sleeping
// p's randomised back-off before every try but the first. It stops early
// when ctx ends, so after the loop ctx.Err() tells whether it was cut
// short:
//
//	var err error
//	for range core.Attempts(ctx, policy) {
//		if err = try(ctx); !errors.Is(err, tablekit.ErrPreconditionFailed) {
//			return err
//		}
//	}
//	if ctx.Err() != nil {
//		return ctx.Err()
//	}
//	return err // still conflicting after MaxAttempts tries
func Attempts(ctx context.Context, p tablekit.RetryPolicy) iter.Seq[int] {
	return timing.Policy(p).Attempts(ctx)
}

// Delay returns p's back-off before try number attempt (1-based; the first
// try has none), before jitter.
func Delay(p tablekit.RetryPolicy, attempt int) time.Duration {
	return timing.Policy(p).Delay(attempt)
}

// Pause returns p's randomised back-off before try number attempt: a
// random time up to Delay.
func Pause(p tablekit.RetryPolicy, attempt int) time.Duration {
	return timing.Policy(p).Pause(attempt)
}

// Sleep pauses for d, or until ctx ends; it reports whether the whole
// pause elapsed.
func Sleep(ctx context.Context, d time.Duration) bool { return timing.Sleep(ctx, d) }

// Now returns clock's time, or time.Now() when clock is nil: the meaning
// of every Clock option of tablekit.
func Now(clock func() time.Time) time.Time { return timing.Now(clock) }

// ParseGUID parses the canonical 36-character form of a GUID
// (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx), optionally in braces, in either
// case, with a *tablekit.ValidationError matching tablekit.ErrInvalidInput
// for anything else.
func ParseGUID(s string) (tablekit.GUID, error) { return codec.ParseGUID(s) }

// ItemsFailed reports whether err, the error of a BulkWriter, says that
// some items failed (res.Failed lists them) rather than that its context
// ended before every item was tried.
func ItemsFailed(err error) bool { return hook.ItemsFailed(err) }
