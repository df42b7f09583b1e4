package index

import (
	"context"
	"errors"
	"fmt"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"iter"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
)

// Index describes one index that an [Intra] keeps in each entity's own
// partition.
//
// By default the index holds a copy of every entity (the guide's
// intra-partition secondary index pattern) under the RowKey
// keys.Compound(Name, value) — "email!jonesj@contoso.com" — or, when the
// index is not Unique, keys.Compound(Name, value, RowKey), so that several
// entities can share a value. With List set it holds instead one index
// entity per value, under keys.Compound(Name, value), listing the RowKeys
// of the entities that have the value (the guide's index entities pattern,
// option 2).
type Index[T any] struct {
	// Name is the index's name and the first component of its RowKeys,
	// e.g. "email". Entities' own RowKeys must not begin with Name
	// followed by keys.Separator ('!').
	Name string
	// Key returns the indexed value of v. "" means v has no entry in this
	// index. The value is a key component: it must not hold / \ # ? or
	// control characters (encode numbers with package keys, e.g.
	// keys.UintN, so that their order is numeric).
	Key func(v T) string
	// Unique makes the value identify one entity: the RowKey of a copy is
	// Compound(Name, value), a lookup is a point query, and a write that
	// gives a second entity the same value fails with a *UniqueError. Not
	// allowed with List.
	Unique bool
	// Properties, when not nil, projects the copies: they hold only these
	// properties, and entities read through the index have the other
	// fields zero. nil copies every property. Not allowed with List.
	Properties []string
	// List keeps an index entity per value listing the entities' RowKeys
	// instead of a copy of every entity. An index entity holds at most
	// 1 MiB (about 100,000 short ids); for more, use a [BlobList].
	List bool
}

// IntraOptions configures an [Intra]. A nil *IntraOptions means defaults.
type IntraOptions struct {
	// Retry says how often and how patiently a write is tried again when
	// a concurrent writer changed the entity or one of its index entities
	// between the read and the conditional transaction; then it fails with
	// a *ConflictError, which matches tablekit.ErrPreconditionFailed. Its
	// zero fields take the package's defaults: 30 attempts, full-jitter
	// exponential back-off from 10 ms up to 2 s ([tablekit.DefaultConflictRetry]
	// with a longer cap), which carries tens of writers in separate
	// processes adding to one index entity.
	// [tablekit.NoRetries] fails at the first lost race.
	Retry tablekit.RetryPolicy
}

// Intra keeps secondary indexes of the entities of one table inside each
// entity's own partition, consistent with the entity: every write changes
// the entity and all its index entries in one entity group transaction
// (EGT), so they change together or not at all. See the package doc for the
// layout and the cost of each operation.
//
// Every write to the table's entities must go through the Intra, or the
// indexes go stale. An Intra is safe for concurrent use.
type Intra[T any] struct {
	table    *tablekit.Table[tablekit.Entity]
	name     string
	indexes  []Index[T]
	byName   map[string]int
	prefixes []string // Compound(name) + "!" per index
	retry    tablekit.RetryPolicy
	locks    keyLocks
}

