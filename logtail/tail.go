package logtail

import (
	"cmp"
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/limits"
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
	// or, when the Log is sharded, keys.ShardedKey of it, "<bucket>!<name>"
	// (see [Options.Shards]).
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
	const ticksWidth = 19 // keys.InvertedTicks: {0:D19}
	if len(e.RowKey) < ticksWidth {
		return time.Time{}
	}
	t, err := keys.ParseInvertedTicks(e.RowKey[:ticksWidth])
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
	// which one server handles. With Shards > 1, an entry of partition pk
	// is stored in the partition keys.ShardedKey(bucket, Shards, pk),
	// "<bucket>!<pk>", with the bucket keys.Shard chooses from the entry's
	// RowKey, so consecutive entries land in different buckets; reads fan
	// out over the keys.ShardedKeys of pk and merge newest first, costing
	// one query per bucket instead of one. The layout is the one package
	// keys documents (its Sharded keys section). Every reader and writer
	// of a log must use the same Shards value.
	Shards int
	// PageSize is the most entities one query request asks for (1..1000;
	// 0 means the service's maximum, 1000), unless [PageOptions] say
	// otherwise. Reads keep requesting until they have what they need,
	// whatever the service returns per page, so it changes the number of
	// requests, never the result.
	PageSize int
}

// Log is a log tail over a Table: entries of one partition, read newest
// first. It is safe for concurrent use.
type Log[T HasEntry] struct {
	table    *tablekit.Table[T]
	shards   int
	pageSize int
	keyPath  []int // index path of the embedded Entry in T
	writerID uint32
	counter  atomic.Uint32
}

