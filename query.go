package tablekit

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"iter"
	"slices"
	"strings"

	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/names"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// QueryOptions configures [Table.Query], [Table.QueryPage] and [Table.Top].
// A nil *QueryOptions means defaults.
type QueryOptions struct {
	// PageSize is the most entities asked for per request (1–1000; 0 means
	// the service's maximum, 1000). The service may return fewer, even none,
	// before the end: Query reads on, QueryPage returns such pages as they
	// are.
	PageSize int
	// Limit stops Query after this many entities (0: no limit).
	Limit int
	// Select lists the properties to read (projection); nil reads all.
	// PartitionKey and RowKey are always read.
	Select []string
	// Continuation resumes a query where an earlier Page, or an iteration
	// recorded in a Cursor, left off. It must come from a query with the
	// same filter and Select.
	Continuation string
	// Cursor, when not nil, records how far Query (or QueryAs) got: after
	// the loop, even one the caller broke out of, Cursor.Token resumes the
	// query right after the last entity it yielded.
	Cursor *Cursor
	// AllowTableScan runs the query even if it is a table scan that the
	// table's TableOptions.TableScans would log or refuse: for queries
	// meant to read the whole table.
	AllowTableScan bool
	// KeyOrder says the caller needs the results in PartitionKey and RowKey
	// order, as Azure Table storage returns them. On a table where the
	// service does not keep that order (Azure Cosmos DB for Table, see
	// Options.Service), Query then reads the whole result first, at most
	// 10,000 entities (beyond that it fails with an error
	// matching ErrTooLarge: narrow the filter), and sorts it; QueryPage,
	// Cursor and Continuation, which cannot resume a sorted read, are
	// refused there with an error matching ErrUnsupported. Elsewhere it
	// changes nothing. An Account that finds out it is on Cosmos DB from
	// the query's first answer (Options.Service's ServiceAuto) sorts so
	// from then on, that query included.
	KeyOrder bool
	// Reserved reads tablekit's own bookkeeping rows too: the rows package
	// coord keeps in a user's partitions (idempotency records, fence
	// rows), whose RowKeys start with coord.ReservedPrefix ("~coord~").
	// Without it, Query, QueryPage, Top and Count leave them out on the
	// client (they are read and dropped, so a page may come back shorter,
	// even empty, with a Continuation that still resumes the query): code
	// that must see every row, such as a backup, sets it.
	Reserved bool
}

// Cursor records the progress of an iteration of [Table.Query], so that a
// caller who breaks out of the loop can resume it later, in this process
// or another: pass Token() as QueryOptions.Continuation. The zero Cursor
// is ready to use; a Cursor is not safe for concurrent use.
type Cursor struct {
	hash           uint64
	pagePK, pageRK *string // the continuation that fetched the current page
	lastPK, lastRK string  // keys of the last entity yielded
	pos            int     // entities of the current page yielded
	yielded        bool    // an entity of the current page was yielded
	done           bool    // the query is complete
}

// Token returns a continuation token that resumes the query right after
// the last entity yielded, or "" when the query is complete (or has not
// started: then resume with the original options).
func (c *Cursor) Token() string {
	if c == nil || c.done || (c.hash == 0 && !c.yielded) {
		return ""
	}
	var t continuation
	if c.pagePK != nil {
		t.PK = *c.pagePK
	}
	if c.pageRK != nil {
		t.RK = *c.pageRK
	}
	if c.yielded {
		t.AfterPK, t.AfterRK, t.After, t.AfterN = c.lastPK, c.lastRK, true, c.pos
	}
	t.Query = c.hash
	return encodeToken(t)
}

// Page is one page of query results.
type Page[T any] struct {
	// Items are the page's entities: possibly none although Continuation
	// is not "" (see Table.QueryPage).
	Items []T
	// Continuation resumes the query after this page in any process (pass
	// it in QueryOptions.Continuation); "" when the query is complete.
	Continuation string
}