// NewIntra returns an Intra over the entities of table with the given
// indexes. The entity type T must not have client-side encrypted fields
// (index copies are written as property bags). It refuses invalid or
// duplicate index names, a nil Key, and Unique or Properties on a List
// index.
func NewIntra[T any](table *tablekit.Table[T], indexes []Index[T], opts *IntraOptions) (*Intra[T], error) {
	if table == nil {
		return nil, invalid("index.NewIntra", "table is nil")
	}
	if err := probe[T](); err != nil {
		return nil, err
	}
	et, err := tablekit.NewTable[tablekit.Entity](table.Client(), &tablekit.TableOptions{Name: table.Name(), Cosmos: table.Cosmos()})
	if err != nil {
		return nil, err
	}
	ix := &Intra[T]{table: et, name: table.Name(), byName: make(map[string]int)}
	var o IntraOptions
	if opts != nil {
		o = *opts
	}
	if ix.retry, err = retryPolicy("index.NewIntra", o.Retry); err != nil {
		return nil, err
	}
	if len(indexes) == 0 {
		return nil, invalid("index.NewIntra", "no indexes")
	}
	if len(indexes) >= tablekit.MaxTransactionActions {
		return nil, &tablekit.ValidationError{Entity: "index.NewIntra", Limit: "< 100 indexes (an entity and its index entries share one transaction of <= 100 actions)", Size: len(indexes), Detail: "too many indexes", Err: tablekit.ErrTooLarge}
	}
	for i, idx := range indexes {
		what := fmt.Sprintf("index %d", i)
		if err := checkName(what, idx.Name); err != nil {
			return nil, err
		}
		if _, dup := ix.byName[idx.Name]; dup {
			return nil, invalid(what, fmt.Sprintf("duplicate index name %q", idx.Name))
		}
		if idx.Key == nil {
			return nil, invalid(what, fmt.Sprintf("index %q has no Key function", idx.Name))
		}
		if idx.List && (idx.Unique || idx.Properties != nil) {
			return nil, invalid(what, fmt.Sprintf("index %q: a List index holds ids, not copies: Unique and Properties do not apply", idx.Name))
		}
		for _, p := range idx.Properties {
			if p == "" || p == PrimaryRowKeyProperty || p == "PartitionKey" || p == "RowKey" || p == "Timestamp" {
				return nil, invalid(what, fmt.Sprintf("index %q: Properties lists %q, which is not a projectable property", idx.Name, p))
			}
		}
		ix.byName[idx.Name] = i
		p, _ := keys.Compound(idx.Name)
		ix.prefixes = append(ix.prefixes, p+string(keys.Separator))
	}
	ix.indexes = append([]Index[T](nil), indexes...)
	return ix, nil
}

// checkPrimaryKey refuses an entity RowKey that would fall into an index's
// key range.
func (ix *Intra[T]) checkPrimaryKey(id ID) error {
	for i, p := range ix.prefixes {
		if strings.HasPrefix(id.RowKey, p) {
			return &tablekit.ValidationError{Entity: ix.describe(id), Property: "RowKey", Detail: fmt.Sprintf("the RowKey begins with %q, the key prefix of index %q", p, ix.indexes[i].Name), Err: tablekit.ErrInvalidKey}
		}
	}
	return nil
}

func (ix *Intra[T]) describe(id ID) string {
	if ix.name == "" {
		return id.String()
	}
	return ix.name + ":" + id.String()
}

// entryKey returns the RowKey of index i's entry for value ("" for none).
func (ix *Intra[T]) entryKey(i int, value string, id ID) (string, error) {
	if value == "" {
		return "", nil
	}
	idx := &ix.indexes[i]
	if idx.List || idx.Unique {
		return compound(ix.describe(id), "index "+idx.Name, idx.Name, value)
	}
	return compound(ix.describe(id), "index "+idx.Name, idx.Name, value, id.RowKey)
}

// version is what a write knows of the stored entity.
type version struct {
	etag   azcore.ETag
	values []string // indexed values, per index
}

// image is the entity a write stores.
type image struct {
	id     ID
	entity tablekit.Entity
	values []string
}

func (ix *Intra[T]) imageOf(v T) (*image, error) {
	e, err := tablekit.EncodeEntity(v)
	if err != nil {
		return nil, err
	}
	id := ID{e.PartitionKey, e.RowKey}
	if id.PartitionKey == "" || id.RowKey == "" {
		return nil, &tablekit.ValidationError{Entity: ix.describe(id), Detail: "an indexed entity needs a non-empty PartitionKey and RowKey", Err: tablekit.ErrInvalidKey}
	}
	if err := ix.checkPrimaryKey(id); err != nil {
		return nil, err
	}
	if _, ok := e.Properties[PrimaryRowKeyProperty]; ok {
		return nil, &tablekit.ValidationError{Entity: ix.describe(id), Property: PrimaryRowKeyProperty, Detail: "the property name is reserved for index copies", Err: tablekit.ErrInvalidInput}
	}
	e.ETag, e.Timestamp = "", time.Time{}
	im := &image{id: id, entity: e, values: make([]string, len(ix.indexes))}
	for i := range ix.indexes {
		im.values[i] = ix.indexes[i].Key(v)
		if _, err := ix.entryKey(i, im.values[i], id); err != nil {
			return nil, err
		}
	}
	return im, nil
}

