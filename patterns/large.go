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
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// The large entities pattern ("Use blob storage to store large property
// values"): a property too large for an entity is stored in a blob and the
// entity keeps a reference to it.

// defaultRefProperty is the property in which a [Large] entity keeps the
// references to its blobs.
const defaultRefProperty = "LargeBlobs"

// LargeOptions configures a [Large]. A nil *LargeOptions means defaults.
type LargeOptions struct {
	// Threshold is the size above which a string or binary property is
	// stored in a blob, measured as the service does (2 bytes per UTF-16
	// code unit of a string, the length of a binary). 0 means 64 KiB, the
	// service's limit: only values it would refuse move. Whatever the
	// threshold, when an entity would still be over 1 MiB its largest
	// string and binary properties move to blobs until it fits.
	Threshold int
	// BlobPrefix starts the name of every blob this Large writes; Sweep
	// looks only at blobs with this prefix. Default: the table's name and
	// "/".
	BlobPrefix string
	// RefProperty names the property holding the blob references
	// (default "LargeBlobs").
	RefProperty string
	// Concurrency is how many blobs are read or written at once (default 8).
	Concurrency int
	// Grace is how long a blob may exist without an entity referencing it
	// before Sweep removes it (default one hour). Every write stores its
	// entity within Grace/2, by Clock, of starting to write its blobs, or
	// gives up (see Upsert). Every Large writing a table, and every Sweep
	// of it, must use the same Grace (or Sweep a longer one), and the
	// clocks of the machines running them and the service's must not
	// drift apart by Grace/2.
	Grace time.Duration
	// Clock tells the time for the writes' deadline and Sweep's ages (nil
	// means time.Now).
	Clock func() time.Time
}

// defaultLargeGrace is the default LargeOptions.Grace.
const defaultLargeGrace = time.Hour

// ErrMissingBlob matches the error of a read that found an entity
// referencing a blob that does not exist: the entity did not change while
// it was read, so no concurrent write explains it. It does not match
// tablekit.ErrNotFound, which a read returns only when the entity does not
// exist. Large never stores such a reference; a blob deleted by hand, or
// by a Sweep with a shorter grace than the writers', can leave one.
var ErrMissingBlob = errors.New("patterns: a referenced blob is missing")

// blobRef is the reference an entity keeps to one property stored in a blob.
type blobRef struct {
	// Blob is the blob's name in the container.
	Blob string `json:"blob"`
	// Binary is true for an Edm.Binary property, false for an Edm.String.
	Binary bool `json:"bin,omitempty"`
	// Size is the blob's length in bytes (UTF-8 for a string).
	Size int64 `json:"size"`
}

