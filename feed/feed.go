package feed

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/stream"
)

// The rows of the feed's table.
const (
	dirPrefix     = "dir~" // dir~NN: the directory rows and pending marks of shard NN
	cpPrefix      = "cp~"  // cp~<subscription>: the subscription's checkpoints
	pendingPrefix = "p~"   // the RowKeys of pending marks: p~<hash>~<target>~<stamp>
	streamPrefix  = "s~"   // the RowKeys of directory rows (and checkpoints): s~<partition>~<prefix>
	propStream    = "Stream"
	propPrefix    = "Prefix"
	propDirty     = "Dirty"  // of a directory row marked by an earlier version of this package
	propTarget    = "Target" // a mark's: the first version of its append (a dirty directory row's: the last)
	propLast      = "Last"   // a mark's: the last version of its append
	propVersion   = "Version"
)

// Options configure a Feed. The zero value (or nil) means the defaults.
type Options struct {
	// Shards is how many partitions the directory of streams is spread
	// over (1-100, default 8): each mark is a write to one of them, and
	// a relay round reads each of them once. Every Feed and relay of one
	// feed table must use the same value.
	Shards int
}

// Feed is the change feed of the event streams of a stream.Store: it
// appends through the Store after marking the stream in its directory
// (Append), lists the streams it has seen (Streams), and is what a Relay
// reads. Make one with New; it is safe for concurrent use, and keeps no
// state between calls but a cache of the directory rows it wrote, so any
// number of Feeds, in any number of processes, may append to the same
// streams. The zero Feed refuses every call with an error matching
// tablekit.ErrInvalidInput.
type Feed struct {
	store  *stream.Store
	source string // the streams' table, "<account>/<table>" (Change.Source)
	t      *tablekit.Table[tablekit.Entity]
	shards int
	retry  tablekit.RetryPolicy
	listed *listed
}

// listed is the set of directory rows a Feed wrote (by RowKey): an append
// to one of those streams leaves its directory row out of its mark. It
// holds at most listedMax rows, and forgets them all when full.
type listed struct {
	mu   sync.Mutex
	rows map[string]struct{}
}

const listedMax = 4096

func (l *listed) has(rk string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.rows[rk]
	return ok
}

func (l *listed) add(rk string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.rows) >= listedMax {
		clear(l.rows)
	}
	l.rows[rk] = struct{}{}
}

// New returns the Feed of the streams of store, keeping its directory and
// checkpoints in t (the entity view of a table of the feed's own, which
// may be the streams' table if no stream uses the partitions "dir~..." and
// "cp~..."). A mark whose answer was lost is tried again as t's retry
// policy says (tablekit.TableOptions.Retry). New sends nothing.
func New(store *stream.Store, t *tablekit.Table[tablekit.Entity], opts *Options) (*Feed, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case store == nil:
		return nil, invalid("New", "store", "nil stream.Store")
	case t == nil:
		return nil, invalid("New", "t", "nil table")
	case o.Shards < 0 || o.Shards > 100:
		return nil, invalid("New", "Shards", fmt.Sprintf("%d shards: want 1-100 (0: 8)", o.Shards))
	}
	if o.Shards == 0 {
		o.Shards = 8
	}
	st := store.Table()
	if st == nil {
		return nil, invalid("New", "store", "zero stream.Store (use stream.NewStore)")
	}
	source := st.Account().Name() + "/" + st.Name()
	return &Feed{store: store, source: source, t: t, shards: o.Shards, retry: t.Retry(), listed: &listed{rows: map[string]struct{}{}}}, nil
}

func (f *Feed) ok(op string) error {
	if f == nil || f.store == nil {
		return invalid(op, "", "zero Feed: make one with feed.New")
	}
	return nil
}