// read returns the stored version of id, or nil when there is none.
func (ix *Intra[T]) read(ctx context.Context, id ID) (*version, error) {
	e, err := ix.table.Get(ctx, id.PartitionKey, id.RowKey, nil)
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ix.versionOf(e)
}

func (ix *Intra[T]) versionOf(e tablekit.Entity) (*version, error) {
	v, err := tablekit.Decode[T](e)
	if err != nil {
		return nil, err
	}
	ver := &version{etag: e.ETag, values: make([]string, len(ix.indexes))}
	for i := range ix.indexes {
		ver.values[i] = ix.indexes[i].Key(v)
	}
	return ver, nil
}

// What each action of a write's transaction does, to interpret failures.
type actionRole uint8

const (
	rolePrimary actionRole = iota
	roleCopy
	roleOldCopy
	roleList
)

type actionInfo struct {
	role  actionRole
	index int
	value string
	key   string
}

// plan builds the transaction that takes the stored entity from old (nil:
// absent) to im (nil: deleted). gone lists index RowKeys known to be
// missing already.
func (ix *Intra[T]) plan(ctx context.Context, id ID, old *version, im *image, gone map[string]bool) ([]tablekit.Action[tablekit.Entity], []actionInfo, error) {
	var acts []tablekit.Action[tablekit.Entity]
	var info []actionInfo
	add := func(a tablekit.Action[tablekit.Entity], ai actionInfo) {
		acts = append(acts, a)
		info = append(info, ai)
	}
	keyOnly := func(rk string) tablekit.Entity { return tablekit.Entity{PartitionKey: id.PartitionKey, RowKey: rk} }

	switch {
	case im != nil && old == nil:
		add(tablekit.InsertAction(im.entity), actionInfo{role: rolePrimary})
	case im != nil:
		add(tablekit.UpdateAction(im.entity, tablekit.Replace, old.etag), actionInfo{role: rolePrimary})
	case old != nil:
		add(tablekit.DeleteAction(keyOnly(id.RowKey), old.etag), actionInfo{role: rolePrimary})
	default:
		return nil, nil, nil
	}
	for i := range ix.indexes {
		idx := &ix.indexes[i]
		var ov, nv string
		if old != nil {
			ov = old.values[i]
		}
		if im != nil {
			nv = im.values[i]
		}
		ok, _ := ix.entryKey(i, ov, id)
		nk, err := ix.entryKey(i, nv, id)
		if err != nil {
			return nil, nil, err
		}
		if idx.List {
			if ov == nv {
				continue
			}
			if ov != "" {
				a, changed, err := ix.listChange(ctx, id, i, ov, ok, false)
				if err != nil {
					return nil, nil, err
				}
				if changed {
					add(a, actionInfo{role: roleList, index: i, value: ov, key: ok})
				}
			}
			if nv != "" {
				a, changed, err := ix.listChange(ctx, id, i, nv, nk, true)
				if err != nil {
					return nil, nil, err
				}
				if changed {
					add(a, actionInfo{role: roleList, index: i, value: nv, key: nk})
				}
			}
			continue
		}
		if ok != "" && ok != nk && !gone[ok] {
			add(tablekit.DeleteAction(keyOnly(ok), azcore.ETagAny), actionInfo{role: roleOldCopy, index: i, value: ov, key: ok})
		}
		if nk == "" {
			continue
		}
		c := ix.copyOf(im, i, nk)
		if idx.Unique && ok != nk {
			add(tablekit.InsertAction(c), actionInfo{role: roleCopy, index: i, value: nv, key: nk})
		} else {
			add(tablekit.UpsertAction(c, tablekit.Replace), actionInfo{role: roleCopy, index: i, value: nv, key: nk})
		}
	}
	if err := ix.checkLimits(id, acts); err != nil {
		return nil, nil, err
	}
	return acts, info, nil
}