// continuation is the decoded form of a continuation token.
type continuation struct {
	PK    string `json:"pk"`
	RK    string `json:"rk"`
	Query uint64 `json:"q"` // hash of the filter and select it belongs to
	// After, when set, says the page at PK/RK was read up to the entity
	// AfterPK/AfterRK, inclusive (a Cursor's token).
	After   bool   `json:"a,omitempty"`
	AfterPK string `json:"apk,omitempty"`
	AfterRK string `json:"ark,omitempty"`
	AfterN  int    `json:"an,omitempty"` // its position in the page, from 1
}

const tokenPrefix = "tk1."

func queryHash(filter, sel string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(filter))
	h.Write([]byte{0})
	h.Write([]byte(sel))
	return h.Sum64()
}

func encodeToken(c continuation) string {
	b, _ := json.Marshal(c)
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(tok string, hash uint64) (continuation, error) {
	var c continuation
	bad := func(why string) error {
		return &ValidationError{Property: "Continuation", Detail: "invalid continuation token: " + why, Err: ErrInvalidInput}
	}
	rest, ok := strings.CutPrefix(tok, tokenPrefix)
	if !ok {
		return c, bad("unknown format")
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return c, bad("not base64url")
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, bad("not a tablekit token")
	}
	if c.Query != hash {
		return c, bad("it belongs to a query with another filter or projection")
	}
	return c, nil
}

// query is a prepared query: filter and select text, paging state.
type query struct {
	op          string // the operation querying, for errors ("Query" when "")
	filter, sel string
	hash        uint64
	pageSize    int
	nextPK      *string
	nextRK      *string
	// skipTo, when set, skips the first page's entities up to and including
	// these keys, the skipN-th of the page (resuming from a Cursor's token).
	skipTo  *[2]string
	skipN   int
	skipped int // entities the last fetch skipped
	// entities is about how many entities the last page fetched holds
	// (at least as many), to size what they are decoded into.
	entities int
	reserved bool // QueryOptions.Reserved: keep tablekit's own rows (reservedRow)
}

func (t *Table[T]) prepare(f Filter, opts *QueryOptions) (*query, error) {
	if opts == nil {
		opts = &QueryOptions{}
	}
	text, err := f.build()
	if err != nil {
		return nil, err
	}
	if err := t.codec.CheckFilter(f.Properties()); err != nil {
		return nil, err
	}
	if opts.PageSize < 0 || opts.PageSize > limits.PageSize {
		return nil, &ValidationError{Property: "PageSize", Limit: "0–1000", Size: opts.PageSize, Detail: "page size out of range", Err: ErrInvalidInput}
	}
	if opts.Limit < 0 {
		return nil, &ValidationError{Property: "Limit", Detail: "negative limit", Err: ErrInvalidInput}
	}
	q := &query{filter: text, pageSize: opts.PageSize, reserved: opts.Reserved}
	if q.sel, err = selectText(opts.Select); err != nil {
		return nil, err
	}
	q.hash = queryHash(q.filter, q.sel)
	if opts.Continuation != "" {
		c, err := decodeToken(opts.Continuation, q.hash)
		if err != nil {
			return nil, err
		}
		if wire.CosmosToken(c.PK) && !t.onCosmos() {
			// The query was read from Cosmos DB.
			if err := t.svc.Show(wire.ShownToken); err != nil {
				return nil, err
			}
		}
		if c.PK != "" || c.RK != "" {
			q.nextPK, q.nextRK = &c.PK, &c.RK
		}
		if c.After {
			q.skipTo, q.skipN = &[2]string{c.AfterPK, c.AfterRK}, c.AfterN
		}
	}
	return q, nil
}

// selectText returns the $select text of a projection to the properties
// names (and the keys, always read), or "" for all properties.
func selectText(names []string) (string, error) {
	if len(names) == 0 {
		return "", nil
	}
	sel := make([]string, 0, len(names)+2)
	sel = append(sel, "PartitionKey", "RowKey")
	for _, s := range names {
		if s == "PartitionKey" || s == "RowKey" {
			continue
		}
		if s != "Timestamp" {
			if err := codec.ValidPropertyName(s); err != nil {
				return "", &ValidationError{Property: s, Detail: "Select: " + err.Error(), Err: ErrInvalidInput}
			}
		}
		sel = append(sel, s)
	}
	return strings.Join(sel, ","), nil
}

// more reports whether the service said there are more results.
func (q *query) more() bool {
	return (q.nextPK != nil && *q.nextPK != "") || (q.nextRK != nil && *q.nextRK != "")
}

func (q *query) token() string {
	if !q.more() {
		return ""
	}
	var c continuation
	if q.nextPK != nil {
		c.PK = *q.nextPK
	}
	if q.nextRK != nil {
		c.RK = *q.nextRK
	}
	if q.skipTo != nil {
		// Resuming a Cursor's token, the pages read so far held only what
		// the Cursor's loop had yielded: the next page skips on.
		c.After, c.AfterPK, c.AfterRK, c.AfterN = true, q.skipTo[0], q.skipTo[1], q.skipN
	}
	c.Query = q.hash
	return encodeToken(c)
}

// fetch reads one service page (top: entities asked for, 0 for default)
// and appends its entities to items.
func (t *Table[T]) fetch(ctx context.Context, op string, q *query, top int, items []T) ([]T, error) {
	err := t.fetchRaw(ctx, q, top, func(obj []byte) error {
		if !q.reserved && reservedRow(obj) {
			return nil
		}
		if items == nil {
			items = make([]T, 0, q.entities)
		}
		var v T
		if err := t.decode(op, obj, &v); err != nil {
			return err
		}
		items = append(items, v)
		return nil
	})
	return items, err
}

// fetchRaw reads one service page and calls fn with each entity's JSON as
// the service sent it; obj aliases the answer's body. On the first page of
// a query resumed from a Cursor's token, it skips what was yielded. Before
// it calls fn, the Account knows whether the page showed Cosmos DB (see
// the service policy of internal/wire, and a page out of key order): callers that rely on key
// order check Table.onCosmos after it.
func (t *Table[T]) fetchRaw(ctx context.Context, q *query, top int, fn func(obj []byte) error) error {
	wq := wire.Query{Filter: q.filter, Select: q.sel, Top: top}
	if q.nextPK != nil {
		wq.NextPartitionKey = *q.nextPK
	}
	if q.nextRK != nil {
		wq.NextRowKey = *q.nextRK
	}
	page, err := t.wire.QueryEntities(ctx, t.name, &wq, wire.Call{})
	if err != nil {
		op := q.op
		if op == "" {
			op = "Query"
		}
		return t.wrap(op, "", "", err)
	}
	q.nextPK, q.nextRK = nonEmpty(page.NextPartitionKey), nonEmpty(page.NextRowKey)
	// Every entity has a PartitionKey (also when projected); a string
	// value holding the text only makes the estimate larger.
	q.entities = bytes.Count(page.Body, []byte(`"PartitionKey":`))
	check := q.entities > 1 && !t.onCosmos()
	if q.skipTo == nil && !check {
		return codec.ForEachObject(page.Body, fn)
	}
	var objs [][]byte
	if err := codec.ForEachObject(page.Body, func(obj []byte) error { objs = append(objs, obj); return nil }); err != nil {
		return err
	}
	if check && !inKeyOrder(objs) {
		// Table storage answers in key order: this is Cosmos DB.
		if err := t.svc.Show(wire.ShownOrder); err != nil {
			return err
		}
	}
	if q.skipTo == nil {
		for _, obj := range objs {
			if err := fn(obj); err != nil {
				return err
			}
		}
		return nil
	}
	rest, passed, left := skipThrough(objs, *q.skipTo, q.skipN, t.onCosmos())
	q.skipped = len(objs) - len(rest)
	if passed {
		q.skipTo = nil
	} else {
		q.skipN = left
	}
	for _, obj := range rest {
		if err := fn(obj); err != nil {
			return err
		}
	}
	return nil
}

// reservedMark is how the RowKey of a reserved row starts in an entity's
// JSON, unless escaped.
var reservedMark = []byte(`"RowKey":"` + names.ReservedRowKeyPrefix)

// reservedRow reports whether obj, an entity's JSON, is one of tablekit's
// own rows (QueryOptions.Reserved). Only an object that holds the mark, or
// any escape (which could spell it), is parsed.
func reservedRow(obj []byte) bool {
	if !bytes.Contains(obj, reservedMark) && !bytes.Contains(obj, []byte(`\u`)) {
		return false
	}
	_, rk, err := codec.ObjectKeys(obj)
	return err == nil && strings.HasPrefix(rk, names.ReservedRowKeyPrefix)
}

// inKeyOrder reports whether the entities of a page (their JSON objects)
// are in key order, as Table storage returns them. An entity whose keys
// cannot be read counts as in order: reading it fails elsewhere. It reads
// each object only up to its keys, and allocates only for keys escaped in
// the JSON.
func inKeyOrder(objs [][]byte) bool {
	var prevPK, prevRK []byte
	for i, obj := range objs {
		pk, rk, ok := codec.RawKeys(obj)
		if !ok {
			return true
		}
		if i > 0 {
			c := compareKeyBytes(prevPK, pk)
			if c == 0 {
				c = compareKeyBytes(prevRK, rk)
			}
			if c > 0 {
				return false
			}
		}
		prevPK, prevRK = pk, rk
	}
	return true
}

// compareKeyBytes is keys.Compare of two keys' UTF-8 bytes: by UTF-16 code
// units. Without a character from U+E000 up (whose UTF-8 lead byte is 0xEE
// or more), byte order is that order.
func compareKeyBytes(a, b []byte) int {
	if !hasHighRune(a) && !hasHighRune(b) {
		return bytes.Compare(a, b)
	}
	return keys.Compare(string(a), string(b))
}

// hasHighRune reports whether b holds a character from U+E000 up, where
// UTF-16 order and code point order part.
func hasHighRune(b []byte) bool {
	for _, c := range b {
		if c >= 0xEE {
			return true
		}
	}
	return false
}

// nonEmpty returns &s, or nil when s is "".
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Query returns the entities that match f (the zero Filter matches all),
// reading page after page, including past pages the service returns empty.
// Iteration stops at the first error, which is yielded with a zero T. To
// resume a loop broken off early, set QueryOptions.Cursor. Index copies
// kept in the table match too (decoded as T): package index's Query skips
// them. tablekit's own rows (QueryOptions.Reserved) are left out.
func (t *Table[T]) Query(ctx context.Context, f Filter, opts *QueryOptions) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		err := t.scan(ctx, "Query", f, opts, "", func(obj []byte) (bool, error) {
			var v T
			if err := t.decode("Query", obj, &v); err != nil {
				return false, err
			}
			return yield(v, nil), nil
		})
		if err != nil {
			yield(zero, err)
		}
	}
}

