package index

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/internal/spans"
	"github.com/tablekit/tablekit/keys"
)

// CrossPartitionOptions configures a [CrossPartition]. A nil
// *CrossPartitionOptions means defaults: direct mode.
type CrossPartitionOptions struct {
	// Queue sends index maintenance to a worker (see [CrossPartition]).
	// nil means direct mode: each write updates the indexes itself,
	// synchronously and best effort, not atomically.
	Queue *archive.Client
	// Kind is the message kind of the maintenance requests; "" means
	// "index.sync". CrossPartitions that share a queue need distinct
	// kinds. It also names the sync records.
	Kind string
	// Delay is how long the safety-net message of each write stays hidden
	// (0 means 30 s), and the time a writer gives its write of the entity
	// (including the SDK's retries), counted from before it sends the
	// safety net, so that no try of the write starts after the safety net
	// can be visible. It bounds how stale an index can be after a writer
	// crashed.
	Delay time.Duration
	// InsertHorizon is how long after Delay the safety net of an insert
	// keeps looking for the new entity while it is not there, in case the
	// insert reaches the service late (see the package doc); 0 means 20
	// minutes (Azure refuses a Shared Key request 15 minutes after it was
	// signed, plus 5 for clock skew).
	InsertHorizon time.Duration
	// State holds the sync record of each entity; nil means the entities'
	// own table.
	State *tablekit.Table[tablekit.Entity]
	// Retry says how many passes a sync makes, and how long it waits
	// between them, while concurrent syncs of the same entity keep
	// changing its sync record or the entity changes under it (then it
	// fails with an error matching tablekit.ErrPreconditionFailed), or
	// while the requests of a pass that may have created entries fail
	// (then it returns the last failure); and how often an update of an id
	// list (List indexes) repeats its read-modify-write while other
	// writers change the list. Its zero fields take the package's
	// defaults, as [SamePartitionOptions].Retry.
	Retry tablekit.RetryPolicy
}

// Defaults of CrossPartitionOptions (documented there).
const (
	defaultKind  = "index.sync"
	defaultDelay = 30 * time.Second
	// defaultInsertHorizon covers the 15 minutes after which Azure
	// refuses a request signed with Shared Key (its x-ms-date is too old),
	// plus 5 minutes for the writer's clock being behind the service's.
	defaultInsertHorizon = 20 * time.Minute
)

// statePartitionPrefix is the first component of the PartitionKey of sync
// records: keys.Compound(statePartitionPrefix, kind, entity PartitionKey).
const statePartitionPrefix = "IndexState"

// Properties of a sync record.
const (
	// syncedProperty is the ETag of the entity version the indexes were
	// last brought up to date with.
	syncedProperty = "Synced"
	// entriesProperty lists, as JSON [[index, value], ...], the index
	// entries that may exist for the entity.
	entriesProperty = "Entries"
)

// syncRequest is the payload of an index maintenance message: the keys of
// the entity whose indexes to bring up to date.
type syncRequest struct {
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
	// Guard, when set, makes the request the safety net of one write of
	// the entity (see [CrossPartition]).
	Guard *writeGuard `json:"guard,omitempty"`
}

// writeGuard is what the safety net of one write knows about it.
type writeGuard struct {
	// ETag is the version the write is conditional on, the one it
	// replaces; "" when the write inserts a new entity.
	ETag azcore.ETag `json:"etag,omitempty"`
	// Waited is how long safety-net requests of this write have been
	// hidden in all, this one included.
	Waited time.Duration `json:"waited,omitempty"`
}

// CrossPartition keeps indexes of the entities of one table in other
// partitions or tables, eventually consistent with the entities: the
// guide's inter-partition secondary index pattern, and index entities or
// blobs of ids kept apart from the entities (options 3 and 1). Make one
// with [NewCrossPartition]; the zero value refuses every call.
//
// With CrossPartitionOptions.Queue set, each write enqueues a hidden
// safety-net request, writes the entity (conditional on the version it
// replaces), then enqueues a visible request; a worker
// (archive.OpenWorker with the CrossPartition as handler, or a Mux it is
// [CrossPartition.Register]ed on) runs [CrossPartition.Sync] for each, so
// the indexes catch up even if the writer dies at any point. Without a
// queue, each write runs Sync itself, best effort. [CrossPartition.CaughtUp]
// tells whether an entity's entries reflect its stored version. The
// package doc describes the protocol, its crash guarantees and its cost.
//
// Writes return the entity's new ETag and Get fills T's etag field. An
// entity read through a copy carries the ETag of the version the copy was
// made from, so Update and Delete with it succeed only while the copy is
// up to date; one read through a List index carries its own. Every write
// to the entities must go through the CrossPartition, or the indexes go
// stale until Sync. A CrossPartition is safe for concurrent use.
type CrossPartition[T any] struct {
	table     *tablekit.Table[T]
	raw       *tablekit.Table[tablekit.Entity]
	state     *tablekit.Table[tablekit.Entity]
	indexes   []interIndex[T]
	names     []string
	byName    map[string]int
	queue     *archive.Client
	kind      string
	delay     time.Duration
	horizon   time.Duration
	retry     tablekit.RetryPolicy
	reserved  []string // PartitionKey prefixes entities must not have
	encrypted []string // properties the table encrypts
}

type interIndex[T any] struct {
	Index[T]
	copies *tablekit.Table[tablekit.Entity] // copies, or nil
	list   listStore                        // id lists, or nil
}

