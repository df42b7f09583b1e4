package tablekit

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/spans"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/internal/wire"
)

// TableOptions configures a [Table]: only what is the table's own. The
// Account's settings (Logger, Governor, tracing, Cosmos DB mode) apply to
// every Table opened through it. A nil *TableOptions means defaults.
type TableOptions struct {
	// Encryption, when set, encrypts the fields tagged `table:",encrypt"`
	// (and, for Table[Entity], the properties it names) on the client.
	Encryption *Encryption

	// TableScans chooses what a query whose filter is a table scan does
	// (see [Filter.Explain]): logged (the default), allowed, or refused
	// before anything is sent.
	TableScans TableScanPolicy

	// Retry says how often [Table.Modify] reads and tries again when
	// another writer changed the entity in between; the zero value means
	// 30 attempts, 10 ms to 1 s apart.
	Retry RetryPolicy
}

// Table is a typed view of one table: it stores values of T, a struct type
// described by `table` struct tags, or [Entity] for a property bag. A Table
// is safe for concurrent use.
//
// Writes and reads check keys and storage limits before anything is sent and
// return a *[ValidationError] for bad input; service failures match the
// sentinel errors ([ErrNotFound], [ErrPreconditionFailed], ...). A Table not
// made by [OpenTable] (a zero or nil *Table) refuses every operation with an
// error matching [ErrInvalidInput].
type Table[T any] struct {
	wire     *wire.Client     // entities
	admin    *aztables.Client // the table itself (create, delete, access policies)
	name     string
	acct     *Account        // the Account it was opened through
	account  string          // the storage account's name
	codec    *codec.Codec[T] // how T is stored: type plan, encryption
	tracer   tracing.Tracer
	svc      *wire.ServiceState // the Account's: Cosmos DB mode
	scans    TableScanPolicy
	logger   *slog.Logger
	governor *Governor
	meter    *Meter      // the Account's
	retry    RetryPolicy // conflict retry of Modify, defaults applied
}

// OpenTable returns a Table for the table called name in acct, for values
// of T. It checks the name, and fails, naming the field, when T is not a
// struct with `table:",pk"` and `table:",rk"` string fields (or Entity),
// or has a field of an unsupported type. It does not contact the service:
// see [Table.CreateIfNotExists].
//
// The Table reads and writes entities through the Account's own Table
// service client, on the Account's pipeline (credential, retries, Meter,
// tracing, policies), and takes the Account's Logger, Governor, tracing and
// Cosmos DB mode.
func OpenTable[T any](acct *Account, name string, opts *TableOptions) (_ *Table[T], err error) {
	defer func() { err = withOp("OpenTable", err) }()
	return openTable[T](acct, name, opts)
}

// openTable is OpenTable without naming the operation in its errors.
func openTable[T any](acct *Account, name string, opts *TableOptions) (*Table[T], error) {
	if acct == nil || acct.wire == nil || acct.tables == nil {
		return nil, &ValidationError{Detail: "nil or zero *Account (make one with Open or OpenWithCredential)", Err: ErrInvalidInput}
	}
	if err := validateTableName(name); err != nil {
		return nil, err
	}
	o := TableOptions{}
	if opts != nil {
		o = *opts
	}
	if err := o.TableScans.validate(name); err != nil {
		return nil, err
	}
	if err := o.Retry.validate("OpenTable"); err != nil {
		return nil, err
	}
	t := &Table[T]{
		wire:     acct.wire,
		admin:    acct.tables.NewClient(name),
		acct:     acct,
		name:     name,
		account:  acct.name,
		svc:      acct.svc,
		scans:    o.TableScans,
		logger:   acct.logger,
		governor: acct.governor,
		meter:    acct.meter,
		tracer:   spans.NewTracer(acct.tracing, spans.TableNamespace(acct.svc.Cosmos())),
		retry:    o.Retry.withDefaults(timing.Conflict),
	}
	c, err := codec.For[T](name, o.Encryption)
	if err != nil {
		return nil, err
	}
	t.codec = c
	return t, nil
}

// usable returns the error of a Table not made by OpenTable (a nil or
// zero *Table), else nil.
func (t *Table[T]) usable() error {
	if t == nil || t.wire == nil {
		return &ValidationError{Detail: "a nil or zero *Table (make one with tablekit.OpenTable)", Err: ErrInvalidInput}
	}
	return nil
}

// Name returns the table's name ("" for a Table not made by OpenTable).
func (t *Table[T]) Name() string {
	if t == nil {
		return ""
	}
	return t.name
}

// Account returns the Account the table was opened through (nil for a
// Table not made by OpenTable): its Governor, Logger, Meter, tracing and
// Service are the table's.
func (t *Table[T]) Account() *Account {
	if t == nil {
		return nil
	}
	return t.acct
}

