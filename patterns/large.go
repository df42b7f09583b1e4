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
	"net/http"
	"reflect"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
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
	// tablekit.MaxPropertyBytes: only values the service would refuse move.
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
}

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
// not exist. Put writes the new blobs (under new, unique names) first, then
// the entity, and only then deletes the blobs of the version it replaced;
// Delete deletes the entity first, then its blobs. A crash in between can
// only leave blobs no entity references, which Sweep removes.
//
// T is [tablekit.Entity] or a struct as for [tablekit.Table]. The string
// and []byte fields of a struct can move to blobs (fields with the json or
// guid option cannot). Blob contents are not encrypted by tablekit.
// A Large is safe for concurrent use.
type Large[T any] struct {
	table     *tablekit.Table[tablekit.Entity]
	container *container.Client
	threshold int
	prefix    string
	refProp   string
	conc      int
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

// NewLarge returns a Large storing values of T in table, with the blobs in
// container (which must exist).
func NewLarge[T any](table *tablekit.Table[tablekit.Entity], container *container.Client, opts *LargeOptions) (*Large[T], error) {
	if table == nil || container == nil {
		return nil, &tablekit.ValidationError{Detail: "patterns.NewLarge: nil table or container", Err: tablekit.ErrInvalidInput}
	}
	l := &Large[T]{table: table, container: container, threshold: tablekit.MaxPropertyBytes, refProp: DefaultRefProperty, conc: 8}
	l.prefix = "large/"
	if table.Name() != "" {
		l.prefix = table.Name() + "/"
	}
	if opts != nil {
		if opts.Threshold < 0 || opts.Concurrency < 0 {
			return nil, &tablekit.ValidationError{Detail: "patterns.NewLarge: negative Threshold or Concurrency", Err: tablekit.ErrInvalidInput}
		}
		if opts.Threshold > 0 {
			l.threshold = min(opts.Threshold, tablekit.MaxPropertyBytes)
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
	}
	if !validKind(l.refProp) {
		return nil, &tablekit.ValidationError{Property: l.refProp, Detail: "RefProperty must be a property name: letters, digits and _", Err: tablekit.ErrInvalidInput}
	}
	if reflect.TypeFor[T]() == reflect.TypeFor[tablekit.Entity]() {
		l.isEntity = true
		return l, nil
	}
	fields, err := largeFields[T]()
	if err != nil {
		return nil, err
	}
	if _, clash := fields[l.refProp]; clash {
		return nil, &tablekit.ValidationError{Entity: reflect.TypeFor[T]().String(), Property: l.refProp, Detail: "the struct has a property named like LargeOptions.RefProperty; choose another RefProperty", Err: tablekit.ErrInvalidInput}
	}
	l.fields = fields
	return l, nil
}

// largeFields maps the property names of T's string and []byte fields to
// the fields. It asks tablekit's codec which property each field is stored
// as, by encoding a value with a marker in that field.
func largeFields[T any]() (map[string]largeField, error) {
	var zero T
	if _, err := tablekit.EncodeEntity(zero); err != nil {
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
		e, err := tablekit.EncodeEntity(v)
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
	e, err := tablekit.EncodeEntity(v)
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
	v, err := tablekit.Decode[T](small)
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
				return v, &tablekit.ValidationError{Entity: e.PartitionKey + "/" + e.RowKey, Property: name, Detail: "a binary value cannot be stored in a string field", Err: tablekit.ErrInvalidInput}
			}
			fv.SetBytes(x)
		case string:
			if f.isBytes {
				return v, &tablekit.ValidationError{Entity: e.PartitionKey + "/" + e.RowKey, Property: name, Detail: "a string value cannot be stored in a []byte field", Err: tablekit.ErrInvalidInput}
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
		if isSpillable(val) && valueSize(val)-4 > l.threshold {
			if err := spill(name); err != nil {
				return nil, err
			}
			continue
		}
		size += propertySize(name, val)
	}
	refSize := func() int { return propertySize(l.refProp, "") + 2*(len(out)+1)*(len(l.prefix)+100) }
	for size+refSize() > tablekit.MaxEntityBytes {
		victim, best := "", 0
		for _, name := range names {
			val, ok := e.Properties[name]
			if ok && isSpillable(val) && valueSize(val) > best {
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

func isSpillable(v any) bool {
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
	return nil, &tablekit.ValidationError{Entity: e.PartitionKey + "/" + e.RowKey, Property: l.refProp, Detail: "not a blob reference written by patterns.Large", Err: tablekit.ErrInvalidInput}
}

// Put stores v, inserting or replacing its entity: it writes the blobs of
// its large properties first (concurrently), then the entity, then deletes
// the blobs of the version it replaced. If the entity write fails, the new
// blobs are deleted when the failure is certain (the service refused the
// write) and left for Sweep otherwise (the write may have happened).
// Deleting the replaced blobs is best effort too: any left behind are
// unreferenced, and Sweep removes them.
func (l *Large[T]) Put(ctx context.Context, v T) error {
	e, err := l.toEntity(v)
	if err != nil {
		return err
	}
	e.ETag = ""
	oldRefs, _, err := l.readRefs(ctx, e.PartitionKey, e.RowKey)
	if err != nil && !errors.Is(err, tablekit.ErrNotFound) {
		return err
	}
	blobs, err := l.split(&e)
	if err != nil {
		return err
	}
	err = forEach(ctx, len(blobs), l.conc, func(ctx context.Context, i int) error {
		return l.upload(ctx, blobs[i])
	})
	if err == nil {
		_, err = l.table.Upsert(ctx, e, tablekit.Replace)
	}
	if err != nil {
		if refused(err) {
			l.deleteBlobs(context.WithoutCancel(ctx), spilledNames(blobs))
		}
		return err
	}
	l.deleteBlobs(ctx, refNames(oldRefs))
	return nil
}

// refused reports whether err certainly means that nothing was written:
// input refused before sending, or a 4xx answer of the service.
func refused(err error) bool {
	var ve *tablekit.ValidationError
	if errors.As(err, &ve) {
		return true
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode >= 400 && re.StatusCode < 500 && re.StatusCode != http.StatusRequestTimeout
	}
	return false
}

func spilledNames(s []*spilled) []string {
	names := make([]string, len(s))
	for i, x := range s {
		names[i] = x.ref.Blob
	}
	return names
}

func refNames(refs map[string]BlobRef) []string {
	names := make([]string, 0, len(refs))
	for _, r := range refs {
		names = append(names, r.Blob)
	}
	slices.Sort(names)
	return names
}

// upload writes one blob, create-only: a blob name is never reused.
func (l *Large[T]) upload(ctx context.Context, s *spilled) error {
	ct := "text/plain; charset=utf-8"
	if s.ref.Binary {
		ct = "application/octet-stream"
	}
	_, err := l.container.NewBlockBlobClient(s.ref.Blob).Upload(ctx, streaming.NopCloser(bytes.NewReader(s.data)), &blockblob.UploadOptions{
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr(ct)},
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{
			IfNoneMatch: to.Ptr(azcore.ETagAny),
		}},
	})
	if err != nil {
		return fmt.Errorf("patterns: write blob %s for property %s: %w", s.ref.Blob, s.name, tablekit.WrapError("PutBlob", err))
	}
	return nil
}

// deleteBlobs deletes blobs, best effort: Sweep removes what is left.
func (l *Large[T]) deleteBlobs(ctx context.Context, names []string) {
	_ = forEach(ctx, len(names), l.conc, func(ctx context.Context, i int) error {
		_ = l.deleteBlob(ctx, names[i])
		return nil
	})
}

// deleteBlob deletes one blob; a missing blob is not an error.
func (l *Large[T]) deleteBlob(ctx context.Context, name string) error {
	_, err := l.container.NewBlobClient(name).Delete(ctx, nil)
	if err = tablekit.WrapError("DeleteBlob", err); errors.Is(err, tablekit.ErrNotFound) {
		return nil
	}
	return err
}

// readRefs reads only the reference property of an entity (and its ETag):
// one point query.
func (l *Large[T]) readRefs(ctx context.Context, pk, rk string) (map[string]BlobRef, azcore.ETag, error) {
	e, err := l.table.Get(ctx, pk, rk, &tablekit.GetOptions{Select: []string{l.refProp}})
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
	return refs, err
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
// reading the blobs concurrently. It returns an error matching
// tablekit.ErrNotFound when the entity does not exist, and one naming the
// property when a referenced blob is missing.
func (l *Large[T]) Get(ctx context.Context, pk, rk string, opts *LargeGetOptions) (T, error) {
	var zero T
	e, err := l.table.Get(ctx, pk, rk, nil)
	if err != nil {
		return zero, err
	}
	if err := l.restore(ctx, &e, opts != nil && opts.SkipBlobs); err != nil {
		return zero, err
	}
	return l.fromEntity(e)
}

// Query returns the entities matching f, each with its blob properties
// restored (unless opts.SkipBlobs).
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
				err = l.restore(ctx, &e, skip)
			}
			if err != nil {
				yield(zero, err)
				return
			}
			v, err := l.fromEntity(e)
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}

// restore replaces e's reference property by the values of its blobs.
func (l *Large[T]) restore(ctx context.Context, e *tablekit.Entity, skip bool) error {
	refs, err := l.refs(e)
	if err != nil {
		return err
	}
	delete(e.Properties, l.refProp)
	if skip || len(refs) == 0 {
		return nil
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range refs {
			if !yield(k) {
				return
			}
		}
	})
	values := make([][]byte, len(names))
	err = forEach(ctx, len(names), l.conc, func(ctx context.Context, i int) error {
		ref := refs[names[i]]
		data, err := l.download(ctx, ref)
		if err != nil {
			return fmt.Errorf("patterns: read property %s of %s/%s from blob %s: %w", names[i], e.PartitionKey, e.RowKey, ref.Blob, err)
		}
		values[i] = data
		return nil
	})
	if err != nil {
		return err
	}
	for i, name := range names {
		if refs[name].Binary {
			e.Properties[name] = values[i]
		} else {
			e.Properties[name] = string(values[i])
		}
	}
	return nil
}

// download reads one blob and checks its length.
func (l *Large[T]) download(ctx context.Context, ref BlobRef) ([]byte, error) {
	resp, err := l.container.NewBlobClient(ref.Blob).DownloadStream(ctx, nil)
	if err != nil {
		return nil, tablekit.WrapError("GetBlob", err)
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

// Delete deletes the entity, then its blobs, and reports whether the
// entity existed. The entity delete is conditional on the version whose
// references were read, so a concurrent Put's blobs are found too.
func (l *Large[T]) Delete(ctx context.Context, pk, rk string) (bool, error) {
	for attempt := 0; ; attempt++ {
		refs, etag, err := l.readRefs(ctx, pk, rk)
		if errors.Is(err, tablekit.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		err = l.table.Delete(ctx, pk, rk, etag)
		if err == nil {
			for _, name := range refNames(refs) {
				if err := l.deleteBlob(ctx, name); err != nil {
					return true, fmt.Errorf("patterns: entity deleted, its blob %s not (Sweep removes it): %w", name, err)
				}
			}
			return true, nil
		}
		if !isConflict(err) || attempt >= 5 {
			return false, err
		}
		if err := backoff(ctx, attempt, 10*time.Millisecond, time.Second); err != nil {
			return false, err
		}
	}
}

// SweepOptions configures [Large.Sweep]. A nil *SweepOptions means
// defaults.
type SweepOptions struct {
	// MinAge protects recent blobs: a blob modified less than MinAge
	// before the sweep started is kept even if no entity references it
	// yet, because a Put may be between writing it and writing its entity.
	// 0 means one hour; negative means no protection, which is safe only
	// when no Put runs during the sweep.
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
// deletes those older than opts.MinAge. It lists the blobs first and reads
// every entity's references after (a projection of one property), so a
// blob written during the sweep is either not listed or protected by
// MinAge.
func (l *Large[T]) Sweep(ctx context.Context, opts *SweepOptions) (SweepResult, error) {
	var res SweepResult
	minAge := time.Hour
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
			return res, tablekit.WrapError("ListBlobs", err)
		}
		now := time.Now()
		if page.Date != nil {
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
	for e, err := range l.table.Query(ctx, tablekit.Where(l.refProp+" gt ?", ""), &tablekit.QueryOptions{Select: []string{l.refProp}}) {
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
