package azurite

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// maxEmptyPages is the most empty pages with a continuation the front
// answers in a row at one position.
const maxEmptyPages = 2

// pageToken is the position of a query read through the front.
type pageToken struct {
	// TPK and TRK are the target's continuation of the target page that
	// holds the position ("" for the first): passed-on queries only.
	TPK string `json:"tpk,omitempty"`
	TRK string `json:"trk,omitempty"`
	// After, when set, says the results up to and including the entity
	// PK/RK have been returned; N is its position in the target's page,
	// from 1 (passed-on queries only; a hint for how many to ask for).
	After bool   `json:"a,omitempty"`
	PK    string `json:"pk,omitempty"`
	RK    string `json:"rk,omitempty"`
	N     int    `json:"n,omitempty"`
	// Empty counts the empty pages answered in a row at this position.
	Empty int `json:"e,omitempty"`
	// Unordered says the target answers in no key order (it is Cosmos
	// DB, or a front in Cosmos mode): passed-on queries only; N then
	// counts what was returned of the target's page (see skipReturned).
	Unordered bool `json:"u,omitempty"`
}

// json returns the token's JSON, which goes out in the shape of the
// service the front stands for (see front_answer.go).
func (t pageToken) json() []byte {
	b, _ := json.Marshal(t)
	return b
}

// readPageToken reads the continuation of a query request, in Table
// storage's shape or Cosmos DB's: ok false when it has one that is not
// the front's.
func readPageToken(q url.Values) (tok pageToken, ok bool) {
	npk, nrk := q.Get("NextPartitionKey"), q.Get("NextRowKey")
	if npk == "" && nrk == "" {
		return tok, true
	}
	b, found := parseCosmosToken(npk)
	if !found {
		b, found = parseStorageToken(npk)
	}
	if !found || json.Unmarshal(b, &tok) != nil {
		return tok, false
	}
	return tok, true
}

// setPageToken sets (or, for nil, removes) the continuation headers of an
// answer, in the shape of the service the front stands for.
func (s *frontService) setPageToken(h http.Header, tok *pageToken) {
	h.Del("x-ms-continuation-NextPartitionKey")
	h.Del("x-ms-continuation-NextRowKey")
	if tok == nil {
		return
	}
	if s.front.cosmos != nil {
		h.Set("x-ms-continuation-NextPartitionKey", writeCosmosToken(tok.json()))
		h.Set("x-ms-continuation-NextRowKey", cosmosNextRowKey)
		return
	}
	h.Set("x-ms-continuation-NextPartitionKey", storageToken(tok.json()))
	h.Set("x-ms-continuation-NextRowKey", storageToken([]byte(tok.RK)))
}

// queryTop reads a query's $top (1,000 when absent); ok false when it is
// not a positive number.
func queryTop(q url.Values) (int, bool) {
	top := q.Get("$top")
	if top == "" {
		return 1000, true
	}
	n, err := strconv.Atoi(top)
	return n, err == nil && n > 0
}

// paging is the front's Azure-like pager.
type paging struct {
	seed uint64
}

// pageCut is how a page is cut.
type pageCut struct {
	n int // entities the page returns
	// trailing: the page ends the results yet carries a continuation.
	trailing bool
}

// cut decides how many of the entities available at a position the page
// returns: pks are the PartitionKeys of at most $top entities that come
// next, more says whether results go on after them, empty is how many
// empty pages were answered in a row at this position, and query names
// the query and position (the same ones decide the same).
func (p *paging) cut(query string, pks []string, more bool, empty int) pageCut {
	h := fnv.New64a()
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], p.seed)
	h.Write(seed[:])
	h.Write([]byte(query))
	x := mix64(h.Sum64())
	n := len(pks)
	if n == 0 && !more {
		return pageCut{} // the end
	}
	roll, pick := x%100, x>>8
	switch {
	case roll < 15 && empty < maxEmptyPages:
		return pageCut{} // the server's time ran out before it found any
	case roll < 40:
		// A partition boundary within the page.
		var at []int
		for i := 1; i < n; i++ {
			if pks[i] != pks[i-1] {
				at = append(at, i)
			}
		}
		if len(at) > 0 {
			return pageCut{n: at[pick%uint64(len(at))]}
		}
	case roll < 60:
		// The server's time ran out partway.
		if n > 1 {
			return pageCut{n: 1 + int(pick%uint64(n-1))}
		}
	}
	return pageCut{n: n, trailing: !more && n > 0 && (x>>40)%4 == 0}
}