// ToEntity converts v to the property bag the table stores for it, before
// client-side encryption: the properties it encrypts are plaintext here,
// and are encrypted when the Entity is written through [Table.AsEntities]
// (which shares the table's encryption). It checks keys and limits as a
// write does (Azure Cosmos DB for Table's too, when the Account is on it),
// except the size encryption adds, which the write checks; v's ETag and
// Timestamp fields are kept. A pattern that spreads or spills a T's
// properties over other entities or blobs builds on it. Like
// [Table.FromEntity], [Table.GetSelect] and [Table.CheckTransaction], a
// building block of other packages' operations, its errors name no
// operation (ValidationError.Op is ""): the operation built on it names
// its own.
func (t *Table[T]) ToEntity(v T) (Entity, error) {
	if err := t.usable(); err != nil {
		return Entity{}, err
	}
	return t.codec.ToEntity(v, t.onCosmos())
}

// FromEntity converts a property bag read through [Table.AsEntities]
// (decrypted) to a T, as a read of the table would; the ToEntity of a T
// converts back. On an error it returns the zero T.
func (t *Table[T]) FromEntity(e Entity) (T, error) {
	if err := t.usable(); err != nil {
		var zero T
		return zero, err
	}
	return t.codec.FromEntity(e)
}

// Encrypted returns the names of the properties the table encrypts on the
// client (TableOptions.Encryption), sorted; nil when it encrypts none.
// Code that copies entities between tables checks with it that the
// destination encrypts at least what the source does.
func (t *Table[T]) Encrypted() []string {
	if t == nil {
		return nil
	}
	return t.codec.Encrypted()
}

// GetSelect reads the entity pk/rk with only the properties props (its
// keys and ETag always; none of its other properties when props is
// empty), in one request: [Table.Get] of a projection. The fields of
// properties not read are zero. It returns an error matching ErrNotFound
// when the entity (or the table) does not exist; a service error names
// the request ("Get"), other errors no operation (see [Table.ToEntity]).
func (t *Table[T]) GetSelect(ctx context.Context, pk, rk string, props ...string) (T, error) {
	var zero T
	if err := t.usable(); err != nil {
		return zero, err
	}
	if err := t.checkKeys(pk, rk); err != nil {
		return zero, err
	}
	sel, err := selectText(props)
	if err != nil {
		return zero, err
	}
	if sel == "" {
		sel = "PartitionKey,RowKey"
	}
	e, err := t.read(ctx, "Get", pk, rk, sel)
	if err != nil {
		return zero, err
	}
	var v T
	if err := t.decode("", e.Body, &v); err != nil {
		return zero, err
	}
	t.setETag(&v, e.ETag)
	return v, nil
}

// CheckTransaction checks actions as [Table.Transaction] does before
// sending (each action's entity, keys and size, one PartitionKey, each
// entity once, at most 100 actions and 4 MiB, 2 MB on Azure Cosmos DB for
// Table) and sends nothing: it returns the error Transaction would return
// before sending, or nil. A package that must refuse bad input before a
// write of its own reaches the transaction's verdict so. Its errors name
// no operation (see [Table.ToEntity]).
func (t *Table[T]) CheckTransaction(actions ...Action[T]) error {
	if err := t.usable(); err != nil {
		return err
	}
	_, err := t.encodeTransaction(actions)
	var ve *ValidationError
	if errors.As(err, &ve) {
		ve.Op = ""
	}
	return err
}

// Retry returns the table's conflict retry: TableOptions.Retry, each zero
// field taken from the default (30 attempts, 10 ms to 1 s apart). A
// pattern's own read-modify-write loops retry with it, as [Table.Modify]
// does.
func (t *Table[T]) Retry() RetryPolicy {
	if t == nil || t.wire == nil {
		return RetryPolicy(timing.Conflict)
	}
	return t.retry
}

// CreateIfNotExists creates the table unless it exists.
func (t *Table[T]) CreateIfNotExists(ctx context.Context) error {
	if err := t.usable(); err != nil {
		return withOp("CreateIfNotExists", err)
	}
	_, err := t.admin.CreateTable(ctx, nil)
	if err != nil {
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.ErrorCode == string(aztables.TableAlreadyExists) {
			return nil
		}
		return t.wrap("CreateTable", "", "", err)
	}
	return nil
}

// DeleteTable deletes the table and everything in it. It returns an error
// matching ErrNotFound when the table does not exist.
func (t *Table[T]) DeleteTable(ctx context.Context) error {
	if err := t.usable(); err != nil {
		return withOp("DeleteTable", err)
	}
	_, err := t.admin.Delete(ctx, nil)
	return t.wrap("DeleteTable", "", "", err)
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) <= 1<<20 {
		*b = (*b)[:0]
		bufPool.Put(b)
	}
}