// scan runs a query for operation op and calls each with every entity's
// JSON, until each returns false or an error, or the results (or
// opts.Limit) run out. sel, when not "", replaces opts.Select as the
// $select text (without keys). A table scan is logged or refused as the
// table's TableScans policy says.
func (t *Table[T]) scan(ctx context.Context, op string, f Filter, opts *QueryOptions, sel string, each func(obj []byte) (bool, error)) (err error) {
	defer func() { err = withOp(op, err) }()
	if err := t.usable(); err != nil {
		return err
	}
	if opts == nil {
		opts = &QueryOptions{}
	}
	if sel != "" {
		o := *opts
		o.Select = strings.Split(sel, ",")
		opts = &o
	}
	q, err := t.prepare(f, opts)
	if err != nil {
		return err
	}
	q.op = op
	if err := t.checkScan(ctx, op, q.filter, opts); err != nil {
		return err
	}
	if opts.KeyOrder && t.onCosmos() {
		return t.scanSorted(ctx, op, q, opts, nil, each)
	}
	cur := opts.Cursor
	if cur != nil {
		*cur = Cursor{hash: q.hash, pagePK: q.nextPK, pageRK: q.nextRK}
	}
	limit, seen := opts.Limit, 0
	var objs [][]byte
	for {
		top := q.pageSize
		if limit > 0 {
			rest := limit - seen
			if top == 0 || rest < top {
				top = min(rest, limits.PageSize)
			}
		}
		pagePK, pageRK := q.nextPK, q.nextRK
		objs = objs[:0]
		err := t.fetchRaw(ctx, q, top, func(obj []byte) error {
			objs = append(objs, obj)
			return nil
		})
		if err != nil {
			return err
		}
		if opts.KeyOrder && t.onCosmos() {
			// The page showed Cosmos DB, which does not keep key order.
			if seen > 0 {
				return t.unorderedError(op, "the service answered as Azure Cosmos DB for Table after the query had returned results in its order: open the Account with Options.Service set to ServiceCosmosDB")
			}
			return t.scanSorted(ctx, op, q, opts, objs, each)
		}
		if cur != nil {
			// Positions count from the page's start, skipped entities
			// (of a resumed query) included.
			cur.pagePK, cur.pageRK, cur.yielded, cur.pos = pagePK, pageRK, false, q.skipped
		}
		q.skipped = 0
		for _, obj := range objs {
			if cur != nil {
				cur.pos++
			}
			if !q.reserved && reservedRow(obj) {
				continue
			}
			if cur != nil {
				cur.lastPK, cur.lastRK, _ = codec.ObjectKeys(obj)
				cur.yielded = true
			}
			more, err := each(obj)
			if err != nil || !more {
				return err
			}
			seen++
			if limit > 0 && seen >= limit {
				return nil
			}
		}
		if !q.more() {
			if cur != nil {
				cur.done = true
			}
			return nil
		}
	}
}

