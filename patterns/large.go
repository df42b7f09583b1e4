package patterns

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"reflect"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/core"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/keys"
)

// The large entities pattern ("Use blob storage to store large property
// values"): a property too large for an entity is stored in a blob and the
// entity keeps a reference to it.

// DefaultRefProperty is the property in which a [Large] entity keeps the
// references to its blobs.
const DefaultRefProperty = "LargeBlobs"

// LargeOptions configures a [Large]. A nil *LargeOptions means defaults.
type LargeOptions struct {
	// Threshold is the size above which a string or binary property is
	// stored in a blob, measured as the service does (2 bytes per UTF-16
	// code unit of a string, the length of a binary). 0 means
	// limits.PropertyBytes: only values the service would refuse move.
	// Whatever the threshold, when an entity would still be over 1 MiB its
	// largest string and binary properties move to blobs until it fits.
	Threshold int
	// BlobPrefix starts the name of every blob this Large writes; Sweep
	// looks only at blobs with this prefix. Default: the table's name and
	// "/" ("large/" when the Table has no name).
	BlobPrefix string
	// RefProperty names the property holding the blob references
	// (default DefaultRefProperty).
	RefProperty string
	// Concurrency is how many blobs are read or written at once (default 8).
	Concurrency int
	// Grace is how long a blob may exist without an entity referencing it
	// before Sweep removes it (default DefaultLargeGrace, one hour). Every
	// write relies on it: it writes its entity within Grace/2, by Clock, of
	// starting to write the entity's blobs, or gives up (see Upsert). Every
	// Large writing a table, and every Sweep of it, must use the same
	// Grace (or Sweep a longer one), and the clocks of the machines
	// running them and the service's must not drift apart by Grace/2.
	Grace time.Duration
	// Clock tells the time for the writes' deadline and Sweep's ages (nil means
	// time.Now).
	Clock func() time.Time
	// Retry says how often Upsert, Modify, Update and Delete with
	// azcore.ETagAny, and DeleteIfExists start again when the entity
	// changed between reading its references and writing it, and how
	// often a read re-reads an entity whose blob a concurrent write just
	// removed. The zero value means core.ConflictRetry.
	Retry tablekit.RetryPolicy
}

// DefaultLargeGrace is the default LargeOptions.Grace.
const DefaultLargeGrace = time.Hour

// ErrMissingBlob matches the error of a read that found an entity
// referencing a blob that does not exist: the entity did not change while
// it was read, so no concurrent write explains it. It does not match
// tablekit.ErrNotFound, which a read returns only when the entity does not
// exist. Large never stores such a reference; a blob deleted by hand, or
// by a Sweep with a shorter grace than the writers', can leave one.
var ErrMissingBlob = errors.New("patterns: a referenced blob is missing")

// BlobRef is the reference an entity keeps to one property stored in a blob.
type BlobRef struct {
	// Blob is the blob's name in the container.
	Blob string `json:"blob"`
	// Binary is true for an Edm.Binary property, false for an Edm.String.
	Binary bool `json:"bin,omitempty"`
	// Size is the blob's length in bytes (UTF-8 for a string).
	Size int64 `json:"size"`
}

