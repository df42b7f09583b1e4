package tablekit

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"hash/fnv"
	"iter"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// MaxPageSize is the most entities the service returns in one page.
const MaxPageSize = 1000

// QueryOptions configures [Table.Query], [Table.QueryPage] and [Table.Top].
// A nil *QueryOptions means defaults.
type QueryOptions struct {
	// PageSize is the most entities asked for per request (1–1000; 0 means
	// the service's maximum, 1000). The service may return fewer, even none,
	// before the end; tablekit keeps reading.
	PageSize int
	// Limit stops Query after this many entities (0: no limit).
	Limit int
	// Select lists the properties to read (projection); nil reads all.
	// PartitionKey and RowKey are always read.
	Select []string
	// Continuation resumes a query where an earlier Page left off. It must
	// come from a query with the same filter and Select.
	Continuation string
	// AllowTableScan runs the query even if it is a table scan that the
	// table's TableOptions.TableScans would log or refuse: for queries
	// meant to read the whole table.
	AllowTableScan bool
}

// Page is one page of query results.
type Page[T any] struct {
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
	filter, sel string
	hash        uint64
	pageSize    int
	nextPK      *string
	nextRK      *string
}

func (t *Table[T]) prepare(f Filter, opts *QueryOptions) (*query, error) {
	if opts == nil {
		opts = &QueryOptions{}
	}
	text, err := f.Build()
	if err != nil {
		return nil, err
	}
	if err := t.crypt.checkFilter(f); err != nil {
		return nil, err
	}
	if opts.PageSize < 0 || opts.PageSize > MaxPageSize {
		return nil, &ValidationError{Property: "PageSize", Limit: "0–1000", Size: opts.PageSize, Detail: "page size out of range", Err: ErrInvalidInput}
	}
	if opts.Limit < 0 {
		return nil, &ValidationError{Property: "Limit", Detail: "negative limit", Err: ErrInvalidInput}
	}
	q := &query{filter: text, pageSize: opts.PageSize}
	if len(opts.Select) > 0 {
		sel := make([]string, 0, len(opts.Select)+2)
		sel = append(sel, "PartitionKey", "RowKey")
		for _, s := range opts.Select {
			if s == "PartitionKey" || s == "RowKey" {
				continue
			}
			if s != "Timestamp" {
				if err := validPropertyName(s); err != nil {
					return nil, &ValidationError{Property: s, Detail: "Select: " + err.Error(), Err: ErrInvalidInput}
				}
			}
			sel = append(sel, s)
		}
		q.sel = strings.Join(sel, ",")
	}
	q.hash = queryHash(q.filter, q.sel)
	if opts.Continuation != "" {
		c, err := decodeToken(opts.Continuation, q.hash)
		if err != nil {
			return nil, err
		}
		q.nextPK, q.nextRK = &c.PK, &c.RK
	}
	return q, nil
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
	c.Query = q.hash
	return encodeToken(c)
}

// fetch reads one service page (top: entities asked for, 0 for default)
// and appends its entities to items.
func (t *Table[T]) fetch(ctx context.Context, q *query, top int, items []T) ([]T, error) {
	o := &aztables.ListEntitiesOptions{NextPartitionKey: q.nextPK, NextRowKey: q.nextRK}
	if q.filter != "" {
		o.Filter = &q.filter
	}
	if q.sel != "" {
		o.Select = &q.sel
	}
	if top > 0 {
		o.Top = to.Ptr(int32(top))
	}
	rctx, rb := withRawBody(ctx)
	resp, err := t.client.NewListEntitiesPager(o).NextPage(rctx)
	if err != nil {
		return items, WrapError("Query", err)
	}
	q.nextPK, q.nextRK = resp.NextPartitionKey, resp.NextRowKey
	if rb.ok {
		err = forEachObject(rb.data, func(obj []byte) error {
			var v T
			if err := t.decode(obj, &v); err != nil {
				return err
			}
			items = append(items, v)
			return nil
		})
		return items, err
	}
	for _, obj := range resp.Entities {
		var v T
		if err := t.decode(obj, &v); err != nil {
			return items, err
		}
		items = append(items, v)
	}
	return items, nil
}

// Query returns the entities that match f (the zero Filter matches all),
// reading page after page, including past pages the service returns empty.
// Iteration stops at the first error, which is yielded with a zero T.
func (t *Table[T]) Query(ctx context.Context, f Filter, opts *QueryOptions) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		q, err := t.prepare(f, opts)
		if err == nil {
			err = t.checkScan(ctx, "Query", q.filter, opts)
		}
		if err != nil {
			yield(zero, err)
			return
		}
		limit := 0
		if opts != nil {
			limit = opts.Limit
		}
		seen := 0
		var items []T
		for {
			top := q.pageSize
			if limit > 0 {
				rest := limit - seen
				if top == 0 || rest < top {
					top = min(rest, MaxPageSize)
				}
			}
			items, err = t.fetch(ctx, q, top, items[:0])
			if err != nil {
				yield(zero, err)
				return
			}
			for _, v := range items {
				if !yield(v, nil) {
					return
				}
				seen++
				if limit > 0 && seen >= limit {
					return
				}
			}
			if !q.more() {
				return
			}
		}
	}
}

// QueryPage returns the next page of entities that match f, starting at
// opts.Continuation. A page holds at most opts.PageSize entities and is
// empty only when the query is complete; its Continuation resumes the query,
// also in another process.
func (t *Table[T]) QueryPage(ctx context.Context, f Filter, opts *QueryOptions) (Page[T], error) {
	q, err := t.prepare(f, opts)
	if err == nil {
		err = t.checkScan(ctx, "QueryPage", q.filter, opts)
	}
	if err != nil {
		return Page[T]{}, err
	}
	var items []T
	for {
		items, err = t.fetch(ctx, q, q.pageSize, items)
		if err != nil {
			return Page[T]{}, err
		}
		if len(items) > 0 || !q.more() {
			return Page[T]{Items: items, Continuation: q.token()}, nil
		}
	}
}

// Top returns the first n entities that match f, in key order, reading
// further pages when the service returns short ones.
func (t *Table[T]) Top(ctx context.Context, f Filter, n int, opts *QueryOptions) ([]T, error) {
	if n <= 0 {
		return nil, &ValidationError{Property: "n", Detail: "Top needs n > 0", Err: ErrInvalidInput}
	}
	o := QueryOptions{}
	if opts != nil {
		o = *opts
	}
	o.Limit = n
	out := make([]T, 0, min(n, MaxPageSize))
	for v, err := range t.Query(ctx, f, &o) {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}