// scanSorted is scan for a query that needs key order on a table whose
// service does not keep it: it reads the whole result, at most
// limits.CollectLimit (10,000) entities, sorts it and calls each in key
// order. read are the entities of the pages read already, if any; q
// continues after them.
func (t *Table[T]) scanSorted(ctx context.Context, op string, q *query, opts *QueryOptions, read [][]byte, each func(obj []byte) (bool, error)) error {
	if opts.Cursor != nil || opts.Continuation != "" {
		return t.unorderedError(op, "a query read in key order (QueryOptions.KeyOrder) is sorted after it is read whole, so it cannot be resumed: drop Cursor and Continuation")
	}
	type keyed struct {
		pk, rk string
		obj    []byte
	}
	var all []keyed
	add := func(obj []byte) error {
		if !q.reserved && reservedRow(obj) {
			return nil
		}
		if len(all) == limits.CollectLimit {
			return &ValidationError{Op: op, Entity: t.name, Limit: fmt.Sprint(limits.CollectLimit), Size: len(all) + 1, Unit: "entities",
				Detail: "a query read in key order on Azure Cosmos DB for Table is sorted on the client, which holds at most limits.CollectLimit entities: narrow the filter", Err: ErrTooLarge}
		}
		pk, rk, err := codec.ObjectKeys(obj)
		if err != nil {
			return err
		}
		all = append(all, keyed{pk, rk, slices.Clone(obj)})
		return nil
	}
	for _, obj := range read {
		if err := add(obj); err != nil {
			return err
		}
	}
	for read == nil || q.more() {
		read = [][]byte{}
		if err := t.fetchRaw(ctx, q, q.pageSize, add); err != nil {
			return err
		}
	}
	slices.SortFunc(all, func(a, b keyed) int { return compareKeys(a.pk, a.rk, b.pk, b.rk) })
	if opts.Limit > 0 && len(all) > opts.Limit {
		all = all[:opts.Limit]
	}
	for _, e := range all {
		if more, err := each(e.obj); err != nil || !more {
			return err
		}
	}
	return nil
}