// encode appends the OData JSON of v to dst and returns its keys.
func (t *Table[T]) encode(dst []byte, v *T) ([]byte, string, string, error) {
	return t.codec.Encode(dst, v, t.onCosmos())
}

// decode decodes one entity object into v for operation op.
func (t *Table[T]) decode(op string, data []byte, v *T) error { return t.codec.Decode(op, data, v) }

// keysOf returns v's PartitionKey and RowKey.
func (t *Table[T]) keysOf(v *T) (string, string) { return t.codec.Keys(v) }

// etagOf returns v's ETag, or "" when T has no etag field.
func (t *Table[T]) etagOf(v *T) azcore.ETag { return t.codec.ETag(v) }

func (t *Table[T]) checkKeys(pk, rk string) error { return t.codec.CheckKeys(pk, rk, t.onCosmos()) }

// Get reads one entity. It returns an error matching ErrNotFound when the
// entity (or the table) does not exist. To read only some properties,
// query the point with a projection: [QueryAs] with [PointQuery], or
// [Table.Query] with QueryOptions.Select.
func (t *Table[T]) Get(ctx context.Context, pk, rk string) (_ T, err error) {
	defer func() { err = withOp("Get", err) }()
	var zero T
	if err := t.usable(); err != nil {
		return zero, err
	}
	if err := t.checkKeys(pk, rk); err != nil {
		return zero, err
	}
	e, err := t.read(ctx, "Get", pk, rk, "")
	if err != nil {
		return zero, err
	}
	var v T
	if err := t.decode("Get", e.Body, &v); err != nil {
		return zero, err
	}
	t.setETag(&v, e.ETag)
	return v, nil
}

// read reads one entity's JSON as the service sent it (projected to sel,
// a $select text, when not ""), and its ETag. A missing entity is a
// *ServiceError matching ErrNotFound.
func (t *Table[T]) read(ctx context.Context, op, pk, rk, sel string) (wire.Entity, error) {
	e, err := t.wire.GetEntity(ctx, t.name, pk, rk, sel, wire.Call{})
	if err != nil {
		return e, t.wrap(op, pk, rk, err)
	}
	return e, nil
}

func (t *Table[T]) setETag(v *T, etag azcore.ETag) { t.codec.SetETag(v, etag) }

// Insert adds v; it fails with an error matching ErrAlreadyExists when an
// entity with its keys exists. It returns the new entity's ETag.
func (t *Table[T]) Insert(ctx context.Context, v T) (azcore.ETag, error) {
	return t.write(ctx, "Insert", &Action[T]{kind: wire.Insert, value: v})
}

// Upsert inserts v, or replaces the stored entity with v's keys: the
// entity then holds exactly v's properties. It returns the new ETag.
func (t *Table[T]) Upsert(ctx context.Context, v T) (azcore.ETag, error) {
	return t.write(ctx, "Upsert", &Action[T]{kind: wire.Upsert, value: v})
}

// Update replaces the stored entity with v's keys by v if its ETag still
// equals etag: it fails with an error matching ErrPreconditionFailed when
// the entity changed since it was read, and ErrNotFound when it is gone.
// Pass azcore.ETagAny to replace whatever version is stored; an empty etag
// is refused. It returns the new ETag.
func (t *Table[T]) Update(ctx context.Context, v T, etag azcore.ETag) (azcore.ETag, error) {
	if err := t.usable(); err != nil {
		return "", withOp("Update", err)
	}
	if etag == "" {
		return "", &ValidationError{Op: "Update", Entity: t.name, Detail: "Update needs the ETag read with the entity (or azcore.ETagAny to update unconditionally)", Err: ErrInvalidInput}
	}
	return t.write(ctx, "Update", &Action[T]{kind: wire.Update, value: v, etag: etag})
}

// Merge merges v's properties into the stored entity with v's keys: the
// properties v has are added or overwritten, the others are kept. etag
// says which entity it may merge into: "" inserts v when there is none
// (insert-or-merge), azcore.ETagAny requires an entity (ErrNotFound
// otherwise), and any other value requires that version
// (ErrPreconditionFailed otherwise). It returns the new ETag.
func (t *Table[T]) Merge(ctx context.Context, v T, etag azcore.ETag) (azcore.ETag, error) {
	return t.write(ctx, "Merge", &Action[T]{kind: wire.Merge, value: v, etag: etag})
}

