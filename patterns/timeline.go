package patterns

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/keys"
)

// Against the prepend/append anti-pattern ("Avoid writing all new entities
// to the same partition"): a time-ordered sequence whose every write would
// otherwise land at the end of one partition — a hot spot that caps the
// write rate — is spread over N partitions by a hash of each entry's ID,
// and a time-range query reads all of them in parallel and merges the
// results back into time order.

// TimelineEntry is one entry of a [Timeline]: its time, an ID unique
// within the timeline, and the value stored.
type TimelineEntry[T any] struct {
	Time  time.Time
	ID    string
	Value T
}

// Timeline is a time-ordered sequence of entries in one table, spread
// over shards partitions. An entry's PartitionKey is the sharded key of
// the timeline's name, keys.ShardedKey(bucket, shards, keys.Compound(name)):
// the bucket of the entry's ID first, e.g. "3!clicks" (the keys package doc,
// Sharded keys, says why); keys.ShardedKeys gives them all. Its RowKey is
// its time (keys.Time) and its ID, so that each shard is in time order and
// a time window is one range query per shard.
//
// T is [tablekit.Entity] or a struct as for [tablekit.Table]; the timeline
// sets its keys. A Timeline is safe for concurrent use.
type Timeline[T any] struct {
	table    *tablekit.Table[tablekit.Entity]
	name     string
	shards   int
	pks      []string
	conc     int
	isEntity bool
}

// NewTimeline returns the Timeline called name stored in table, a
// property-bag view (tablekit.Table.AsEntities of the application's table
// keeps its client-side encryption), over shards partitions (1 to
// keys.MaxShards; changing it re-homes entries, so keep it for the life of
// the timeline). T is the type of the entries' values. The name may be any
// string: it is stored as a compound-key component (keys.Compound).
func NewTimeline[T any](table *tablekit.Table[tablekit.Entity], name string, shards int) (*Timeline[T], error) {
	const op = "patterns.NewTimeline"
	if table == nil {
		return nil, invalid(op, "nil table")
	}
	s := &Timeline[T]{table: table, name: name, shards: shards}
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
		if _, err := codec.Encode(zero); err != nil {
			return nil, withOp(op, err)
		}
	}
	return s, nil
}

// usable refuses a Timeline its constructor did not make.
func (s *Timeline[T]) usable(op string) error {
	if s == nil || s.table == nil {
		return unusable(op, "NewTimeline")
	}
	return nil
}

// Keys returns the PartitionKey and RowKey of the entry with time at and
// ID id.
func (s *Timeline[T]) Keys(at time.Time, id string) (pk, rk string, err error) {
	const op = "patterns.Timeline.Keys"
	if err := s.usable(op); err != nil {
		return "", "", err
	}
	return s.keys(op, at, id)
}

func (s *Timeline[T]) keys(op string, at time.Time, id string) (pk, rk string, err error) {
	shard, err := keys.Shard(id, s.shards)
	if err != nil {
		return "", "", &tablekit.ValidationError{Op: op, Entity: s.name, Property: "ID", Detail: err.Error(), Err: tablekit.ErrInvalidInput}
	}
	var b keys.Builder
	rk, err = b.AddTime(at).Add(id).Key()
	if err != nil {
		return "", "", &tablekit.ValidationError{Op: op, Entity: s.name, Property: "RowKey", Detail: fmt.Sprintf("entry %q at %v: %v", id, at, err), Err: tablekit.ErrInvalidKey}
	}
	return s.pks[shard], rk, nil
}

// Append writes entries (upserting, so appending again is harmless) as
// entity group transactions grouped by shard, in parallel: one transaction
// per shard and 100 entries. See tablekit.BulkWriter for how failures are
// reported, and tablekit.BulkResult.ETags for the entries' new ETags.
func (s *Timeline[T]) Append(ctx context.Context, entries ...TimelineEntry[T]) (tablekit.BulkResult, error) {
	const op = "patterns.Timeline.Append"
	if err := s.usable(op); err != nil {
		return tablekit.BulkResult{}, err
	}
	items := make([]tablekit.Entity, len(entries))
	for i, en := range entries {
		e, err := s.toEntity(en.Value)
		if err == nil {
			e.PartitionKey, e.RowKey, err = s.keys(op, en.Time, en.ID)
		}
		if err != nil {
			return tablekit.BulkResult{}, withOp(op, annotate(err, fmt.Sprintf("entry %d", i)))
		}
		e.ETag = ""
		items[i] = e
	}
	res, err := s.table.BulkWriter(nil).Upsert(ctx, items)
	return res, withOp(op, err)
}

func (s *Timeline[T]) toEntity(v T) (tablekit.Entity, error) {
	if s.isEntity {
		return any(v).(tablekit.Entity), nil
	}
	return codec.Encode(v)
}