// copyOf returns index i's copy of the entity under RowKey rk.
func (ix *Intra[T]) copyOf(im *image, i int, rk string) tablekit.Entity {
	props := ix.indexes[i].Properties
	c := tablekit.Entity{PartitionKey: im.id.PartitionKey, RowKey: rk, Properties: make(map[string]any, len(im.entity.Properties)+1)}
	if props == nil {
		for k, v := range im.entity.Properties {
			c.Properties[k] = v
		}
	} else {
		for _, k := range props {
			if v, ok := im.entity.Properties[k]; ok {
				c.Properties[k] = v
			}
		}
	}
	c.Properties[PrimaryRowKeyProperty] = im.id.RowKey
	return c
}

// listChange reads the index entity of list index i for value and returns
// the action that adds (or removes) id's RowKey, conditional on the ETag
// read; changed is false when there is nothing to do.
func (ix *Intra[T]) listChange(ctx context.Context, id ID, i int, value, rk string, adding bool) (tablekit.Action[tablekit.Entity], bool, error) {
	var none tablekit.Action[tablekit.Entity]
	cur, err := ix.table.Get(ctx, id.PartitionKey, rk, nil)
	exists := err == nil
	if err != nil && !errors.Is(err, tablekit.ErrNotFound) {
		return none, false, err
	}
	var ids []string
	if exists {
		ids = readIDs(&cur)
	}
	var changed bool
	if adding {
		ids, changed = addID(ids, id.RowKey)
	} else {
		ids, changed = removeID(ids, id.RowKey)
	}
	if !changed {
		return none, false, nil
	}
	e := tablekit.Entity{PartitionKey: id.PartitionKey, RowKey: rk}
	if !exists {
		if err := setIDs(&e, ids, ix.listWhat(id.PartitionKey, rk, i, value)); err != nil {
			return none, false, err
		}
		return tablekit.InsertAction(e), true, nil
	}
	if len(ids) == 0 {
		return tablekit.DeleteAction(e, cur.ETag), true, nil
	}
	if err := setIDs(&e, ids, ix.listWhat(id.PartitionKey, rk, i, value)); err != nil {
		return none, false, err
	}
	return tablekit.UpdateAction(e, tablekit.Replace, cur.ETag), true, nil
}

func (ix *Intra[T]) listWhat(pk, rk string, i int, value string) string {
	return fmt.Sprintf("%s (index entity of %s=%q)", ix.describe(ID{pk, rk}), ix.indexes[i].Name, value)
}

// checkLimits refuses a transaction over the EGT limits with an error that
// says why it is so large.
func (ix *Intra[T]) checkLimits(id ID, acts []tablekit.Action[tablekit.Entity]) error {
	if len(acts) > tablekit.MaxTransactionActions {
		return &tablekit.ValidationError{
			Entity: ix.describe(id),
			Limit:  "<= 100 actions per entity group transaction",
			Size:   len(acts),
			Detail: fmt.Sprintf("writing the entity with its %d indexes takes %d actions (the entity, an entry per index, and a removal per changed value); use fewer indexes, or change fewer indexed values at once", len(ix.indexes), len(acts)),
			Err:    tablekit.ErrTooLarge,
		}
	}
	total := 0
	for i := range acts {
		total += 1024
		if acts[i].Kind != tablekit.ActionDelete {
			total += bodySize(&acts[i].Value)
		}
	}
	if total > tablekit.MaxTransactionBytes {
		return &tablekit.ValidationError{
			Entity: ix.describe(id),
			Limit:  "<= 4 MiB per entity group transaction",
			Size:   total,
			Detail: fmt.Sprintf("the entity and its index copies (%d actions) add up to about %d bytes; project fewer properties into the indexes (Index.Properties) or keep large properties in a blob", len(acts), total),
			Err:    tablekit.ErrTooLarge,
		}
	}
	return nil
}

