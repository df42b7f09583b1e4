package index

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/opname"
	"github.com/tablekit/tablekit/internal/spans"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
)

// SamePartitionOptions configures a [SamePartition]. A nil
// *SamePartitionOptions means defaults.
type SamePartitionOptions struct {
	// Retry says how often and how patiently a write is tried again when
	// a concurrent writer changed the entity or one of its index entities
	// between the read and the conditional transaction; then it fails with
	// an error matching tablekit.ErrPreconditionFailed. Its zero fields
	// take the package's defaults: 30 attempts, full-jitter exponential
	// back-off from 10 ms up to 2 s, which carries tens of writers in
	// separate processes adding to one index entity.
	// [tablekit.RetryPolicy]{MaxAttempts: 1} fails at the first lost race.
	Retry tablekit.RetryPolicy
}

// SamePartition keeps secondary indexes of the entities of one table
// inside each entity's own partition, consistent with the entity: every
// write changes the entity and all its index entries in one entity group
// transaction (EGT), so they change together or not at all. Make one with
// [NewSamePartition]; the zero value refuses every call.
//
//	ix, err := index.NewSamePartition(employees, []index.Index[Employee]{
//		{Name: "email", Key: func(e Employee) string { return e.Email }, Unique: true},
//	}, nil)
//	_, err = ix.Insert(ctx, jon)                                  // Jon and his copy, one transaction
//	jon, err = ix.Find(ctx, "Sales", "email", "jonesj@contoso.com") // one point query
//	for e, err := range ix.Query(ctx, tablekit.PartitionEq("Sales"), nil) { ... } // no copies
//
// Writes return the entity's new ETag, from the transaction's answer. An
// entity read through a copy carries the copy's ETag, which changes exactly
// when the entity does: Update and Delete accept it. Every write to the
// entities must go through the SamePartition, or the indexes go stale. The
// package doc shows the layout and the cost of each operation. A
// SamePartition is safe for concurrent use.
type SamePartition[T any] struct {
	table    *tablekit.Table[tablekit.Entity]
	typed    *tablekit.Table[T] // converts T <-> Entity (ToEntity, FromEntity)
	name     string
	indexes  []Index[T]
	names    []string
	byName   map[string]int
	prefixes []string // Compound(name) + "!" per index
	retry    tablekit.RetryPolicy
	locks    *keyLocks
	keyed    bool   // made by WithKey: every write carries key
	idemKey  string // the idempotency key of a WithKey copy
}

// NewSamePartition returns a SamePartition over the entities of table with
// the given indexes. It reads and writes through table's property-bag view
// (table.AsEntities()), so the entities and their copies keep table's
// client-side encryption, tracing, logger and Cosmos DB mode.
//
// It refuses invalid or duplicate index names, a nil Key, Unique or
// Properties on a List index, and Global, Table and Blobs (a
// CrossPartition's). On a table with client-side encryption the
// copies hold the encrypted properties encrypted, under their own keys;
// every write whose index value is derived from an encrypted property is
// refused.
func NewSamePartition[T any](table *tablekit.Table[T], indexes []Index[T], opts *SamePartitionOptions) (*SamePartition[T], error) {
	const op = "index.NewSamePartition"
	if table == nil {
		return nil, invalid(op, "", "table is nil")
	}
	if err := probe(op, table); err != nil {
		return nil, err
	}
	ix := &SamePartition[T]{table: table.AsEntities(), typed: table, name: table.Name(), byName: make(map[string]int), locks: &keyLocks{}}
	var err error
	var o SamePartitionOptions
	if opts != nil {
		o = *opts
	}
	if ix.retry, err = retryPolicy(op, o.Retry); err != nil {
		return nil, err
	}
	if len(indexes) == 0 {
		return nil, invalid(op, ix.name, "no indexes")
	}
	if len(indexes) >= limits.TransactionActions {
		return nil, &tablekit.ValidationError{Op: op, Entity: ix.name, Limit: "< 100 indexes (an entity and its index entries share one transaction of <= 100 actions)", Size: len(indexes), Unit: "indexes", Detail: "too many indexes", Err: tablekit.ErrTooLarge}
	}
	for i, idx := range indexes {
		field := fmt.Sprintf("indexes[%d]", i)
		if err := checkName(op, ix.name, field+".Name", idx.Name); err != nil {
			return nil, err
		}
		if strings.HasPrefix(idx.Name, coord.ReservedPrefix) {
			return nil, invalidField(op, ix.name, field+".Name", fmt.Sprintf("index name %q: names starting with %q are reserved (tablekit's own rows)", idx.Name, coord.ReservedPrefix))
		}
		if _, dup := ix.byName[idx.Name]; dup {
			return nil, invalidField(op, ix.name, field+".Name", fmt.Sprintf("duplicate index name %q", idx.Name))
		}
		if idx.Key == nil {
			return nil, invalidField(op, ix.name, field+".Key", fmt.Sprintf("index %q has no Key function", idx.Name))
		}
		if idx.Global || idx.Table != nil || idx.Blobs != nil {
			return nil, invalidField(op, ix.name, field, fmt.Sprintf("index %q: Global, Table and Blobs place entries outside the entity's partition: use a CrossPartition", idx.Name))
		}
		if idx.List && (idx.Unique || idx.Properties != nil) {
			return nil, invalidField(op, ix.name, field+".List", fmt.Sprintf("index %q: a List index holds ids, not copies: Unique and Properties do not apply", idx.Name))
		}
		for _, p := range idx.Properties {
			if p == "" || p == primaryRowKeyProperty || p == "PartitionKey" || p == "RowKey" || p == "Timestamp" {
				return nil, invalidField(op, ix.name, field+".Properties", fmt.Sprintf("index %q: Properties lists %q, which is not a projectable property", idx.Name, p))
			}
		}
		ix.byName[idx.Name] = i
		ix.names = append(ix.names, idx.Name)
		p, _ := keys.Compound(idx.Name)
		ix.prefixes = append(ix.prefixes, p+string(keys.Separator))
	}
	ix.indexes = append([]Index[T](nil), indexes...)
	return ix, nil
}