// Append marks stream id in the feed's directory, then appends the events
// as stream.Store.Append does (same arguments, results and errors). Bad
// input is refused before anything is sent (Store.Check, and the keys of
// the stream's directory row). If the mark fails, nothing is appended and
// its error is returned.
//
// The mark is a pending row of its own (see "Marks" in the package doc):
// 1 write, no read (an EGT with the stream's directory row the first time
// this Feed appends to the stream). When the append ends in an outcome
// that appended nothing (a *stream.ConflictError, a Replayed result, a
// refused extra action, any refusal), Append deletes its mark (1 write);
// after an unknown outcome (tablekit.ErrOutcomeUnknown), or when ctx
// ends, the mark stays until a relay round finds the stream past it.
//
// expectedVersion stream.AnyVersion appends at the stream's end: Append
// reads its version (1 query), marks and appends at it, and after a
// conflict marks and appends again at the version the conflict read (the
// new mark and the delete of the last one in 1 EGT), for up to the table's
// RetryPolicy attempts. This is how plain Table writes join the feed (see
// "Table writes" in the package doc).
func (f *Feed) Append(ctx context.Context, id stream.ID, expectedVersion int64, events []stream.Event, extra ...tablekit.Action[tablekit.Entity]) (stream.Result, error) {
	const op = "Feed.Append"
	if err := f.ok(op); err != nil {
		return stream.Result{}, err
	}
	err := f.store.Check(id, expectedVersion, events, extra...)
	if err == nil {
		err = f.checkKey(id)
	}
	if err != nil {
		var ve *tablekit.ValidationError
		if errors.As(err, &ve) {
			ve.Op = "feed." + op
		}
		return stream.Result{}, err
	}
	at := expectedVersion
	if at == stream.AnyVersion {
		v, err := f.store.Version(ctx, id)
		if err != nil {
			return stream.Result{}, fmt.Errorf("feed: %s: the version of stream %s, not appended: %w", op, name(id), err)
		}
		at = v
	}
	var mine string // the RowKey of this call's mark whose append conflicted: the next mark deletes it
	var last error
	for range timing.Policy(f.retry).Attempts(ctx) {
		rk, err := f.mark(ctx, id, at+1, at+int64(len(events)), mine)
		if err != nil {
			// Nothing appended: neither mark is needed (either may be there).
			f.unmark(ctx, id, mine)
			f.unmark(ctx, id, rk)
			return stream.Result{}, fmt.Errorf("feed: %s: mark of stream %s, not appended: %w", op, name(id), err)
		}
		mine = ""
		r, err := f.store.Append(ctx, id, at, events, extra...)
		var ce *stream.ConflictError
		if expectedVersion == stream.AnyVersion && errors.As(err, &ce) && ce.Current >= 0 {
			last, at, mine = err, ce.Current, rk // another append came first: append after it
			continue
		}
		if nothingAppended(ctx, r, err) {
			f.unmark(ctx, id, rk)
		}
		return r, err
	}
	if err := ctx.Err(); err != nil {
		return stream.Result{}, err
	}
	f.unmark(ctx, id, mine) // its append conflicted: nothing appended
	return stream.Result{}, fmt.Errorf("feed: %s: stream %s: not appended: other appends came first in each of %d tries; the last: %w", op, name(id), f.retry.MaxAttempts, last)
}

// checkKey refuses a stream whose directory RowKey ("s~" + partition key
// + "~" + prefix) the service would refuse: over 1 KiB (255 bytes on
// Cosmos DB for Table).
func (f *Feed) checkKey(id stream.ID) error {
	pk, rk := f.dirKey(id)
	limit := `the stream's directory RowKey, "s~" + partition key + "~" + prefix: <= 1 KiB, no / \ # ? or control characters`
	err := keys.Validate(rk)
	if err == nil && f.t.Account().Service() == tablekit.ServiceCosmosDB && len(rk) > limits.CosmosRowKeyBytes {
		limit = `the stream's directory RowKey, "s~" + partition key + "~" + prefix: <= 255 bytes on Azure Cosmos DB for Table`
		err = fmt.Errorf("RowKey of %d bytes", len(rk))
	}
	if err != nil {
		return &tablekit.ValidationError{Entity: f.t.Name() + ":" + pk + "/" + rk, Property: "id", Limit: limit, Detail: err.Error(), Err: tablekit.ErrInvalidKey}
	}
	return nil
}

// nothingAppended reports whether an append that returned r and err
// settled that it appended nothing: replayed, or refused. An unknown
// outcome, or a context that ended, settles nothing.
func nothingAppended(ctx context.Context, r stream.Result, err error) bool {
	if err == nil {
		return r.Replayed
	}
	return ctx.Err() == nil && !errors.Is(err, tablekit.ErrOutcomeUnknown) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// mark writes a pending mark of stream id with first (its Target) and
// last, the first and last versions of the append it marks, and returns its RowKey:
// 1 write, in an EGT with
// the stream's directory row when this Feed has not written it yet
// (insert or merge: a directory row keeps what else it holds), and with
// the delete of the mark prev ("" for none) when there is one. A try
// whose answer was lost is sent again (the mark is an upsert, the
// directory row a merge; a delete that finds nothing is left out).
func (f *Feed) mark(ctx context.Context, id stream.ID, first, last int64, prev string) (rk string, err error) {
	pk, drk := f.dirKey(id)
	rk = pendingKey(drk, first)
	row := tablekit.Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{
		propStream: id.PartitionKey, propPrefix: id.Prefix, propTarget: first, propLast: last}}
	acts := []tablekit.Action[tablekit.Entity]{tablekit.UpsertAction(row)}
	withDir := !f.listed.has(drk)
	if withDir {
		acts = append(acts, tablekit.MergeAction(f.dirRow(pk, drk, id), ""))
	}
	if prev != "" {
		acts = append(acts, tablekit.DeleteAction(tablekit.Entity{PartitionKey: pk, RowKey: prev}, azcore.ETagAny))
	}
	var lastErr error
	for range timing.Policy(f.retry).Attempts(ctx) {
		if len(acts) == 1 {
			_, err = f.t.Upsert(ctx, row)
		} else {
			_, err = f.t.Transaction(ctx, acts...)
		}
		var te *tablekit.TransactionError
		switch {
		case err == nil:
			if withDir {
				f.listed.add(drk)
			}
			return rk, nil
		case prev != "" && errors.As(err, &te) && te.Index == len(acts)-1 && errors.Is(err, tablekit.ErrNotFound) && !errors.Is(err, tablekit.ErrOutcomeUnknown):
			acts, prev = acts[:len(acts)-1], "" // gone already (a relay saw its stream past it): send the rest
			lastErr = err
		case errors.Is(err, tablekit.ErrOutcomeUnknown):
			lastErr = err // the answer was lost: send it again (a delete applied meanwhile is then left out)
		default:
			return rk, err
		}
	}
	if err := ctx.Err(); err != nil {
		return rk, err
	}
	return rk, fmt.Errorf("gave up after %d tries; the last: %w", f.retry.MaxAttempts, lastErr)
}

