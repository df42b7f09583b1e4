package logtail

import (
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"iter"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
)

// Entry holds the keys of one log tail entry. Embed it (by value, without a
// table tag) in the struct type a [Log] stores:
//
//	type Reading struct {
//		logtail.Entry
//		Celsius float64 `table:"Celsius"`
//	}
//
// The Log owns both keys: [Log.Append] sets them, so an entry type cannot
// get them wrong, and the entry's time is read back from the RowKey with
// [Entry.Time].
type Entry struct {
	// PartitionKey is the stored PartitionKey: the log's partition name,
	// prefixed with a shard bucket when the Log is sharded (see
	// [Options.Shards]).
	PartitionKey string `table:",pk"`
	// RowKey is the newest-first key: keys.DescendingKey(time, seq), or
	// the bare inverted ticks of the design guide's .NET formula for rows
	// other programs wrote.
	RowKey string `table:",rk"`
}

// Time returns the entry's time (UTC, 100 ns precision), decoded from the
// first 19 digits of the RowKey: the design guide's
// string.Format("{0:D19}", DateTime.MaxValue.Ticks - DateTime.UtcNow.Ticks).
// It returns the zero time when the RowKey is not such a key.
func (e Entry) Time() time.Time {
	if len(e.RowKey) < keys.TicksWidth {
		return time.Time{}
	}
	t, err := keys.ParseInvertedTicks(e.RowKey[:keys.TicksWidth])
	if err != nil {
		return time.Time{}
	}
	return t
}

// logEntry lets HasEntry recognise the types that embed Entry.
func (e Entry) logEntry() Entry { return e }

// HasEntry is the constraint on the entry type of a [Log]: a struct that
// embeds [Entry]. Only embedding satisfies it (its method is unexported),
// so the keys of every entry come from the Log.
type HasEntry interface {
	logEntry() Entry
}

// Options configures a [Log]. A nil *Options means defaults.
type Options struct {
	// Shards spreads each logical partition over this many table
	// partitions (1..keys.MaxShards; 0 or 1 means no sharding). A log
	// written at a high rate into one partition is the prepend
	// anti-pattern: every insert lands at the head of the same partition,
	// which one server handles. With Shards > 1, an entry is stored in
	// partition "<bucket>!<pk>" (keys.Compound of keys.ShardPrefix of its
	// RowKey, and pk), so consecutive entries land in different buckets;
	// reads fan out over every bucket and merge newest first, costing one
	// query per bucket instead of one. Every reader and writer of a log
	// must use the same Shards value.
	Shards int
	// PageSize is the number of entities asked for per query request
	// (1..1000; 0 means the service's maximum). Reads keep requesting
	// until they have what they need, whatever the service returns per
	// page.
	PageSize int
	// Clock is the clock Append uses (nil means time.Now).
	Clock tablekit.Clock
}

// Log is a log tail over a Table: entries of one partition, read newest
// first. It is safe for concurrent use.
type Log[T HasEntry] struct {
	table    *tablekit.Table[T]
	shards   int
	buckets  []string // shard prefixes, nil when not sharded
	pageSize int
	now      tablekit.Clock
	keyPath  []int // index path of the embedded Entry in T
	writerID uint32
	counter  atomic.Uint32
}