// NewCrossPartition returns a CrossPartition over the entities of table
// with the given indexes (Unique is refused: no transaction spans
// partitions). It reads and writes the entities through table itself and its
// property-bag view (table.AsEntities()), so they keep table's client-side
// encryption, tracing, logger and Cosmos DB mode; copies and sync records
// kept in the entities' table use that view too.
//
// On a table with client-side encryption, a copy table (Index.Table)
// that does not encrypt what the copies would hold of the encrypted
// properties is refused, and so is every write whose index value is
// derived from an encrypted property.
func NewCrossPartition[T any](table *tablekit.Table[T], indexes []Index[T], opts *CrossPartitionOptions) (*CrossPartition[T], error) {
	const op = "index.NewCrossPartition"
	if table == nil {
		return nil, invalid(op, "", "table is nil")
	}
	if err := probe(op, table); err != nil {
		return nil, err
	}
	o := CrossPartitionOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Delay < 0 || o.InsertHorizon < 0 {
		return nil, &tablekit.ValidationError{Op: op, Entity: table.Name(), Detail: "Delay and InsertHorizon must not be negative", Err: tablekit.ErrInvalidInput}
	}
	enc := table.Encrypted()
	ix := &CrossPartition[T]{table: table, raw: table.AsEntities(), byName: make(map[string]int), queue: o.Queue, kind: o.Kind, delay: o.Delay, horizon: cmp.Or(o.InsertHorizon, defaultInsertHorizon), encrypted: enc}
	var err error
	if ix.retry, err = retryPolicy(op, o.Retry); err != nil {
		return nil, err
	}
	if ix.kind == "" {
		ix.kind = defaultKind
	}
	if err := checkName(op, table.Name(), "Kind", ix.kind); err != nil {
		return nil, err
	}
	if ix.delay == 0 {
		ix.delay = defaultDelay
	}
	sameTable := func(t *tablekit.Table[tablekit.Entity]) bool {
		return t == nil || (t.Name() != "" && t.Name() == table.Name())
	}
	ix.state = o.State
	if ix.state == nil {
		ix.state = ix.raw
	}
	if sameTable(o.State) {
		p, _ := keys.Compound(statePartitionPrefix)
		ix.reserved = append(ix.reserved, p)
	}
	if len(indexes) == 0 {
		return nil, invalid(op, table.Name(), "no indexes")
	}
	for i, idx := range indexes {
		field := fmt.Sprintf("indexes[%d]", i)
		if err := checkName(op, table.Name(), field+".Name", idx.Name); err != nil {
			return nil, err
		}
		if _, dup := ix.byName[idx.Name]; dup {
			return nil, invalidField(op, table.Name(), field+".Name", fmt.Sprintf("duplicate index name %q", idx.Name))
		}
		if idx.Key == nil {
			return nil, invalidField(op, table.Name(), field+".Key", fmt.Sprintf("index %q has no Key function", idx.Name))
		}
		ii := interIndex[T]{Index: idx}
		switch {
		case idx.Unique:
			return nil, invalidField(op, table.Name(), field+".Unique", fmt.Sprintf("index %q: a CrossPartition index cannot enforce uniqueness (no transaction spans partitions); use a SamePartition index", idx.Name))
		case idx.Blobs != nil && !idx.List:
			return nil, invalidField(op, table.Name(), field+".Blobs", fmt.Sprintf("index %q: Blobs holds id lists: set List too", idx.Name))
		case idx.Blobs != nil && idx.Table != nil:
			return nil, invalidField(op, table.Name(), field+".Blobs", fmt.Sprintf("index %q: the lists go to Blobs or to Table, not both", idx.Name))
		case idx.List && idx.Properties != nil:
			return nil, invalidField(op, table.Name(), field+".List", fmt.Sprintf("index %q: a List index holds ids, not copies: Properties does not apply", idx.Name))
		}
		entries := idx.Table
		if entries == nil {
			entries = ix.raw
		}
		if idx.Blobs == nil && sameTable(idx.Table) {
			p, _ := keys.Compound(idx.Name)
			ix.reserved = append(ix.reserved, p)
		}
		switch {
		case idx.Blobs != nil:
			ii.list = newBlobList(idx.Blobs, ix.retry)
		case idx.List:
			ii.list = newEntityList(entries, ix.retry)
		default:
			for _, p := range idx.Properties {
				if p == "" || p == primaryPartitionKeyProperty || p == primaryRowKeyProperty || p == primaryETagProperty || p == "PartitionKey" || p == "RowKey" || p == "Timestamp" {
					return nil, invalidField(op, table.Name(), field+".Properties", fmt.Sprintf("index %q: Properties lists %q, which is not a projectable property", idx.Name, p))
				}
			}
			ii.copies = entries
			if missing := unencrypted(enc, idx.Properties, ii.copies.Encrypted()); len(missing) > 0 {
				return nil, &tablekit.ValidationError{Op: op, Entity: ii.copies.Name(), Property: missing[0],
					Detail: fmt.Sprintf("index %q: the copies would hold %s in plaintext: %s encrypts it, %s does not; give the copy table the same Encryption", idx.Name, strings.Join(missing, ", "), table.Name(), ii.copies.Name()),
					Err:    tablekit.ErrInvalidInput}
			}
		}
		ix.byName[idx.Name] = i
		ix.names = append(ix.names, idx.Name)
		ix.indexes = append(ix.indexes, ii)
	}
	return ix, nil
}

// unencrypted returns the properties of enc that a copy projected onto
// props (nil: all) holds and that the copy table, which encrypts have,
// would store in plaintext.
func unencrypted(enc, props, have []string) []string {
	var out []string
	for _, p := range enc {
		if (props == nil || slices.Contains(props, p)) && !slices.Contains(have, p) {
			out = append(out, p)
		}
	}
	return out
}

// probe refuses entity types the index copies cannot be made of.
func probe[T any](op string, table *tablekit.Table[T]) error {
	if _, err := table.ToEntity(*new(T)); err != nil {
		return withOp(op, fmt.Errorf("index: cannot index %T: %w", *new(T), err))
	}
	return nil
}

// Register registers the CrossPartition's maintenance handler on mux, for its Kind.
func (ix *CrossPartition[T]) Register(mux *archive.Mux) error {
	if err := ix.ready("index.CrossPartition.Register"); err != nil {
		return err
	}
	return archive.HandleFunc(mux, ix.kind, func(ctx context.Context, req syncRequest) error {
		return ix.handle(ctx, req)
	})
}