// failure says what to do about a failed transaction.
type failure uint8

const (
	failFatal         failure = iota // return the error
	failPrimaryExists                // the entity exists (insert lost)
	failPrimaryStale                 // the entity changed or vanished
	failGoneCopy                     // an old index copy was missing
	failList                         // an index entity changed
	failUnique                       // a unique value is taken
)

func classify(err error, info []actionInfo) (failure, *actionInfo) {
	var te *tablekit.TransactionError
	if !errors.As(err, &te) || te.Index < 0 || te.Index >= len(info) {
		return failFatal, nil
	}
	ai := &info[te.Index]
	switch ai.role {
	case rolePrimary:
		if errors.Is(err, tablekit.ErrAlreadyExists) {
			return failPrimaryExists, ai
		}
		if isConflict(err) {
			return failPrimaryStale, ai
		}
	case roleOldCopy:
		if errors.Is(err, tablekit.ErrNotFound) {
			return failGoneCopy, ai
		}
	case roleCopy:
		if errors.Is(err, tablekit.ErrAlreadyExists) {
			return failUnique, ai
		}
	case roleList:
		if isConflict(err) {
			return failList, ai
		}
	}
	return failFatal, ai
}

// writeMode is how a write learns the stored version.
type writeMode uint8

const (
	modeInsert  writeMode = iota // must be new
	modePut                      // insert first, else read and replace
	modeVersion                  // the caller's version; stale is an error
	modeRead                     // read first (delete)
)

// write runs the optimistic-concurrency loop of one write.
func (ix *Intra[T]) write(ctx context.Context, id ID, im *image, old *version, mode writeMode) (err error) {
	ctx, end := tablekit.StartSpan(ctx, ix.table.Tracer(), "Intra.Write",
		tracing.Attribute{Key: "tablekit.table", Value: ix.table.Name()},
		tracing.Attribute{Key: "tablekit.partition_key", Value: id.PartitionKey},
		tracing.Attribute{Key: "tablekit.row_key", Value: id.RowKey})
	defer func() { end(err) }()
	gone := map[string]bool{}
	needRead := mode == modeRead
	return retry(ctx, ix.retry, id, func() (bool, error) {
		if needRead {
			var err error
			if old, err = ix.read(ctx, id); err != nil {
				return false, err
			}
			needRead = false
			if im == nil && old == nil {
				return false, notFound("index.Delete", ix.describe(id))
			}
		}
		err := ix.attempt(ctx, id, old, im, gone)
		if err == nil {
			return false, nil
		}
		var info []actionInfo
		var pe *planned
		if errors.As(err, &pe) {
			info, err = pe.info, pe.err
		} else {
			return false, err
		}
		kind, ai := classify(err, info)
		switch kind {
		case failPrimaryExists:
			if mode != modePut {
				return false, err
			}
			needRead = true
		case failPrimaryStale:
			if mode == modeVersion {
				return false, err
			}
			needRead = true
		case failGoneCopy:
			gone[ai.key] = true
		case failList:
			// re-read the index entities in the next plan
		case failUnique:
			return false, &UniqueError{Index: ix.indexes[ai.index].Name, Value: ai.value, Entity: id, Err: err}
		default:
			return false, err
		}
		return true, err
	})
}

// planned carries a failed transaction's error with what its actions did.
type planned struct {
	info []actionInfo
	err  error
}

func (p *planned) Error() string { return p.err.Error() }
func (p *planned) Unwrap() error { return p.err }