// New returns a Log that stores its entries in table. The table must exist
// (see tablekit.Table.CreateIfNotExists).
func New[T HasEntry](table *tablekit.Table[T], opts *Options) (*Log[T], error) {
	if table == nil {
		return nil, &tablekit.ValidationError{Detail: "logtail: nil table", Err: tablekit.ErrInvalidInput}
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Shards < 0 || o.Shards > keys.MaxShards {
		return nil, &tablekit.ValidationError{Property: "Shards", Limit: "0..10000", Size: o.Shards, Detail: "logtail: shard count out of range", Err: tablekit.ErrInvalidInput}
	}
	if o.PageSize < 0 || o.PageSize > tablekit.MaxPageSize {
		return nil, &tablekit.ValidationError{Property: "PageSize", Limit: "0..1000", Size: o.PageSize, Detail: "logtail: page size out of range", Err: tablekit.ErrInvalidInput}
	}
	path, ok := entryPath(reflect.TypeFor[T]())
	if !ok {
		return nil, &tablekit.ValidationError{Entity: reflect.TypeFor[T]().String(), Detail: "logtail: the entry type must be a struct that embeds logtail.Entry by value", Err: tablekit.ErrInvalidInput}
	}
	l := &Log[T]{table: table, shards: max(o.Shards, 1), pageSize: o.PageSize, now: o.Clock, keyPath: path}
	if l.shards > 1 {
		b, err := keys.ShardPrefixes(l.shards)
		if err != nil {
			return nil, err
		}
		l.buckets = b
	}
	var id [4]byte
	rand.Read(id[:])
	l.writerID = binary.BigEndian.Uint32(id[:])
	return l, nil
}

var entryType = reflect.TypeFor[Entry]()

// entryPath finds the embedded Entry the way Go promotes its method: the
// shallowest embedded field of type Entry.
func entryPath(t reflect.Type) ([]int, bool) {
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	type node struct {
		t    reflect.Type
		path []int
	}
	level := []node{{t, nil}}
	for depth := 0; depth < 8 && len(level) > 0; depth++ {
		var next []node
		var found []int
		for _, n := range level {
			for i := 0; i < n.t.NumField(); i++ {
				f := n.t.Field(i)
				if !f.Anonymous || f.Type.Kind() != reflect.Struct {
					continue
				}
				p := append(append([]int(nil), n.path...), i)
				if f.Type == entryType {
					if found != nil {
						return nil, false // ambiguous
					}
					found = p
					continue
				}
				next = append(next, node{f.Type, p})
			}
		}
		if found != nil {
			return found, true
		}
		level = next
	}
	return nil, false
}

// Table returns the table the Log stores its entries in.
func (l *Log[T]) Table() *tablekit.Table[T] { return l.table }

// Shards returns the number of table partitions each logical partition
// is spread over (1 when not sharded).
func (l *Log[T]) Shards() int { return l.shards }

// nextSeq returns a sequence number for DescendingKey: a per-Log counter
// in the high 32 bits, so that among entries of one tick a later Append
// sorts first, and this Log's random identity in the low 32 bits, so
// that two processes appending in the same 100 ns get different keys.
func (l *Log[T]) nextSeq() uint64 {
	return uint64(l.counter.Add(1))<<32 | uint64(l.writerID)
}

// partitionKey returns the stored PartitionKey of an entry of logical
// partition pk with RowKey rk.
func (l *Log[T]) partitionKey(pk, rk string) (string, error) {
	if l.shards == 1 {
		return pk, nil
	}
	b, err := keys.ShardPrefix(rk, l.shards)
	if err != nil {
		return "", err
	}
	return l.bucketKey(b, pk)
}

func (l *Log[T]) bucketKey(bucket, pk string) (string, error) {
	k, err := keys.Compound(bucket, pk)
	if err != nil {
		return "", &tablekit.ValidationError{Property: "PartitionKey", Detail: "logtail: partition " + quote(pk) + ": " + err.Error(), Err: tablekit.ErrInvalidKey}
	}
	return k, nil
}

// partitions returns the stored PartitionKeys holding logical partition pk.
func (l *Log[T]) partitions(pk string) ([]string, error) {
	if err := checkPartition(pk); err != nil {
		return nil, err
	}
	if l.shards == 1 {
		return []string{pk}, nil
	}
	out := make([]string, len(l.buckets))
	for i, b := range l.buckets {
		k, err := l.bucketKey(b, pk)
		if err != nil {
			return nil, err
		}
		out[i] = k
	}
	return out, nil
}

func checkPartition(pk string) error {
	if err := keys.Validate(pk); err != nil {
		return &tablekit.ValidationError{Property: "PartitionKey", Detail: "logtail: partition " + quote(pk) + ": " + err.Error(), Err: tablekit.ErrInvalidKey}
	}
	return nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Append stores v as the newest entry of partition pk, timed now by the
// Log's clock. See AppendAt.
func (l *Log[T]) Append(ctx context.Context, pk string, v T) (T, error) {
	return l.AppendAt(ctx, pk, l.now.Now(), v)
}

// AppendAt stores v as an entry of partition pk at time at, and returns it
// with its Entry keys set. Entries at the same tick (100 ns) get distinct
// RowKeys; among them the one appended later through this Log sorts first.
// Whatever keys v holds are replaced. An entry is inserted, never
// replaced: appends do not overwrite each other.
//
// When an answer is lost, AppendAt settles the outcome itself: the RowKey
// holds this Log's random identity and a counter, so the key is this
// call's alone. When the SDK retries an insert the service had already
// applied, the service answers "already exists", which AppendAt takes as
// success; when the insert's error otherwise matches
// tablekit.ErrOutcomeUnknown (no try got an answer, or a retry after a
// lost answer was throttled or answered 5xx), AppendAt reads the key and
// reports success if the entry is there. Otherwise it returns the error:
// when it matches tablekit.ErrOutcomeUnknown (or is the context's), the
// entry may or may not be stored (the read failed too, or a request whose
// connection broke may still be applied later); any other error means the
// entry was not stored.
// Calling Append again then appends a second entry, under a new RowKey, if
// the first one was stored; that is the only way a log gets duplicates.
func (l *Log[T]) AppendAt(ctx context.Context, pk string, at time.Time, v T) (T, error) {
	var zero T
	if err := checkPartition(pk); err != nil {
		return zero, err
	}
	rk, err := keys.DescendingKey(at, l.nextSeq())
	if err != nil {
		return zero, &tablekit.ValidationError{Property: "RowKey", Detail: "logtail: " + err.Error(), Err: tablekit.ErrInvalidInput}
	}
	spk, err := l.partitionKey(pk, rk)
	if err != nil {
		return zero, err
	}
	reflect.ValueOf(&v).Elem().FieldByIndex(l.keyPath).Set(reflect.ValueOf(Entry{PartitionKey: spk, RowKey: rk}))
	if _, err := l.table.Insert(ctx, v); err != nil && !l.stored(ctx, spk, rk, err) {
		return zero, err
	}
	return v, nil
}

// stored settles an insert of key spk/rk that failed with err, when err
// leaves open whether a try was applied (it matches
// tablekit.ErrOutcomeUnknown). The key holds this Log's random identity and
// a counter, so no other call stores an entity under it: "already exists"
// after such a try means this very insert, and so does finding the entity
// by a read. (tablekit reports such outcomes as unknown because, for keys
// that several writers use, the stored state cannot tell who wrote it;
// here only one call can have.) A plain "already exists", with no try that
// may have been applied, is another entity's key and stays an error.
func (l *Log[T]) stored(ctx context.Context, spk, rk string, err error) bool {
	if !errors.Is(err, tablekit.ErrOutcomeUnknown) || ctx.Err() != nil {
		return false
	}
	var se *tablekit.ServiceError
	if errors.As(err, &se) && se.Code == "EntityAlreadyExists" {
		return true
	}
	// No answer, a 5xx, or a throttled retry after a try whose answer was
	// lost: look.
	_, gerr := l.table.Get(ctx, spk, rk, nil)
	return gerr == nil
}

// Latest returns the n newest entries of partition pk, newest first: fewer
// only when the partition holds fewer. It reads as many pages as needed,
// however short the pages the service returns.
func (l *Log[T]) Latest(ctx context.Context, pk string, n int) ([]T, error) {
	if n <= 0 {
		return nil, &tablekit.ValidationError{Property: "n", Detail: "logtail: Latest needs n > 0", Err: tablekit.ErrInvalidInput}
	}
	return l.collect(ctx, pk, "", n)
}

// Since returns the entries of partition pk at or after t, newest first.
func (l *Log[T]) Since(ctx context.Context, pk string, t time.Time) iter.Seq2[T, error] {
	return l.Window(ctx, pk, t, time.Time{})
}

// Window returns the entries of partition pk with from <= time < to,
// newest first. A zero from means no lower bound, a zero to no upper
// bound. It is one RowKey range query per shard bucket.
func (l *Log[T]) Window(ctx context.Context, pk string, from, to time.Time) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		lo, hi, err := windowBounds(from, to)
		if err != nil {
			yield(zero, err)
			return
		}
		if lo != "" && hi != "" && lo >= hi {
			return
		}
		l.merged(ctx, pk, lo, hi)(yield)
	}
}