// Handle runs the maintenance request m: it makes the CrossPartition an
// [archive.Handler] for a queue of its own. Messages of another kind fail
// permanently.
func (ix *CrossPartition[T]) Handle(ctx context.Context, m *archive.Message) error {
	if err := ix.ready("index.CrossPartition.Handle"); err != nil {
		return err
	}
	if m == nil {
		return archive.Permanent(invalid("index.CrossPartition.Handle", ix.table.Name(), "message is nil"))
	}
	if m.Kind != ix.kind {
		return archive.Permanent(invalid("index.CrossPartition.Handle", ix.table.Name(), fmt.Sprintf("message %s has kind %q, want %q", m.ID, m.Kind, ix.kind)))
	}
	var req syncRequest
	if err := m.Decode(&req); err != nil {
		return err
	}
	return ix.handle(ctx, req)
}

func (ix *CrossPartition[T]) handle(ctx context.Context, req syncRequest) error {
	var err error
	if req.Guard != nil {
		err = ix.repair(ctx, req)
	} else {
		err = ix.Sync(ctx, req.PartitionKey, req.RowKey)
	}
	var ve *tablekit.ValidationError
	if errors.As(err, &ve) {
		// Bad keys or an oversized index entity: retrying cannot help.
		return archive.Permanent(err)
	}
	return err
}

func (ix *CrossPartition[T]) describe(id ID) string {
	if ix.table.Name() == "" {
		return id.String()
	}
	return ix.table.Name() + ":" + id.String()
}

func (ix *CrossPartition[T]) checkID(op string, id ID) error {
	if id.PartitionKey == "" || id.RowKey == "" {
		return &tablekit.ValidationError{Op: op, Entity: ix.describe(id), Detail: "an indexed entity needs a non-empty PartitionKey and RowKey", Err: tablekit.ErrInvalidKey}
	}
	for _, p := range ix.reserved {
		if inRange(id.PartitionKey, p) {
			return &tablekit.ValidationError{Op: op, Entity: ix.describe(id), Property: "PartitionKey", Detail: fmt.Sprintf("the PartitionKey is in the key range %q the index keeps in the same table", p), Err: tablekit.ErrInvalidKey}
		}
	}
	return nil
}

// reservedPK reports whether pk is in a key range the index keeps in the
// entities' table.
func (ix *CrossPartition[T]) reservedPK(pk string) bool {
	for _, p := range ix.reserved {
		if inRange(pk, p) {
			return true
		}
	}
	return false
}

// inRange reports whether key is the compound key p or one of its
// extensions.
func inRange(key, p string) bool {
	return key == p || strings.HasPrefix(key, p+string(keys.Separator))
}

// entry is one index entry of an entity: index name and value.
type entry struct {
	index string
	value string
}

func (ix *CrossPartition[T]) key(i int, v T) string { return ix.indexes[i].Key(v) }