// pointQuery matches the filter of a point query: one PartitionKey and
// one RowKey, as tablekit and the SDKs write it.
var pointQuery = regexp.MustCompile(`^\(?PartitionKey eq '(?:[^']|'')*'\)? and \(?RowKey eq '(?:[^']|'')*'\)?$`)

// isPointQuery reports whether a query's filter names one entity: the
// service looks it up at once, and answers it whole.
func isPointQuery(filter string) bool { return pointQuery.MatchString(strings.TrimSpace(filter)) }

// queryIdentity names a query for the pager's decisions: the parameters
// that shape its results, and its position. The table's name is left out,
// so that a test's tables, named afresh on each run, page the same way on
// every run.
func queryIdentity(q url.Values, tok pageToken) string {
	pos, _ := json.Marshal(tok)
	return strings.Join([]string{q.Get("$filter"), q.Get("$select"), q.Get("$top"), string(pos)}, "\x00")
}

// withKeys returns q with PartitionKey and RowKey added to its $select
// (when it has one), and the names it added, to take out of the answer.
func withKeys(q url.Values) (url.Values, []string) {
	sel := q.Get("$select")
	if sel == "" {
		return q, nil
	}
	out := url.Values{}
	for k, v := range q {
		out[k] = v
	}
	fields := strings.Split(sel, ",")
	var added []string
	for _, k := range []string{"PartitionKey", "RowKey"} {
		if !slices.ContainsFunc(fields, func(f string) bool { return strings.TrimSpace(f) == k }) {
			fields = append(fields, k)
			added = append(added, k)
		}
	}
	out.Set("$select", strings.Join(fields, ","))
	return out, added
}

// entityKeys reads the keys of an entity's JSON.
func rawKeys(raw json.RawMessage) (pk, rk string) {
	var k struct{ PartitionKey, RowKey string }
	json.Unmarshal(raw, &k)
	return k.PartitionKey, k.RowKey
}

// skipReturned returns how many entities of a target page the front
// returned already, up to and including the entity tok names, the
// tok.N-th of the page when it was read: where it is in the page, the
// entities before it and itself. Where it is not (deleted meanwhile, or
// on an earlier target page): on a target that answers in key order, as
// Table storage does, those that sort at or before it; on one that does
// not (unordered: Cosmos DB, a front in Cosmos mode), whose pages at one
// position are prefixes of one sequence, the first tok.N-1 (it was
// deleted), or the whole page and left more on the next target page (the
// page is shorter than what was returned of it).
func skipReturned(values []json.RawMessage, tok pageToken, unordered bool) (skipped, left int) {
	for i, v := range values {
		if pk, rk := rawKeys(v); pk == tok.PK && rk == tok.RK {
			return i + 1, 0
		}
	}
	if unordered {
		if len(values) >= tok.N {
			return max(tok.N-1, 0), 0
		}
		return len(values), tok.N - len(values)
	}
	n := 0
	for n < len(values) {
		pk, rk := rawKeys(values[n])
		if c := compareKeys(pk, tok.PK); c > 0 || c == 0 && compareKeys(rk, tok.RK) > 0 {
			break
		}
		n++
	}
	return n, 0
}

// unorderedAnswer reports whether a target's page shows that the target
// answers in no key order: a continuation token in Cosmos DB's shape, or
// entities out of key order.
func unorderedAnswer(npk string, values []json.RawMessage) bool {
	if _, ok := parseCosmosToken(npk); ok {
		return true
	}
	var prevPK, prevRK string
	for i, v := range values {
		pk, rk := rawKeys(v)
		if i > 0 && (compareKeys(prevPK, pk) > 0 || prevPK == pk && compareKeys(prevRK, rk) > 0) {
			return true
		}
		prevPK, prevRK = pk, rk
	}
	return false
}