// Large stores entities whose properties may be larger than a table
// allows: string and binary properties over a threshold are written to
// blobs in a container, and the entity keeps their references (a JSON
// property, by default LargeBlobs). Reads restore them transparently,
// fetching several blobs concurrently.
//
// Writes keep one invariant: an entity never references a blob that does
// not exist. A write (Insert, Upsert, Update, Modify) stores the new
// blobs (under new, unique names) first, then the entity, and only then
// deletes the blobs of the version it replaced; a delete (Delete,
// DeleteIfExists) deletes the entity first, then its blobs. A crash in
// between can only leave blobs no entity references, which Sweep removes
// once they are older than the grace period (LargeOptions.Grace); a write
// stores its entity within half of it or not at all, so Sweep never
// removes a blob an entity references or is about to reference.
//
// Reads never report a present entity as missing: a Get or Query that
// finds a blob gone (a concurrent write replaced the entity, or a delete
// removed it) reads the entity again and restores the version it finds,
// and reports tablekit.ErrNotFound only when the entity is gone. Get
// fills T's etag field with the entity's ETag, and every write returns
// the new one.
//
// The verbs are tablekit.Table's: Get, Insert, Upsert, Update (with an
// ETag), Modify (read-modify-write by a function), Delete (with an ETag)
// and DeleteIfExists. Every write but Insert first reads the references
// of the version it replaces (one point query: it deletes that version's
// blobs afterwards) and is conditional on that version, so Update and
// Delete check the caller's ETag before writing any blob.
//
// T is [tablekit.Entity] or a struct as for [tablekit.Table]. The string
// and []byte fields of a struct can move to blobs (fields with the json or
// guid option cannot). Blob contents are not encrypted by tablekit, so the
// properties the table encrypts (see tablekit.Encryption) never move to
// blobs: each stays in the entity, encrypted, within the service's 64 KiB.
// A Large is safe for concurrent use.
type Large[T any] struct {
	table     *tablekit.Table[tablekit.Entity]
	typed     *tablekit.Table[T] // converts T <-> Entity in plaintext (ToEntity, FromEntity)
	container *container.Client
	cname     string
	encrypted map[string]bool // properties the table encrypts: never spilled
	threshold int
	prefix    string
	refProp   string
	conc      int
	grace     time.Duration
	clock     func() time.Time
	retry     tablekit.RetryPolicy
	isEntity  bool
	fields    map[string]largeField // property name -> struct field
}

// largeField is a struct field whose value can move to a blob.
type largeField struct {
	index   []int
	isBytes bool
}

// inlineLimit is the size up to which a struct's string and []byte fields
// go through tablekit's codec; larger values bypass it, since the codec
// refuses values over the storage limits.
const inlineLimit = 1024

// NewLarge returns a Large storing values of T in table, through its
// property-bag view (table.AsEntities(): the entities keep table's
// client-side encryption, tracing, logger and Cosmos DB mode), with the
// blobs in container (which must exist).
func NewLarge[T any](table *tablekit.Table[T], container *container.Client, opts *LargeOptions) (*Large[T], error) {
	const op = "patterns.NewLarge"
	if table == nil || container == nil {
		return nil, &tablekit.ValidationError{Op: op, Detail: "nil table or container", Err: tablekit.ErrInvalidInput}
	}
	view := table.AsEntities()
	l := &Large[T]{table: view, typed: table, container: container, threshold: limits.PropertyBytes, refProp: DefaultRefProperty, conc: 8, grace: DefaultLargeGrace, retry: core.ConflictRetry}
	if parts, err := blob.ParseURL(container.URL()); err == nil {
		l.cname = parts.ContainerName
	}
	if names := core.EncryptedProperties(table); len(names) > 0 {
		l.encrypted = make(map[string]bool, len(names))
		for _, name := range names {
			l.encrypted[name] = true
		}
	}
	l.prefix = "large/"
	if table.Name() != "" {
		l.prefix = table.Name() + "/"
	}
	if opts != nil {
		if opts.Threshold < 0 {
			return nil, &tablekit.ValidationError{Op: op, Property: "Threshold", Size: opts.Threshold, Detail: "negative threshold", Err: tablekit.ErrInvalidInput}
		}
		if opts.Concurrency < 0 {
			return nil, &tablekit.ValidationError{Op: op, Property: "Concurrency", Size: opts.Concurrency, Detail: "negative concurrency", Err: tablekit.ErrInvalidInput}
		}
		if opts.Threshold > 0 {
			l.threshold = min(opts.Threshold, limits.PropertyBytes)
		}
		if opts.BlobPrefix != "" {
			l.prefix = opts.BlobPrefix
		}
		if opts.RefProperty != "" {
			l.refProp = opts.RefProperty
		}
		if opts.Concurrency > 0 {
			l.conc = opts.Concurrency
		}
		if opts.Grace < 0 {
			return nil, &tablekit.ValidationError{Op: op, Property: "Grace", Detail: "negative grace period", Err: tablekit.ErrInvalidInput}
		}
		if opts.Grace > 0 {
			l.grace = opts.Grace
		}
		if err := core.ValidateRetry(op, opts.Retry); err != nil {
			return nil, err
		}
		l.retry = core.WithDefaults(opts.Retry, core.ConflictRetry)
		l.clock = opts.Clock
	}
	if !validKind(l.refProp) {
		return nil, &tablekit.ValidationError{Op: op, Property: "RefProperty", Detail: fmt.Sprintf("%q is not a property name: letters, digits and _", l.refProp), Err: tablekit.ErrInvalidInput}
	}
	if reflect.TypeFor[T]() == reflect.TypeFor[tablekit.Entity]() {
		l.isEntity = true
		return l, nil
	}
	fields, err := largeFields(table)
	if err != nil {
		return nil, withOp(op, err)
	}
	if _, clash := fields[l.refProp]; clash {
		return nil, &tablekit.ValidationError{Op: op, Property: l.refProp, Detail: "type " + reflect.TypeFor[T]().String() + " has a property named like LargeOptions.RefProperty; choose another RefProperty", Err: tablekit.ErrInvalidInput}
	}
	l.fields = fields
	return l, nil
}