// unmark deletes stream id's mark rk ("": none), whose append appended
// nothing: 1 write, retried as the table's policy says; a mark gone
// already is done. A mark left (ctx ended, every try failed) stays until
// a relay round sees its stream past its target.
func (f *Feed) unmark(ctx context.Context, id stream.ID, rk string) {
	if rk == "" {
		return
	}
	pk, _ := f.dirKey(id)
	for range timing.Policy(f.retry).Attempts(ctx) {
		if _, err := f.t.DeleteIfExists(ctx, pk, rk); err == nil {
			return
		}
	}
}

// Streams returns every stream the feed's directory lists: each stream
// appended to through a Feed, in no particular order (1 query per shard,
// per 1,000 streams). Iteration stops at the first error.
func (f *Feed) Streams(ctx context.Context) iter.Seq2[stream.ID, error] {
	return func(yield func(stream.ID, error) bool) {
		if err := f.ok("Feed.Streams"); err != nil {
			yield(stream.ID{}, err)
			return
		}
		for s := range f.shards {
			// The directory rows, "s~...": not the pending marks, "p~...".
			for e, err := range f.t.Query(ctx, tablekit.Where("PartitionKey eq ? and RowKey ge ? and RowKey lt ?", shardPK(s), streamPrefix, "t"), nil) {
				if err != nil {
					yield(stream.ID{}, err)
					return
				}
				if !yield(streamOf(e), nil) {
					return
				}
			}
		}
	}
}

// dirKey returns the partition and RowKey of stream id's directory row.
func (f *Feed) dirKey(id stream.ID) (pk, rk string) {
	rk = streamKey(id)
	h := fnv.New32a()
	h.Write([]byte(rk))
	return shardPK(int(h.Sum32() % uint32(f.shards))), rk
}

// dirRow returns stream id's directory row, of keys pk and rk, as a mark
// merges it.
func (f *Feed) dirRow(pk, rk string, id stream.ID) tablekit.Entity {
	return tablekit.Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{propStream: id.PartitionKey, propPrefix: id.Prefix}}
}

func shardPK(s int) string { return fmt.Sprintf("%s%02d", dirPrefix, s) }

// pendingKey returns a new RowKey of a pending mark of the stream whose
// directory RowKey is drk, with target: "p~", a hash of drk (8 hex
// digits: the stream's marks sort together, and a long stream key costs
// no length), "~", the target (10 digits), "~" and a random stamp (8
// characters), so that every mark is a row of its own.
func pendingKey(drk string, target int64) string {
	h := fnv.New32a()
	h.Write([]byte(drk))
	return fmt.Sprintf("%s%08x~%010d~%s", pendingPrefix, h.Sum32(), target, rand.Text()[:8])
}

// streamKey is the RowKey of a stream in the directory and in
// checkpoints: "s~", its partition key, "~", its prefix (which holds no
// "~", so the last "~" ends the partition key). It never starts with
// coord.ReservedPrefix, which shares the checkpoint partitions.
func streamKey(id stream.ID) string { return streamPrefix + id.PartitionKey + "~" + id.Prefix }

func streamOf(e tablekit.Entity) stream.ID {
	pk, _ := e.Properties[propStream].(string)
	p, _ := e.Properties[propPrefix].(string)
	return stream.ID{PartitionKey: pk, Prefix: p}
}

func name(id stream.ID) string {
	if id.Prefix == "" {
		return fmt.Sprintf("%q", id.PartitionKey)
	}
	return fmt.Sprintf("%q", id.PartitionKey+"/"+id.Prefix)
}

func invalid(op, property, detail string) error {
	return &tablekit.ValidationError{Op: "feed." + op, Property: property, Detail: detail, Err: tablekit.ErrInvalidInput}
}