// windowBounds returns the RowKey range [lo, hi) of the times [from, to):
// a time is at or after from when its inverted ticks are at most those of
// from, i.e. its RowKey sorts before PrefixEnd(InvertedTicks(from)), and
// before to when its RowKey sorts at or after PrefixEnd(InvertedTicks(to)).
func windowBounds(from, to time.Time) (lo, hi string, err error) {
	bound := func(name string, t time.Time) (string, error) {
		inv, err := keys.InvertedTicks(t)
		if err != nil {
			return "", &tablekit.ValidationError{Property: name, Detail: "logtail: " + err.Error(), Err: tablekit.ErrInvalidInput}
		}
		end, _ := keys.PrefixEnd(inv) // 19 digits always have a successor
		return end, nil
	}
	if !to.IsZero() {
		if lo, err = bound("to", to); err != nil {
			return "", "", err
		}
	}
	if !from.IsZero() {
		if hi, err = bound("from", from); err != nil {
			return "", "", err
		}
	}
	return lo, hi, nil
}

// PageOptions configures [Log.Page]. A nil *PageOptions means defaults.
type PageOptions struct {
	// Size is the most entries in a page (1..1000; 0 means 100).
	Size int
	// Continuation resumes after the last entry of an earlier page of the
	// same partition; "" starts at the newest entry.
	Continuation string
}