// attempt plans and sends one transaction, holding the process's locks of
// the index entities it changes. A failed transaction is returned as a
// *planned.
func (ix *Intra[T]) attempt(ctx context.Context, id ID, old *version, im *image, gone map[string]bool) error {
	var lockKeys []string
	for i := range ix.indexes {
		if !ix.indexes[i].List {
			continue
		}
		var ov, nv string
		if old != nil {
			ov = old.values[i]
		}
		if im != nil {
			nv = im.values[i]
		}
		if ov == nv {
			continue
		}
		for _, v := range []string{ov, nv} {
			if rk, err := ix.entryKey(i, v, id); err == nil && rk != "" {
				lockKeys = append(lockKeys, id.PartitionKey+"\x00"+rk)
			}
		}
	}
	unlock, err := ix.locks.lock(ctx, lockKeys...)
	if err != nil {
		return err
	}
	defer unlock()
	acts, info, err := ix.plan(ctx, id, old, im, gone)
	if err != nil {
		return err
	}
	if len(acts) == 0 {
		return nil
	}
	if _, err := ix.table.Transaction(ctx, acts...); err != nil {
		return &planned{info: info, err: err}
	}
	return nil
}

// Insert adds v with its index entries in one transaction. It fails with
// an error matching tablekit.ErrAlreadyExists when the entity exists, and
// with a *UniqueError when a unique value is taken. Cost: 1 transaction,
// plus 1 read per List index.
func (ix *Intra[T]) Insert(ctx context.Context, v T) error {
	im, err := ix.imageOf(v)
	if err != nil {
		return err
	}
	return ix.write(ctx, im.id, im, nil, modeInsert)
}

// Put inserts v, or replaces the stored entity with v, and updates every
// index in the same transaction: entries of values v no longer has are
// removed, a unique value taken by another entity fails with a
// *UniqueError. A concurrent writer is detected with the stored entity's
// ETag and the write retried (see IntraOptions.Retry).
//
// Put first tries to insert, so a new entity costs 1 transaction; an
// existing one costs 3 (the refused insert, a read, the replacement). To
// replace an entity read before, Update costs 1. List indexes add 1 read
// per changed value.
func (ix *Intra[T]) Put(ctx context.Context, v T) error {
	im, err := ix.imageOf(v)
	if err != nil {
		return err
	}
	return ix.write(ctx, im.id, im, nil, modePut)
}

// Update replaces prev, the entity as read with [Intra.Get] (it carries
// the entity's ETag), with v, which must have the same keys, and updates
// the indexes in the same transaction. It fails with an error matching
// tablekit.ErrPreconditionFailed when the entity changed since prev was
// read. T needs an etag field. Cost: 1 transaction, plus 1 read per
// changed value of a List index.
func (ix *Intra[T]) Update(ctx context.Context, prev, v T) error {
	im, err := ix.imageOf(v)
	if err != nil {
		return err
	}
	old, err := ix.prevVersion(prev, im.id)
	if err != nil {
		return err
	}
	return ix.write(ctx, im.id, im, old, modeVersion)
}

func (ix *Intra[T]) prevVersion(prev T, id ID) (*version, error) {
	pe, err := tablekit.EncodeEntity(prev)
	if err != nil {
		return nil, err
	}
	if pe.PartitionKey != id.PartitionKey || pe.RowKey != id.RowKey {
		return nil, invalid(ix.describe(id), fmt.Sprintf("the previous version has other keys (%s)", ID{pe.PartitionKey, pe.RowKey}))
	}
	if pe.ETag == "" {
		return nil, invalid(ix.describe(id), "the previous version has no ETag: read it with Intra.Get (entities read through an index carry none), into a type with an etag field")
	}
	old, err := ix.versionOf(pe)
	if err != nil {
		return nil, err
	}
	old.etag = pe.ETag
	return old, nil
}

// Delete deletes the entity pk/rk and all its index entries in one
// transaction. It returns an error matching tablekit.ErrNotFound when there
// is no such entity. Cost: 2 transactions (a read, then the transaction),
// plus 1 read per List index.
func (ix *Intra[T]) Delete(ctx context.Context, pk, rk string) error {
	id := ID{pk, rk}
	if err := ix.checkPrimaryKey(id); err != nil {
		return err
	}
	return ix.write(ctx, id, nil, nil, modeRead)
}

