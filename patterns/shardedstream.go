package patterns

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"sync"
	"time"

	"github.com/tablekit/tablekit/internal/core"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
)

// Against the prepend/append anti-pattern ("Avoid writing all new entities
// to the same partition"): a time-ordered stream whose every write would
// otherwise land at the end of one partition — a hot spot that caps the
// write rate — is spread over N partitions by a hash of each event's ID,
// and a time-range query reads all of them in parallel and merges the
// results back into time order.

// Event is one entry of a [Stream]: its time, an ID unique within the
// stream, and the value stored.
type Event[T any] struct {
	Time  time.Time
	ID    string
	Value T
}

// Stream is a time-ordered stream of events in one table, spread over
// shards partitions. An event's PartitionKey is the sharded key of the
// stream's name, keys.ShardedKey(bucket, shards, keys.Compound(name)): the
// bucket of the event's ID first, e.g. "3!clicks" (the keys package doc,
// Sharded keys, says why); keys.ShardedKeys gives them all. Its RowKey is
// its time (keys.Time) and its ID, so that each shard is in time order and
// a time window is one range query per shard.
//
// T is [tablekit.Entity] or a struct as for [tablekit.Table]; the stream
// sets its keys. A Stream is safe for concurrent use.
type Stream[T any] struct {
	table    *tablekit.Table[tablekit.Entity]
	name     string
	shards   int
	pks      []string
	conc     int
	isEntity bool
}

// NewStream returns the Stream called name stored in table, a property-bag
// view (tablekit.Table.AsEntities of the application's table keeps its
// client-side encryption), over shards partitions (1 to keys.MaxShards;
// changing it re-homes events, so keep it for the life of the stream). T
// is the type of the events' values. The name may be any string: it is
// stored as a compound-key component (keys.Compound).
func NewStream[T any](table *tablekit.Table[tablekit.Entity], name string, shards int) (*Stream[T], error) {
	const op = "patterns.NewStream"
	if table == nil {
		return nil, invalid(op, "nil table")
	}
	s := &Stream[T]{table: table, name: name, shards: shards}
	key, err := keys.Compound(name)
	if err != nil {
		return nil, &tablekit.ValidationError{Op: op, Entity: name, Property: "PartitionKey", Detail: err.Error(), Err: tablekit.ErrInvalidKey}
	}
	s.pks, err = keys.ShardedKeys(s.shards, key)
	if errors.Is(err, keys.ErrInvalidArgument) {
		return nil, &tablekit.ValidationError{Op: op, Property: "shards", Size: s.shards, Detail: err.Error(), Err: tablekit.ErrInvalidInput}
	}
	if err != nil {
		return nil, &tablekit.ValidationError{Op: op, Entity: name, Property: "PartitionKey", Detail: err.Error(), Err: tablekit.ErrInvalidKey}
	}
	s.conc = min(s.shards, 16)
	if reflect.TypeFor[T]() == reflect.TypeFor[tablekit.Entity]() {
		s.isEntity = true
	} else {
		var zero T
		if _, err := core.Encode(zero); err != nil {
			return nil, withOp(op, err)
		}
	}
	return s, nil
}

// usable refuses a Stream its constructor did not make.
func (s *Stream[T]) usable(op string) error {
	if s == nil || s.table == nil {
		return unusable(op, "NewStream")
	}
	return nil
}

// Keys returns the PartitionKey and RowKey of the event with time at and
// ID id.
func (s *Stream[T]) Keys(at time.Time, id string) (pk, rk string, err error) {
	const op = "patterns.Stream.Keys"
	if err := s.usable(op); err != nil {
		return "", "", err
	}
	return s.keys(op, at, id)
}

