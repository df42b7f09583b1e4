package feed

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/core"
	"github.com/tablekit/tablekit/stream"
)

// The rows of the feed's table.
const (
	dirPrefix   = "dir~" // dir~NN: the directory rows of shard NN
	cpPrefix    = "cp~"  // cp~<subscription>: the subscription's checkpoints
	propStream  = "Stream"
	propPrefix  = "Prefix"
	propDirty   = "Dirty"
	propTarget  = "Target"
	propVersion = "Version"
)

// Options configure a Feed. The zero value (or nil) means the defaults.
type Options struct {
	// Shards is how many partitions the directory of streams is spread
	// over (1-100, default 8): each dirty mark is a write to one of them,
	// and a relay round reads each of them once. Every Feed and relay of
	// one feed table must use the same value.
	Shards int
}

// Feed is the change feed of the event streams of a stream.Store: it
// appends through the Store after marking the stream dirty in its
// directory (Append), lists the streams it has seen (Streams), and is what
// a Relay reads. Make one with New; it is safe for concurrent use and
// keeps no state between calls, so any number of Feeds, in any number of
// processes, may append to the same streams. The zero Feed refuses every
// call with an error matching tablekit.ErrInvalidInput.
type Feed struct {
	store  *stream.Store
	source string // the streams' table, "<account>/<table>" (Change.Source)
	t      *tablekit.Table[tablekit.Entity]
	shards int
	retry  tablekit.RetryPolicy
}

// New returns the Feed of the streams of store, keeping its directory and
// checkpoints in t (the entity view of a table of the feed's own, which
// may be the streams' table if no stream uses the partitions "dir~..." and
// "cp~..."). A dirty mark that loses a race with another is tried again as
// t's retry policy says (tablekit.TableOptions.Retry). New sends nothing.
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
	source := core.AccountOf(st) + "/" + st.Name()
	return &Feed{store: store, source: source, t: t, shards: o.Shards, retry: core.TableRetry(t)}, nil
}

func (f *Feed) ok(op string) error {
	if f == nil || f.store == nil {
		return invalid(op, "", "zero Feed: make one with feed.New")
	}
	return nil
}

// Append marks stream id dirty in the feed's directory, then appends the
// events as stream.Store.Append does (same arguments, results and
// errors). Bad input is refused before anything is sent (Store.Check). If
// the mark fails, nothing is appended and its error is returned; if the
// append fails after the mark, the mark is harmless (a relay reads the
// stream once more, see the package doc).
//
// The mark costs 1 read of the stream's directory row, + 1 write unless
// the row is dirty already with a target at or past this append's last
// version (see the package doc).
//
// expectedVersion stream.AnyVersion appends at the stream's end: Append
// reads its version (1 query), marks up to the version it appends at, and
// after a conflict marks and appends again at the version the conflict
// read, for up to the table's RetryPolicy attempts. This is how plain
// Table writes join the feed (see "Table writes" in the package doc).
func (f *Feed) Append(ctx context.Context, id stream.ID, expectedVersion int64, events []stream.Event, extra ...tablekit.Action[tablekit.Entity]) (stream.Result, error) {
	const op = "Feed.Append"
	if err := f.ok(op); err != nil {
		return stream.Result{}, err
	}
	if err := f.store.Check(id, expectedVersion, events, extra...); err != nil {
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
	var last error
	for range core.Attempts(ctx, f.retry) {
		if err := f.mark(ctx, id, at+int64(len(events))); err != nil {
			return stream.Result{}, fmt.Errorf("feed: %s: dirty mark of stream %s, not appended: %w", op, name(id), err)
		}
		r, err := f.store.Append(ctx, id, at, events, extra...)
		var ce *stream.ConflictError
		if expectedVersion != stream.AnyVersion || !errors.As(err, &ce) || ce.Current < 0 {
			return r, err
		}
		last, at = err, ce.Current // another append came first: append after it
	}
	if err := ctx.Err(); err != nil {
		return stream.Result{}, err
	}
	return stream.Result{}, fmt.Errorf("feed: %s: stream %s: not appended: other appends came first in each of %d tries; the last: %w", op, name(id), f.retry.MaxAttempts, last)
}

// mark makes stream id's directory row dirty with a target of at least
// target: read it, and write it conditionally on what was read unless it
// says so already. The target only grows while the row is dirty, and only
// a relay that delivered the stream up to the target clears it.
func (f *Feed) mark(ctx context.Context, id stream.ID, target int64) error {
	pk, rk := f.dirKey(id)
	var last error
	for range core.Attempts(ctx, f.retry) {
		e, err := f.t.Get(ctx, pk, rk)
		row := tablekit.Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{
			propStream: id.PartitionKey, propPrefix: id.Prefix, propDirty: true, propTarget: target}}
		switch {
		case errors.Is(err, tablekit.ErrNotFound):
			_, err = f.t.Insert(ctx, row)
			if errors.Is(err, tablekit.ErrAlreadyExists) || errors.Is(err, tablekit.ErrOutcomeUnknown) {
				last = err
				continue // another mark came first, or this one's answer was lost: read again
			}
			return err
		case err != nil:
			return err
		}
		dirty, _ := e.Properties[propDirty].(bool)
		t, _ := e.Properties[propTarget].(int64)
		if dirty && t >= target {
			return nil // a relay clears it only once the stream is past target
		}
		_, err = f.t.Update(ctx, row, e.ETag)
		if errors.Is(err, tablekit.ErrPreconditionFailed) || errors.Is(err, tablekit.ErrNotFound) || errors.Is(err, tablekit.ErrOutcomeUnknown) {
			last = err
			continue // another mark came first, or this one's answer was lost: read again
		}
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("gave up after %d tries; the last: %w", f.retry.MaxAttempts, last)
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
			for e, err := range f.t.Query(ctx, tablekit.Where("PartitionKey eq ?", shardPK(s)), nil) {
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

func shardPK(s int) string { return fmt.Sprintf("%s%02d", dirPrefix, s) }

// streamKey is the RowKey of a stream in the directory and in
// checkpoints: "s~", its partition key, "~", its prefix (which holds no
// "~", so the last "~" ends the partition key). It never starts with
// coord.ReservedPrefix, which shares the checkpoint partitions.
func streamKey(id stream.ID) string { return "s~" + id.PartitionKey + "~" + id.Prefix }

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