// servePagedQuery answers a query passed on to the target as Azure may
// page it (see "Azure's paging" in the package documentation): it reads the target's page at the
// position, after the entities already returned, and cuts it.
func (s *frontService) servePagedQuery(w http.ResponseWriter, r *http.Request) {
	p := s.front.paging
	q := r.URL.Query()
	top, ok := queryTop(q)
	tok, tokOK := readPageToken(q)
	if !ok || !tokOK {
		s.tableError(w, r, http.StatusBadRequest, "InvalidInput", msgInvalidInput)
		return
	}
	id := queryIdentity(q, tok)
	base, dropped := withKeys(q)
	base.Del("$top")
	base.Del("NextPartitionKey")
	base.Del("NextRowKey")

	s.front.forwarded.Add(1)
	var (
		doc        map[string]json.RawMessage
		header     http.Header
		rest       []json.RawMessage
		skipped    int
		tpk, tnext string // the target's continuation after its page
		trk        string
	)
	for {
		page := url.Values{}
		for k, v := range base {
			page[k] = v
		}
		if tok.TPK != "" || tok.TRK != "" {
			page.Set("NextPartitionKey", tok.TPK)
			if tok.TRK != "" {
				page.Set("NextRowKey", tok.TRK)
			}
		}
		// Enough for the entities already returned from this target page
		// and a full page after them.
		page.Set("$top", strconv.Itoa(min(1000, top+tok.N)))
		resp, err := s.fetch(r, page)
		if err != nil {
			s.tableError(w, r, http.StatusBadGateway, "InternalError", unreachable("reach the target", err))
			return
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			s.tableError(w, r, http.StatusBadGateway, "InternalError", unreachable("read the target's answer", err))
			return
		}
		if resp.StatusCode != http.StatusOK {
			s.relay(w, resp, body)
			return
		}
		doc = nil
		var values []json.RawMessage
		if err := json.Unmarshal(body, &doc); err == nil {
			json.Unmarshal(doc["value"], &values)
		}
		header = resp.Header
		tpk = resp.Header.Get("x-ms-continuation-NextPartitionKey")
		trk = resp.Header.Get("x-ms-continuation-NextRowKey")
		tnext = tpk + trk
		// Skip what earlier pages returned: everything up to the last
		// entity returned (see skipReturned).
		tok.Unordered = tok.Unordered || unorderedAnswer(tpk, values)
		left := 0
		skipped = 0
		if tok.After {
			skipped, left = skipReturned(values, tok, tok.Unordered)
		}
		rest = values[skipped:]
		if len(rest) > 0 || tnext == "" {
			break
		}
		// This target page is done: on to the next, still after the last
		// entity returned (a target that pages as Azure may, such as
		// another front, can answer the same position again).
		tok = pageToken{TPK: tpk, TRK: trk, After: tok.After, PK: tok.PK, RK: tok.RK, N: left, Unordered: tok.Unordered}
	}

	avail := rest[:min(top, len(rest))]
	pks := make([]string, len(avail))
	for i, v := range avail {
		pks[i], _ = rawKeys(v)
	}
	more := len(rest) > len(avail) || tnext != ""
	c := pageCut{n: len(avail)}
	if !isPointQuery(q.Get("$filter")) {
		c = p.cut(id, pks, more, tok.Empty)
	}
	out := avail[:c.n]
	var next *pageToken
	switch {
	case c.n == 0 && (len(rest) > 0 || tnext != ""):
		t := tok
		t.Empty++
		next = &t
	case c.n < len(rest) || c.trailing:
		pk, rk := rawKeys(out[c.n-1])
		next = &pageToken{TPK: tok.TPK, TRK: tok.TRK, After: true, PK: pk, RK: rk, N: skipped + c.n, Unordered: tok.Unordered}
	case tnext != "":
		next = &pageToken{TPK: tpk, TRK: trk, After: tok.After, PK: tok.PK, RK: tok.RK, Unordered: tok.Unordered}
		if c.n > 0 {
			next.After = true
			next.PK, next.RK = rawKeys(out[c.n-1])
		}
	}
	s.writePage(w, doc, header, out, dropped, next)
}

// writePage answers a query with the entities of a page (taking the
// names dropped out of each), the rest of the target's answer (top, its
// headers) and the front's continuation token next (nil: none).
func (s *frontService) writePage(w http.ResponseWriter, top map[string]json.RawMessage, header http.Header, page []json.RawMessage, dropped []string, next *pageToken) {
	out := make([]json.RawMessage, 0, len(page))
	for _, e := range page {
		out = append(out, dropFields(e, dropped))
	}
	if top == nil {
		top = map[string]json.RawMessage{}
	}
	top["value"] = marshalJSON(out)
	body := marshalJSON(top)
	copyHeader(w.Header(), header)
	if s.front.cosmos != nil {
		cosmosHeaders(w.Header(), http.StatusOK)
	}
	s.setPageToken(w.Header(), next)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}
