package index

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"iter"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/keys"
)

// InterIndex describes one index that an [Inter] keeps outside the
// entities' partitions.
//
// By default the index holds a copy of every entity (the guide's
// inter-partition secondary index pattern) in the partition
// keys.Compound(Name, entity PartitionKey) — "email!Sales" — under the
// RowKey keys.Compound(value, entity RowKey); a Global index keeps all
// entities in the one partition keys.Compound(Name) under
// keys.Compound(value, PartitionKey, RowKey). With List set it keeps
// instead the entity's id in the list of its value in a [ListStore]: an
// [EntityList] (the guide's index entities pattern, option 3) or a
// [BlobList] (option 1).
//
// Several entities may share a value: an eventually consistent index cannot
// enforce uniqueness.
type InterIndex[T any] struct {
	// Name is the index's name, the first component of its partition
	// keys, e.g. "email".
	Name string
	// Key returns the indexed value of v; "" means no entry. The value is
	// a key component: no / \ # ? or control characters.
	Key func(v T) string
	// Table holds the copies; nil means the entities' own table. Not used
	// with List.
	Table *aztables.Client
	// Global puts the entries of all the entities' partitions together:
	// one partition of copies, or lists that span partitions. Otherwise
	// each entity partition has its own.
	Global bool
	// Properties, when not nil, projects the copies onto these properties;
	// entities read through the index have the other fields zero.
	Properties []string
	// List, when set, keeps id lists in this store instead of copies.
	List ListStore
}

// InterOptions configures an [Inter]. A nil *InterOptions means defaults:
// direct mode.
type InterOptions struct {
	// Queue sends index maintenance to a worker (see [Inter]). nil means
	// direct mode: each write updates the indexes itself, synchronously and
	// best effort, not atomically.
	Queue *archive.Client
	// Kind is the message kind of this Inter's maintenance requests; ""
	// means [DefaultKind]. Inters that share a queue need distinct kinds.
	// It also names the Inter's sync records.
	Kind string
	// Delay is how long the safety-net message of each write stays hidden
	// (0 means [DefaultDelay]), and the time a writer gives its write of
	// the entity (including the SDK's retries), counted from before it
	// sends the safety net, so that no try of the write starts after the
	// safety net can be visible. It bounds how stale an index can be after
	// a writer crashed.
	Delay time.Duration
	// InsertHorizon is how long after Delay the safety net of an insert
	// keeps looking for the new entity while it is not there, in case the
	// insert reaches the service late (see [Inter]); 0 means
	// [DefaultInsertHorizon].
	InsertHorizon time.Duration
	// State holds the sync record of each entity; nil means the entities'
	// own table.
	State *aztables.Client
	// Retry says how many passes a sync makes, and how long it waits
	// between them, while concurrent syncs of the same entity keep
	// changing its sync record or the entity changes under it (then it
	// fails with a *ConflictError), or while the requests of a pass that
	// may have created entries fail (then it returns the last failure). Its zero fields take the package's
	// defaults, as [IntraOptions].Retry. The list stores of List indexes
	// have their own ([ListOptions]).
	Retry tablekit.RetryPolicy
}

// Defaults of InterOptions.
const (
	DefaultKind  = "index.sync"
	DefaultDelay = 30 * time.Second
	// DefaultInsertHorizon covers the 15 minutes after which Azure
	// refuses a request signed with Shared Key (its x-ms-date is too old),
	// plus 5 minutes for the writer's clock being behind the service's.
	DefaultInsertHorizon = 20 * time.Minute
)

// StatePartitionPrefix is the first component of the PartitionKey of sync
// records: keys.Compound(StatePartitionPrefix, kind, entity PartitionKey).
const StatePartitionPrefix = "IndexState"

// Properties of a sync record.
const (
	// SyncedProperty is the ETag of the entity version the indexes were
	// last brought up to date with.
	SyncedProperty = "Synced"
	// EntriesProperty lists, as JSON [[index, value], ...], the index
	// entries that may exist for the entity.
	EntriesProperty = "Entries"
)