// WithKey returns a copy of ix whose writes carry the idempotency key
// key: each write's transaction also inserts the key's record in the
// entity's partition (the RowKey coord.ReservedPrefix+"key~"+key), so a
// write repeated with the same key, by a retry or by the caller, is not
// applied again. The copy shares everything else with ix (table,
// indexes, options, locks); ix is unchanged.
//
// A key names one write: use one WithKey copy per logical write (a
// message id, say), never one key for several. The record keeps a
// fingerprint of what the caller wrote (the verb, the keys and the value
// given; for Delete, DeleteIfExists and Modify, whose function computes
// the value, the verb and the keys), not of the actions derived from it.
// A repeat of the key within the record's life (24 h, coord's default
// KeyTTL; coord.Sweep deletes expired records) writes nothing: with the
// same fingerprint it returns a nil error (an empty ETag from Insert,
// Upsert and Update, false from DeleteIfExists, and from Modify the
// entity as read after the replay, 1 read more; an error matching
// tablekit.ErrNotFound if it was deleted since), also when the stored
// state changed since and its plan would differ; with another value it
// fails with an error matching coord.ErrKeyReused. A keyed
// write never ends in tablekit.ErrOutcomeUnknown after a lost answer: it
// reads the record (1 read) and sends again only when nothing was
// applied; applied, it returns a nil error and an empty ETag (the version
// is unknown: read the entity for it; Modify returns the value it wrote).
// Only when every read that settles it fails is the outcome unknown.
//
// Costs are the unkeyed write's: the record joins its one transaction,
// taking one of its 100 actions (a write that would need more is refused
// before sending, matching tablekit.ErrTooLarge); a keyed DeleteIfExists
// that finds nothing sends the record alone (1 transaction more); an
// Update or Delete that finds the entity missing or changed since etag
// reads the record (1 read) to tell a replay (nil error) from a refusal; a
// repeat that reaches its transaction costs it (refused) and 1 read of the
// record, its fingerprint. An
// empty key, or one that makes an invalid RowKey, is refused by every
// write of the copy before anything is sent (tablekit.ErrInvalidInput,
// tablekit.ErrInvalidKey). RowKeys starting with coord.ReservedPrefix
// are not entities: reads skip them and writes refuse them. WithKey on a
// zero SamePartition returns one that refuses every call.
func (ix *SamePartition[T]) WithKey(key string) *SamePartition[T] {
	if ix == nil {
		return nil
	}
	c := *ix
	c.keyed, c.idemKey = true, key
	return &c
}

// checkPrimaryKey refuses an entity RowKey that would fall into an index's
// key range, or among tablekit's reserved rows.
func (ix *SamePartition[T]) checkPrimaryKey(op string, id ID) error {
	if strings.HasPrefix(id.RowKey, coord.ReservedPrefix) {
		return &tablekit.ValidationError{Op: op, Entity: ix.describe(id), Property: "RowKey", Detail: fmt.Sprintf("RowKeys starting with %q are reserved for tablekit's own rows (idempotency records, coord's fence rows)", coord.ReservedPrefix), Err: tablekit.ErrInvalidKey}
	}
	for i, p := range ix.prefixes {
		if strings.HasPrefix(id.RowKey, p) {
			return &tablekit.ValidationError{Op: op, Entity: ix.describe(id), Property: "RowKey", Detail: fmt.Sprintf("the RowKey begins with %q, the key prefix of index %q", p, ix.indexes[i].Name), Err: tablekit.ErrInvalidKey}
		}
	}
	return nil
}

func (ix *SamePartition[T]) describe(id ID) string {
	if ix.name == "" {
		return id.String()
	}
	return ix.name + ":" + id.String()
}

// entryKey returns the RowKey of index i's entry for value ("" for none).
func (ix *SamePartition[T]) entryKey(op string, i int, value string, id ID) (string, error) {
	if value == "" {
		return "", nil
	}
	idx := &ix.indexes[i]
	if idx.List || idx.Unique {
		return compound(op, ix.describe(id), "index "+idx.Name, idx.Name, value)
	}
	return compound(op, ix.describe(id), "index "+idx.Name, idx.Name, value, id.RowKey)
}

// version is what a write knows of the stored entity.
type version struct {
	etag   azcore.ETag
	entity tablekit.Entity // as read
	values []string        // indexed values, per index
}

// image is the entity a write stores.
type image struct {
	id     ID
	entity tablekit.Entity
	values []string
}

func (ix *SamePartition[T]) key(i int, v T) string { return ix.indexes[i].Key(v) }