// ContainerName returns the name of the container holding the blobs.
func (l *Large[T]) ContainerName() string { return l.cname }

// largeFields maps the property names of T's string and []byte fields to
// the fields. It asks tablekit's codec which property each field is stored
// as, by encoding a value with a marker in that field.
func largeFields[T any](table *tablekit.Table[T]) (map[string]largeField, error) {
	var zero T
	if _, err := core.ToEntity(table, zero); err != nil {
		return nil, err
	}
	typ := reflect.TypeFor[T]()
	fields := make(map[string]largeField)
	for _, sf := range reflect.VisibleFields(typ) {
		if !sf.IsExported() || sf.Anonymous {
			continue
		}
		isBytes := sf.Type.Kind() == reflect.Slice && sf.Type.Elem().Kind() == reflect.Uint8
		if sf.Type.Kind() != reflect.String && !isBytes {
			continue
		}
		var v T
		fv, err := reflect.ValueOf(&v).Elem().FieldByIndexErr(sf.Index)
		if err != nil || !fv.CanSet() {
			continue // behind an embedded pointer
		}
		marker := "tablekit-large-marker-" + sf.Name
		if isBytes {
			fv.SetBytes([]byte(marker))
		} else {
			fv.SetString(marker)
		}
		e, err := core.ToEntity(table, v)
		if err != nil {
			continue // e.g. a guid string
		}
		for name, val := range e.Properties {
			if s, ok := val.(string); ok && !isBytes && s == marker || isBytes && bytes.Equal(asBytes(val), []byte(marker)) {
				fields[name] = largeField{index: sf.Index, isBytes: isBytes}
			}
		}
	}
	return fields, nil
}

func asBytes(v any) []byte {
	b, _ := v.([]byte)
	return b
}

// toEntity converts v to a property bag whose large values are not yet
// checked against the storage limits.
func (l *Large[T]) toEntity(v T) (tablekit.Entity, error) {
	if l.isEntity {
		e := any(v).(tablekit.Entity)
		props := make(map[string]any, len(e.Properties))
		for name, val := range e.Properties {
			if val != nil {
				props[name] = normalizeValue(val)
			}
		}
		e.Properties = props
		return e, nil
	}
	rv := reflect.ValueOf(&v).Elem()
	big := make(map[string]any)
	for name, f := range l.fields {
		fv := rv.FieldByIndex(f.index)
		if f.isBytes && fv.Len() > inlineLimit {
			big[name] = fv.Bytes()
			fv.SetBytes(nil)
		} else if !f.isBytes && fv.Len() > inlineLimit {
			big[name] = fv.String()
			fv.SetString("")
		}
	}
	e, err := core.ToEntity(l.typed, v)
	if err != nil {
		return e, err
	}
	if e.Properties == nil {
		e.Properties = make(map[string]any)
	}
	for name, val := range big {
		e.Properties[name] = val
	}
	return e, nil
}