// DeleteVersion deletes prev, as read with [Intra.Get], and its index
// entries in one transaction, if the entity has not changed since; else it
// fails with an error matching tablekit.ErrPreconditionFailed. Cost: 1
// transaction, plus 1 read per List index.
func (ix *Intra[T]) DeleteVersion(ctx context.Context, prev T) error {
	pe, err := tablekit.EncodeEntity(prev)
	if err != nil {
		return err
	}
	id := ID{pe.PartitionKey, pe.RowKey}
	if err := ix.checkPrimaryKey(id); err != nil {
		return err
	}
	old, err := ix.prevVersion(prev, id)
	if err != nil {
		return err
	}
	return ix.write(ctx, id, nil, old, modeVersion)
}

// Get reads the entity pk/rk itself (with its ETag, for Update). Cost: 1
// transaction.
func (ix *Intra[T]) Get(ctx context.Context, pk, rk string) (T, error) {
	var zero T
	if err := ix.checkPrimaryKey(ID{pk, rk}); err != nil {
		return zero, err
	}
	e, err := ix.table.Get(ctx, pk, rk, nil)
	if err != nil {
		return zero, err
	}
	return tablekit.Decode[T](e)
}

func (ix *Intra[T]) lookupIndex(name string) (int, error) {
	i, ok := ix.byName[name]
	if !ok {
		return 0, invalid(ix.name, fmt.Sprintf("no index %q", name))
	}
	return i, nil
}

// decodeCopy turns an index copy back into the entity it copies. The ETag
// is cleared: it is the copy's, not the entity's.
func decodeCopy[T any](e tablekit.Entity) (T, error) {
	if rk, ok := e.Properties[PrimaryRowKeyProperty].(string); ok {
		e.RowKey = rk
		delete(e.Properties, PrimaryRowKeyProperty)
	}
	e.ETag = ""
	return tablekit.Decode[T](e)
}

// Find returns the entity with value in index in partition pk: for a
// unique index the one entity, else the first in index order. It returns
// an error matching tablekit.ErrNotFound when there is none. Cost: 1
// transaction (a point query for a unique index); 2 for a List index.
func (ix *Intra[T]) Find(ctx context.Context, pk, index, value string) (T, error) {
	var zero T
	for v, err := range ix.By(ctx, pk, index, value) {
		return v, err
	}
	return zero, notFound("index.Find", fmt.Sprintf("%s: no entity with %s=%q in partition %q", ix.name, index, value, pk))
}

// By returns the entities of partition pk that have value in index, in
// index order (by RowKey among equal values). Entities read through a
// projected index have only the projected fields. Cost: 1 transaction per
// 1,000 results; for a List index 1 plus 1 point read per entity.
func (ix *Intra[T]) By(ctx context.Context, pk, index, value string) iter.Seq2[T, error] {
	i, err := ix.lookupIndex(index)
	if err != nil {
		return errSeq[T](err)
	}
	if value == "" {
		return func(func(T, error) bool) {}
	}
	idx := &ix.indexes[i]
	if idx.Unique || idx.List {
		rk, err := compound(ix.name, "index "+index, idx.Name, value)
		if err != nil {
			return errSeq[T](err)
		}
		if idx.List {
			return ix.listed(ctx, pk, tablekit.PointQuery(pk, rk))
		}
		return func(yield func(T, error) bool) {
			e, err := ix.table.Get(ctx, pk, rk, nil)
			if errors.Is(err, tablekit.ErrNotFound) {
				return
			}
			if err != nil {
				yield(*new(T), err)
				return
			}
			yield(decodeCopy[T](e))
		}
	}
	lo, hi, err := keys.TupleRange(idx.Name, value)
	if err != nil {
		return errSeq[T](keyError(ix.name, "index "+index, err))
	}
	return ix.scan(ctx, pk, i, lo, hi)
}