func (ix *SamePartition[T]) imageOf(op string, v T) (*image, error) {
	e, err := ix.typed.ToEntity(v)
	if err != nil {
		return nil, err
	}
	id := ID{e.PartitionKey, e.RowKey}
	if id.PartitionKey == "" || id.RowKey == "" {
		return nil, &tablekit.ValidationError{Op: op, Entity: ix.describe(id), Detail: "an indexed entity needs a non-empty PartitionKey and RowKey", Err: tablekit.ErrInvalidKey}
	}
	if err := ix.checkPrimaryKey(op, id); err != nil {
		return nil, err
	}
	if _, ok := e.Properties[primaryRowKeyProperty]; ok {
		return nil, &tablekit.ValidationError{Op: op, Entity: ix.describe(id), Property: primaryRowKeyProperty, Detail: "the property name is reserved for index copies", Err: tablekit.ErrInvalidInput}
	}
	e.ETag, e.Timestamp = "", time.Time{}
	im := &image{id: id, entity: e, values: make([]string, len(ix.indexes))}
	for i := range ix.indexes {
		im.values[i] = ix.key(i, v)
		if _, err := ix.entryKey(op, i, im.values[i], id); err != nil {
			return nil, err
		}
	}
	if err := checkSecrets(op, ix.describe(id), ix.typed, v, ix.names, im.values, ix.key); err != nil {
		return nil, err
	}
	return im, nil
}

// read returns the stored version of id, or nil when there is none.
func (ix *SamePartition[T]) read(ctx context.Context, id ID) (*version, error) {
	e, err := ix.table.Get(ctx, id.PartitionKey, id.RowKey)
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v, err := ix.typed.FromEntity(e)
	if err != nil {
		return nil, err
	}
	ver := &version{etag: e.ETag, entity: e, values: make([]string, len(ix.indexes))}
	for i := range ix.indexes {
		ver.values[i] = ix.key(i, v)
	}
	return ver, nil
}

// copyHasETag reports whether one of the index copies of the stored
// version old carries etag, the ETag of an entity read through a copy
// index. Every write of the entity rewrites all its copies in its
// transaction, so a copy keeps its ETag exactly as long as the entity
// keeps its version. Cost: 1 query (one more per 2 KiB of copy RowKeys).
func (ix *SamePartition[T]) copyHasETag(ctx context.Context, id ID, old *version, etag azcore.ETag) (bool, error) {
	var rks []string
	for i := range ix.indexes {
		if ix.indexes[i].List {
			continue
		}
		if rk, _ := ix.entryKey("", i, old.values[i], id); rk != "" {
			rks = append(rks, rk)
		}
	}
	for len(rks) > 0 {
		n, size := 0, 0
		for n < len(rks) && (n == 0 || size+len(rks[n]) <= 2048) {
			size += len(rks[n])
			n++
		}
		or := make([]tablekit.Filter, n)
		for j, rk := range rks[:n] {
			or[j] = tablekit.Where("RowKey eq ?", rk)
		}
		f := tablekit.And(tablekit.PartitionEq(id.PartitionKey), tablekit.Or(or...))
		for e, err := range ix.table.Query(ctx, f, &tablekit.QueryOptions{Select: []string{"RowKey"}}) {
			if err != nil {
				return false, err
			}
			if e.ETag == etag {
				return true, nil
			}
		}
		rks = rks[n:]
	}
	return false, nil
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
// missing already. The entity's own action comes first.
func (ix *SamePartition[T]) plan(ctx context.Context, op string, id ID, old *version, im *image, gone map[string]bool) ([]tablekit.Action[tablekit.Entity], []actionInfo, error) {
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
		add(tablekit.UpdateAction(im.entity, old.etag), actionInfo{role: rolePrimary})
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
		ok, _ := ix.entryKey(op, i, ov, id)
		nk, err := ix.entryKey(op, i, nv, id)
		if err != nil {
			return nil, nil, err
		}
		if idx.List {
			if ov == nv {
				continue
			}
			if ov != "" {
				a, changed, err := ix.listChange(ctx, op, id, i, ov, ok, false)
				if err != nil {
					return nil, nil, err
				}
				if changed {
					add(a, actionInfo{role: roleList, index: i, value: ov, key: ok})
				}
			}
			if nv != "" {
				a, changed, err := ix.listChange(ctx, op, id, i, nv, nk, true)
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
			add(tablekit.UpsertAction(c), actionInfo{role: roleCopy, index: i, value: nv, key: nk})
		}
	}
	if err := ix.checkLimits(op, id, acts); err != nil {
		return nil, nil, err
	}
	return acts, info, nil
}

// copyOf returns index i's copy of the entity under RowKey rk.
func (ix *SamePartition[T]) copyOf(im *image, i int, rk string) tablekit.Entity {
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
	c.Properties[primaryRowKeyProperty] = im.id.RowKey
	return c
}

// listChange reads the index entity of list index i for value and returns
// the action that adds (or removes) id's RowKey, conditional on the ETag
// read; changed is false when there is nothing to do.
func (ix *SamePartition[T]) listChange(ctx context.Context, op string, id ID, i int, value, rk string, adding bool) (tablekit.Action[tablekit.Entity], bool, error) {
	var none tablekit.Action[tablekit.Entity]
	cur, err := ix.table.Get(ctx, id.PartitionKey, rk)
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
		if err := setIDs(op, &e, ids, ix.listWhat(id.PartitionKey, rk, i, value)); err != nil {
			return none, false, err
		}
		return tablekit.InsertAction(e), true, nil
	}
	if len(ids) == 0 {
		return tablekit.DeleteAction(e, cur.ETag), true, nil
	}
	if err := setIDs(op, &e, ids, ix.listWhat(id.PartitionKey, rk, i, value)); err != nil {
		return none, false, err
	}
	return tablekit.UpdateAction(e, cur.ETag), true, nil
}

func (ix *SamePartition[T]) listWhat(pk, rk string, i int, value string) string {
	return fmt.Sprintf("%s (index entity of %s=%q)", ix.describe(ID{pk, rk}), ix.indexes[i].Name, value)
}