// fromEntity converts a property bag with its large values restored to T.
func (l *Large[T]) fromEntity(e tablekit.Entity) (T, error) {
	if l.isEntity {
		return any(e).(T), nil
	}
	small := e
	small.Properties = make(map[string]any, len(e.Properties))
	big := make(map[string]any)
	for name, val := range e.Properties {
		if _, ok := l.fields[name]; ok && valueSize(val) > inlineLimit {
			big[name] = val
		} else {
			small.Properties[name] = val
		}
	}
	v, err := core.FromEntity(l.typed, small)
	if err != nil {
		return v, err
	}
	rv := reflect.ValueOf(&v).Elem()
	for name, val := range big {
		f := l.fields[name]
		fv := rv.FieldByIndex(f.index)
		switch x := val.(type) {
		case []byte:
			if !f.isBytes {
				return v, &tablekit.DecodeError{Entity: e.PartitionKey + "/" + e.RowKey, Property: name, Detail: "a binary value cannot be stored in a string field"}
			}
			fv.SetBytes(x)
		case string:
			if f.isBytes {
				return v, &tablekit.DecodeError{Entity: e.PartitionKey + "/" + e.RowKey, Property: name, Detail: "a string value cannot be stored in a []byte field"}
			}
			fv.SetString(x)
		}
	}
	return v, nil
}

// spilled is one property that goes to a blob.
type spilled struct {
	name string
	data []byte
	ref  BlobRef
}

// split decides which properties of e go to blobs, removes them from e and
// names their blobs.
func (l *Large[T]) split(e *tablekit.Entity) ([]*spilled, error) {
	if _, clash := e.Properties[l.refProp]; clash {
		return nil, &tablekit.ValidationError{Entity: e.PartitionKey + "/" + e.RowKey, Property: l.refProp, Detail: "the entity has a property named like LargeOptions.RefProperty, which Large uses for blob references", Err: tablekit.ErrInvalidInput}
	}
	var out []*spilled
	spill := func(name string) error {
		val := e.Properties[name]
		s := &spilled{name: name}
		switch x := val.(type) {
		case []byte:
			s.data, s.ref.Binary = x, true
		case string:
			if !utf8.ValidString(x) {
				return &tablekit.ValidationError{Entity: e.PartitionKey + "/" + e.RowKey, Property: name, Detail: "string is not valid UTF-8", Err: tablekit.ErrInvalidInput}
			}
			s.data = []byte(x)
		}
		s.ref.Size = int64(len(s.data))
		s.ref.Blob = l.prefix + newBlobID() + "/" + name
		delete(e.Properties, name)
		out = append(out, s)
		return nil
	}
	names := slices.Sorted(mapsKeys(e.Properties))
	size := keysSize(e.PartitionKey, e.RowKey)
	for _, name := range names {
		val := e.Properties[name]
		if l.spillable(name, val) && valueSize(val)-4 > l.threshold {
			if err := spill(name); err != nil {
				return nil, err
			}
			continue
		}
		size += propertySize(name, val)
	}
	refSize := func() int { return propertySize(l.refProp, "") + 2*(len(out)+1)*(len(l.prefix)+100) }
	for size+refSize() > limits.EntityBytes {
		victim, best := "", 0
		for _, name := range names {
			val, ok := e.Properties[name]
			if ok && l.spillable(name, val) && valueSize(val) > best {
				victim, best = name, valueSize(val)
			}
		}
		if victim == "" {
			break // nothing left to move: the table will refuse the entity
		}
		size -= propertySize(victim, e.Properties[victim])
		if err := spill(victim); err != nil {
			return nil, err
		}
	}
	if len(out) > 0 {
		refs := make(map[string]BlobRef, len(out))
		for _, s := range out {
			refs[s.name] = s.ref
		}
		b, err := json.Marshal(refs)
		if err != nil {
			return nil, err
		}
		e.Properties[l.refProp] = string(b)
	}
	return out, nil
}