func (s *Stream[T]) keys(op string, at time.Time, id string) (pk, rk string, err error) {
	shard, err := keys.Shard(id, s.shards)
	if err != nil {
		return "", "", &tablekit.ValidationError{Op: op, Entity: s.name, Property: "ID", Detail: err.Error(), Err: tablekit.ErrInvalidInput}
	}
	var b keys.Builder
	rk, err = b.AddTime(at).Add(id).Key()
	if err != nil {
		return "", "", &tablekit.ValidationError{Op: op, Entity: s.name, Property: "RowKey", Detail: fmt.Sprintf("event %q at %v: %v", id, at, err), Err: tablekit.ErrInvalidKey}
	}
	return s.pks[shard], rk, nil
}

// Append writes events (upserting, so appending again is harmless) as
// entity group transactions grouped by shard, in parallel: one transaction
// per shard and 100 events. See tablekit.BulkWriter for how failures are
// reported, and tablekit.BulkResult.ETags for the events' new ETags.
func (s *Stream[T]) Append(ctx context.Context, events ...Event[T]) (tablekit.BulkResult, error) {
	const op = "patterns.Stream.Append"
	if err := s.usable(op); err != nil {
		return tablekit.BulkResult{}, err
	}
	items := make([]tablekit.Entity, len(events))
	for i, ev := range events {
		e, err := s.toEntity(ev.Value)
		if err == nil {
			e.PartitionKey, e.RowKey, err = s.keys(op, ev.Time, ev.ID)
		}
		if err != nil {
			return tablekit.BulkResult{}, withOp(op, annotate(err, fmt.Sprintf("event %d", i)))
		}
		e.ETag = ""
		items[i] = e
	}
	res, err := s.table.BulkWriter(nil).Upsert(ctx, items)
	return res, withOp(op, err)
}

func (s *Stream[T]) toEntity(v T) (tablekit.Entity, error) {
	if s.isEntity {
		return any(v).(tablekit.Entity), nil
	}
	return core.Encode(v)
}

// Query returns the events with from <= Time < until, in time order (and
// by ID among equal times), across all shards: one range query per shard,
// in parallel, each reading ahead one page, merged. A zero from or until
// leaves that side open. Of opts, Limit (across shards), PageSize (of each
// shard's query) and Select apply; a continuation is refused. On Azure
// Cosmos DB for Table, which does not return a shard's events in key order,
// each shard's range is read whole and sorted first (at most 10,000 events
// per shard, else an error matching tablekit.ErrTooLarge: narrow the time
// range).
func (s *Stream[T]) Query(ctx context.Context, from, until time.Time, opts *tablekit.QueryOptions) iter.Seq2[Event[T], error] {
	const op = "patterns.Stream.Query"
	return func(yield func(Event[T], error) bool) {
		var zero Event[T]
		if err := s.usable(op); err != nil {
			yield(zero, err)
			return
		}
		var o tablekit.QueryOptions
		if opts != nil {
			o = *opts
		}
		if o.Continuation != "" || o.Cursor != nil {
			yield(zero, &tablekit.ValidationError{Op: op, Property: "Continuation", Detail: "the query merges one query per shard and cannot resume from a continuation token or cursor", Err: tablekit.ErrInvalidInput})
			return
		}
		lo, hi := "", ""
		var err error
		if !from.IsZero() {
			if lo, err = (&keys.Builder{}).AddTime(from).Key(); err != nil { // RowKeys are compound keys: Time's '.' is escaped
				yield(zero, withOp(op, err))
				return
			}
		}
		if !until.IsZero() {
			if hi, err = (&keys.Builder{}).AddTime(until).Key(); err != nil {
				yield(zero, withOp(op, err))
				return
			}
		}
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()

		sem := make(chan struct{}, s.conc)
		cursors := make([]*shardCursor, len(s.pks))
		for i, pk := range s.pks {
			c := &shardCursor{shard: i, pages: make(chan shardPage, 1)}
			cursors[i] = c
			f := tablekit.RowKeyRange(pk, lo, hi)
			wg.Go(func() { s.readShard(ctx, f, o, sem, c.pages) })
		}
		h := &cursorHeap{}
		for _, c := range cursors {
			ok, err := c.fill()
			if err != nil {
				yield(zero, withOp(op, err))
				return
			}
			if ok {
				heap.Push(h, c)
			}
		}
		n := 0
		for h.Len() > 0 {
			c := (*h)[0]
			e := c.items[c.pos]
			ev, err := s.event(e)
			err = withOp(op, err)
			if !yield(ev, err) || err != nil {
				return
			}
			n++
			if o.Limit > 0 && n >= o.Limit {
				return
			}
			c.pos++
			ok, err := c.fill()
			if err != nil {
				yield(zero, withOp(op, err))
				return
			}
			if ok {
				heap.Fix(h, 0)
			} else {
				heap.Pop(h)
			}
		}
	}
}