// New returns a Log that stores its entries in table. The table must exist
// (see tablekit.Table.CreateIfNotExists). Bad options are refused with a
// *tablekit.ValidationError whose Op is "logtail.New"; nothing is sent.
func New[T HasEntry](table *tablekit.Table[T], opts *Options) (*Log[T], error) {
	const op = "logtail.New"
	if table == nil || table.Name() == "" {
		return nil, &tablekit.ValidationError{Op: op, Property: "table", Detail: "the table is nil or zero: use tablekit.OpenTable", Err: tablekit.ErrInvalidInput}
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Shards < 0 || o.Shards > keys.MaxShards {
		return nil, &tablekit.ValidationError{Op: op, Property: "Shards", Limit: fmt.Sprintf("0..%d", keys.MaxShards), Size: o.Shards, Detail: "shard count out of range", Err: tablekit.ErrInvalidInput}
	}
	if err := checkPageSize(op, o.PageSize); err != nil {
		return nil, err
	}
	path, ok := entryPath(reflect.TypeFor[T]())
	if !ok {
		return nil, &tablekit.ValidationError{Op: op, Detail: "the entry type " + reflect.TypeFor[T]().String() + " must be a struct that embeds logtail.Entry by value", Err: tablekit.ErrInvalidInput}
	}
	l := &Log[T]{table: table, shards: max(o.Shards, 1), pageSize: o.PageSize, keyPath: path}
	var id [4]byte
	rand.Read(id[:])
	l.writerID = binary.BigEndian.Uint32(id[:])
	return l, nil
}

// checkPageSize refuses a PageSize outside 0..1000.
func checkPageSize(op string, n int) error {
	if n < 0 || n > limits.PageSize {
		return &tablekit.ValidationError{Op: op, Property: "PageSize", Limit: fmt.Sprintf("0..%d", limits.PageSize), Size: n, Detail: "page size out of range", Err: tablekit.ErrInvalidInput}
	}
	return nil
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

// Table returns the table the Log stores its entries in (nil for a zero
// Log).
func (l *Log[T]) Table() *tablekit.Table[T] {
	if l == nil {
		return nil
	}
	return l.table
}

// check refuses a nil or zero Log.
func (l *Log[T]) check(op string) error {
	if l == nil || l.table == nil {
		return &tablekit.ValidationError{Op: op, Detail: "the Log is nil or zero: use logtail.New", Err: tablekit.ErrInvalidInput}
	}
	return nil
}

// nextSeq returns a sequence number for DescendingKey: a per-Log counter
// in the high 32 bits, so that among entries of one tick a later Append
// sorts first, and this Log's random identity in the low 32 bits, so
// that two processes appending in the same 100 ns get different keys.
func (l *Log[T]) nextSeq() uint64 {
	return uint64(l.counter.Add(1))<<32 | uint64(l.writerID)
}

// partitionKey returns the stored PartitionKey of an entry of logical
// partition pk with RowKey rk: pk itself, or, sharded, the
// keys.ShardedKey of pk in the bucket keys.Shard gives rk.
func (l *Log[T]) partitionKey(op, pk, rk string) (string, error) {
	if l.shards == 1 {
		return pk, nil
	}
	b, err := keys.Shard(rk, l.shards)
	if err == nil {
		var spk string
		if spk, err = keys.ShardedKey(b, l.shards, pk); err == nil {
			return spk, nil
		}
	}
	return "", partitionError(op, pk, err)
}

// partitions returns the stored PartitionKeys holding logical partition
// pk: pk itself, or, sharded, its keys.ShardedKeys.
func (l *Log[T]) partitions(op, pk string) ([]string, error) {
	if err := checkPartition(op, pk); err != nil {
		return nil, err
	}
	if l.shards == 1 {
		return []string{pk}, nil
	}
	parts, err := keys.ShardedKeys(l.shards, pk)
	if err != nil {
		return nil, partitionError(op, pk, err)
	}
	return parts, nil
}

func checkPartition(op, pk string) error {
	if err := keys.Validate(pk); err != nil {
		return partitionError(op, pk, err)
	}
	return nil
}

func partitionError(op, pk string, err error) error {
	return &tablekit.ValidationError{Op: op, Property: "PartitionKey", Detail: "partition " + quote(pk) + ": " + err.Error(), Err: tablekit.ErrInvalidKey}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Append inserts v as the newest entry of partition pk, timed now. See
// AppendAt.
func (l *Log[T]) Append(ctx context.Context, pk string, v T) (T, error) {
	return l.appendAt(ctx, "logtail.Log.Append", pk, time.Now(), v)
}

// AppendAt inserts v as an entry of partition pk at time at, and returns
// it with its Entry keys set: an insert (create only, like
// tablekit.Table.Insert) under a RowKey of its own, keys.DescendingKey(at,
// seq), where seq holds this Log's random identity and a counter, so no
// other call, in this process or another, uses it. Whatever keys v holds
// are replaced; entries never replace each other. Entries at the same
// tick (100 ns) get distinct RowKeys; among them the one appended later
// through this Log sorts first.
//
// Cost: one transaction (InsertEntity), and one more (GetEntity) only to
// settle a lost answer by its RowKey (see the package doc, "Faults"): an
// error matching tablekit.ErrOutcomeUnknown, or a context error, means
// the entry may or may not be stored, at most once; any other error means
// it was not stored.
//
// Refusals (a partition key Azure refuses, a time outside years 1..9999)
// are *tablekit.ValidationError with Op "logtail.Log.AppendAt"
// ("logtail.Log.Append" from Append); nothing is sent.
func (l *Log[T]) AppendAt(ctx context.Context, pk string, at time.Time, v T) (T, error) {
	return l.appendAt(ctx, "logtail.Log.AppendAt", pk, at, v)
}

func (l *Log[T]) appendAt(ctx context.Context, op, pk string, at time.Time, v T) (T, error) {
	var zero T
	if err := l.check(op); err != nil {
		return zero, err
	}
	if err := checkPartition(op, pk); err != nil {
		return zero, err
	}
	rk, err := keys.DescendingKey(at, l.nextSeq())
	if err != nil {
		return zero, &tablekit.ValidationError{Op: op, Property: "at", Limit: "years 0001..9999", Detail: err.Error(), Err: tablekit.ErrInvalidInput}
	}
	spk, err := l.partitionKey(op, pk, rk)
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
	if !errors.Is(err, tablekit.ErrOutcomeUnknown) {
		return false
	}
	var se *tablekit.ServiceError
	if errors.As(err, &se) && se.Code == "EntityAlreadyExists" {
		return true // settled by the answer, even when ctx ended since
	}
	if ctx.Err() != nil {
		return false
	}
	// No answer, a 5xx, or a throttled retry after a try whose answer was
	// lost: look.
	_, gerr := l.table.Get(ctx, spk, rk)
	return gerr == nil
}

// Latest returns the n newest entries of partition pk, newest first: fewer
// only when the partition holds fewer. It reads as many pages as needed,
// however short the pages the service returns.
//
// Cost: one query (QueryEntities) per page read, ⌈n/PageSize⌉ when the
// service returns full pages, on each of the Log's Shards buckets (so at
// least Shards queries on a sharded log). n <= PageSize is one query per
// bucket. Refusals are *tablekit.ValidationError with Op
// "logtail.Log.Latest".
//
// On Azure Cosmos DB for Table, which does not keep key order, Latest and
// Page are refused with an error matching tablekit.ErrUnsupported: before
// anything is sent when the Account knows it is on Cosmos DB, else once
// the first answers show it (tablekit.ServiceAuto). Read with Window
// there.
func (l *Log[T]) Latest(ctx context.Context, pk string, n int) ([]T, error) {
	const op = "logtail.Log.Latest"
	if err := l.check(op); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, &tablekit.ValidationError{Op: op, Property: "n", Limit: "n > 0", Detail: "no entries asked for", Err: tablekit.ErrInvalidInput}
	}
	return l.collect(ctx, op, pk, "", n, l.pageSize)
}

// Window returns the entries of partition pk with from <= time < to,
// newest first. A zero from means no lower bound, a zero to no upper
// bound: Window(ctx, pk, since, time.Time{}) is every entry since a time.
// It is one RowKey range query per shard bucket, one request per page of
// results (Options.PageSize); on Azure Cosmos DB for Table, which does not
// keep key order, each bucket's range is read whole and sorted
// (tablekit.QueryOptions.KeyOrder: at most 10,000 entries per bucket).
// Refusals (a partition key Azure refuses, a time outside years 1..9999)
// are yielded as a *tablekit.ValidationError with Op "logtail.Log.Window".
func (l *Log[T]) Window(ctx context.Context, pk string, from, to time.Time) iter.Seq2[T, error] {
	return l.window(ctx, "logtail.Log.Window", pk, from, to)
}

func (l *Log[T]) window(ctx context.Context, op, pk string, from, to time.Time) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		if err := l.check(op); err != nil {
			yield(zero, err)
			return
		}
		lo, hi, err := windowBounds(op, from, to)
		if err != nil {
			yield(zero, err)
			return
		}
		if lo != "" && hi != "" && lo >= hi {
			return
		}
		l.merged(ctx, op, pk, lo, hi)(yield)
	}
}