// skipThrough drops the entities of a page up to and including the one
// with keys, the n-th from the page's start when it was read: when it is
// there, exactly those before it; when it was deleted meanwhile, those
// whose keys sort at or before it (in the service's UTF-16 order), or,
// when results are not in key order (unordered), the first n-1. passed
// reports whether the page reached that point; if not (the page is
// shorter: read with a smaller page size, or cut short by the service),
// the next page must be skipped through too, with n left in place of n.
func skipThrough(objs [][]byte, keys [2]string, n int, unordered bool) (rest [][]byte, passed bool, left int) {
	for i, obj := range objs {
		if pk, rk, err := codec.ObjectKeys(obj); err == nil && pk == keys[0] && rk == keys[1] {
			return objs[i+1:], true, 0
		}
	}
	if unordered {
		if len(objs) >= n {
			return objs[max(n-1, 0):], true, 0
		}
		return nil, false, n - len(objs)
	}
	for i, obj := range objs {
		pk, rk, err := codec.ObjectKeys(obj)
		if err == nil && compareKeys(pk, rk, keys[0], keys[1]) > 0 {
			return objs[i:], true, 0
		}
	}
	return nil, false, max(n-len(objs), 0)
}

// QueryPage returns the next page of entities that match f, starting at
// opts.Continuation: one request, whose answer it returns as it is. A page
// holds at most opts.PageSize entities and may hold fewer, or none, before
// the end: the service ends a page when it has worked on it for 5 seconds
// or reaches a partition boundary, and then returns a Continuation even
// with no entities. Read on while Continuation is not "" (an empty page
// says nothing about what comes next); Continuation resumes the query, also
// in another process. [Table.Query] reads past such pages itself.
// tablekit's own rows are left out of Items unless QueryOptions.Reserved
// asks for them: a page may hold fewer than the service sent.
func (t *Table[T]) QueryPage(ctx context.Context, f Filter, opts *QueryOptions) (_ Page[T], err error) {
	defer func() { err = withOp("QueryPage", err) }()
	if err := t.usable(); err != nil {
		return Page[T]{}, err
	}
	q, err := t.prepare(f, opts)
	if err == nil {
		q.op = "QueryPage"
		err = t.checkScan(ctx, "QueryPage", q.filter, opts)
	}
	keyOrder := opts != nil && opts.KeyOrder
	const instead = "read the results in key order with Query and QueryOptions.KeyOrder, which sorts them whole"
	if err == nil && keyOrder && t.onCosmos() {
		err = t.unorderedError("QueryPage", instead)
	}
	if err != nil {
		return Page[T]{}, err
	}
	items, err := t.fetch(ctx, "QueryPage", q, q.pageSize, nil)
	if err != nil {
		return Page[T]{}, err
	}
	if keyOrder && t.onCosmos() {
		return Page[T]{}, t.unorderedError("QueryPage", instead) // the page showed Cosmos DB
	}
	return Page[T]{Items: items, Continuation: q.token()}, nil
}