// SyncRequest is the payload of an index maintenance message: the keys of
// the entity whose indexes to bring up to date.
type SyncRequest struct {
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
	// Guard, when set, makes the request the safety net of one write of
	// the entity (see [Inter]).
	Guard *WriteGuard `json:"guard,omitempty"`
}

// WriteGuard is what the safety net of one write knows about it.
type WriteGuard struct {
	// ETag is the version the write is conditional on, the one it
	// replaces; "" when the write inserts a new entity.
	ETag azcore.ETag `json:"etag,omitempty"`
	// Waited is how long safety-net requests of this write have been
	// hidden in all, this one included.
	Waited time.Duration `json:"waited,omitempty"`
}

// Inter keeps indexes of the entities of one table in other partitions or
// tables, eventually consistent with the entities: the guide's
// inter-partition secondary index pattern, and index entities kept apart
// from the entities (options 1 and 3).
//
// # Queued mode (InterOptions.Queue set)
//
// A write first enqueues a maintenance request hidden for Delay (the safety
// net), then writes the entity, then enqueues a request visible at once. A
// worker ([archive.Worker] with the Inter as its handler, or a Mux it is
// registered on) runs [Inter.Sync] for each request. A writer that crashes
// after the first step leaves at worst a request that syncs an unchanged
// entity, and one that crashes after writing leaves the safety net, which
// syncs the new version once Delay has passed.
//
// A write can also reach the service after its safety net ran: the writer
// gave up waiting (a timeout, a lost connection) while its request was
// still on its way, in a retransmitting TCP stack, a proxy or the
// service's front end, and it reports an error without sending the second
// request. Bounding the write on the client cannot prevent that: a
// deadline stops the client waiting and sending, not a request already
// sent. So the safety net checks the version it guards instead of trusting
// time:
//
//   - Every write is conditional on the version it replaces: Update on the
//     caller's ETag, Put and Delete on the ETag they read just before (and
//     they read again and retry when another writer got in between). The
//     safety net carries that version ([WriteGuard]).
//   - When it runs, the safety net first fences the version: a Merge of no
//     properties conditional on it. If the entity is still at that
//     version, the Merge gives it a new ETag, and the write, conditional
//     on the old ETag, fails with 412 whenever it arrives. If the entity
//     has changed, the write has been applied or can never be (ETags do
//     not recur). Either way the write can no longer change the entity
//     after the fence, and the Sync that follows sees its final effect.
//     The fence costs one transaction; when the write did not land it
//     also changes the entity's ETag and Timestamp (not its properties),
//     which a concurrent Update made with that ETag then sees as a
//     conflict, as it would have seen the write.
//   - An insert (no version yet) cannot be fenced: only the entity's
//     existence makes an insert fail, and Table storage has no condition
//     on absence that a writer could invalidate. So while the new entity
//     is missing, the safety net of an insert syncs and then looks again,
//     with doubling waits, until it finds the entity (and syncs it) or
//     until Delay + InsertHorizon have passed. The writer gives its write
//     at most Delay from before it sends the safety net, so no try of the
//     insert is signed after the safety net became visible, and Azure refuses a Shared Key request that
//     arrives more than 15 minutes after it was signed;
//     [DefaultInsertHorizon] covers that with 5 minutes for clock skew.
//     With other credentials the service documents no such limit: an
//     insert that arrives later still leaves the entity unindexed until it
//     is written again or Sync runs.
//
// Every write that reaches the service is therefore followed by a Sync
// that sees it, and the indexes never stay behind the entity once the
// queue is drained. A hazard remains that belongs to Table storage
// itself, not to the index: an insert that arrives after a later delete
// of the same entity re-creates it (no condition can stop it). A write
// whose answer was lost, and whose SDK retry met the change it may have
// made, reports an error matching tablekit.ErrOutcomeUnknown (Delete
// reports success: the entity is gone either way); its safety net brings
// the indexes up to date whatever happened.
//
// # Direct mode (InterOptions.Queue nil)
//
// A write writes the entity and then runs Sync itself. This is best effort,
// not atomic: if Sync fails or the process dies in between, the entity is
// stored but its index entries are stale until the next write of the entity
// or an explicit Sync.
//
// # Sync and the sync record
//
// Sync is idempotent and safe to run concurrently for one entity. It reads
// the entity and its sync record (in the State table), which lists every
// index entry that may exist for the entity: it first adds the entries it
// is about to create to the record (conditional on the record's ETag), then
// writes the entries of the current version (copies: insert-or-replace; ids:
// add to list), deletes the others the record lists (delete-if-exists;
// remove from list), then records the entity's ETag as synced with exactly
// the current entries, and checks that the entity did not change meanwhile;
// a lost race starts the pass again, and removes the entries it created
// that the entity no longer has. An entry therefore exists without being
// in the record only while the Sync that created it runs (a Sync that read
// an older version and lost the race to a newer one), and [Inter.CaughtUp]
// compares the record with the entity. A pass that may have created
// entries and then fails (no answer,
// a lost answer, throttling, a server error) is made again within the same
// Sync (InterOptions.Retry): a newer Sync may have removed those entries
// meanwhile and recorded the entity without them, and only this Sync knows
// that it created them; the next pass removes them if the entity no longer
// has their values.
//
// What Sync cannot cover: an entry write of a Sync that reaches the service
// late, after the Sync gave up on it (a request delayed in the network, as
// above) and a newer Sync removed that entry, or a worker that dies
// between creating an entry and finishing its pass while a newer Sync of
// the entity ran. No condition can fence a write to another partition or
// table, so the entry then stays until the entity is written again (or
// Sync is run after the entity changed).
//
// An Inter is safe for concurrent use.
type Inter[T any] struct {
	table    *tablekit.Table[T]
	raw      *tablekit.Table[tablekit.Entity]
	state    *tablekit.Table[tablekit.Entity]
	indexes  []interIndex[T]
	byName   map[string]int
	queue    *archive.Client
	kind     string
	delay    time.Duration
	horizon  time.Duration
	retry    tablekit.RetryPolicy
	reserved []string // PartitionKey prefixes entities must not have
}