// readShard pages through one shard's query and sends the pages, stopping
// when the query ends, fails, or ctx is cancelled.
func (s *Stream[T]) readShard(ctx context.Context, f tablekit.Filter, o tablekit.QueryOptions, sem chan struct{}, out chan<- shardPage) {
	o.Limit = 0 // the merge counts
	defer close(out)
	if core.Cosmos(s.table) {
		// Azure Cosmos DB for Table does not return a shard's events in
		// RowKey order: read the shard's range whole, sorted (at most
		// limits.CollectLimit events), as one page.
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		o.KeyOrder = true
		page, err := tablekit.Collect(s.table.Query(ctx, f, &o), 0)
		<-sem
		select {
		case out <- shardPage{items: page, err: err}:
		case <-ctx.Done():
		}
		return
	}
	tok := ""
	for {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		o.Continuation = tok
		page, err := s.table.QueryPage(ctx, f, &o)
		<-sem
		select {
		case out <- shardPage{items: page.Items, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil || page.Continuation == "" {
			return
		}
		tok = page.Continuation
	}
}

// event turns a stored entity back into an Event.
func (s *Stream[T]) event(e tablekit.Entity) (Event[T], error) {
	var ev Event[T]
	comps, err := keys.Split(e.RowKey)
	if err == nil && len(comps) != 2 {
		err = fmt.Errorf("want (time, id), got %d components", len(comps))
	}
	if err == nil {
		ev.Time, err = keys.ParseTime(comps[0])
	}
	if err != nil {
		return ev, &tablekit.DecodeError{Entity: e.PartitionKey + "/" + e.RowKey, Property: "RowKey", Detail: "not a stream event key: " + err.Error()}
	}
	ev.ID = comps[1]
	if s.isEntity {
		ev.Value = any(e).(T)
		return ev, nil
	}
	ev.Value, err = core.Decode[T](e)
	return ev, err
}

// shardPage is one page of a shard's query.
type shardPage struct {
	items []tablekit.Entity
	err   error
}

// shardCursor is the merge's position in one shard.
type shardCursor struct {
	shard int
	pages chan shardPage
	items []tablekit.Entity
	pos   int
}

// fill makes sure the cursor has a current item, receiving pages as
// needed; it reports false when the shard is exhausted.
func (c *shardCursor) fill() (bool, error) {
	for c.pos >= len(c.items) {
		p, ok := <-c.pages
		if !ok {
			return false, nil
		}
		if p.err != nil {
			return false, p.err
		}
		c.items, c.pos = p.items, 0
	}
	return true, nil
}

// cursorHeap orders shard cursors by their current RowKey (time, then ID),
// then by shard.
type cursorHeap []*shardCursor

func (h cursorHeap) Len() int { return len(h) }
func (h cursorHeap) Less(i, j int) bool {
	a, b := h[i].items[h[i].pos].RowKey, h[j].items[h[j].pos].RowKey
	if a != b {
		return a < b
	}
	return h[i].shard < h[j].shard
}
func (h cursorHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)   { *h = append(*h, x.(*shardCursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