// spillable reports whether property name with value v may move to a
// blob: a string or binary value that the table does not encrypt (blob
// contents are not encrypted, so an encrypted property stays in the
// entity, within the service's limits).
func (l *Large[T]) spillable(name string, v any) bool {
	if l.encrypted[name] {
		return false
	}
	switch v.(type) {
	case string, []byte:
		return true
	}
	return false
}

func mapsKeys(m map[string]any) iter.Seq[string] {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// newBlobID returns a random GUID string.
func newBlobID() string {
	var g [16]byte
	_, _ = rand.Read(g[:])
	g[6] = g[6]&0x0f | 0x40
	g[8] = g[8]&0x3f | 0x80
	return keys.GUID(g)
}

// refs parses the reference property of e.
func (l *Large[T]) refs(e *tablekit.Entity) (map[string]BlobRef, error) {
	raw, ok := e.Properties[l.refProp]
	if !ok {
		return nil, nil
	}
	s, ok := raw.(string)
	var refs map[string]BlobRef
	if ok {
		if err := json.Unmarshal([]byte(s), &refs); err == nil {
			return refs, nil
		}
	}
	return nil, &tablekit.DecodeError{Entity: e.PartitionKey + "/" + e.RowKey, Property: l.refProp, Detail: "not a blob reference written by patterns.Large"}
}

// readRefs reads only the reference property of an entity (and its ETag):
// one point query.
func (l *Large[T]) readRefs(ctx context.Context, pk, rk string) (map[string]BlobRef, azcore.ETag, error) {
	e, err := core.GetSelect(ctx, l.table, pk, rk, l.refProp)
	if err != nil {
		return nil, "", err
	}
	refs, err := l.refs(&e)
	return refs, e.ETag, err
}

// Refs returns the blob references of an entity, by property name, without
// reading anything else: one point query.
func (l *Large[T]) Refs(ctx context.Context, pk, rk string) (map[string]BlobRef, error) {
	refs, _, err := l.readRefs(ctx, pk, rk)
	return refs, withOp("Large.Refs", err)
}

// LargeGetOptions configures [Large.Get] and [Large.Query]. A nil
// *LargeGetOptions means defaults.
type LargeGetOptions struct {
	// SkipBlobs reads only the entity: properties stored in blobs are left
	// out (zero in a struct), which saves a blob read each.
	SkipBlobs bool
	// Query configures Large.Query's table query; Get ignores it.
	Query *tablekit.QueryOptions
}

// Get reads an entity and restores its properties from their blobs,
// reading the blobs concurrently, with its ETag in T's etag field when T
// has one. It returns an error matching tablekit.ErrNotFound when the
// entity does not exist. When a blob is missing because a concurrent
// Upsert or DeleteIfExists replaced or removed the entity meanwhile, Get
// reads the entity again (see LargeOptions.Retry); a blob missing from an
// entity that did not change is an error matching ErrMissingBlob. Cost:
// one point query and one blob read per large property.
func (l *Large[T]) Get(ctx context.Context, pk, rk string, opts *LargeGetOptions) (T, error) {
	const op = "Large.Get"
	var zero T
	e, err := l.table.Get(ctx, pk, rk)
	if err != nil {
		return zero, withOp(op, err)
	}
	e, err = l.load(ctx, e, opts != nil && opts.SkipBlobs)
	if err != nil {
		return zero, withOp(op, err)
	}
	v, err := l.fromEntity(e)
	return v, withOp(op, err)
}

// Query returns the entities matching f, each with its blob properties
// restored (unless opts.SkipBlobs). An entity whose blob a concurrent
// Upsert replaced is read again and returned as it is now; one a
// concurrent DeleteIfExists removed is left out.
func (l *Large[T]) Query(ctx context.Context, f tablekit.Filter, opts *LargeGetOptions) iter.Seq2[T, error] {
	var qo *tablekit.QueryOptions
	skip := false
	if opts != nil {
		qo, skip = opts.Query, opts.SkipBlobs
	}
	return func(yield func(T, error) bool) {
		var zero T
		for e, err := range l.table.Query(ctx, f, qo) {
			if err == nil {
				e, err = l.load(ctx, e, skip)
				if errors.Is(err, errEntityGone) {
					continue
				}
			}
			if err != nil {
				yield(zero, withOp("Large.Query", err))
				return
			}
			v, err := l.fromEntity(e)
			if !yield(v, withOp("Large.Query", err)) || err != nil {
				return
			}
		}
	}
}

// errEntityGone marks the error of load when the entity was deleted while
// it was read.
var errEntityGone = errors.New("the entity was deleted while it was read")

// goneError is the error of an entity deleted while it was read: it
// matches tablekit.ErrNotFound and errEntityGone.
type goneError struct{ err error }

func (g *goneError) Error() string   { return g.err.Error() }
func (g *goneError) Unwrap() []error { return []error{g.err, errEntityGone} }

// load restores e's blob properties. When a blob is missing it reads the
// entity again: a changed entity is restored again, a deleted one is a
// goneError, and an unchanged one references a missing blob
// (ErrMissingBlob).
func (l *Large[T]) load(ctx context.Context, e tablekit.Entity, skip bool) (tablekit.Entity, error) {
	var last error
	for range core.Attempts(ctx, l.retry) {
		out, err := l.restore(ctx, e, skip)
		var missing *missingBlobError
		if !errors.As(err, &missing) {
			return out, err
		}
		last = err
		fresh, err := l.table.Get(ctx, e.PartitionKey, e.RowKey)
		if errors.Is(err, tablekit.ErrNotFound) {
			return out, &goneError{err}
		}
		if err != nil {
			return out, err
		}
		if fresh.ETag == e.ETag {
			return out, fmt.Errorf("patterns: property %s of %s/%s references blob %s: %w (%v)", missing.property, e.PartitionKey, e.RowKey, missing.blob, ErrMissingBlob, missing.err)
		}
		e = fresh
	}
	if err := ctx.Err(); err != nil {
		return e, err
	}
	return e, fmt.Errorf("patterns: %s/%s changed during each of %d reads (last: %v): %w", e.PartitionKey, e.RowKey, l.retry.MaxAttempts, last, tablekit.ErrPreconditionFailed)
}

// missingBlobError is restore's error for a blob that does not exist.
type missingBlobError struct {
	property, blob string
	err            error
}

func (m *missingBlobError) Error() string {
	return fmt.Sprintf("blob %s of property %s: %v", m.blob, m.property, m.err)
}

// restore returns e with its reference property replaced by the values of
// its blobs (or just removed, when skip).
func (l *Large[T]) restore(ctx context.Context, e tablekit.Entity, skip bool) (tablekit.Entity, error) {
	refs, err := l.refs(&e)
	if err != nil {
		return e, err
	}
	props := make(map[string]any, len(e.Properties)+len(refs))
	for name, val := range e.Properties {
		if name != l.refProp {
			props[name] = val
		}
	}
	e.Properties = props
	if skip || len(refs) == 0 {
		return e, nil
	}
	names := slices.Sorted(maps.Keys(refs))
	values := make([][]byte, len(names))
	err = forEach(ctx, len(names), l.conc, func(ctx context.Context, i int) error {
		ref := refs[names[i]]
		data, err := l.download(ctx, ref)
		if errors.Is(err, tablekit.ErrNotFound) {
			return &missingBlobError{property: names[i], blob: ref.Blob, err: err}
		}
		if err != nil {
			return fmt.Errorf("patterns: read property %s of %s/%s from blob %s: %w", names[i], e.PartitionKey, e.RowKey, ref.Blob, err)
		}
		values[i] = data
		return nil
	})
	if err != nil {
		return e, err
	}
	for i, name := range names {
		if refs[name].Binary {
			props[name] = values[i]
		} else {
			props[name] = string(values[i])
		}
	}
	return e, nil
}

// download reads one blob and checks its length.
func (l *Large[T]) download(ctx context.Context, ref BlobRef) ([]byte, error) {
	resp, err := l.container.NewBlobClient(ref.Blob).DownloadStream(ctx, nil)
	if err != nil {
		return nil, core.WrapError("GetBlob", err)
	}
	body := resp.NewRetryReader(ctx, nil)
	defer body.Close()
	buf := bytes.NewBuffer(make([]byte, 0, ref.Size))
	if _, err := io.Copy(buf, body); err != nil {
		return nil, err
	}
	if int64(buf.Len()) != ref.Size {
		return nil, fmt.Errorf("blob holds %d bytes, the reference says %d", buf.Len(), ref.Size)
	}
	return buf.Bytes(), nil
}

// SweepOptions configures [Large.Sweep]. A nil *SweepOptions means
// defaults.
type SweepOptions struct {
	// MinAge protects recent blobs: a blob modified less than MinAge
	// before the sweep is kept even if no entity references it yet,
	// because an Upsert may be between writing it and writing its entity.
	// 0 means the Large's grace period (LargeOptions.Grace, one hour by
	// default). A shorter MinAge than the Grace of the Larges writing the
	// table, or a negative one (no protection), is safe only when no
	// Upsert runs during the sweep.
	MinAge time.Duration
	// DryRun finds the unreferenced blobs but deletes nothing.
	DryRun bool
}

// SweepResult reports what a sweep found.
type SweepResult struct {
	// Blobs counts the blobs under the Large's prefix.
	Blobs int
	// Referenced counts the blobs some entity references.
	Referenced int
	// Orphans lists the unreferenced blobs old enough to remove, sorted.
	Orphans []string
	// Deleted counts the orphans deleted (0 in a dry run).
	Deleted int
}

// Sweep finds the blobs under the Large's prefix that no entity of the
// table references (left by a crash or a failed best-effort delete) and
// deletes those older than the grace period (see SweepOptions.MinAge). It
// lists the blobs first and reads every entity's references after (a
// projection of one property), so a blob written during the sweep is
// either not listed or protected by its age, and a blob an entity
// references when the sweep reads it is kept. Upsert writes an entity
// within half the grace period of writing its blobs, so no entity can come
// to reference a blob after Sweep found it unreferenced and old.
//
// A blob's age is measured from its last modification (the service's
// clock) to now by the Large's Clock; without a Clock, to the earlier of
// this machine's time and the service's (the Date of the listing), so
// that a fast local clock does not age blobs early.
func (l *Large[T]) Sweep(ctx context.Context, opts *SweepOptions) (SweepResult, error) {
	var res SweepResult
	minAge := l.grace
	dry := false
	if opts != nil {
		if opts.MinAge != 0 {
			minAge = opts.MinAge
		}
		dry = opts.DryRun
	}
	candidates := make(map[string]bool)
	pager := l.container.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr(l.prefix)})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return res, core.WrapError("ListBlobs", err)
		}
		now := core.Now(l.clock)
		if l.clock == nil && page.Date != nil && page.Date.Before(now) {
			now = *page.Date // the service's clock, as LastModified
		}
		for _, b := range page.Segment.BlobItems {
			if b.Name == nil {
				continue
			}
			res.Blobs++
			old := minAge < 0
			if !old && b.Properties != nil && b.Properties.LastModified != nil {
				old = now.Sub(*b.Properties.LastModified) >= minAge
			}
			candidates[*b.Name] = old
		}
	}
	// Every entity's references, across the table: a table scan on
	// purpose, so neither logged nor refused by the table's policy.
	for e, err := range l.table.Query(ctx, tablekit.Where(l.refProp+" gt ?", ""), &tablekit.QueryOptions{Select: []string{l.refProp}, AllowTableScan: true}) {
		if err != nil {
			return res, err
		}
		refs, err := l.refs(&e)
		if err != nil {
			continue // not ours
		}
		for _, r := range refs {
			if _, ok := candidates[r.Blob]; ok {
				res.Referenced++
				delete(candidates, r.Blob)
			}
		}
	}
	for name, old := range candidates {
		if old {
			res.Orphans = append(res.Orphans, name)
		}
	}
	slices.Sort(res.Orphans)
	if dry {
		return res, nil
	}
	for _, name := range res.Orphans {
		if err := l.deleteBlob(ctx, name); err != nil {
			return res, err
		}
		res.Deleted++
	}
	return res, nil
}
