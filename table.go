package tablekit

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// TableOptions configures a [Table]. A nil *TableOptions means defaults.
type TableOptions struct {
	// Name is the table's name, used in error messages. OpenTable sets it;
	// set it when building a Table from an *aztables.Client with NewTable,
	// because the SDK client does not expose its name.
	Name string

	// Encryption, when set, encrypts the fields tagged `table:",encrypt"`
	// (and, for Table[Entity], the properties it names) on the client.
	Encryption *Encryption
}

// Table is a typed view of one table: it stores values of T, a struct type
// described by `table` struct tags, or [Entity] for a property bag. A Table
// is safe for concurrent use.
//
// Writes and reads check keys and storage limits before anything is sent and
// return a *[ValidationError] for bad input; service failures match the
// sentinel errors ([ErrNotFound], [ErrPreconditionFailed], ...).
type Table[T any] struct {
	client   *aztables.Client
	name     string
	plan     *typePlan // nil when T is Entity
	isEntity bool
	crypt    *cryptContext
}

// NewTable returns a Table over client for values of T. It fails, naming the
// field, when T is not a struct with `table:",pk"` and `table:",rk"` string
// fields (or Entity), or has a field of an unsupported type.
func NewTable[T any](client *aztables.Client, opts *TableOptions) (*Table[T], error) {
	if client == nil {
		return nil, &ValidationError{Detail: "nil *aztables.Client", Err: ErrInvalidInput}
	}
	if opts == nil {
		opts = &TableOptions{}
	}
	t := &Table[T]{client: client, name: opts.Name}
	typ := reflect.TypeFor[T]()
	if typ == entityType {
		t.isEntity = true
	} else {
		plan, err := planFor(typ)
		if err != nil {
			return nil, err
		}
		if plan.pk == nil || plan.rk == nil {
			return nil, planError(typ, "", "a table struct needs a string field tagged `table:\",pk\"` and one tagged `table:\",rk\"`")
		}
		t.plan = plan
	}
	crypt, err := newCryptContext(opts.Encryption, t.plan)
	if err != nil {
		return nil, err
	}
	if t.plan != nil && t.plan.hasEncr && crypt == nil {
		return nil, planError(typ, "", "fields are tagged encrypt but TableOptions.Encryption is nil")
	}
	t.crypt = crypt
	return t, nil
}

// OpenTable checks the table name and returns a Table for it in acct.
func OpenTable[T any](acct *Account, name string, opts *TableOptions) (*Table[T], error) {
	if acct == nil {
		return nil, &ValidationError{Detail: "nil *Account", Err: ErrInvalidInput}
	}
	if err := ValidateTableName(name); err != nil {
		return nil, err
	}
	o := TableOptions{}
	if opts != nil {
		o = *opts
	}
	o.Name = name
	return NewTable[T](acct.Table(name), &o)
}

// Client returns the SDK client the table uses.
func (t *Table[T]) Client() *aztables.Client { return t.client }

// Name returns the table's name as given in TableOptions, or "".
func (t *Table[T]) Name() string { return t.name }

// CreateIfNotExists creates the table unless it exists.
func (t *Table[T]) CreateIfNotExists(ctx context.Context) error {
	_, err := t.client.CreateTable(ctx, nil)
	if err != nil {
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.ErrorCode == string(aztables.TableAlreadyExists) {
			return nil
		}
		return WrapError("CreateTable", err)
	}
	return nil
}

// DeleteTable deletes the table and everything in it. It returns an error
// matching ErrNotFound when the table does not exist.
func (t *Table[T]) DeleteTable(ctx context.Context) error {
	_, err := t.client.Delete(ctx, nil)
	return WrapError("DeleteTable", err)
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
	s := encodeState{table: t.name, crypt: t.crypt}
	var err error
	if t.isEntity {
		dst, err = encodeEntity(dst, any(v).(*Entity), &s)
	} else {
		dst, err = t.plan.encodeStruct(dst, reflect.ValueOf(v).Elem(), &s)
	}
	return dst, s.pk, s.rk, err
}