// Page returns entries of partition pk newest first, one page at a time:
// start with no continuation for the newest page, then pass each page's
// Continuation for the next, older one. A page is short only at the end
// of the log, where its Continuation is "". The token is a position in
// the log, not a service cursor: it stays valid while entries are
// appended, and a page after it never repeats an entry.
func (l *Log[T]) Page(ctx context.Context, pk string, opts *PageOptions) (tablekit.Page[T], error) {
	var o PageOptions
	if opts != nil {
		o = *opts
	}
	if o.Size == 0 {
		o.Size = 100
	}
	if o.Size < 0 || o.Size > tablekit.MaxPageSize {
		return tablekit.Page[T]{}, &tablekit.ValidationError{Property: "Size", Limit: "0..1000", Size: o.Size, Detail: "logtail: page size out of range", Err: tablekit.ErrInvalidInput}
	}
	after := ""
	if o.Continuation != "" {
		var err error
		if after, err = decodeCursor(o.Continuation, pk); err != nil {
			return tablekit.Page[T]{}, err
		}
	}
	items, err := l.collect(ctx, pk, after, o.Size)
	if err != nil {
		return tablekit.Page[T]{}, err
	}
	p := tablekit.Page[T]{Items: items}
	if len(items) == o.Size {
		p.Continuation = encodeCursor(pk, items[len(items)-1].logEntry().RowKey)
	}
	return p, nil
}

const cursorPrefix = "lt1."

type cursor struct {
	PK string `json:"p"`
	RK string `json:"r"`
}