// checkLimits refuses a transaction over the EGT limits with an error that
// says why it is so large.
func (ix *SamePartition[T]) checkLimits(op string, id ID, acts []tablekit.Action[tablekit.Entity]) error {
	n, total, record := len(acts), 0, ""
	if ix.keyed {
		// The idempotency record: its RowKey and two properties.
		n, total, record = n+1, 1024+len(coord.KeyRecordPrefix)+len(ix.idemKey)+128, " and the idempotency record of WithKey"
	}
	if n > limits.TransactionActions {
		return &tablekit.ValidationError{
			Op:     op,
			Entity: ix.describe(id),
			Limit:  "<= 100 actions per entity group transaction",
			Size:   n,
			Unit:   "actions",
			Detail: fmt.Sprintf("writing the entity with its %d indexes takes %d actions (the entity, an entry per index, and a removal per changed value%s); use fewer indexes, or change fewer indexed values at once", len(ix.indexes), n, record),
			Err:    tablekit.ErrTooLarge,
		}
	}
	for i := range acts {
		total += 1024
		if acts[i].Verb() != "Delete" {
			v := acts[i].Value()
			total += bodySize(&v)
		}
	}
	limit, limitText := limits.TransactionBytes, "<= 4 MiB per entity group transaction"
	if ix.table.Account().Service() == tablekit.ServiceCosmosDB {
		limit, limitText = limits.CosmosTransactionBytes, "<= 2 MB per entity group transaction on Azure Cosmos DB for Table"
	}
	if total > limit {
		return &tablekit.ValidationError{
			Op:     op,
			Entity: ix.describe(id),
			Limit:  limitText,
			Size:   total,
			Unit:   "bytes",
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

// writeMode is what a write does and how it learns the stored version.
type writeMode uint8

const (
	modeInsert         writeMode = iota // create only
	modeUpsert                          // insert first; when the entity exists, read it and replace it
	modeUpdate                          // read, check the caller's ETag, replace
	modeModify                          // read, then insert or replace
	modeDelete                          // read, check the caller's ETag, delete
	modeDeleteIfExists                  // read, then delete whatever version
)

// stale is the error of a conditional write whose ETag is no longer the
// entity's.
func (ix *SamePartition[T]) stale(op string, id ID) error {
	return fmt.Errorf("%s: %s changed since the given ETag was read: %w", opname.Prefix(op), ix.describe(id), tablekit.ErrPreconditionFailed)
}

// write runs one write of the entity id through the optimistic-concurrency
// loop: it learns the stored version as mode says, plans the transaction
// that takes the entity and its index entries from that version to what
// next returns for it (nil: delete), and sends it, starting again when a
// concurrent writer got in the way (SamePartitionOptions.Retry). etag is the
// caller's (modeUpdate, modeDelete). It returns the entity's new ETag
// ("" after a delete), taken from the transaction's answer, and whether
// the entity existed (modeDeleteIfExists). in is the entity the caller
// wrote (nil for a delete or Modify, whose function computes it): a
// WithKey copy's record keeps its fingerprint, with op's and the keys'.
func (ix *SamePartition[T]) write(ctx context.Context, op string, id ID, mode writeMode, etag azcore.ETag, in *image, next func(old *version) (*image, error)) (newETag azcore.ETag, existed bool, replayed bool, err error) {
	ctx, end := spans.Start(ctx, spans.NewTracer(ix.table.Account().TracingProvider(), spans.TableNamespace(ix.table.Account().Service() == tablekit.ServiceCosmosDB)), "SamePartition.Write",
		tracing.Attribute{Key: "tablekit.table", Value: ix.table.Name()},
		tracing.Attribute{Key: "tablekit.partition_key", Value: id.PartitionKey},
		tracing.Attribute{Key: "tablekit.row_key", Value: id.RowKey})
	defer func() { end(err) }()
	var kx *coord.KeyedTx // the keyed part of a WithKey copy's write
	if ix.keyed {
		if err := codec.WithOp(op, coord.CheckKey(ix.table, ix.idemKey)); err != nil {
			return "", false, false, err
		}
		e := tablekit.Entity{PartitionKey: id.PartitionKey, RowKey: id.RowKey}
		if in != nil {
			e = in.entity
		}
		kx = coord.NewKeyedTx(ix.table, id.PartitionKey, ix.idemKey, coord.FingerprintWrite(ix.table, op, e), &coord.KeyedTxOptions{Retry: ix.retry})
	}
	conditional := (mode == modeUpdate || mode == modeDelete) && etag != azcore.ETagAny
	gone := map[string]bool{}
	var old *version
	needRead := mode >= modeUpdate
	// refuse returns the refusal of a write for what is stored (the
	// entity missing, or changed since etag). A keyed write so refused
	// may be the repeat of one applied before: its record tells (1 read).
	refuse := func(err error) (bool, error) {
		if kx == nil {
			return false, err
		}
		switch o, serr := kx.Settle(ctx); {
		case errors.Is(serr, coord.ErrKeyReused):
			return false, serr
		case serr != nil:
			return false, err
		case o == coord.Replayed:
			replayed = true
			return false, nil
		case o == coord.Applied: // a try of this call, in flight when its answer was lost
			return false, nil
		}
		return false, err
	}
	err = retry(ctx, ix.retry, id, func() (bool, error) {
		if needRead {
			var err error
			if old, err = ix.read(ctx, id); err != nil {
				return false, err
			}
			needRead = false
			switch {
			case old == nil && (mode == modeUpdate || mode == modeDelete):
				return refuse(notFound(op, ix.describe(id)))
			case old == nil && mode == modeDeleteIfExists && kx == nil:
				existed = false
				return false, nil
			case old != nil && conditional && etag != old.etag:
				ok, err := ix.copyHasETag(ctx, id, old, etag)
				if err != nil {
					return false, err
				}
				if !ok {
					return refuse(ix.stale(op, id))
				}
			}
		}
		im, err := next(old)
		if err != nil {
			return false, err
		}
		etags, o, err := ix.attempt(ctx, op, id, old, im, gone, kx)
		switch {
		case o == coord.Replayed:
			replayed = true
			return false, nil
		case o == coord.NotApplied:
			// Nothing was applied, maybe because the service refused it
			// (the answer that said why was lost): learn the stored
			// version again, as after a conflict, and send again.
			needRead = mode != modeInsert
			return true, err
		case err == nil:
			existed = old != nil
			if im != nil && len(etags) > 0 {
				newETag = etags[0]
			}
			return false, nil
		}
		var pe *planned
		if !errors.As(err, &pe) {
			return false, err
		}
		info := pe.info
		err = pe.err
		if mode == modeDeleteIfExists && errors.Is(err, tablekit.ErrOutcomeUnknown) {
			// The answer was lost and the SDK's retry met a changed or
			// missing entity: read again, and delete whatever is there.
			needRead = true
			return true, err
		}
		kind, ai := classify(err, info)
		switch kind {
		case failPrimaryExists:
			if mode == modeInsert {
				return false, err
			}
			needRead = true
		case failPrimaryStale:
			if conditional {
				return false, err
			}
			needRead = true
		case failGoneCopy:
			gone[ai.key] = true
		case failList:
			// re-read the index entities in the next plan
		case failUnique:
			return false, &UniqueError{Op: op, Table: ix.name, Index: ix.indexes[ai.index].Name, Value: ai.value, Entity: id, Err: err}
		default:
			return false, err
		}
		return true, err
	})
	return newETag, existed, replayed, err
}

// planned carries a failed transaction's error with what its actions did.
type planned struct {
	info []actionInfo
	err  error
}

func (p *planned) Error() string { return p.err.Error() }
func (p *planned) Unwrap() error { return p.err }

// attempt plans and sends one transaction, holding the process's locks of
// the index entities it changes, and returns the actions' new ETags. A
// failed transaction is returned as a *planned. With kx (a keyed write)
// the transaction carries the key's record and the outcome says whether
// it was applied (coord.Applied: the ETags are nil when settled after a
// lost answer), replayed, or not applied after a lost answer; a keyed
// write with nothing to change sends the record alone.
func (ix *SamePartition[T]) attempt(ctx context.Context, op string, id ID, old *version, im *image, gone map[string]bool, kx *coord.KeyedTx) ([]azcore.ETag, coord.Outcome, error) {
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
			if rk, err := ix.entryKey(op, i, v, id); err == nil && rk != "" {
				lockKeys = append(lockKeys, id.PartitionKey+"\x00"+rk)
			}
		}
	}
	unlock, err := ix.locks.lock(ctx, lockKeys...)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	acts, info, err := ix.plan(ctx, op, id, old, im, gone)
	if err != nil {
		return nil, 0, err
	}
	if kx != nil {
		etags, o, err := kx.Send(ctx, acts...)
		if err != nil && o != coord.NotApplied {
			return nil, 0, &planned{info: info, err: err}
		}
		return etags, o, err
	}
	if len(acts) == 0 {
		return nil, coord.Applied, nil
	}
	etags, err := ix.table.Transaction(ctx, acts...)
	if err != nil {
		return nil, 0, &planned{info: info, err: err}
	}
	return etags, coord.Applied, nil
}

// fixed returns the next function of a write that stores im whatever the
// stored version.
func fixed(im *image) func(*version) (*image, error) {
	return func(*version) (*image, error) { return im, nil }
}

// Insert adds v with its index entries in one transaction and returns the
// entity's new ETag. It fails with an error matching
// tablekit.ErrAlreadyExists when the entity exists, and with a
// *UniqueError when a unique value is taken. Cost: 1 transaction, plus 1
// read per List index.
func (ix *SamePartition[T]) Insert(ctx context.Context, v T) (azcore.ETag, error) {
	if err := ix.ready("index.SamePartition.Insert"); err != nil {
		return "", err
	}
	const op = "index.SamePartition.Insert"
	im, err := ix.imageOf(op, v)
	if err != nil {
		return "", withOp(op, err)
	}
	etag, _, _, err := ix.write(ctx, op, im.id, modeInsert, "", im, fixed(im))
	return etag, withOp(op, err)
}

// Upsert inserts v, or replaces the stored entity with v, and updates every
// index in the same transaction: entries of values v no longer has are
// removed, a unique value taken by another entity fails with a
// *UniqueError. It returns the entity's new ETag. A concurrent writer is
// detected with the stored entity's ETag and the write retried (see
// SamePartitionOptions.Retry).
//
// Upsert first tries to insert, so a new entity costs 1 transaction; an
// existing one costs 3 (the refused insert, a read, the replacement): to
// change an entity known to exist, [SamePartition.Modify] costs 2 and
// [SamePartition.Update] 2. List indexes add 1 read per changed value.
func (ix *SamePartition[T]) Upsert(ctx context.Context, v T) (azcore.ETag, error) {
	if err := ix.ready("index.SamePartition.Upsert"); err != nil {
		return "", err
	}
	const op = "index.SamePartition.Upsert"
	im, err := ix.imageOf(op, v)
	if err != nil {
		return "", withOp(op, err)
	}
	etag, _, _, err := ix.write(ctx, op, im.id, modeUpsert, "", im, fixed(im))
	return etag, withOp(op, err)
}

// Update replaces the stored entity with v if its version is still etag,
// and updates the indexes in the same transaction; it returns the new
// ETag. etag is the ETag read with the entity ([SamePartition.Get], or a lookup:
// see [SamePartition]); azcore.ETagAny replaces whatever version is stored; ""
// is refused before anything is sent. It fails with an error matching
// tablekit.ErrNotFound when there is no such entity, and
// tablekit.ErrPreconditionFailed when it changed since etag was read.
//
// Cost: 2 transactions (a read of the stored version, whose indexed values
// the transaction must remove, then the transaction), one more than the
// former Update(prev, v), which trusted the caller's copy of the old
// values; 3 when etag comes from a copy index (a query finds the copy).
// [SamePartition.Modify] reads and writes in 2 in all, with no separate Get.
// List indexes add 1 read per changed value.
func (ix *SamePartition[T]) Update(ctx context.Context, v T, etag azcore.ETag) (azcore.ETag, error) {
	if err := ix.ready("index.SamePartition.Update"); err != nil {
		return "", err
	}
	const op = "index.SamePartition.Update"
	im, err := ix.imageOf(op, v)
	if err != nil {
		return "", withOp(op, err)
	}
	if etag == "" {
		return "", invalid(op, ix.describe(im.id), "Update needs the ETag read with the entity (or azcore.ETagAny to replace any version)")
	}
	newETag, _, _, err := ix.write(ctx, op, im.id, modeUpdate, etag, im, fixed(im))
	return newETag, withOp(op, err)
}

// Modify changes the entity pk/rk by a function, the read-modify-write of
// optimistic concurrency: it reads the entity (a zero value with the keys
// set when there is none, as tablekit.Table.Modify does, so Modify creates
// the entity), calls fn with it, and writes what fn left together with its
// index entries in one transaction, conditional on the version read. When
// another writer changed the entity (or one of its index entities) in
// between, it reads again and calls fn again, as SamePartitionOptions.Retry says;
// fn may run several times and must only change v, not its keys. An error
// from fn stops Modify and is returned as it is; nothing is written. A
// unique value taken by another entity fails with a *UniqueError.
//
// Modify returns the value stored, with its new ETag (from the
// transaction's answer) when T has an etag field. Cost: 2 transactions
// (the read and the transaction), plus 1 read per changed value of a List
// index.
func (ix *SamePartition[T]) Modify(ctx context.Context, pk, rk string, fn func(v *T) error) (T, error) {
	if err := ix.ready("index.SamePartition.Modify"); err != nil {
		return *new(T), err
	}
	const op = "index.SamePartition.Modify"
	var zero T
	id := ID{pk, rk}
	if fn == nil {
		return zero, invalid(op, ix.describe(id), "fn is nil")
	}
	if err := ix.checkPrimaryKey(op, id); err != nil {
		return zero, err
	}
	var fnErr error
	var last *image
	etag, _, replayed, err := ix.write(ctx, op, id, modeModify, "", nil, func(old *version) (*image, error) {
		base := tablekit.Entity{PartitionKey: pk, RowKey: rk}
		if old != nil {
			base = old.entity
		}
		v, err := ix.typed.FromEntity(base)
		if err != nil {
			return nil, err
		}
		if err := fn(&v); err != nil {
			fnErr = err
			return nil, err
		}
		im, err := ix.imageOf(op, v)
		if err != nil {
			return nil, err
		}
		if im.id != id {
			return nil, invalid(op, ix.describe(id), fmt.Sprintf("fn changed the keys to %s; Modify writes the entity it read", im.id))
		}
		last = im
		return im, nil
	})
	if fnErr != nil {
		return zero, fnErr
	}
	if err != nil {
		return zero, withOp(op, err)
	}
	if replayed {
		// Nothing was written by this call: return what is stored.
		v, err := ix.get(ctx, op, pk, rk)
		return v, withOp(op, err)
	}
	e := last.entity
	e.ETag = etag
	v, err := ix.typed.FromEntity(e)
	return v, withOp(op, err)
}

// Delete deletes the entity pk/rk and all its index entries in one
// transaction if its version is still etag (see [SamePartition.Update] for etag).
// It fails with an error matching tablekit.ErrNotFound when there is no
// such entity, and tablekit.ErrPreconditionFailed when it changed since
// etag was read. Cost: 2 transactions (a read of the stored version, whose
// index entries the transaction removes, then the transaction), one more
// than the former DeleteVersion(prev); 3 when etag comes from a copy
// index. List indexes add 1 read each.
func (ix *SamePartition[T]) Delete(ctx context.Context, pk, rk string, etag azcore.ETag) error {
	if err := ix.ready("index.SamePartition.Delete"); err != nil {
		return err
	}
	const op = "index.SamePartition.Delete"
	id := ID{pk, rk}
	if err := ix.checkPrimaryKey(op, id); err != nil {
		return err
	}
	if etag == "" {
		return invalid(op, ix.describe(id), "Delete needs the ETag read with the entity (or azcore.ETagAny to delete any version)")
	}
	_, _, _, err := ix.write(ctx, op, id, modeDelete, etag, nil, fixed(nil))
	return withOp(op, err)
}

// DeleteIfExists deletes the entity pk/rk, whatever its version, and all
// its index entries in one transaction, and reports whether it existed; a
// missing entity is not an error. A concurrent write in between makes it
// read again and retry (SamePartitionOptions.Retry). When an answer was lost and
// the entity is gone, it cannot tell whether this call deleted it and
// reports false, as tablekit.Table.DeleteIfExists does. Cost: 2
// transactions (read, then the transaction); 1 when the entity is missing.
// List indexes add 1 read each.
func (ix *SamePartition[T]) DeleteIfExists(ctx context.Context, pk, rk string) (bool, error) {
	if err := ix.ready("index.SamePartition.DeleteIfExists"); err != nil {
		return false, err
	}
	const op = "index.SamePartition.DeleteIfExists"
	id := ID{pk, rk}
	if err := ix.checkPrimaryKey(op, id); err != nil {
		return false, err
	}
	_, existed, replayed, err := ix.write(ctx, op, id, modeDeleteIfExists, "", nil, fixed(nil))
	return existed && !replayed && err == nil, withOp(op, err)
}

// Get reads the entity pk/rk itself, with its ETag in T's etag field.
// Cost: 1 transaction.
func (ix *SamePartition[T]) Get(ctx context.Context, pk, rk string) (T, error) {
	if err := ix.ready("index.SamePartition.Get"); err != nil {
		return *new(T), err
	}
	const op = "index.SamePartition.Get"
	v, err := ix.get(ctx, op, pk, rk)
	return v, withOp(op, err)
}

func (ix *SamePartition[T]) get(ctx context.Context, op, pk, rk string) (T, error) {
	var zero T
	if err := ix.checkPrimaryKey(op, ID{pk, rk}); err != nil {
		return zero, err
	}
	e, err := ix.table.Get(ctx, pk, rk)
	if err != nil {
		return zero, err
	}
	return ix.typed.FromEntity(e)
}

func (ix *SamePartition[T]) lookupIndex(op, name string) (int, error) {
	i, ok := ix.byName[name]
	if !ok {
		return 0, invalid(op, ix.name, fmt.Sprintf("no index %q", name))
	}
	return i, nil
}

// decodeCopy turns an index copy back into the entity it copies. The copy
// keeps its own ETag, which stands for the entity's version (see [SamePartition]).
func decodeCopy[T any](op string, table *tablekit.Table[T], e tablekit.Entity) (T, error) {
	if rk, ok := e.Properties[primaryRowKeyProperty].(string); ok {
		e.RowKey = rk
		delete(e.Properties, primaryRowKeyProperty)
	}
	v, err := table.FromEntity(e)
	return v, withOp(op, err)
}

// Find returns the entity with value in index in partition pk: for a
// unique index the one entity, else the first in index order, with the
// ETag Update and Delete accept (see [SamePartition]). It returns an error
// matching tablekit.ErrNotFound when there is none. Cost: 1 transaction (a
// point query for a unique index); 2 for a List index.
func (ix *SamePartition[T]) Find(ctx context.Context, pk, index, value string) (T, error) {
	if err := ix.ready("index.SamePartition.Find"); err != nil {
		return *new(T), err
	}
	const op = "index.SamePartition.Find"
	var zero T
	for v, err := range ix.by(ctx, op, pk, index, value) {
		return v, withOp(op, err)
	}
	return zero, notFound(op, fmt.Sprintf("%s: no entity with %s=%q in partition %q", ix.name, index, value, pk))
}

// By returns the entities of partition pk that have value in index, in
// index order (by RowKey among equal values), each with the ETag Update
// and Delete accept (see [SamePartition]). Entities read through a projected index
// have only the projected fields. Cost: 1 transaction per 1,000 results;
// for a List index 1 plus 1 point read per entity, up to 16 at once.
func (ix *SamePartition[T]) By(ctx context.Context, pk, index, value string) iter.Seq2[T, error] {
	if err := ix.ready("index.SamePartition.By"); err != nil {
		return errSeq[T](err)
	}
	return ix.by(ctx, "index.SamePartition.By", pk, index, value)
}

func (ix *SamePartition[T]) by(ctx context.Context, op, pk, index, value string) iter.Seq2[T, error] {
	i, err := ix.lookupIndex(op, index)
	if err != nil {
		return errSeq[T](err)
	}
	if value == "" {
		return func(func(T, error) bool) {}
	}
	idx := &ix.indexes[i]
	if idx.Unique || idx.List {
		rk, err := compound(op, ix.name, "index "+index, idx.Name, value)
		if err != nil {
			return errSeq[T](err)
		}
		if idx.List {
			return ix.listed(ctx, op, pk, tablekit.PointQuery(pk, rk))
		}
		return func(yield func(T, error) bool) {
			e, err := ix.table.Get(ctx, pk, rk)
			if errors.Is(err, tablekit.ErrNotFound) {
				return
			}
			if err != nil {
				yield(*new(T), withOp(op, err))
				return
			}
			yield(decodeCopy(op, ix.typed, e))
		}
	}
	lo, hi, err := keys.TupleRange(idx.Name, value)
	if err != nil {
		return errSeq[T](keyError(op, ix.name, "index "+index, err))
	}
	return ix.scan(ctx, op, pk, i, lo, hi)
}

// Range returns the entities of partition pk whose value in index is in
// [lo, hi), in index order, with ETags as By. hi == "" means no upper
// bound. Cost: 1 transaction per 1,000 results; for a List index 1 per
// 1,000 index entities plus 1 point read per entity, up to 16 at once.
func (ix *SamePartition[T]) Range(ctx context.Context, pk, index, lo, hi string) iter.Seq2[T, error] {
	if err := ix.ready("index.SamePartition.Range"); err != nil {
		return errSeq[T](err)
	}
	const op = "index.SamePartition.Range"
	i, err := ix.lookupIndex(op, index)
	if err != nil {
		return errSeq[T](err)
	}
	name := ix.indexes[i].Name
	lk, err := compound(op, ix.name, "index "+index, name, lo)
	if err != nil {
		return errSeq[T](err)
	}
	var hk string
	if hi == "" {
		_, hk, err = keys.TupleRange(name)
		if err != nil {
			return errSeq[T](keyError(op, ix.name, "index "+index, err))
		}
	} else if hk, err = compound(op, ix.name, "index "+index, name, hi); err != nil {
		return errSeq[T](err)
	}
	if hk <= lk {
		return func(func(T, error) bool) {}
	}
	return ix.scan(ctx, op, pk, i, lk, hk)
}

// Prefix returns the entities of partition pk whose value in index starts
// with prefix, in index order, with ETags as By. Cost: as Range.
func (ix *SamePartition[T]) Prefix(ctx context.Context, pk, index, prefix string) iter.Seq2[T, error] {
	if err := ix.ready("index.SamePartition.Prefix"); err != nil {
		return errSeq[T](err)
	}
	const op = "index.SamePartition.Prefix"
	i, err := ix.lookupIndex(op, index)
	if err != nil {
		return errSeq[T](err)
	}
	name := ix.indexes[i].Name
	lo, hi, err := keys.ComponentPrefixRange([]string{name}, prefix)
	if err != nil {
		return errSeq[T](keyError(op, ix.name, "index "+index, err))
	}
	if hi == "" {
		if _, hi, err = keys.TupleRange(name); err != nil {
			return errSeq[T](keyError(op, ix.name, "index "+index, err))
		}
	}
	return ix.scan(ctx, op, pk, i, lo, hi)
}

// scan reads index i's entries with RowKeys in [lo, hi), in key order
// (sorted on the client on Cosmos DB, see keyOrder).
func (ix *SamePartition[T]) scan(ctx context.Context, op, pk string, i int, lo, hi string) iter.Seq2[T, error] {
	f := tablekit.RowKeyRange(pk, lo, hi)
	if ix.indexes[i].List {
		return ix.listed(ctx, op, pk, f)
	}
	return func(yield func(T, error) bool) {
		for e, err := range ix.table.Query(ctx, f, keyOrder()) {
			if err != nil {
				yield(*new(T), withOp(op, err))
				return
			}
			if !yield(decodeCopy(op, ix.typed, e)) {
				return
			}
		}
	}
}

// listed reads the index entities f selects and then the entities they
// list, up to 16 at once, yielding them in index order.
func (ix *SamePartition[T]) listed(ctx context.Context, op, pk string, f tablekit.Filter) iter.Seq2[T, error] {
	ids := func(yield func(ID, error) bool) {
		for e, err := range ix.table.Query(ctx, f, keyOrder()) {
			if err != nil {
				yield(ID{}, err)
				return
			}
			for _, rk := range readIDs(&e) {
				if !yield(ID{pk, rk}, nil) {
					return
				}
			}
		}
	}
	return func(yield func(T, error) bool) {
		for v, err := range fetchOrdered(ctx, ids, func(ctx context.Context, id ID) (T, error) {
			return ix.get(ctx, op, id.PartitionKey, id.RowKey)
		}) {
			if !yield(v, withOp(op, err)) {
				return
			}
		}
	}
}

// IDs returns the ids the index entity of value in List index lists, in
// RowKey order. Cost: 1 transaction.
func (ix *SamePartition[T]) IDs(ctx context.Context, pk, index, value string) ([]ID, error) {
	if err := ix.ready("index.SamePartition.IDs"); err != nil {
		return nil, err
	}
	const op = "index.SamePartition.IDs"
	i, err := ix.lookupIndex(op, index)
	if err != nil {
		return nil, err
	}
	if !ix.indexes[i].List {
		return nil, invalid(op, ix.name, fmt.Sprintf("index %q is not a List index", index))
	}
	if value == "" {
		return nil, nil
	}
	rk, err := compound(op, ix.name, "index "+index, index, value)
	if err != nil {
		return nil, err
	}
	e, err := ix.table.Get(ctx, pk, rk)
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, withOp(op, err)
	}
	rks := readIDs(&e)
	ids := make([]ID, len(rks))
	for j, r := range rks {
		ids[j] = ID{pk, r}
	}
	return ids, nil
}