// Range returns the entities of partition pk whose value in index is in
// [lo, hi), in index order. hi == "" means no upper bound. Cost: 1
// transaction per 1,000 results; for a List index 1 per 1,000 index
// entities plus 1 point read per entity.
func (ix *Intra[T]) Range(ctx context.Context, pk, index, lo, hi string) iter.Seq2[T, error] {
	i, err := ix.lookupIndex(index)
	if err != nil {
		return errSeq[T](err)
	}
	name := ix.indexes[i].Name
	lk, err := compound(ix.name, "index "+index, name, lo)
	if err != nil {
		return errSeq[T](err)
	}
	var hk string
	if hi == "" {
		_, hk, err = keys.TupleRange(name)
		if err != nil {
			return errSeq[T](keyError(ix.name, "index "+index, err))
		}
	} else if hk, err = compound(ix.name, "index "+index, name, hi); err != nil {
		return errSeq[T](err)
	}
	if hk <= lk {
		return func(func(T, error) bool) {}
	}
	return ix.scan(ctx, pk, i, lk, hk)
}

// Prefix returns the entities of partition pk whose value in index starts
// with prefix, in index order. Cost: as Range.
func (ix *Intra[T]) Prefix(ctx context.Context, pk, index, prefix string) iter.Seq2[T, error] {
	i, err := ix.lookupIndex(index)
	if err != nil {
		return errSeq[T](err)
	}
	name := ix.indexes[i].Name
	lo, hi, err := keys.ComponentPrefixRange([]string{name}, prefix)
	if err != nil {
		return errSeq[T](keyError(ix.name, "index "+index, err))
	}
	if hi == "" {
		if _, hi, err = keys.TupleRange(name); err != nil {
			return errSeq[T](keyError(ix.name, "index "+index, err))
		}
	}
	return ix.scan(ctx, pk, i, lo, hi)
}

// scan reads index i's entries with RowKeys in [lo, hi).
func (ix *Intra[T]) scan(ctx context.Context, pk string, i int, lo, hi string) iter.Seq2[T, error] {
	f := tablekit.RowKeyRange(pk, lo, hi)
	if ix.indexes[i].List {
		return ix.listed(ctx, pk, f)
	}
	return func(yield func(T, error) bool) {
		for e, err := range ix.table.Query(ctx, f, keyOrder()) {
			if err != nil {
				yield(*new(T), err)
				return
			}
			if !yield(decodeCopy[T](e)) {
				return
			}
		}
	}
}

// listed reads the index entities f selects and then each entity they
// list, in index order.
func (ix *Intra[T]) listed(ctx context.Context, pk string, f tablekit.Filter) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for e, err := range ix.table.Query(ctx, f, keyOrder()) {
			if err != nil {
				yield(*new(T), err)
				return
			}
			for _, rk := range readIDs(&e) {
				v, err := ix.Get(ctx, pk, rk)
				if errors.Is(err, tablekit.ErrNotFound) {
					continue // deleted since the index entity was read
				}
				if !yield(v, err) || err != nil {
					return
				}
			}
		}
	}
}

// IDs returns the ids the index entity of value in List index lists, in
// RowKey order. Cost: 1 transaction.
func (ix *Intra[T]) IDs(ctx context.Context, pk, index, value string) ([]ID, error) {
	i, err := ix.lookupIndex(index)
	if err != nil {
		return nil, err
	}
	if !ix.indexes[i].List {
		return nil, invalid(ix.name, fmt.Sprintf("index %q is not a List index", index))
	}
	if value == "" {
		return nil, nil
	}
	rk, err := compound(ix.name, "index "+index, index, value)
	if err != nil {
		return nil, err
	}
	e, err := ix.table.Get(ctx, pk, rk, nil)
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rks := readIDs(&e)
	ids := make([]ID, len(rks))
	for j, r := range rks {
		ids[j] = ID{pk, r}
	}
	return ids, nil
}

func errSeq[T any](err error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) { yield(*new(T), err) }
}