// decode decodes one entity object into v.
func (t *Table[T]) decode(data []byte, v *T) error {
	d := decodeState{table: t.name, crypt: t.crypt}
	if t.isEntity {
		return decodeEntity(data, any(v).(*Entity), &d)
	}
	return t.plan.decodeStruct(data, reflect.ValueOf(v).Elem(), &d)
}

// keysOf returns v's PartitionKey and RowKey.
func (t *Table[T]) keysOf(v *T) (string, string) {
	if t.isEntity {
		e := any(v).(*Entity)
		return e.PartitionKey, e.RowKey
	}
	rv := reflect.ValueOf(v).Elem()
	return fieldByPath(rv, t.plan.pk).String(), fieldByPath(rv, t.plan.rk).String()
}

// ETagOf returns the ETag v carries: its field tagged `table:",etag"`
// (the ETag field of an [Entity]), or "" when T has none. Code that is
// generic over T uses it to make a write conditional on the version it read.
func (t *Table[T]) ETagOf(v T) azcore.ETag { return t.etagOf(&v) }

// etagOf returns v's ETag, or "" when T has no etag field.
func (t *Table[T]) etagOf(v *T) azcore.ETag {
	if t.isEntity {
		return any(v).(*Entity).ETag
	}
	if t.plan.etag == nil {
		return ""
	}
	return azcore.ETag(fieldByPath(reflect.ValueOf(v).Elem(), t.plan.etag).String())
}

func (t *Table[T]) checkKeys(pk, rk string) error {
	s := encodeState{table: t.name}
	return s.checkKeys(pk, rk)
}

// checkAddressable refuses operations the SDK cannot address by key.
func (t *Table[T]) checkAddressable(op, pk, rk string) error {
	if pk == "" || rk == "" {
		return &ValidationError{
			Entity: t.name + ":" + pk + "/" + rk,
			Detail: op + " needs a non-empty PartitionKey and RowKey: the Azure SDK for Go cannot address an entity with an empty key (Insert and queries can)",
			Err:    ErrInvalidKey,
		}
	}
	return nil
}

// GetOptions configures [Table.Get].
type GetOptions struct {
	// Select lists the properties to read (projection); nil reads all.
	// Keys are always read. Fields not selected keep their zero value.
	Select []string
}

// Get reads one entity. It returns an error matching ErrNotFound when the
// entity does not exist.
func (t *Table[T]) Get(ctx context.Context, pk, rk string, opts *GetOptions) (T, error) {
	var zero T
	if err := t.checkKeys(pk, rk); err != nil {
		return zero, err
	}
	if (opts != nil && len(opts.Select) > 0) || pk == "" || rk == "" {
		// GetEntity has no $select and cannot address empty keys: a point
		// query costs the same one transaction.
		var sel []string
		if opts != nil {
			sel = opts.Select
		}
		page, err := t.QueryPage(ctx, PointQuery(pk, rk), &QueryOptions{Select: sel, PageSize: 1})
		if err != nil {
			return zero, err
		}
		if len(page.Items) == 0 {
			return zero, &ServiceError{StatusCode: 404, Code: "ResourceNotFound", Op: "Get", sentinel: ErrNotFound}
		}
		return page.Items[0], nil
	}
	rctx, rb := withRawBody(ctx)
	resp, err := t.client.GetEntity(rctx, pk, rk, nil)
	if err != nil {
		return zero, WrapError("Get", err)
	}
	data := resp.Value
	if rb.ok {
		data = rb.data
	}
	var v T
	if err := t.decode(data, &v); err != nil {
		return zero, err
	}
	t.setETag(&v, resp.ETag)
	return v, nil
}

func (t *Table[T]) setETag(v *T, etag azcore.ETag) {
	if etag == "" {
		return
	}
	if t.isEntity {
		any(v).(*Entity).ETag = etag
		return
	}
	if t.plan.etag != nil {
		fieldByPath(reflect.ValueOf(v).Elem(), t.plan.etag).SetString(string(etag))
	}
}