// entriesOf returns v's index entries, checking that their keys are valid
// and that no value gives an encrypted property away.
func (ix *CrossPartition[T]) entriesOf(op string, id ID, v T) ([]entry, error) {
	var out []entry
	values := make([]string, len(ix.indexes))
	for i := range ix.indexes {
		val := ix.key(i, v)
		values[i] = val
		if val == "" {
			continue
		}
		e := entry{ix.indexes[i].Name, val}
		if _, _, err := ix.entryLocation(op, i, e, id); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := checkSecrets(op, ix.describe(id), ix.table, v, ix.names, values, ix.key); err != nil {
		return nil, err
	}
	return out, nil
}

// partitionOf returns the index partition (or list partition) of index i
// for the entity partition pk.
func (ix *CrossPartition[T]) partitionOf(op string, i int, pk string) (string, error) {
	idx := &ix.indexes[i]
	if idx.Global {
		return compound(op, ix.table.Name(), "index "+idx.Name+": PartitionKey", idx.Name)
	}
	if pk == "" {
		return "", invalid(op, ix.table.Name(), fmt.Sprintf("index %q is per partition: name the entities' PartitionKey", idx.Name))
	}
	return compound(op, ix.table.Name(), "index "+idx.Name+": PartitionKey", idx.Name, pk)
}

// entryLocation returns the keys of a copy entry.
func (ix *CrossPartition[T]) entryLocation(op string, i int, e entry, id ID) (pk, rk string, err error) {
	idx := &ix.indexes[i]
	what := fmt.Sprintf("index %s entry %q", idx.Name, e.value)
	if idx.list != nil {
		_, err = compound(op, ix.describe(id), what, e.value)
		return "", "", err
	}
	if pk, err = ix.partitionOf(op, i, id.PartitionKey); err != nil {
		return "", "", err
	}
	if idx.Global {
		rk, err = compound(op, ix.describe(id), what+": RowKey", e.value, id.PartitionKey, id.RowKey)
	} else {
		rk, err = compound(op, ix.describe(id), what+": RowKey", e.value, id.RowKey)
	}
	return pk, rk, err
}

func (ix *CrossPartition[T]) listOf(i int, pk, value string) listKey {
	k := listKey{Index: ix.indexes[i].Name, Value: value}
	if !ix.indexes[i].Global {
		k.Partition = pk
	}
	return k
}

// prepare checks v and returns its id.
func (ix *CrossPartition[T]) prepare(op string, v T) (ID, error) {
	e, err := ix.table.ToEntity(v)
	if err != nil {
		return ID{}, err
	}
	id := ID{e.PartitionKey, e.RowKey}
	if err := ix.checkID(op, id); err != nil {
		return id, err
	}
	_, err = ix.entriesOf(op, id, v)
	return id, err
}

// Insert adds v, failing with an error matching tablekit.ErrAlreadyExists
// when the entity exists, and has its indexes brought up to date like
// Upsert. It returns the entity's new ETag. Cost in queued mode: 3
// transactions (2 queue messages, the insert); in direct mode 1 plus a
// Sync.
func (ix *CrossPartition[T]) Insert(ctx context.Context, v T) (azcore.ETag, error) {
	if err := ix.ready("index.CrossPartition.Insert"); err != nil {
		return "", err
	}
	const op = "index.CrossPartition.Insert"
	id, err := ix.prepare(op, v)
	if err != nil {
		return "", withOp(op, err)
	}
	etag, err := ix.insert(ctx, id, v)
	return etag, withOp(op, err)
}

func (ix *CrossPartition[T]) insert(ctx context.Context, id ID, v T) (azcore.ETag, error) {
	if ix.queue == nil {
		return ix.direct(ctx, id, func(ctx context.Context) (azcore.ETag, error) {
			return ix.table.Insert(ctx, v)
		})
	}
	absent := func(context.Context, ID) (azcore.ETag, error) { return "", nil }
	return ix.guarded(ctx, id, absent, false, false, func(ctx context.Context, _ azcore.ETag) (azcore.ETag, error) {
		return ix.table.Insert(ctx, v)
	})
}

// Upsert inserts v or replaces the stored entity, has its indexes brought
// up to date, and returns the entity's new ETag: in queued mode by the
// worker, soon after; in direct mode before it returns (cost: 1 plus a
// Sync). In queued mode the write is conditional on the version Upsert
// read (see [CrossPartition]), and a concurrent write in between makes Upsert read
// again and retry (CrossPartitionOptions.Retry); cost: 4 transactions (read, 2
// queue messages, the write).
func (ix *CrossPartition[T]) Upsert(ctx context.Context, v T) (azcore.ETag, error) {
	if err := ix.ready("index.CrossPartition.Upsert"); err != nil {
		return "", err
	}
	const op = "index.CrossPartition.Upsert"
	id, err := ix.prepare(op, v)
	if err != nil {
		return "", withOp(op, err)
	}
	if ix.queue == nil {
		etag, err := ix.direct(ctx, id, func(ctx context.Context) (azcore.ETag, error) {
			return ix.table.Upsert(ctx, v)
		})
		return etag, withOp(op, err)
	}
	etag, err := ix.guarded(ctx, id, ix.storedVersion, true, false, func(ctx context.Context, pre azcore.ETag) (azcore.ETag, error) {
		if pre == "" {
			return ix.table.Insert(ctx, v)
		}
		return ix.table.Update(ctx, v, pre)
	})
	return etag, withOp(op, err)
}

// Update replaces the stored entity with v if its ETag is still etag (as
// read with Get, or through a copy index: see [CrossPartition]), as Table.Update
// does, has the indexes brought up to date like Upsert, and returns the
// new ETag. It fails with an error matching tablekit.ErrPreconditionFailed
// when the entity changed since, and tablekit.ErrNotFound when there is
// none. With azcore.ETagAny it replaces whatever version is stored; in
// queued mode it then reads the version first and retries like Upsert.
// "" is refused before anything is sent. Cost in queued mode: 3
// transactions (4 with ETagAny).
func (ix *CrossPartition[T]) Update(ctx context.Context, v T, etag azcore.ETag) (azcore.ETag, error) {
	if err := ix.ready("index.CrossPartition.Update"); err != nil {
		return "", err
	}
	const op = "index.CrossPartition.Update"
	id, err := ix.prepare(op, v)
	if err != nil {
		return "", withOp(op, err)
	}
	if etag == "" {
		return "", invalid(op, ix.describe(id), "Update needs the ETag read with the entity (or azcore.ETagAny to replace any version)")
	}
	newETag, err := ix.update(ctx, op, id, v, etag)
	return newETag, withOp(op, err)
}

func (ix *CrossPartition[T]) update(ctx context.Context, op string, id ID, v T, etag azcore.ETag) (azcore.ETag, error) {
	if ix.queue == nil {
		return ix.direct(ctx, id, func(ctx context.Context) (azcore.ETag, error) {
			return ix.table.Update(ctx, v, etag)
		})
	}
	return ix.guarded(ctx, id, ix.versionOf(op, etag), etag == azcore.ETagAny, false, func(ctx context.Context, pre azcore.ETag) (azcore.ETag, error) {
		return ix.table.Update(ctx, v, pre)
	})
}

// versionOf returns the version function of a write conditional on etag:
// etag itself, or for azcore.ETagAny the stored version (read; an error
// matching tablekit.ErrNotFound when there is none).
func (ix *CrossPartition[T]) versionOf(op string, etag azcore.ETag) func(context.Context, ID) (azcore.ETag, error) {
	if etag != azcore.ETagAny {
		return func(context.Context, ID) (azcore.ETag, error) { return etag, nil }
	}
	return func(ctx context.Context, id ID) (azcore.ETag, error) {
		pre, err := ix.storedVersion(ctx, id)
		if err == nil && pre == "" {
			err = notFound(op, ix.describe(id))
		}
		return pre, err
	}
}

// Modify changes the entity pk/rk by a function, the read-modify-write of
// optimistic concurrency: it reads the entity (a zero value with the keys
// set when there is none, as tablekit.Table.Modify does, so Modify creates
// the entity), calls fn with it, and writes what fn left with Update on
// the ETag read (or Insert), having the indexes brought up to date. When
// another writer changed (or created) the entity in between, it reads
// again and calls fn again, as CrossPartitionOptions.Retry says; fn may run several
// times and must only change v, not its keys. An error from fn stops
// Modify and is returned as it is; nothing is written. It returns the
// value stored, with its new ETag when T has an etag field. Cost in queued
// mode: 4 transactions (the read, then as Update or Insert).
func (ix *CrossPartition[T]) Modify(ctx context.Context, pk, rk string, fn func(v *T) error) (T, error) {
	if err := ix.ready("index.CrossPartition.Modify"); err != nil {
		return *new(T), err
	}
	const op = "index.CrossPartition.Modify"
	var zero T
	id := ID{pk, rk}
	if fn == nil {
		return zero, invalid(op, ix.describe(id), "fn is nil")
	}
	if err := ix.checkID(op, id); err != nil {
		return zero, err
	}
	var out T
	var fnErr error
	err := retry(ctx, ix.retry, id, func() (bool, error) {
		e, err := ix.raw.Get(ctx, pk, rk)
		exists := err == nil
		if err != nil && !errors.Is(err, tablekit.ErrNotFound) {
			return false, err
		}
		if !exists {
			e = tablekit.Entity{PartitionKey: pk, RowKey: rk}
		}
		v, err := ix.table.FromEntity(e)
		if err != nil {
			return false, err
		}
		if err := fn(&v); err != nil {
			fnErr = err
			return false, err
		}
		ne, err := ix.table.ToEntity(v)
		if err != nil {
			return false, err
		}
		if ne.PartitionKey != pk || ne.RowKey != rk {
			return false, invalid(op, ix.describe(id), fmt.Sprintf("fn changed the keys to %s/%s; Modify writes the entity it read", ne.PartitionKey, ne.RowKey))
		}
		if _, err := ix.entriesOf(op, id, v); err != nil {
			return false, err
		}
		var etag azcore.ETag
		if exists {
			etag, err = ix.update(ctx, op, id, v, e.ETag)
		} else {
			etag, err = ix.insert(ctx, id, v)
		}
		if err != nil {
			lost := (errors.Is(err, tablekit.ErrPreconditionFailed) || errors.Is(err, tablekit.ErrAlreadyExists)) && !errors.Is(err, tablekit.ErrOutcomeUnknown)
			return lost, err
		}
		ne.ETag = etag
		out, err = ix.table.FromEntity(ne)
		return false, err
	})
	if fnErr != nil {
		return zero, fnErr
	}
	if err != nil {
		return zero, withOp(op, err)
	}
	return out, nil
}

// Delete deletes the entity pk/rk if its ETag is still etag (as read with
// Get, or through a copy index; azcore.ETagAny: any version; "" is
// refused) and has its index entries removed, like Upsert. It fails with
// an error matching tablekit.ErrNotFound when there is no such entity, and
// tablekit.ErrPreconditionFailed when it changed since etag was read. Cost
// in queued mode: 3 transactions (2 queue messages, the delete); 4 with
// ETagAny (a read first, retried like Upsert).
func (ix *CrossPartition[T]) Delete(ctx context.Context, pk, rk string, etag azcore.ETag) error {
	if err := ix.ready("index.CrossPartition.Delete"); err != nil {
		return err
	}
	const op = "index.CrossPartition.Delete"
	id := ID{pk, rk}
	if err := ix.checkID(op, id); err != nil {
		return err
	}
	if etag == "" {
		return invalid(op, ix.describe(id), "Delete needs the ETag read with the entity (or azcore.ETagAny to delete any version)")
	}
	if ix.queue == nil {
		_, err := ix.direct(ctx, id, func(ctx context.Context) (azcore.ETag, error) {
			return "", ix.table.Delete(ctx, pk, rk, etag)
		})
		return withOp(op, err)
	}
	_, err := ix.guarded(ctx, id, ix.versionOf(op, etag), etag == azcore.ETagAny, false, func(ctx context.Context, pre azcore.ETag) (azcore.ETag, error) {
		return "", ix.table.Delete(ctx, pk, rk, pre)
	})
	return withOp(op, err)
}

// DeleteIfExists deletes the entity pk/rk whatever its version, has its
// index entries removed like Upsert, and reports whether it existed; a
// missing entity is not an error. When an answer was lost and the entity
// is gone, it cannot tell whether this call deleted it and reports false,
// as tablekit.Table.DeleteIfExists does. Cost in queued mode: 4
// transactions (read, 2 queue messages, the delete); 2 when the entity is
// missing (read, and a request that removes any entries left).
func (ix *CrossPartition[T]) DeleteIfExists(ctx context.Context, pk, rk string) (bool, error) {
	if err := ix.ready("index.CrossPartition.DeleteIfExists"); err != nil {
		return false, err
	}
	const op = "index.CrossPartition.DeleteIfExists"
	id := ID{pk, rk}
	if err := ix.checkID(op, id); err != nil {
		return false, err
	}
	var existed bool
	if ix.queue == nil {
		_, err := ix.direct(ctx, id, func(ctx context.Context) (azcore.ETag, error) {
			var err error
			existed, err = ix.table.DeleteIfExists(ctx, pk, rk)
			return "", err
		})
		return existed && err == nil, withOp(op, err)
	}
	_, err := ix.guarded(ctx, id, ix.storedVersion, true, true, func(ctx context.Context, pre azcore.ETag) (azcore.ETag, error) {
		existed = false
		err := ix.table.Delete(ctx, pk, rk, pre)
		var se *tablekit.ServiceError
		if errors.Is(err, tablekit.ErrNotFound) || (errors.As(err, &se) && se.StatusCode == http.StatusNotFound) {
			// Deleted meanwhile, or by a try whose answer was lost (the
			// error then matches ErrOutcomeUnknown): gone either way.
			return "", nil
		}
		existed = err == nil
		return "", err
	})
	return existed && err == nil, withOp(op, err)
}

// Get reads the entity pk/rk itself, with its ETag in T's etag field.
// Cost: 1 transaction.
func (ix *CrossPartition[T]) Get(ctx context.Context, pk, rk string) (T, error) {
	if err := ix.ready("index.CrossPartition.Get"); err != nil {
		return *new(T), err
	}
	v, err := ix.table.Get(ctx, pk, rk)
	return v, withOp("index.CrossPartition.Get", err)
}

// current is the stored version of an entity, as Sync sees it.
type current[T any] struct {
	etag    azcore.ETag
	entity  tablekit.Entity
	value   T
	entries []entry
}

func (ix *CrossPartition[T]) readCurrent(ctx context.Context, op string, id ID) (*current[T], error) {
	e, err := ix.raw.Get(ctx, id.PartitionKey, id.RowKey)
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v, err := ix.table.FromEntity(e)
	if err != nil {
		return nil, err
	}
	cur := &current[T]{etag: e.ETag, entity: e, value: v}
	if cur.entries, err = ix.entriesOf(op, id, v); err != nil {
		return nil, err
	}
	return cur, nil
}

// record is an entity's sync record.
type record struct {
	etag    azcore.ETag
	synced  string
	entries []entry
}

func (ix *CrossPartition[T]) statePK(op, pk string) (string, error) {
	return compound(op, ix.state.Name(), "sync record PartitionKey of "+pk, statePartitionPrefix, ix.kind, pk)
}

func (ix *CrossPartition[T]) readRecord(ctx context.Context, spk, rk string) (*record, error) {
	e, err := ix.state.Get(ctx, spk, rk)
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r := &record{etag: e.ETag}
	r.synced, _ = e.Properties[syncedProperty].(string)
	if s, _ := e.Properties[entriesProperty].(string); s != "" {
		var pairs [][2]string
		if err := json.Unmarshal([]byte(s), &pairs); err != nil {
			return nil, fmt.Errorf("index: sync record %s/%s: %w", spk, rk, err)
		}
		for _, p := range pairs {
			r.entries = append(r.entries, entry{p[0], p[1]})
		}
	}
	return r, nil
}

// writeRecord stores a sync record: an insert when etag is "", else a
// replacement conditional on etag. It returns the new ETag.
func (ix *CrossPartition[T]) writeRecord(ctx context.Context, spk, rk string, synced string, entries []entry, etag azcore.ETag) (azcore.ETag, error) {
	pairs := make([][2]string, len(entries))
	for i, e := range entries {
		pairs[i] = [2]string{e.index, e.value}
	}
	data, _ := json.Marshal(pairs)
	e := tablekit.Entity{PartitionKey: spk, RowKey: rk, Properties: map[string]any{syncedProperty: synced, entriesProperty: string(data)}}
	if etag == "" {
		return ix.state.Insert(ctx, e)
	}
	return ix.state.Update(ctx, e, etag)
}

func union(sets ...[]entry) []entry {
	var out []entry
	for _, s := range sets {
		for _, e := range s {
			if !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	return out
}

func subset(a, b []entry) bool {
	for _, e := range a {
		if !slices.Contains(b, e) {
			return false
		}
	}
	return true
}

const syncOp = "index.CrossPartition.Sync"

// Sync brings the index entries of the entity pk/rk up to date with its
// stored version (or removes them when it is gone). It is what the worker
// runs for each maintenance request; call it directly to repair an entity
// after a failure in direct mode. It is idempotent and safe to run
// concurrently. Cost when the indexes are already up to date: 2
// transactions; else about 5 plus one write per entry to create or delete
// (2 per id list change).
func (ix *CrossPartition[T]) Sync(ctx context.Context, pk, rk string) (err error) {
	if err := ix.ready("index.CrossPartition.Sync"); err != nil {
		return err
	}
	ctx, end := spans.Start(ctx, spans.NewTracer(ix.table.Account().TracingProvider(), spans.TableNamespace(ix.table.Account().Service() == tablekit.ServiceCosmosDB)), "CrossPartition.Sync",
		tracing.Attribute{Key: "tablekit.table", Value: ix.table.Name()},
		tracing.Attribute{Key: "tablekit.partition_key", Value: pk},
		tracing.Attribute{Key: "tablekit.row_key", Value: rk})
	defer func() { end(err) }()
	defer func() { err = withOp(syncOp, err) }()
	id := ID{pk, rk}
	if err := ix.checkID(syncOp, id); err != nil {
		return err
	}
	spk, err := ix.statePK(syncOp, pk)
	if err != nil {
		return err
	}
	var own []entry // entries this call may have created
	err = retry(ctx, ix.retry, id, func() (bool, error) {
		again, err := ix.syncPass(ctx, id, spk, &own)
		// A pass that may have created entries and then failed is made
		// again, even for a failure that is no lost race: a newer Sync may
		// have removed those entries and recorded the entity as synced
		// without them, and only this call knows it created them (the
		// next pass removes them if the entity no longer wants them).
		if err != nil && !again && len(own) > 0 && transient(err) {
			again = true
		}
		return again, err
	})
	var ce *conflictError
	if errors.As(err, &ce) && transient(ce.err) {
		return fmt.Errorf("index: %s: the sync failed on each of %d attempts: %w", id, ce.attempts, ce.err)
	}
	return err
}

// syncPass makes one pass of Sync; retry says a concurrent writer got in
// the way and another pass is needed. own accumulates the entries this
// Sync created.
func (ix *CrossPartition[T]) syncPass(ctx context.Context, id ID, spk string, own *[]entry) (retry bool, err error) {
	pk, rk := id.PartitionKey, id.RowKey
	cur, err := ix.readCurrent(ctx, syncOp, id)
	if err != nil {
		return false, err
	}
	rec, err := ix.readRecord(ctx, spk, rk)
	if err != nil {
		return false, err
	}
	if len(*own) == 0 && ((cur == nil && rec == nil) || (cur != nil && rec != nil && rec.synced == string(cur.etag))) {
		return false, nil
	}
	var desired, recorded []entry
	var synced string
	var recETag azcore.ETag
	if cur != nil {
		desired = cur.entries
	}
	if rec != nil {
		recorded, synced, recETag = rec.entries, rec.synced, rec.etag
	}
	all := union(recorded, desired, *own)
	if !subset(all, recorded) {
		// Record the entries about to be created before creating them.
		recETag, err = ix.writeRecord(ctx, spk, rk, synced, all, recETag)
		if err != nil {
			return isConflict(err), err
		}
	}
	for _, e := range desired {
		if !slices.Contains(*own, e) {
			*own = append(*own, e) // before the write: it may be applied and still fail
		}
		if err := ix.putEntry(ctx, id, e, cur); err != nil {
			return false, err
		}
	}
	for _, e := range all {
		if slices.Contains(desired, e) {
			continue
		}
		if err := ix.removeEntry(ctx, id, e); err != nil {
			return false, err
		}
	}
	switch {
	case cur != nil:
		_, err = ix.writeRecord(ctx, spk, rk, string(cur.etag), desired, recETag)
	case recETag != "":
		err = ix.state.Delete(ctx, spk, rk, recETag)
	}
	if err != nil {
		return isConflict(err), err
	}
	// A sync that read an older version must not have the last word.
	now, err := ix.raw.GetSelect(ctx, pk, rk)
	switch {
	case errors.Is(err, tablekit.ErrNotFound):
		if cur == nil {
			return false, nil
		}
	case err != nil:
		return false, err
	case cur != nil && now.ETag == cur.etag:
		return false, nil
	}
	return true, fmt.Errorf("index: %s changed during the sync", id)
}

// putEntry creates or refreshes one index entry of the entity.
func (ix *CrossPartition[T]) putEntry(ctx context.Context, id ID, e entry, cur *current[T]) error {
	i, ok := ix.byName[e.index]
	if !ok {
		return nil
	}
	idx := &ix.indexes[i]
	if idx.list != nil {
		return idx.list.Add(ctx, ix.listOf(i, id.PartitionKey, e.value), id)
	}
	pk, rk, err := ix.entryLocation(syncOp, i, e, id)
	if err != nil {
		return err
	}
	c := tablekit.Entity{PartitionKey: pk, RowKey: rk, Properties: make(map[string]any, len(cur.entity.Properties)+3)}
	if idx.Properties == nil {
		for k, v := range cur.entity.Properties {
			c.Properties[k] = v
		}
	} else {
		for _, k := range idx.Properties {
			if v, ok := cur.entity.Properties[k]; ok {
				c.Properties[k] = v
			}
		}
	}
	c.Properties[primaryPartitionKeyProperty] = id.PartitionKey
	c.Properties[primaryRowKeyProperty] = id.RowKey
	c.Properties[primaryETagProperty] = string(cur.etag)
	_, err = idx.copies.Upsert(ctx, c)
	return err
}

// removeEntry deletes one index entry of the entity, if it exists.
func (ix *CrossPartition[T]) removeEntry(ctx context.Context, id ID, e entry) error {
	i, ok := ix.byName[e.index]
	if !ok {
		return nil // an index no longer configured
	}
	idx := &ix.indexes[i]
	if idx.list != nil {
		return idx.list.Remove(ctx, ix.listOf(i, id.PartitionKey, e.value), id)
	}
	pk, rk, err := ix.entryLocation(syncOp, i, e, id)
	if err != nil {
		return err
	}
	_, err = idx.copies.DeleteIfExists(ctx, pk, rk)
	return err
}

// Query returns the table's entities that match f (the zero Filter matches
// all), as tablekit.Table.Query does, without the rows the index keeps in
// the entities' table: copies, index entities and sync records (their
// PartitionKeys begin with an index's Name, or "IndexState", and '!'),
// which a plain Table.Query returns too, decoded as if they were entities.
// opts are Table.Query's; Limit counts entities. Cost: as Table.Query,
// including the index rows it reads and skips.
func (ix *CrossPartition[T]) Query(ctx context.Context, f tablekit.Filter, opts *tablekit.QueryOptions) iter.Seq2[T, error] {
	const op = "index.CrossPartition.Query"
	if err := ix.ready(op); err != nil {
		return errSeq[T](err)
	}
	return queryEntities(ctx, op, ix.raw, ix.table, f, opts, func(pk, _ string) bool {
		return ix.reservedPK(pk)
	})
}

// CaughtUp reports whether the indexes of the entity pk/rk reflect its
// stored version: its sync record names the entity's current ETag (or,
// for a missing entity, there is no record left). Cost: 2 transactions.
func (ix *CrossPartition[T]) CaughtUp(ctx context.Context, pk, rk string) (bool, error) {
	if err := ix.ready("index.CrossPartition.CaughtUp"); err != nil {
		return false, err
	}
	const op = "index.CrossPartition.CaughtUp"
	id := ID{pk, rk}
	if err := ix.checkID(op, id); err != nil {
		return false, err
	}
	spk, err := ix.statePK(op, pk)
	if err != nil {
		return false, err
	}
	e, err := ix.raw.GetSelect(ctx, pk, rk)
	exists := err == nil
	if err != nil && !errors.Is(err, tablekit.ErrNotFound) {
		return false, err
	}
	rec, err := ix.readRecord(ctx, spk, rk)
	if err != nil {
		return false, err
	}
	if !exists {
		return rec == nil, nil
	}
	return rec != nil && rec.synced == string(e.ETag), nil
}

func (ix *CrossPartition[T]) lookupIndex(op, name string, list bool) (int, error) {
	i, ok := ix.byName[name]
	if !ok {
		return 0, invalid(op, ix.table.Name(), fmt.Sprintf("no index %q", name))
	}
	if list != (ix.indexes[i].list != nil) {
		if list {
			return 0, invalid(op, ix.table.Name(), fmt.Sprintf("index %q is not a List index", name))
		}
		return 0, invalid(op, ix.table.Name(), fmt.Sprintf("index %q is a List index: use IDs or By", name))
	}
	return i, nil
}

// decodeInterCopy turns an inter-partition copy back into the entity, with
// the ETag of the version it was copied from (PrimaryETag): Update and
// Delete accept it, and fail with tablekit.ErrPreconditionFailed if the
// copy lagged behind the entity.
func decodeInterCopy[T any](op string, table *tablekit.Table[T], e tablekit.Entity) (T, error) {
	pk, _ := e.Properties[primaryPartitionKeyProperty].(string)
	rk, _ := e.Properties[primaryRowKeyProperty].(string)
	etag, _ := e.Properties[primaryETagProperty].(string)
	e.PartitionKey, e.RowKey, e.ETag = pk, rk, azcore.ETag(etag)
	delete(e.Properties, primaryPartitionKeyProperty)
	delete(e.Properties, primaryRowKeyProperty)
	delete(e.Properties, primaryETagProperty)
	v, err := table.FromEntity(e)
	return v, withOp(op, err)
}

// By returns the entities with value in index, in index order: those of
// entity partition pk, or of all partitions for a Global index (pk is
// then ignored). Results may lag behind recent writes. Each entity carries
// the ETag of the version it was read from (see [CrossPartition]). Cost: 1
// transaction per 1,000 results; for a List index 1 plus 1 point read per
// entity, up to 16 at once.
func (ix *CrossPartition[T]) By(ctx context.Context, pk, index, value string) iter.Seq2[T, error] {
	if err := ix.ready("index.CrossPartition.By"); err != nil {
		return errSeq[T](err)
	}
	return ix.by(ctx, "index.CrossPartition.By", pk, index, value)
}

func (ix *CrossPartition[T]) by(ctx context.Context, op, pk, index, value string) iter.Seq2[T, error] {
	i, ok := ix.byName[index]
	if !ok {
		return errSeq[T](invalid(op, ix.table.Name(), fmt.Sprintf("no index %q", index)))
	}
	if value == "" {
		return func(func(T, error) bool) {}
	}
	if ix.indexes[i].list != nil {
		return func(yield func(T, error) bool) {
			list, err := ix.ids(ctx, op, pk, index, value)
			if err != nil {
				yield(*new(T), err)
				return
			}
			get := func(ctx context.Context, id ID) (T, error) {
				return ix.table.Get(ctx, id.PartitionKey, id.RowKey)
			}
			for v, err := range fetchOrdered(ctx, idSeq(list), get) {
				if !yield(v, withOp(op, err)) {
					return
				}
			}
		}
	}
	lo, hi, err := keys.TupleRange(value)
	if err != nil {
		return errSeq[T](keyError(op, ix.table.Name(), "index "+index+" value", err))
	}
	return ix.scan(ctx, op, i, pk, lo, hi)
}

// Find returns the first entity with value in index (see By), or an error
// matching tablekit.ErrNotFound. Cost: 1 transaction; 2 for a List index.
func (ix *CrossPartition[T]) Find(ctx context.Context, pk, index, value string) (T, error) {
	if err := ix.ready("index.CrossPartition.Find"); err != nil {
		return *new(T), err
	}
	const op = "index.CrossPartition.Find"
	for v, err := range ix.by(ctx, op, pk, index, value) {
		return v, err
	}
	return *new(T), notFound(op, fmt.Sprintf("no entity with %s=%q", index, value))
}

// Range returns the entities whose value in index is in [lo, hi) (hi ""
// means no upper bound), in index order, with ETags as By; see By for pk.
// Copy indexes only. Cost: 1 transaction per 1,000 results.
func (ix *CrossPartition[T]) Range(ctx context.Context, pk, index, lo, hi string) iter.Seq2[T, error] {
	if err := ix.ready("index.CrossPartition.Range"); err != nil {
		return errSeq[T](err)
	}
	const op = "index.CrossPartition.Range"
	i, err := ix.lookupIndex(op, index, false)
	if err != nil {
		return errSeq[T](err)
	}
	lk, err := compound(op, ix.table.Name(), "index "+index+" lo", lo)
	if err != nil {
		return errSeq[T](err)
	}
	var hk string
	if hi != "" {
		if hk, err = compound(op, ix.table.Name(), "index "+index+" hi", hi); err != nil {
			return errSeq[T](err)
		}
		if hk <= lk {
			return func(func(T, error) bool) {}
		}
	}
	return ix.scan(ctx, op, i, pk, lk, hk)
}

// Prefix returns the entities whose value in index starts with prefix, in
// index order, with ETags as By; see By for pk. Copy indexes only. Cost:
// as Range.
func (ix *CrossPartition[T]) Prefix(ctx context.Context, pk, index, prefix string) iter.Seq2[T, error] {
	if err := ix.ready("index.CrossPartition.Prefix"); err != nil {
		return errSeq[T](err)
	}
	const op = "index.CrossPartition.Prefix"
	i, err := ix.lookupIndex(op, index, false)
	if err != nil {
		return errSeq[T](err)
	}
	lo, hi, err := keys.ComponentPrefixRange(nil, prefix)
	if err != nil {
		return errSeq[T](keyError(op, ix.table.Name(), "index "+index+" prefix", err))
	}
	return ix.scan(ctx, op, i, pk, lo, hi)
}

// scan reads index i's copies with RowKeys in [lo, hi), in key order
// (sorted on the client on Cosmos DB, see keyOrder).
func (ix *CrossPartition[T]) scan(ctx context.Context, op string, i int, pk, lo, hi string) iter.Seq2[T, error] {
	ipk, err := ix.partitionOf(op, i, pk)
	if err != nil {
		return errSeq[T](err)
	}
	copies := ix.indexes[i].copies
	return func(yield func(T, error) bool) {
		for e, err := range copies.Query(ctx, tablekit.RowKeyRange(ipk, lo, hi), keyOrder()) {
			if err != nil {
				yield(*new(T), withOp(op, err))
				return
			}
			if !yield(decodeInterCopy(op, ix.table, e)) {
				return
			}
		}
	}
}

// IDs returns the ids in the list of value in List index index, for entity
// partition pk (ignored for a Global index). Cost: 1 transaction.
func (ix *CrossPartition[T]) IDs(ctx context.Context, pk, index, value string) ([]ID, error) {
	if err := ix.ready("index.CrossPartition.IDs"); err != nil {
		return nil, err
	}
	return ix.ids(ctx, "index.CrossPartition.IDs", pk, index, value)
}

func (ix *CrossPartition[T]) ids(ctx context.Context, op, pk, index, value string) ([]ID, error) {
	i, err := ix.lookupIndex(op, index, true)
	if err != nil {
		return nil, err
	}
	if !ix.indexes[i].Global && pk == "" {
		return nil, invalid(op, ix.table.Name(), fmt.Sprintf("index %q is per partition: name the entities' PartitionKey", index))
	}
	if value == "" {
		return nil, nil
	}
	ids, err := ix.indexes[i].list.IDs(ctx, ix.listOf(i, pk, value))
	return ids, withOp(op, err)
}

// ready refuses a zero value, one not made by its constructor.
func (ix *CrossPartition[T]) ready(op string) error {
	if ix == nil || ix.table == nil {
		return invalid(op, "", "the CrossPartition is not initialized: use index.NewCrossPartition")
	}
	return nil
}