// Delete deletes the entity if its ETag still equals etag (azcore.ETagAny:
// any version). It fails with ErrPreconditionFailed on a stale ETag and
// ErrNotFound when there is no such entity. When an answer was lost and
// the SDK's retry found nothing, the entity is gone but tablekit cannot
// tell whether this call deleted it: the error matches ErrOutcomeUnknown.
func (t *Table[T]) Delete(ctx context.Context, pk, rk string, etag azcore.ETag) (err error) {
	defer func() { err = withOp("Delete", err) }()
	if err := t.usable(); err != nil {
		return err
	}
	if etag == "" {
		return &ValidationError{Op: "Delete", Entity: t.name, Detail: "Delete needs the ETag read with the entity (or azcore.ETagAny to delete unconditionally)", Err: ErrInvalidInput}
	}
	if err := t.checkKeys(pk, rk); err != nil {
		return err
	}
	a := wire.BatchAction{Verb: wire.Delete, PK: pk, RK: rk, ETag: etag}
	_, err = t.writeEncoded(ctx, "Delete", &a)
	return err
}

// DeleteIfExists deletes the entity whatever its version and reports
// whether it existed. A missing entity is not an error, which makes it the
// idempotent delete step of the eventually consistent patterns.
//
// When an answer was lost and the entity is gone, tablekit cannot tell
// whether this call deleted it: it reports existed false and no error,
// since the entity is absent either way.
func (t *Table[T]) DeleteIfExists(ctx context.Context, pk, rk string) (existed bool, err error) {
	err = t.Delete(ctx, pk, rk, azcore.ETagAny)
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case errors.Is(err, ErrOutcomeUnknown):
		if found, rerr := t.exists(ctx, pk, rk); rerr == nil && !found {
			return false, nil
		}
	}
	return err == nil, err
}

// write encodes a single-entity write and sends it.
func (t *Table[T]) write(ctx context.Context, op string, a *Action[T]) (_ azcore.ETag, err error) {
	defer func() { err = withOp(op, err) }()
	if err := t.usable(); err != nil {
		return "", err
	}
	buf := getBuf()
	defer putBuf(buf)
	data, pk, rk, err := t.encode(*buf, &a.value)
	*buf = data
	if err != nil {
		return "", err
	}
	ea := wire.BatchAction{Verb: a.kind, PK: pk, RK: rk, ETag: a.etag, Body: data}
	return t.writeEncoded(ctx, op, &ea)
}

// writeEncoded sends one encoded write, settling a lost answer (outcome.go).
func (t *Table[T]) writeEncoded(ctx context.Context, op string, a *wire.BatchAction) (azcore.ETag, error) {
	att := &attempts{}
	call := wire.Call{Value: &writeState{table: t.name, pk: a.PK, entities: 1, att: att, gov: t.governor}}
	var etag azcore.ETag
	var err error
	switch a.Verb {
	case wire.Insert:
		etag, err = t.wire.InsertEntity(ctx, t.name, a.Body, call)
	case wire.Upsert, wire.Update, wire.Merge:
		// Without If-Match (an upsert, a merge with etag "") the service
		// inserts or replaces (merges).
		etag, err = t.wire.UpdateEntity(ctx, t.name, a.PK, a.RK, a.Body, a.Verb == wire.Merge, a.ETag, call)
	case wire.Delete:
		err = t.wire.DeleteEntity(ctx, t.name, a.PK, a.RK, a.ETag, call)
	}
	if err != nil {
		return t.settleWrite(op, a, err, att)
	}
	return etag, nil
}

// wrap is wrapError for an operation on this table.
func (t *Table[T]) wrap(op, pk, rk string, err error) error {
	return wrapError(op, t.name, pk, rk, err)
}

// wrapWrite is wrapWriteError for a write to this table.
func (t *Table[T]) wrapWrite(op, pk, rk string, err error, att *attempts) error {
	return wrapWriteError(op, t.name, pk, rk, err, att)
}

// describeKeys formats keys for messages.
func describeKeys(table, pk, rk string) string { return codec.DescribeKeys(table, pk, rk) }

// AsEntities returns the same table, read and written as property bags
// ([Entity]): the same Account, name, encryption and table-scan policy.
// Read a table of several kinds of entity through it, or write some
// properties of a T ([Table.Merge] of an Entity holding only those).
// Pattern packages that store a shape other than T (parts, blob
// references, counters) build on it, so users pass the *Table[T] they
// already have.
func (t *Table[T]) AsEntities() *Table[Entity] {
	if t == nil {
		return &Table[Entity]{}
	}
	return &Table[Entity]{
		wire:     t.wire,
		admin:    t.admin,
		name:     t.name,
		acct:     t.acct,
		account:  t.account,
		codec:    codec.Entities(t.codec),
		tracer:   t.tracer,
		svc:      t.svc,
		scans:    t.scans,
		logger:   t.logger,
		governor: t.governor,
		meter:    t.meter,
		retry:    t.retry,
	}
}