func encodeCursor(pk, rk string) string {
	b, _ := json.Marshal(cursor{pk, rk})
	return cursorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(tok, pk string) (string, error) {
	bad := func(why string) error {
		return &tablekit.ValidationError{Property: "Continuation", Detail: "logtail: invalid continuation token: " + why, Err: tablekit.ErrInvalidInput}
	}
	rest, ok := strings.CutPrefix(tok, cursorPrefix)
	if !ok {
		return "", bad("unknown format")
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return "", bad("not base64url")
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil || c.RK == "" {
		return "", bad("not a logtail token")
	}
	if c.PK != pk {
		return "", bad("it belongs to another partition")
	}
	return c.RK, nil
}

// rangeFilter returns the query of one stored partition: lo <= RowKey < hi
// (either bound optional), and RowKey > after when after is set.
func rangeFilter(spk, lo, hi, after string) tablekit.Filter {
	f := tablekit.RowKeyRange(spk, lo, hi)
	if after != "" {
		f = tablekit.And(f, tablekit.Where("RowKey gt ?", after))
	}
	return f
}

// collect returns the n newest entries of pk with RowKey > after (all
// when after is ""), newest first.
func (l *Log[T]) collect(ctx context.Context, pk, after string, n int) ([]T, error) {
	if l.table.Cosmos() {
		return nil, &tablekit.ValidationError{Op: "logtail.Log", Entity: l.table.Name(),
			Detail: "Latest and Page read the newest entries as the first of a partition in RowKey order, which Azure Cosmos DB for Table does not keep; the design guide says the log tail pattern is not suitable for Cosmos DB (Since and Window still work: they sort their range on the client)",
			Err:    tablekit.ErrUnsupported}
	}
	parts, err := l.partitions(pk)
	if err != nil {
		return nil, err
	}
	qo := &tablekit.QueryOptions{PageSize: l.pageSize}
	if len(parts) == 1 {
		out, err := l.table.Top(ctx, rangeFilter(parts[0], "", "", after), n, qo)
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	// Fan out: the n newest of the whole log are among the n newest of
	// each bucket.
	results := make([][]T, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, spk := range parts {
		wg.Go(func() {
			results[i], errs[i] = l.table.Top(ctx, rangeFilter(spk, "", "", after), n, qo)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]T, 0, n)
	idx := make([]int, len(results))
	for len(out) < n {
		best := -1
		for i, r := range results {
			if idx[i] < len(r) && (best < 0 || r[idx[i]].logEntry().RowKey < results[best][idx[best]].logEntry().RowKey) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out = append(out, results[best][idx[best]])
		idx[best]++
	}
	return out, nil
}

// merged yields the entries of pk with lo <= RowKey < hi (either bound
// optional), newest first, merging the shard buckets' queries.
func (l *Log[T]) merged(ctx context.Context, pk, lo, hi string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		parts, err := l.partitions(pk)
		if err != nil {
			yield(zero, err)
			return
		}
		// KeyOrder: on Cosmos DB each bucket's range is read whole and
		// sorted, so that the merge below still sees it newest first.
		qo := &tablekit.QueryOptions{PageSize: l.pageSize, KeyOrder: true}
		if len(parts) == 1 {
			for v, err := range l.table.Query(ctx, rangeFilter(parts[0], lo, hi, ""), qo) {
				if !yield(v, err) || err != nil {
					return
				}
			}
			return
		}
		h := &mergeHeap[T]{}
		defer func() {
			for _, s := range h.items {
				s.stop()
			}
		}()
		for _, spk := range parts {
			next, stop := iter.Pull2(l.table.Query(ctx, rangeFilter(spk, lo, hi, ""), qo))
			v, err, ok := next()
			if !ok {
				stop()
				continue
			}
			if err != nil {
				stop()
				yield(zero, err)
				return
			}
			h.items = append(h.items, &stream[T]{head: v, next: next, stop: stop})
		}
		heap.Init(h)
		for h.Len() > 0 {
			s := h.items[0]
			if !yield(s.head, nil) {
				return
			}
			v, err, ok := s.next()
			switch {
			case !ok:
				s.stop()
				heap.Pop(h)
			case err != nil:
				yield(zero, err)
				return
			default:
				s.head = v
				heap.Fix(h, 0)
			}
		}
	}
}

// stream is one bucket's query in a merge.
type stream[T HasEntry] struct {
	head T
	next func() (T, error, bool)
	stop func()
}

// mergeHeap orders streams by the RowKey of their head: newest first.
type mergeHeap[T HasEntry] struct{ items []*stream[T] }

func (h *mergeHeap[T]) Len() int { return len(h.items) }
func (h *mergeHeap[T]) Less(i, j int) bool {
	return h.items[i].head.logEntry().RowKey < h.items[j].head.logEntry().RowKey
}
func (h *mergeHeap[T]) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *mergeHeap[T]) Push(x any)    { h.items = append(h.items, x.(*stream[T])) }
func (h *mergeHeap[T]) Pop() any {
	s := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return s
}