// Insert adds v; it fails with an error matching ErrAlreadyExists when an
// entity with its keys exists. It returns the new entity's ETag.
func (t *Table[T]) Insert(ctx context.Context, v T) (azcore.ETag, error) {
	buf := getBuf()
	defer putBuf(buf)
	data, _, _, err := t.encode(*buf, &v)
	*buf = data
	if err != nil {
		return "", err
	}
	resp, err := t.client.AddEntity(ctx, data, &aztables.AddEntityOptions{Format: to.Ptr(aztables.MetadataFormatNone)})
	if err != nil {
		return "", WrapError("Insert", err)
	}
	return resp.ETag, nil
}

// Upsert inserts v, or updates the stored entity with v's keys: Replace
// stores exactly v's properties, Merge keeps properties v does not have.
// It returns the new ETag.
func (t *Table[T]) Upsert(ctx context.Context, v T, mode UpdateMode) (azcore.ETag, error) {
	buf := getBuf()
	defer putBuf(buf)
	data, pk, rk, err := t.encode(*buf, &v)
	*buf = data
	if err != nil {
		return "", err
	}
	if err := t.checkAddressable("Upsert", pk, rk); err != nil {
		return "", err
	}
	resp, err := t.client.UpsertEntity(ctx, data, &aztables.UpsertEntityOptions{UpdateMode: sdkMode(mode)})
	if err != nil {
		return "", WrapError("Upsert", err)
	}
	return resp.ETag, nil
}

// Update updates the stored entity with v's keys if its ETag still equals
// etag: it fails with an error matching ErrPreconditionFailed when the
// entity changed since it was read, and ErrNotFound when it is gone. Pass
// azcore.ETagAny to update whatever version is stored. It returns the new
// ETag.
func (t *Table[T]) Update(ctx context.Context, v T, mode UpdateMode, etag azcore.ETag) (azcore.ETag, error) {
	if etag == "" {
		return "", &ValidationError{Entity: t.name, Detail: "Update needs the ETag read with the entity (or azcore.ETagAny to update unconditionally)", Err: ErrInvalidInput}
	}
	buf := getBuf()
	defer putBuf(buf)
	data, pk, rk, err := t.encode(*buf, &v)
	*buf = data
	if err != nil {
		return "", err
	}
	if err := t.checkAddressable("Update", pk, rk); err != nil {
		return "", err
	}
	resp, err := t.client.UpdateEntity(ctx, data, &aztables.UpdateEntityOptions{UpdateMode: sdkMode(mode), IfMatch: &etag})
	if err != nil {
		return "", WrapError("Update", err)
	}
	return resp.ETag, nil
}

// Delete deletes the entity if its ETag still equals etag (azcore.ETagAny:
// any version). It fails with ErrPreconditionFailed on a stale ETag and
// ErrNotFound when there is no such entity.
func (t *Table[T]) Delete(ctx context.Context, pk, rk string, etag azcore.ETag) error {
	if etag == "" {
		return &ValidationError{Entity: t.name, Detail: "Delete needs the ETag read with the entity (or azcore.ETagAny to delete unconditionally)", Err: ErrInvalidInput}
	}
	if err := t.checkKeys(pk, rk); err != nil {
		return err
	}
	if err := t.checkAddressable("Delete", pk, rk); err != nil {
		return err
	}
	_, err := t.client.DeleteEntity(ctx, pk, rk, &aztables.DeleteEntityOptions{IfMatch: &etag})
	return WrapError("Delete", err)
}

// DeleteIfExists deletes the entity whatever its version and reports
// whether it existed. A missing entity is not an error, which makes it the
// idempotent delete step of the eventually consistent patterns.
func (t *Table[T]) DeleteIfExists(ctx context.Context, pk, rk string) (bool, error) {
	err := t.Delete(ctx, pk, rk, azcore.ETagAny)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func sdkMode(m UpdateMode) aztables.UpdateMode {
	if m == Merge {
		return aztables.UpdateModeMerge
	}
	return aztables.UpdateModeReplace
}

// describeKeys formats keys for messages.
func describeKeys(table, pk, rk string) string {
	var b strings.Builder
	if table != "" {
		b.WriteString(table)
		b.WriteByte(':')
	}
	b.WriteString(pk)
	b.WriteByte('/')
	b.WriteString(rk)
	return b.String()
}