type interIndex[T any] struct {
	InterIndex[T]
	copies *tablekit.Table[tablekit.Entity]
}

// NewInter returns an Inter over the entities of table with the given
// indexes. T must not have client-side encrypted fields.
func NewInter[T any](table *tablekit.Table[T], indexes []InterIndex[T], opts *InterOptions) (*Inter[T], error) {
	if table == nil {
		return nil, invalid("index.NewInter", "table is nil")
	}
	if err := probe[T](); err != nil {
		return nil, err
	}
	o := InterOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Delay < 0 || o.InsertHorizon < 0 {
		return nil, &tablekit.ValidationError{Op: "index.NewInter", Detail: "Delay and InsertHorizon must not be negative", Err: tablekit.ErrInvalidInput}
	}
	ix := &Inter[T]{table: table, byName: make(map[string]int), queue: o.Queue, kind: o.Kind, delay: o.Delay, horizon: cmp.Or(o.InsertHorizon, DefaultInsertHorizon)}
	var err error
	if ix.retry, err = retryPolicy("index.NewInter", o.Retry); err != nil {
		return nil, err
	}
	if ix.kind == "" {
		ix.kind = DefaultKind
	}
	if err := checkName("index.NewInter Kind", ix.kind); err != nil {
		return nil, err
	}
	if ix.delay == 0 {
		ix.delay = DefaultDelay
	}
	if ix.raw, err = tablekit.NewTable[tablekit.Entity](table.Client(), &tablekit.TableOptions{Name: table.Name(), Cosmos: table.Cosmos()}); err != nil {
		return nil, err
	}
	stateClient := o.State
	if stateClient == nil {
		stateClient = table.Client()
		p, _ := keys.Compound(StatePartitionPrefix)
		ix.reserved = append(ix.reserved, p)
	}
	if ix.state, err = tablekit.NewTable[tablekit.Entity](stateClient, &tablekit.TableOptions{Cosmos: table.Cosmos()}); err != nil {
		return nil, err
	}
	if len(indexes) == 0 {
		return nil, invalid("index.NewInter", "no indexes")
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
		ii := interIndex[T]{InterIndex: idx}
		if idx.List != nil {
			if idx.Table != nil || idx.Properties != nil {
				return nil, invalid(what, fmt.Sprintf("index %q: a List index holds ids, not copies: Table and Properties do not apply", idx.Name))
			}
		} else {
			for _, p := range idx.Properties {
				if p == "" || p == PrimaryPartitionKeyProperty || p == PrimaryRowKeyProperty || p == PrimaryETagProperty || p == "PartitionKey" || p == "RowKey" || p == "Timestamp" {
					return nil, invalid(what, fmt.Sprintf("index %q: Properties lists %q, which is not a projectable property", idx.Name, p))
				}
			}
			client := idx.Table
			if client == nil {
				client = table.Client()
				p, _ := keys.Compound(idx.Name)
				ix.reserved = append(ix.reserved, p)
			}
			if ii.copies, err = tablekit.NewTable[tablekit.Entity](client, &tablekit.TableOptions{Cosmos: table.Cosmos()}); err != nil {
				return nil, err
			}
		}
		ix.byName[idx.Name] = i
		ix.indexes = append(ix.indexes, ii)
	}
	return ix, nil
}