// Query returns the entries with from <= Time < until, in time order (and
// by ID among equal times), across all shards: one range query per shard,
// in parallel, each reading ahead one page, merged. A zero from or until
// leaves that side open. Of opts, Limit (across shards), PageSize (of each
// shard's query) and Select apply; a continuation is refused.
//
// On Azure Cosmos DB for Table, which does not return a shard's entries in
// key order, a shard's entries are sorted on the client. Without a Limit,
// each shard's range is read whole (at most 10,000 entries per shard, else
// an error matching tablekit.ErrTooLarge: narrow the time range): as many
// requests as the whole window takes. With a Limit, Query first reads
// pages of every shard until they hold Limit entries (a page per shard,
// usually), which proves that the first Limit entries of the window end at
// or before the Limit-th of those; it then reads each shard's range up to
// that key, sorted: about two requests per shard, for small limits. An
// Account that finds out it is on Cosmos DB from a query's first pages
// (tablekit.ServiceAuto) starts that query again so, before it yields
// anything: up to two pages per shard more (each shard reads one ahead).
func (s *Timeline[T]) Query(ctx context.Context, from, until time.Time, opts *tablekit.QueryOptions) iter.Seq2[TimelineEntry[T], error] {
	const op = "patterns.Timeline.Query"
	return func(yield func(TimelineEntry[T], error) bool) {
		var zero TimelineEntry[T]
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
		fs := make([]tablekit.Filter, len(s.pks))
		for i, pk := range s.pks {
			fs[i] = tablekit.RowKeyRange(pk, lo, hi)
		}
		var cursors []*shardCursor
		if s.table.Account().Service() != tablekit.ServiceCosmosDB {
			var cancel context.CancelFunc
			cursors, cancel, err = s.readShards(ctx, fs, o)
			defer cancel()
		}
		if err == nil && s.table.Account().Service() == tablekit.ServiceCosmosDB {
			// Cosmos DB, known before, or shown by the shards' first
			// pages: nothing was yielded yet.
			cursors, err = s.readCosmos(ctx, fs, o)
		}
		if err != nil {
			yield(zero, withOp(op, err))
			return
		}
		h := &cursorHeap{}
		for _, c := range cursors {
			if len(c.items) > 0 {
				heap.Push(h, c)
			}
		}
		n := 0
		for h.Len() > 0 {
			c := (*h)[0]
			e := c.items[c.pos]
			en, err := s.entry(e)
			err = withOp(op, err)
			if !yield(en, err) || err != nil {
				return
			}
			n++
			if o.Limit > 0 && n >= o.Limit {
				return
			}
			c.pos++
			ok, err := c.fill()
			if err == nil && ok && c.pos == 0 && s.table.Account().Service() == tablekit.ServiceCosmosDB {
				// A later page showed Cosmos DB, after entries were
				// yielded in the order the first pages gave.
				err = &tablekit.ValidationError{Op: op, Entity: s.name,
					Detail: "the service answered as Azure Cosmos DB for Table, which does not keep key order, after the query had yielded entries: open the Account with tablekit.ServiceCosmosDB",
					Err:    tablekit.ErrUnsupported}
			}
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

// readShards starts reading the shard queries fs, in parallel, each
// reading ahead one page, and returns their cursors once each holds its
// first page (or is exhausted). cancel stops the readers and waits for
// them.
func (s *Timeline[T]) readShards(ctx context.Context, fs []tablekit.Filter, o tablekit.QueryOptions) (_ []*shardCursor, cancel func(), err error) {
	ctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	cancel = func() { stop(); wg.Wait() }
	sem := make(chan struct{}, s.conc)
	cursors := make([]*shardCursor, len(fs))
	for i, f := range fs {
		c := &shardCursor{shard: i, pages: make(chan shardPage, 1)}
		cursors[i] = c
		wg.Go(func() { s.readShard(ctx, f, o, sem, c.pages) })
	}
	for _, c := range cursors {
		if _, err := c.fill(); err != nil {
			cancel()
			return nil, cancel, err
		}
	}
	if s.table.Account().Service() == tablekit.ServiceCosmosDB {
		cancel() // the first pages showed Cosmos DB: read again (readCosmos)
	}
	return cursors, cancel, nil
}

// readCosmos reads the shard queries fs on Azure Cosmos DB for Table,
// which returns a shard's entries in no key order, and returns a cursor of
// each shard's entries sorted: all of them without a Limit; with one, those
// up to the Limit-th entry of the window, proved so: pages of every shard
// (in the service's order) are read until they hold Limit entries or every
// shard is read whole, and the Limit-th of those entries, by RowKey then
// shard as the merge orders them, is at or after the Limit-th of the
// window, so that the window's first Limit entries are among each shard's
// entries up to its RowKey, read sorted.
func (s *Timeline[T]) readCosmos(ctx context.Context, fs []tablekit.Filter, o tablekit.QueryOptions) ([]*shardCursor, error) {
	limit := o.Limit
	o.Limit, o.Continuation = 0, ""
	sorted := make([][]tablekit.Entity, len(fs))
	whole := func(i int, f tablekit.Filter) error {
		// At most limits.CollectLimit entries, else ErrTooLarge.
		oo := o
		oo.KeyOrder = true
		var err error
		sorted[i], err = tablekit.Collect(s.table.Query(ctx, f, &oo), 0)
		return err
	}
	if limit == 0 {
		if err := s.each(ctx, len(fs), func(i int) error { return whole(i, fs[i]) }); err != nil {
			return nil, err
		}
		return sortedCursors(sorted), nil
	}
	type shard struct {
		read []tablekit.Entity // in the service's order
		tok  string
		done bool
	}
	shards := make([]shard, len(fs))
	for {
		err := s.each(ctx, len(fs), func(i int) error {
			sh := &shards[i]
			if sh.done {
				return nil
			}
			oo := o
			oo.Continuation = sh.tok
			page, err := s.table.QueryPage(ctx, fs[i], &oo)
			if err != nil {
				return err
			}
			sh.read, sh.tok, sh.done = append(sh.read, page.Items...), page.Continuation, page.Continuation == ""
			return nil
		})
		if err != nil {
			return nil, err
		}
		n, done := 0, true
		for _, sh := range shards {
			n, done = n+len(sh.read), done && sh.done
		}
		if n >= limit || done {
			break
		}
	}
	type key struct {
		rk    string
		shard int
	}
	var read []key
	for i, sh := range shards {
		for _, e := range sh.read {
			read = append(read, key{e.RowKey, i})
		}
	}
	slices.SortFunc(read, func(a, b key) int { return cmp.Or(keys.Compare(a.rk, b.rk), cmp.Compare(a.shard, b.shard)) })
	last := ""
	if len(read) >= limit {
		last = read[limit-1].rk
	}
	err := s.each(ctx, len(fs), func(i int) error {
		sh := shards[i]
		if !sh.done && last != "" {
			return whole(i, tablekit.And(fs[i], tablekit.Where("RowKey le ?", last)))
		}
		// Read whole already.
		sorted[i] = slices.DeleteFunc(sh.read, func(e tablekit.Entity) bool { return last != "" && keys.Compare(e.RowKey, last) > 0 })
		slices.SortFunc(sorted[i], func(a, b tablekit.Entity) int { return keys.Compare(a.RowKey, b.RowKey) })
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sortedCursors(sorted), nil
}

// sortedCursors returns cursors over each shard's sorted entries.
func sortedCursors(shards [][]tablekit.Entity) []*shardCursor {
	cursors := make([]*shardCursor, len(shards))
	for i, items := range shards {
		pages := make(chan shardPage)
		close(pages)
		cursors[i] = &shardCursor{shard: i, pages: pages, items: items}
	}
	return cursors
}

// each calls fn for 0..n-1, s.conc at a time, and returns the first error.
func (s *Timeline[T]) each(ctx context.Context, n int, fn func(i int) error) error {
	sem := make(chan struct{}, s.conc)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fn(i)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// readShard pages through one shard's query and sends the pages, stopping
// when the query ends, fails, or ctx is cancelled.
func (s *Timeline[T]) readShard(ctx context.Context, f tablekit.Filter, o tablekit.QueryOptions, sem chan struct{}, out chan<- shardPage) {
	o.Limit = 0 // the merge counts
	defer close(out)
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

// entry turns a stored entity back into a TimelineEntry.
func (s *Timeline[T]) entry(e tablekit.Entity) (TimelineEntry[T], error) {
	var en TimelineEntry[T]
	comps, err := keys.Split(e.RowKey)
	if err == nil && len(comps) != 2 {
		err = fmt.Errorf("want (time, id), got %d components", len(comps))
	}
	if err == nil {
		en.Time, err = keys.ParseTime(comps[0])
	}
	if err != nil {
		return en, &tablekit.DecodeError{Entity: e.PartitionKey + "/" + e.RowKey, Property: "RowKey", Detail: "not a timeline entry key: " + err.Error()}
	}
	en.ID = comps[1]
	if s.isEntity {
		en.Value = any(e).(T)
		return en, nil
	}
	en.Value, err = codec.Decode[T](e)
	return en, err
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

// cursorHeap orders shard cursors by their current RowKey (time, then ID)
// in the service's order (keys.Compare, as each shard's query returns
// them), then by shard.
type cursorHeap []*shardCursor

func (h cursorHeap) Len() int { return len(h) }
func (h cursorHeap) Less(i, j int) bool {
	if c := keys.Compare(h[i].items[h[i].pos].RowKey, h[j].items[h[j].pos].RowKey); c != 0 {
		return c < 0
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