// Large stores entities whose string and binary properties may be larger
// than a table allows: values over a threshold are written to blobs of a
// container, and the entity keeps their references (a JSON property,
// "LargeBlobs"). Reads restore them, fetching blobs concurrently; Get fills
// T's etag field and every write returns the new ETag.
//
// Writes never leave an entity referencing a missing blob: they store new
// blobs (under new names) first, then the entity, then delete the blobs of
// the version replaced; deletes remove the entity first. A crash in between
// leaves only unreferenced blobs, which [Large.Sweep] removes after the
// grace period (LargeOptions.Grace). Reads never report a present entity
// as missing: a read that finds a blob gone reads the entity again. The
// package doc, "Large entities", says more, with each verb's cost.
//
// Its verbs are tablekit.Table's (a Large is a [tablekit.Store]), conflicts
// retried as the Table's TableOptions.Retry says. T is [tablekit.Entity] or
// a struct as for [tablekit.Table], whose string and []byte fields can move
// to blobs (not those with the json or guid option). Blobs are not
// encrypted: properties the table encrypts stay in the entity. A Large is
// safe for concurrent use.
type Large[T any] struct {
	table     *tablekit.Table[tablekit.Entity]
	typed     *tablekit.Table[T] // converts T <-> Entity in plaintext (ToEntity, FromEntity)
	container *container.Client
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
// client-side encryption and its Account's settings), with the blobs in
// container (which must exist).
func NewLarge[T any](table *tablekit.Table[T], container *container.Client, opts *LargeOptions) (*Large[T], error) {
	const op = "patterns.NewLarge"
	if table == nil || container == nil {
		return nil, invalid(op, "nil table or container")
	}
	view := table.AsEntities()
	l := &Large[T]{table: view, typed: table, container: container, threshold: limits.PropertyBytes, refProp: defaultRefProperty, conc: 8, grace: defaultLargeGrace, retry: table.Retry()}
	if names := table.Encrypted(); len(names) > 0 {
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

// usable refuses a Large its constructor did not make.
func (l *Large[T]) usable(op string) error {
	if l == nil || l.table == nil {
		return unusable(op, "NewLarge")
	}
	return nil
}

// largeFields maps the property names of T's string and []byte fields to
// the fields. It asks tablekit's codec which property each field is stored
// as, by encoding a value with a marker in that field.
func largeFields[T any](table *tablekit.Table[T]) (map[string]largeField, error) {
	var zero T
	if _, err := table.ToEntity(zero); err != nil {
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
		e, err := table.ToEntity(v)
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
	e, err := l.typed.ToEntity(v)
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
	v, err := l.typed.FromEntity(small)
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
	ref  blobRef
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
		refs := make(map[string]blobRef, len(out))
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
func (l *Large[T]) refs(e *tablekit.Entity) (map[string]blobRef, error) {
	raw, ok := e.Properties[l.refProp]
	if !ok {
		return nil, nil
	}
	s, ok := raw.(string)
	var refs map[string]blobRef
	if ok {
		if err := json.Unmarshal([]byte(s), &refs); err == nil {
			return refs, nil
		}
	}
	return nil, &tablekit.DecodeError{Entity: e.PartitionKey + "/" + e.RowKey, Property: l.refProp, Detail: "not a blob reference written by patterns.Large"}
}

// readRefs reads only the reference property of an entity (and its ETag):
// one point query.
func (l *Large[T]) readRefs(ctx context.Context, pk, rk string) (map[string]blobRef, azcore.ETag, error) {
	e, err := l.table.GetSelect(ctx, pk, rk, l.refProp)
	if err != nil {
		return nil, "", err
	}
	refs, err := l.refs(&e)
	return refs, e.ETag, err
}

// Get reads an entity and restores its properties from their blobs,
// reading the blobs concurrently, with its ETag in T's etag field when T
// has one. It returns an error matching tablekit.ErrNotFound when the
// entity does not exist. When a blob is missing because a concurrent write
// replaced or removed the entity meanwhile, Get reads the entity again; a
// blob missing from an entity that did not change is an error matching
// ErrMissingBlob. For some properties only, and no blob read for the
// others, query with tablekit.PointQuery and QueryOptions.Select. Cost: one
// point query and one blob read per large property.
func (l *Large[T]) Get(ctx context.Context, pk, rk string) (T, error) {
	const op = "patterns.Large.Get"
	var zero T
	if err := l.usable(op); err != nil {
		return zero, err
	}
	e, err := l.table.Get(ctx, pk, rk)
	if err != nil {
		return zero, withOp(op, err)
	}
	e, err = l.load(ctx, e, nil)
	if err != nil {
		return zero, withOp(op, err)
	}
	v, err := l.fromEntity(e)
	return v, withOp(op, err)
}

// Query returns the entities matching f, each with its blob properties
// restored. With opts.Select, only the properties selected are read, and
// only their blobs. An entity whose blob a concurrent write replaced is
// read again and returned as it is now; one a concurrent delete removed is
// left out.
func (l *Large[T]) Query(ctx context.Context, f tablekit.Filter, opts *tablekit.QueryOptions) iter.Seq2[T, error] {
	const op = "patterns.Large.Query"
	return func(yield func(T, error) bool) {
		var zero T
		if err := l.usable(op); err != nil {
			yield(zero, err)
			return
		}
		var selected map[string]bool
		if opts != nil && len(opts.Select) > 0 {
			o := *opts
			selected = make(map[string]bool, len(o.Select))
			for _, name := range o.Select {
				selected[name] = true
			}
			if !selected[l.refProp] {
				o.Select = append(slices.Clone(o.Select), l.refProp)
			}
			opts = &o
		}
		for e, err := range l.table.Query(ctx, f, opts) {
			if err == nil {
				e, err = l.load(ctx, e, selected)
				if errors.Is(err, errEntityGone) {
					continue
				}
			}
			if err != nil {
				yield(zero, withOp(op, err))
				return
			}
			v, err := l.fromEntity(e)
			if !yield(v, withOp(op, err)) || err != nil {
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
func (l *Large[T]) load(ctx context.Context, e tablekit.Entity, selected map[string]bool) (tablekit.Entity, error) {
	var last error
	for range timing.Policy(l.retry).Attempts(ctx) {
		out, err := l.restore(ctx, e, selected)
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
			return out, fmt.Errorf("property %s of %s/%s references blob %s: %w (%v)", missing.property, e.PartitionKey, e.RowKey, missing.blob, ErrMissingBlob, missing.err)
		}
		e = fresh
	}
	if err := ctx.Err(); err != nil {
		return e, err
	}
	return e, fmt.Errorf("%s/%s changed during each of %d reads (last: %v): %w", e.PartitionKey, e.RowKey, l.retry.MaxAttempts, last, tablekit.ErrPreconditionFailed)
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
// its blobs: all of them, or only the properties selected when selected is
// not nil.
func (l *Large[T]) restore(ctx context.Context, e tablekit.Entity, selected map[string]bool) (tablekit.Entity, error) {
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
	if selected != nil {
		for name := range refs {
			if !selected[name] {
				delete(refs, name)
			}
		}
	}
	if len(refs) == 0 {
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
			return fmt.Errorf("read property %s of %s/%s from blob %s: %w", names[i], e.PartitionKey, e.RowKey, ref.Blob, err)
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
func (l *Large[T]) download(ctx context.Context, ref blobRef) ([]byte, error) {
	resp, err := l.container.NewBlobClient(ref.Blob).DownloadStream(ctx, nil)
	if err != nil {
		return nil, wire.Wrap("GetBlob", "", "", "", err)
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
	// because a write may be between writing it and writing its entity.
	// 0 means the Large's grace period (LargeOptions.Grace). A shorter
	// MinAge than the Grace of the Larges writing the table, or a negative
	// one (no protection), is safe only when no write runs during the
	// sweep.
	MinAge time.Duration
	// DryRun finds the unreferenced blobs but deletes nothing.
	DryRun bool
}

// Sweep deletes the blobs under the Large's prefix that no entity of the
// table references (a crash or a failed best-effort delete left them) and
// that are older than the grace period (see SweepOptions.MinAge), and
// returns their names, sorted. It lists the blobs first and reads every
// entity's references after (a table scan of one property), so a blob
// written meanwhile is either not listed or protected by its age; writes
// store their entity within half the grace period of their blobs, so no
// entity can come to reference a blob Sweep found unreferenced and old.
// Ages are measured from a blob's last modification (the service's clock)
// to now by LargeOptions.Clock, or without one, by the earlier of this
// machine's time and the service's. On an error, it returns the names of
// the blobs it deleted before.
func (l *Large[T]) Sweep(ctx context.Context, opts *SweepOptions) (orphans []string, err error) {
	const op = "patterns.Large.Sweep"
	if err := l.usable(op); err != nil {
		return nil, err
	}
	orphans, err = l.sweep(ctx, opts)
	return orphans, withOp(op, err)
}

func (l *Large[T]) sweep(ctx context.Context, opts *SweepOptions) ([]string, error) {
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
			return nil, wire.Wrap("ListBlobs", "", "", "", err)
		}
		now := timing.Now(l.clock)
		if l.clock == nil && page.Date != nil && page.Date.Before(now) {
			now = *page.Date // the service's clock, as LastModified
		}
		for _, b := range page.Segment.BlobItems {
			if b.Name == nil {
				continue
			}
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
			return nil, err
		}
		refs, err := l.refs(&e)
		if err != nil {
			continue // not ours
		}
		for _, r := range refs {
			delete(candidates, r.Blob)
		}
	}
	var orphans []string
	for name, old := range candidates {
		if old {
			orphans = append(orphans, name)
		}
	}
	slices.Sort(orphans)
	if dry {
		return orphans, nil
	}
	for i, name := range orphans {
		if err := l.deleteBlob(ctx, name); err != nil {
			return orphans[:i], err
		}
	}
	return orphans, nil
}