// Top returns the first n entities that match f, in key order, reading
// further pages when the service returns short ones. On Azure Cosmos DB
// for Table, whose results are not in key order, it refuses with an error
// matching ErrUnsupported: the first n by key would need every result. It
// refuses so too, returning nothing, when an answer it reads shows Cosmos
// DB (Options.Service's ServiceAuto).
// tablekit's own rows are left out unless QueryOptions.Reserved asks for
// them.
func (t *Table[T]) Top(ctx context.Context, f Filter, n int, opts *QueryOptions) (_ []T, err error) {
	defer func() { err = withOp("Top", err) }()
	if err := t.usable(); err != nil {
		return nil, err
	}
	const instead = "use Query with Collect and sort the results, or a point query"
	if t.onCosmos() {
		return nil, t.unorderedError("Top", instead)
	}
	if n <= 0 {
		return nil, &ValidationError{Property: "n", Detail: "Top needs n > 0", Err: ErrInvalidInput}
	}
	o := QueryOptions{}
	if opts != nil {
		o = *opts
	}
	o.Limit = n
	out := make([]T, 0, min(n, limits.PageSize))
	err = t.scan(ctx, "Query", f, &o, "", func(obj []byte) (bool, error) {
		if t.onCosmos() {
			return false, t.unorderedError("Top", instead) // a page showed Cosmos DB
		}
		var v T
		if err := t.decode("Query", obj, &v); err != nil {
			return false, err
		}
		out = append(out, v)
		return true, nil
	})
	if t.onCosmos() {
		return nil, t.unorderedError("Top", instead) // an answer showed Cosmos DB
	}
	return out, err
}