// Query returns the table's entities that match f (the zero Filter matches
// all), as tablekit.Table.Query does, without the index entries kept
// beside them: a plain Table.Query of an indexed partition also returns
// every copy and index entity (RowKeys that begin with an index's Name and
// '!'), decoded as if they were entities, and the idempotency records of
// WithKey (RowKeys that begin with coord.ReservedPrefix). opts are Table.Query's; Limit
// counts entities. Cost: as Table.Query, including the index rows it
// reads and skips (1 transaction per 1,000 rows).
func (ix *SamePartition[T]) Query(ctx context.Context, f tablekit.Filter, opts *tablekit.QueryOptions) iter.Seq2[T, error] {
	const op = "index.SamePartition.Query"
	if err := ix.ready(op); err != nil {
		return errSeq[T](err)
	}
	return queryEntities(ctx, op, ix.table, ix.typed, f, opts, func(_, rk string) bool {
		for _, p := range ix.prefixes {
			if strings.HasPrefix(rk, p) {
				return true
			}
		}
		return false
	})
}

func errSeq[T any](err error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) { yield(*new(T), err) }
}

// ready refuses a zero value, one not made by its constructor.
func (ix *SamePartition[T]) ready(op string) error {
	if ix == nil || ix.table == nil {
		return invalid(op, "", "the SamePartition is not initialized: use index.NewSamePartition")
	}
	return nil
}