// probe refuses entity types the index copies cannot be made of.
func probe[T any]() error {
	if _, err := tablekit.EncodeEntity(*new(T)); err != nil {
		return fmt.Errorf("index: cannot index %T: %w", *new(T), err)
	}
	return nil
}

// Kind returns the message kind of the Inter's maintenance requests.
func (ix *Inter[T]) Kind() string { return ix.kind }

// Register registers the Inter's maintenance handler on mux, for its Kind.
func (ix *Inter[T]) Register(mux *archive.Mux) error {
	return archive.HandleFunc(mux, ix.kind, func(ctx context.Context, req SyncRequest) error {
		return ix.handle(ctx, req)
	})
}

// Handle runs the maintenance request m: it makes the Inter an
// [archive.Handler] for a queue of its own. Messages of another kind fail
// permanently.
func (ix *Inter[T]) Handle(ctx context.Context, m *archive.Message) error {
	if m.Kind != ix.kind {
		return archive.Permanent(invalid("index.Inter", fmt.Sprintf("message %s has kind %q, want %q", m.ID, m.Kind, ix.kind)))
	}
	var req SyncRequest
	if err := m.Decode(&req); err != nil {
		return err
	}
	return ix.handle(ctx, req)
}

func (ix *Inter[T]) handle(ctx context.Context, req SyncRequest) error {
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

func (ix *Inter[T]) checkID(id ID) error {
	if id.PartitionKey == "" || id.RowKey == "" {
		return &tablekit.ValidationError{Entity: id.String(), Detail: "an indexed entity needs a non-empty PartitionKey and RowKey", Err: tablekit.ErrInvalidKey}
	}
	for _, p := range ix.reserved {
		if id.PartitionKey == p || strings.HasPrefix(id.PartitionKey, p+string(keys.Separator)) {
			return &tablekit.ValidationError{Entity: id.String(), Property: "PartitionKey", Detail: fmt.Sprintf("the PartitionKey is in the key range %q the index keeps in the same table", p), Err: tablekit.ErrInvalidKey}
		}
	}
	return nil
}

// entry is one index entry of an entity: index name and value.
type entry struct {
	index string
	value string
}

// entriesOf returns v's index entries, checking that their keys are valid.
func (ix *Inter[T]) entriesOf(id ID, v T) ([]entry, error) {
	var out []entry
	for i := range ix.indexes {
		val := ix.indexes[i].Key(v)
		if val == "" {
			continue
		}
		e := entry{ix.indexes[i].Name, val}
		if _, _, err := ix.entryLocation(i, e, id); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// partitionOf returns the index partition (or list partition) of index i
// for the entity partition pk.
func (ix *Inter[T]) partitionOf(i int, pk string) (string, error) {
	idx := &ix.indexes[i]
	if idx.Global {
		return compound("index "+idx.Name, "PartitionKey", idx.Name)
	}
	if pk == "" {
		return "", invalid("index "+idx.Name, "the index is per partition: name the entities' PartitionKey")
	}
	return compound("index "+idx.Name, "PartitionKey", idx.Name, pk)
}

// entryLocation returns the keys of a copy entry.
func (ix *Inter[T]) entryLocation(i int, e entry, id ID) (pk, rk string, err error) {
	idx := &ix.indexes[i]
	what := fmt.Sprintf("index %s entry %q of %s", idx.Name, e.value, id)
	if idx.List != nil {
		_, err = compound(what, "value", e.value)
		return "", "", err
	}
	if pk, err = ix.partitionOf(i, id.PartitionKey); err != nil {
		return "", "", err
	}
	if idx.Global {
		rk, err = compound(what, "RowKey", e.value, id.PartitionKey, id.RowKey)
	} else {
		rk, err = compound(what, "RowKey", e.value, id.RowKey)
	}
	return pk, rk, err
}

func (ix *Inter[T]) listKey(i int, pk, value string) ListKey {
	k := ListKey{Index: ix.indexes[i].Name, Value: value}
	if !ix.indexes[i].Global {
		k.Partition = pk
	}
	return k
}

// prepare checks v and returns its id.
func (ix *Inter[T]) prepare(v T) (ID, error) {
	e, err := tablekit.EncodeEntity(v)
	if err != nil {
		return ID{}, err
	}
	id := ID{e.PartitionKey, e.RowKey}
	if err := ix.checkID(id); err != nil {
		return id, err
	}
	_, err = ix.entriesOf(id, v)
	return id, err
}

// Put inserts v or replaces the stored entity, and has its indexes brought
// up to date: in queued mode by the worker, soon after; in direct mode
// before it returns (cost: 1 plus a Sync). In queued mode the write is
// conditional on the version Put read (see [Inter]), and a concurrent
// write in between makes Put read again and retry (InterOptions.Retry);
// cost: 4 transactions (read, 2 queue messages, the write).
func (ix *Inter[T]) Put(ctx context.Context, v T) error {
	id, err := ix.prepare(v)
	if err != nil {
		return err
	}
	if ix.queue == nil {
		return ix.direct(ctx, id, func(ctx context.Context) error {
			_, err := ix.table.Upsert(ctx, v, tablekit.Replace)
			return err
		})
	}
	return ix.guarded(ctx, id, ix.storedVersion, true, false, func(ctx context.Context, pre azcore.ETag) error {
		var err error
		if pre == "" {
			_, err = ix.table.Insert(ctx, v)
		} else {
			_, err = ix.table.Update(ctx, v, tablekit.Replace, pre)
		}
		return err
	})
}

// Update replaces the stored entity with v if its ETag is still etag (as
// read with Get), as Table.Update does, and has the indexes brought up to
// date like Put. It fails with an error matching
// tablekit.ErrPreconditionFailed when the entity changed since. With
// azcore.ETagAny it replaces whatever version is stored (an error matching
// tablekit.ErrNotFound if there is none); in queued mode it then reads the
// version first and retries like Put. Cost in queued mode: 3 transactions
// (4 with ETagAny).
func (ix *Inter[T]) Update(ctx context.Context, v T, etag azcore.ETag) error {
	id, err := ix.prepare(v)
	if err != nil {
		return err
	}
	if etag == "" {
		return invalid(id.String(), "Update needs the ETag read with the entity")
	}
	if ix.queue == nil {
		return ix.direct(ctx, id, func(ctx context.Context) error {
			_, err := ix.table.Update(ctx, v, tablekit.Replace, etag)
			return err
		})
	}
	version := func(context.Context, ID) (azcore.ETag, error) { return etag, nil }
	if etag == azcore.ETagAny {
		version = func(ctx context.Context, id ID) (azcore.ETag, error) {
			pre, err := ix.storedVersion(ctx, id)
			if err == nil && pre == "" {
				err = notFound("index.Update", id.String())
			}
			return pre, err
		}
	}
	return ix.guarded(ctx, id, version, etag == azcore.ETagAny, false, func(ctx context.Context, pre azcore.ETag) error {
		_, err := ix.table.Update(ctx, v, tablekit.Replace, pre)
		return err
	})
}

// Delete deletes the entity pk/rk if it exists and has its index entries
// removed, like Put. Deleting a missing entity is not an error. Cost in
// queued mode: 4 transactions (read, 2 queue messages, the delete); 2 when
// the entity is missing (read, and a request that removes any entries
// left).
func (ix *Inter[T]) Delete(ctx context.Context, pk, rk string) error {
	id := ID{pk, rk}
	if err := ix.checkID(id); err != nil {
		return err
	}
	if ix.queue == nil {
		return ix.direct(ctx, id, func(ctx context.Context) error {
			_, err := ix.table.DeleteIfExists(ctx, pk, rk)
			return err
		})
	}
	return ix.guarded(ctx, id, ix.storedVersion, true, true, func(ctx context.Context, pre azcore.ETag) error {
		err := ix.table.Delete(ctx, pk, rk, pre)
		var se *tablekit.ServiceError
		if errors.Is(err, tablekit.ErrNotFound) || (errors.As(err, &se) && se.StatusCode == http.StatusNotFound) {
			// Deleted meanwhile, or by a try whose answer was lost (the
			// error then matches ErrOutcomeUnknown): gone either way.
			return nil
		}
		return err
	})
}

// Get reads the entity pk/rk itself. Cost: 1 transaction.
func (ix *Inter[T]) Get(ctx context.Context, pk, rk string) (T, error) {
	return ix.table.Get(ctx, pk, rk, nil)
}

// current is the stored version of an entity, as Sync sees it.
type current[T any] struct {
	etag    azcore.ETag
	entity  tablekit.Entity
	value   T
	entries []entry
}

func (ix *Inter[T]) readCurrent(ctx context.Context, id ID) (*current[T], error) {
	e, err := ix.raw.Get(ctx, id.PartitionKey, id.RowKey, nil)
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v, err := tablekit.Decode[T](e)
	if err != nil {
		return nil, err
	}
	cur := &current[T]{etag: e.ETag, entity: e, value: v}
	if cur.entries, err = ix.entriesOf(id, v); err != nil {
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

func (ix *Inter[T]) statePK(pk string) (string, error) {
	return compound("sync record of "+pk, "PartitionKey", StatePartitionPrefix, ix.kind, pk)
}

func (ix *Inter[T]) readRecord(ctx context.Context, spk, rk string) (*record, error) {
	e, err := ix.state.Get(ctx, spk, rk, nil)
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r := &record{etag: e.ETag}
	r.synced, _ = e.Properties[SyncedProperty].(string)
	if s, _ := e.Properties[EntriesProperty].(string); s != "" {
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
func (ix *Inter[T]) writeRecord(ctx context.Context, spk, rk string, synced string, entries []entry, etag azcore.ETag) (azcore.ETag, error) {
	pairs := make([][2]string, len(entries))
	for i, e := range entries {
		pairs[i] = [2]string{e.index, e.value}
	}
	data, _ := json.Marshal(pairs)
	e := tablekit.Entity{PartitionKey: spk, RowKey: rk, Properties: map[string]any{SyncedProperty: synced, EntriesProperty: string(data)}}
	if etag == "" {
		return ix.state.Insert(ctx, e)
	}
	return ix.state.Update(ctx, e, tablekit.Replace, etag)
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

// Sync brings the index entries of the entity pk/rk up to date with its
// stored version (or removes them when it is gone). It is what the worker
// runs for each maintenance request; call it directly to repair an entity
// after a failure in direct mode. It is idempotent and safe to run
// concurrently. Cost when the indexes are already up to date: 2
// transactions; else about 5 plus one write per entry to create or delete
// (2 per id list change).
func (ix *Inter[T]) Sync(ctx context.Context, pk, rk string) (err error) {
	ctx, end := tablekit.StartSpan(ctx, ix.table.Tracer(), "Inter.Sync",
		tracing.Attribute{Key: "tablekit.table", Value: ix.table.Name()},
		tracing.Attribute{Key: "tablekit.partition_key", Value: pk},
		tracing.Attribute{Key: "tablekit.row_key", Value: rk})
	defer func() { end(err) }()
	id := ID{pk, rk}
	if err := ix.checkID(id); err != nil {
		return err
	}
	spk, err := ix.statePK(pk)
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
	var ce *ConflictError
	if errors.As(err, &ce) && transient(ce.Err) {
		return fmt.Errorf("index: %s: the sync failed on each of %d attempts: %w", id, ce.Attempts, ce.Err)
	}
	return err
}

// syncPass makes one pass of Sync; retry says a concurrent writer got in
// the way and another pass is needed. own accumulates the entries this
// Sync created.
func (ix *Inter[T]) syncPass(ctx context.Context, id ID, spk string, own *[]entry) (retry bool, err error) {
	pk, rk := id.PartitionKey, id.RowKey
	cur, err := ix.readCurrent(ctx, id)
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
	now, err := ix.raw.Get(ctx, pk, rk, &tablekit.GetOptions{Select: []string{"PartitionKey"}})
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
func (ix *Inter[T]) putEntry(ctx context.Context, id ID, e entry, cur *current[T]) error {
	i, ok := ix.byName[e.index]
	if !ok {
		return nil
	}
	idx := &ix.indexes[i]
	if idx.List != nil {
		return idx.List.Add(ctx, ix.listKey(i, id.PartitionKey, e.value), id)
	}
	pk, rk, err := ix.entryLocation(i, e, id)
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
	c.Properties[PrimaryPartitionKeyProperty] = id.PartitionKey
	c.Properties[PrimaryRowKeyProperty] = id.RowKey
	c.Properties[PrimaryETagProperty] = string(cur.etag)
	_, err = idx.copies.Upsert(ctx, c, tablekit.Replace)
	return err
}

// removeEntry deletes one index entry of the entity, if it exists.
func (ix *Inter[T]) removeEntry(ctx context.Context, id ID, e entry) error {
	i, ok := ix.byName[e.index]
	if !ok {
		return nil // an index no longer configured
	}
	idx := &ix.indexes[i]
	if idx.List != nil {
		return idx.List.Remove(ctx, ix.listKey(i, id.PartitionKey, e.value), id)
	}
	pk, rk, err := ix.entryLocation(i, e, id)
	if err != nil {
		return err
	}
	_, err = idx.copies.DeleteIfExists(ctx, pk, rk)
	return err
}

// CaughtUp reports whether the indexes of the entity pk/rk reflect its
// stored version: its sync record names the entity's current ETag (or,
// for a missing entity, there is no record left). Cost: 2 transactions.
func (ix *Inter[T]) CaughtUp(ctx context.Context, pk, rk string) (bool, error) {
	id := ID{pk, rk}
	if err := ix.checkID(id); err != nil {
		return false, err
	}
	spk, err := ix.statePK(pk)
	if err != nil {
		return false, err
	}
	e, err := ix.raw.Get(ctx, pk, rk, &tablekit.GetOptions{Select: []string{"PartitionKey"}})
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

func (ix *Inter[T]) lookupIndex(name string, list bool) (int, error) {
	i, ok := ix.byName[name]
	if !ok {
		return 0, invalid("index.Inter", fmt.Sprintf("no index %q", name))
	}
	if list != (ix.indexes[i].List != nil) {
		if list {
			return 0, invalid("index.Inter", fmt.Sprintf("index %q is not a List index", name))
		}
		return 0, invalid("index.Inter", fmt.Sprintf("index %q is a List index: use IDs or By", name))
	}
	return i, nil
}

// decodeInterCopy turns an inter-partition copy back into the entity.
func decodeInterCopy[T any](e tablekit.Entity) (T, error) {
	pk, _ := e.Properties[PrimaryPartitionKeyProperty].(string)
	rk, _ := e.Properties[PrimaryRowKeyProperty].(string)
	e.PartitionKey, e.RowKey, e.ETag = pk, rk, ""
	delete(e.Properties, PrimaryPartitionKeyProperty)
	delete(e.Properties, PrimaryRowKeyProperty)
	delete(e.Properties, PrimaryETagProperty)
	return tablekit.Decode[T](e)
}

// By returns the entities with value in index, in index order: those of
// entity partition pk, or of all partitions for a Global index (pk is
// then ignored). Results may lag behind recent writes. Cost: 1 transaction
// per 1,000 results; for a List index 1 plus 1 point read per entity.
func (ix *Inter[T]) By(ctx context.Context, pk, index, value string) iter.Seq2[T, error] {
	i, ok := ix.byName[index]
	if !ok {
		return errSeq[T](invalid("index.Inter", fmt.Sprintf("no index %q", index)))
	}
	if value == "" {
		return func(func(T, error) bool) {}
	}
	if ix.indexes[i].List != nil {
		return func(yield func(T, error) bool) {
			ids, err := ix.IDs(ctx, pk, index, value)
			if err != nil {
				yield(*new(T), err)
				return
			}
			for _, id := range ids {
				v, err := ix.table.Get(ctx, id.PartitionKey, id.RowKey, nil)
				if errors.Is(err, tablekit.ErrNotFound) {
					continue
				}
				if !yield(v, err) || err != nil {
					return
				}
			}
		}
	}
	lo, hi, err := keys.TupleRange(value)
	if err != nil {
		return errSeq[T](keyError("index "+index, "value", err))
	}
	return ix.scan(ctx, i, pk, lo, hi)
}

// Find returns the first entity with value in index (see By), or an error
// matching tablekit.ErrNotFound.
func (ix *Inter[T]) Find(ctx context.Context, pk, index, value string) (T, error) {
	for v, err := range ix.By(ctx, pk, index, value) {
		return v, err
	}
	return *new(T), notFound("index.Find", fmt.Sprintf("no entity with %s=%q", index, value))
}

// Range returns the entities whose value in index is in [lo, hi) (hi ""
// means no upper bound), in index order; see By for pk. Copy indexes only.
func (ix *Inter[T]) Range(ctx context.Context, pk, index, lo, hi string) iter.Seq2[T, error] {
	i, err := ix.lookupIndex(index, false)
	if err != nil {
		return errSeq[T](err)
	}
	lk, err := compound("index "+index, "lo", lo)
	if err != nil {
		return errSeq[T](err)
	}
	var hk string
	if hi != "" {
		if hk, err = compound("index "+index, "hi", hi); err != nil {
			return errSeq[T](err)
		}
		if hk <= lk {
			return func(func(T, error) bool) {}
		}
	}
	return ix.scan(ctx, i, pk, lk, hk)
}

// Prefix returns the entities whose value in index starts with prefix, in
// index order; see By for pk. Copy indexes only.
func (ix *Inter[T]) Prefix(ctx context.Context, pk, index, prefix string) iter.Seq2[T, error] {
	i, err := ix.lookupIndex(index, false)
	if err != nil {
		return errSeq[T](err)
	}
	lo, hi, err := keys.ComponentPrefixRange(nil, prefix)
	if err != nil {
		return errSeq[T](keyError("index "+index, "prefix", err))
	}
	return ix.scan(ctx, i, pk, lo, hi)
}

func (ix *Inter[T]) scan(ctx context.Context, i int, pk, lo, hi string) iter.Seq2[T, error] {
	ipk, err := ix.partitionOf(i, pk)
	if err != nil {
		return errSeq[T](err)
	}
	copies := ix.indexes[i].copies
	return func(yield func(T, error) bool) {
		for e, err := range copies.Query(ctx, tablekit.RowKeyRange(ipk, lo, hi), keyOrder()) {
			if err != nil {
				yield(*new(T), err)
				return
			}
			if !yield(decodeInterCopy[T](e)) {
				return
			}
		}
	}
}

// IDs returns the ids in the list of value in List index index, for entity
// partition pk (ignored for a Global index). Cost: 1 transaction.
func (ix *Inter[T]) IDs(ctx context.Context, pk, index, value string) ([]ID, error) {
	i, err := ix.lookupIndex(index, true)
	if err != nil {
		return nil, err
	}
	if !ix.indexes[i].Global && pk == "" {
		return nil, invalid("index "+index, "the index is per partition: name the entities' PartitionKey")
	}
	if value == "" {
		return nil, nil
	}
	return ix.indexes[i].List.IDs(ctx, ix.listKey(i, pk, value))
}