// windowBounds returns the RowKey range [lo, hi) of the times [from, to):
// a time is at or after from when its inverted ticks are at most those of
// from, i.e. its RowKey sorts before PrefixEnd(InvertedTicks(from)), and
// before to when its RowKey sorts at or after PrefixEnd(InvertedTicks(to)).
func windowBounds(op string, from, to time.Time) (lo, hi string, err error) {
	bound := func(name string, t time.Time) (string, error) {
		inv, err := keys.InvertedTicks(t)
		if err != nil {
			return "", &tablekit.ValidationError{Op: op, Property: name, Limit: "years 0001..9999", Detail: err.Error(), Err: tablekit.ErrInvalidInput}
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

// defaultPageSize is the number of entries in a page of [Log.Page] when
// neither PageOptions.PageSize nor Options.PageSize sets it.
const defaultPageSize = 100

// PageOptions configures one [Log.Page] call. A nil *PageOptions means
// defaults.
type PageOptions struct {
	// PageSize is the number of entries in the page, and the most
	// entities one query request of this call asks for (1..1000; 0 means
	// the Log's Options.PageSize, or 100 when that is 0 too). A page is
	// short only at the end of the log.
	PageSize int
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
//
// Cost: like Latest(PageSize): one query per page read on each bucket.
// Refusals (a bad PageSize, a token that is not this partition's) are
// *tablekit.ValidationError with Op "logtail.Log.Page".
func (l *Log[T]) Page(ctx context.Context, pk string, opts *PageOptions) (tablekit.Page[T], error) {
	const op = "logtail.Log.Page"
	if err := l.check(op); err != nil {
		return tablekit.Page[T]{}, err
	}
	var o PageOptions
	if opts != nil {
		o = *opts
	}
	if err := checkPageSize(op, o.PageSize); err != nil {
		return tablekit.Page[T]{}, err
	}
	if o.PageSize == 0 {
		o.PageSize = cmp.Or(l.pageSize, defaultPageSize)
	}
	after := ""
	if o.Continuation != "" {
		var err error
		if after, err = decodeCursor(op, o.Continuation, pk); err != nil {
			return tablekit.Page[T]{}, err
		}
	}
	items, err := l.collect(ctx, op, pk, after, o.PageSize, o.PageSize)
	if err != nil {
		return tablekit.Page[T]{}, err
	}
	p := tablekit.Page[T]{Items: items}
	if len(items) == o.PageSize {
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

func decodeCursor(op, tok, pk string) (string, error) {
	bad := func(why string) error {
		return &tablekit.ValidationError{Op: op, Property: "Continuation", Detail: "not a continuation token of this partition's pages: " + why, Err: tablekit.ErrInvalidInput}
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
// when after is ""), newest first, asking for at most pageSize entities
// per request (0: the service's maximum). On Cosmos DB it refuses, also
// when the first answers show Cosmos DB (Top refuses then).
func (l *Log[T]) collect(ctx context.Context, op, pk, after string, n, pageSize int) (_ []T, err error) {
	defer func() {
		if errors.Is(err, tablekit.ErrUnsupported) && l.table.Account().Service() == tablekit.ServiceCosmosDB {
			err = &tablekit.ValidationError{Op: op, Entity: l.table.Name(),
				Detail: "Latest and Page read the newest entries as the first of a partition in RowKey order, which Azure Cosmos DB for Table does not keep; the design guide says the log tail pattern is not suitable for Cosmos DB (Window still works: it sorts its range on the client)",
				Err:    tablekit.ErrUnsupported}
		}
	}()
	if l.table.Account().Service() == tablekit.ServiceCosmosDB {
		return nil, tablekit.ErrUnsupported
	}
	parts, err := l.partitions(op, pk)
	if err != nil {
		return nil, err
	}
	qo := &tablekit.QueryOptions{PageSize: pageSize}
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
func (l *Log[T]) merged(ctx context.Context, op, pk, lo, hi string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		parts, err := l.partitions(op, pk)
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
