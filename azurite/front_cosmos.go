package azurite

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"
	"slices"
)

// cosmosMode is the front's Cosmos DB state.
type cosmosMode struct {
	seed       uint64
	sortWithin bool
}

// orderKey is an entity's place in the Cosmos order.
type orderKey struct {
	hash   uint64
	pk, rk string
}

func (c *cosmosMode) key(pk, rk string) orderKey {
	h := fnv.New64a()
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], c.seed)
	h.Write(seed[:])
	h.Write([]byte(pk))
	if !c.sortWithin {
		h.Write([]byte{0})
		h.Write([]byte(rk))
	}
	return orderKey{mix64(h.Sum64()), pk, rk}
}

// mix64 is SplitMix64's finalizer: FNV-1a alone leaves keys that differ
// in their last byte close together.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func compareOrder(a, b orderKey) int {
	switch {
	case a.hash < b.hash:
		return -1
	case a.hash > b.hash:
		return 1
	}
	if c := compareKeys(a.pk, b.pk); c != 0 {
		return c
	}
	return compareKeys(a.rk, b.rk)
}

// cosmosEntity is one query result with its place.
type cosmosEntity struct {
	raw json.RawMessage
	key orderKey
}

// serveCosmosQuery answers a query in Cosmos order: it reads every result
// from the target, orders them and returns the page the request's
// continuation points to.
func (s *frontService) serveCosmosQuery(w http.ResponseWriter, r *http.Request) {
	c := s.front.cosmos
	q := r.URL.Query()
	pageSize, ok := queryTop(q)
	tok, tokOK := readPageToken(q)
	if !ok || !tokOK {
		s.tableError(w, r, http.StatusBadRequest, "InvalidInput", msgInvalidInput)
		return
	}
	id := queryIdentity(q, tok)
	var after *orderKey
	if tok.After {
		k := c.key(tok.PK, tok.RK)
		after = &k
	}
	// Make sure the keys come back to order by, and drop them after if
	// the caller did not select them.
	q, dropped := withKeys(q)
	q.Del("$top")
	q.Del("NextPartitionKey")
	q.Del("NextRowKey")

	s.front.forwarded.Add(1)
	var (
		all    []cosmosEntity
		top    map[string]json.RawMessage
		header http.Header
	)
	target := url.Values{}
	for {
		page := url.Values{}
		for k, v := range q {
			page[k] = v
		}
		for k, v := range target {
			page[k] = v
		}
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
		// A page the front cannot read is an error, never an empty page.
		var doc map[string]json.RawMessage
		var values []json.RawMessage
		err = json.Unmarshal(body, &doc)
		if err == nil {
			err = json.Unmarshal(doc["value"], &values)
		}
		if err != nil {
			s.tableError(w, r, http.StatusBadGateway, "InternalError", "The front could not read the target's page of entities: "+err.Error())
			return
		}
		if top == nil {
			top, header = doc, resp.Header
		}
		for _, v := range values {
			var k struct{ PartitionKey, RowKey string }
			if err := json.Unmarshal(v, &k); err != nil {
				s.tableError(w, r, http.StatusBadGateway, "InternalError", "The front could not read an entity of the target's page: "+err.Error())
				return
			}
			all = append(all, cosmosEntity{raw: v, key: c.key(k.PartitionKey, k.RowKey)})
		}
		npk := resp.Header.Get("x-ms-continuation-NextPartitionKey")
		nrk := resp.Header.Get("x-ms-continuation-NextRowKey")
		if npk == "" && nrk == "" {
			break
		}
		target = url.Values{"NextPartitionKey": {npk}}
		if nrk != "" {
			target.Set("NextRowKey", nrk)
		}
	}
	slices.SortFunc(all, func(a, b cosmosEntity) int { return compareOrder(a.key, b.key) })
	start := 0
	if after != nil {
		start, _ = slices.BinarySearchFunc(all, *after, func(e cosmosEntity, k orderKey) int {
			if compareOrder(e.key, k) <= 0 {
				return -1
			}
			return 1
		})
	}
	end := min(start+pageSize, len(all))
	n, trailing := end-start, false
	if p := s.front.paging; p != nil && !isPointQuery(r.URL.Query().Get("$filter")) {
		pks := make([]string, 0, end-start)
		for _, e := range all[start:end] {
			pks = append(pks, e.key.pk)
		}
		cut := p.cut(id, pks, end < len(all), tok.Empty)
		n, trailing = cut.n, cut.trailing
	}
	page := make([]json.RawMessage, 0, n)
	for _, e := range all[start : start+n] {
		page = append(page, e.raw)
	}
	var next *pageToken
	switch {
	case n == 0 && start < len(all):
		t := tok
		t.Empty++
		next = &t
	case start+n < len(all) || trailing:
		last := all[start+n-1].key
		next = &pageToken{After: true, PK: last.pk, RK: last.rk}
	}
	s.writePage(w, top, header, page, dropped, next)
}

// fetch sends r again to the target with the query q (the table
// service's Shared Key signature covers the path, not the query).
func (s *frontService) fetch(r *http.Request, q url.Values) (*http.Response, error) {
	u := *s.target
	u.Path, u.RawPath = r.URL.Path, r.URL.RawPath
	u.RawQuery = q.Encode()
	out, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for k, v := range r.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Accept-Encoding", "Connection", "Content-Length", "Keep-Alive", "Te", "Upgrade", "Proxy-Connection":
			continue
		}
		out.Header[k] = v
	}
	return s.client.Do(out)
}

// copyHeader copies the end-to-end headers of a response.
func copyHeader(dst, src http.Header) {
	for k, v := range src {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Connection", "Keep-Alive", "Transfer-Encoding", "Content-Encoding":
			continue
		}
		dst[k] = v
	}
}

// dropFields removes the named properties from an entity's JSON.
func dropFields(raw json.RawMessage, names []string) json.RawMessage {
	if len(names) == 0 {
		return raw
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	for _, n := range names {
		delete(m, n)
	}
	return marshalJSON(m)
}

// marshalJSON encodes v without escaping <, > and & (values here come
// from the service's own JSON, which never fails to encode).
func marshalJSON(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return bytes.TrimRight(buf.Bytes(), "\n")
}
