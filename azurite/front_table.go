package azurite

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// tableOpKind is what a table service request does.
type tableOpKind int

const (
	opOther     tableOpKind = iota // service properties, tables, ACLs
	opQuery                        // GET <table>() with $filter
	opPointRead                    // GET <table>(PartitionKey='..',RowKey='..')
	opInsert                       // POST <table>
	opWrite                        // PUT, PATCH or MERGE <table>(keys)
	opDelete                       // DELETE <table>(keys)
	opBatch                        // POST $batch
)

// tableOp is a parsed table service request (or one action of a batch).
type tableOp struct {
	kind  tableOpKind
	table string
	// pk and rk are the entity's keys: from the URL for point operations,
	// from the body for inserts. keysKnown says whether they were parsed.
	pk, rk    string
	keysKnown bool
	body      []byte
}

// partition names the throttle bucket of the op's partition.
func (op *tableOp) partition() string {
	if !op.keysKnown {
		return ""
	}
	return strings.ToLower(op.table) + "\x00" + op.pk
}

// classifyTable parses a table request's method and escaped path (the
// path after the account prefix has been removed or not: only the last
// segment matters).
func classifyTable(method, xMethod, escapedPath string, query url.Values) tableOp {
	seg := escapedPath
	if i := strings.LastIndexByte(seg, '/'); i >= 0 {
		seg = seg[i+1:]
	}
	if seg == "$batch" {
		if method == http.MethodPost {
			return tableOp{kind: opBatch}
		}
		return tableOp{}
	}
	if query.Get("comp") != "" || query.Get("restype") != "" {
		return tableOp{}
	}
	unesc, err := url.PathUnescape(seg)
	if err != nil || unesc == "" {
		return tableOp{}
	}
	name, args, _ := strings.Cut(unesc, "(")
	if strings.EqualFold(name, "Tables") || name == "" {
		return tableOp{}
	}
	op := tableOp{table: name}
	if args == "" || args == ")" {
		switch method {
		case http.MethodGet:
			op.kind = opQuery
		case http.MethodPost:
			op.kind = opInsert
			if strings.EqualFold(xMethod, "MERGE") {
				op.kind = opOther // a keyless merge is not a thing
			}
		}
		return op
	}
	op.pk, op.rk, op.keysKnown = parseKeyArgs("(" + args)
	switch method {
	case http.MethodGet:
		op.kind = opPointRead
	case http.MethodPut, http.MethodPatch, "MERGE":
		op.kind = opWrite
	case http.MethodDelete:
		op.kind = opDelete
	case http.MethodPost:
		if strings.EqualFold(xMethod, "MERGE") {
			op.kind = opWrite
		}
	}
	return op
}

// parseKeyArgs parses "(PartitionKey='a”b',RowKey='c')" (quotes inside a
// key doubled) into its keys.
func parseKeyArgs(s string) (pk, rk string, ok bool) {
	rest, found := strings.CutPrefix(s, "(PartitionKey='")
	if !found {
		return "", "", false
	}
	pk, rest, found = cutQuoted(rest)
	if !found {
		return "", "", false
	}
	rest, found = strings.CutPrefix(rest, ",RowKey='")
	if !found {
		return "", "", false
	}
	rk, rest, found = cutQuoted(rest)
	if !found || rest != ")" {
		return "", "", false
	}
	return pk, rk, true
}

// cutQuoted reads an OData string literal's content up to its closing
// quote, undoubling quotes, and returns it and what follows.
func cutQuoted(s string) (val, rest string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), s[i+1:], true
	}
	return "", "", false
}

// readBody reads up to limit bytes of r's body. When the body is longer,
// it returns over == true and leaves r.Body able to replay everything.
func readBody(r *http.Request, limit int64) (body []byte, over bool, err error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, false, nil
	}
	body, err = io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(body)) > limit {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		return body, true, nil
	}
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return body, false, nil
}

// serveTable handles a table service request.
func (s *frontService) serveTable(w http.ResponseWriter, r *http.Request) {
	f := s.front
	q := r.URL.Query()
	op := tableOp{}
	if rest := strings.TrimPrefix(r.URL.EscapedPath(), s.prefix); rest != "" && rest != "/" {
		op = classifyTable(r.Method, r.Header.Get("X-HTTP-Method"), rest, q)
	}
	limits := entityLimits{cosmos: f.cosmos != nil}
	checkLimits := !f.opts.NoLimits
	sas := parseSASRange(q)
	if f.opts.NoSASRanges {
		sas = nil
	}

	switch op.kind {
	case opBatch:
		body, over, err := readBody(r, maxTableBody)
		if err != nil {
			s.tableError(w, r, http.StatusBadRequest, "InvalidInput", msgInvalidInput)
			return
		}
		bodyLimit := maxBatchBytes
		if limits.cosmos {
			bodyLimit = cosmosMaxBatchBytes
		}
		if checkLimits && (over || len(body) > bodyLimit) {
			f.limitRejected.Add(1)
			s.tableError(w, r, http.StatusRequestEntityTooLarge, "RequestBodyTooLarge", msgRequestBodyTooLarge)
			return
		}
		if over {
			s.forward(w, r, nil)
			return
		}
		b, err := parseBatch(r.Header.Get("Content-Type"), body)
		if err != nil {
			s.forward(w, r, nil) // let the target answer what it cannot parse
			return
		}
		if checkLimits {
			if fail := checkBatch(b, limits); fail != nil {
				f.limitRejected.Add(1)
				s.batchRefused(w, r, b, fail)
				return
			}
		}
		if sas != nil {
			for i, a := range b.ops {
				if a.keysKnown && !sas.contains(a.pk, a.rk) {
					f.sasRejected.Add(1)
					s.batchFailure(w, r, b, &batchFailure{
						status: http.StatusForbidden, code: "AuthorizationFailure",
						msg: indexed(i, msgAuthorizationFailure),
					})
					return
				}
			}
		}
		partition := ""
		if len(b.ops) > 0 {
			partition = b.ops[0].partition()
		}
		if !s.admit(w, r, partition, len(b.ops)) {
			return
		}
		if f.cosmos != nil {
			// Azurite ignores X-HTTP-Method inside a batch: it gets the
			// MERGE method Cosmos DB's tunnel stands for.
			if body, changed := untunnelMerges(body); changed {
				r.Body = io.NopCloser(bytes.NewReader(body))
				r.ContentLength = int64(len(body))
			}
		}
		s.forward(w, r, &tableNote{batch: b})

	case opInsert, opWrite:
		body, over, err := readBody(r, maxTableBody)
		if err != nil {
			s.tableError(w, r, http.StatusBadRequest, "InvalidInput", msgInvalidInput)
			return
		}
		if over {
			if checkLimits {
				f.limitRejected.Add(1)
				s.tableError(w, r, http.StatusRequestEntityTooLarge, "RequestBodyTooLarge", msgRequestBodyTooLarge)
				return
			}
			s.forward(w, r, nil)
			return
		}
		props, dup, perr := parseEntity(body)
		if perr == nil && op.kind == opInsert {
			k := keysOf(props)
			op.pk, op.rk, op.keysKnown = k.pk, k.rk, k.hasPK && k.hasRK
		}
		if checkLimits && perr == nil {
			if dup != "" {
				f.limitRejected.Add(1)
				s.tableError(w, r, http.StatusBadRequest, "DuplicatePropertiesSpecified", msgDuplicateProperties)
				return
			}
			k := entityKeys{pk: op.pk, rk: op.rk, hasPK: op.keysKnown, hasRK: op.keysKnown}
			if e := limits.checkEntity(body, props, k); e != nil {
				f.limitRejected.Add(1)
				s.tableError(w, r, e.status, e.code, e.msg)
				return
			}
		}
		if !s.checkSASKey(w, r, sas, &op) {
			return
		}
		if !s.admit(w, r, op.partition(), 1) {
			return
		}
		s.forward(w, r, nil)

	case opPointRead, opDelete:
		if !s.checkSASKey(w, r, sas, &op) {
			return
		}
		if !s.admit(w, r, op.partition(), 1) {
			return
		}
		s.forward(w, r, nil)

	case opQuery:
		if sas != nil && sas.bounded() {
			q.Set("$filter", sas.narrow(q.Get("$filter")))
			r.URL.RawQuery = q.Encode()
			f.sasFilter.Add(1)
		}
		if !s.admit(w, r, "", 0) {
			return
		}
		switch {
		case f.cosmos != nil:
			s.serveCosmosQuery(w, r)
		case f.paging != nil:
			s.servePagedQuery(w, r)
		default:
			// Azurite's own tokens went out in Table storage's shape.
			q, ok := passThroughTokens(r.URL.Query())
			if !ok {
				s.tableError(w, r, http.StatusBadRequest, "InvalidInput", msgInvalidInput)
				return
			}
			r.URL.RawQuery = q.Encode()
			s.forward(w, r, nil)
		}

	default:
		if !s.admit(w, r, "", 0) {
			return
		}
		var note *tableNote
		if f.cosmos != nil {
			note = s.noteCreate(r)
		}
		s.forward(w, r, note)
	}
}

// noteCreate notes a request that creates a table, for the ETag Cosmos DB
// gives a new table (see modifyTableAnswer); it returns nil for any other
// request.
func (s *frontService) noteCreate(r *http.Request) *tableNote {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), s.prefix)
	if r.Method != http.MethodPost || rest[strings.LastIndexByte(rest, '/')+1:] != "Tables" {
		return nil
	}
	return &tableNote{createTable: true}
}

// untunnelMerges rewrites the actions of a batch body sent as POST with
// "X-HTTP-Method: MERGE" into MERGE requests, and reports whether it
// changed anything.
func untunnelMerges(body []byte) ([]byte, bool) {
	lines := bytes.SplitAfter(body, []byte("\n"))
	changed := false
	for i := 0; i < len(lines); i++ {
		if !bytes.HasPrefix(lines[i], []byte("POST ")) || !bytes.Contains(lines[i], []byte(" HTTP/1.1")) {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			l := bytes.TrimRight(lines[j], "\r\n")
			if len(l) == 0 {
				break
			}
			k, v, ok := bytes.Cut(l, []byte(":"))
			if ok && strings.EqualFold(string(bytes.TrimSpace(k)), "X-HTTP-Method") && strings.EqualFold(string(bytes.TrimSpace(v)), "MERGE") {
				lines[i] = append([]byte("MERGE "), lines[i][len("POST "):]...)
				lines[j] = nil
				changed = true
				break
			}
		}
	}
	if !changed {
		return body, false
	}
	return bytes.Join(lines, nil), true
}

// checkSASKey refuses a point operation or insert whose key lies outside
// the SAS's range, and returns false then: a write with 403
// AuthorizationFailure, a point read with 404 ResourceNotFound, as the
// live service answers it (the entity is not visible through the token).
func (s *frontService) checkSASKey(w http.ResponseWriter, r *http.Request, sas *sasRange, op *tableOp) bool {
	if sas == nil || !op.keysKnown || sas.contains(op.pk, op.rk) {
		return true
	}
	s.front.sasRejected.Add(1)
	if op.kind == opPointRead {
		s.tableError(w, r, http.StatusNotFound, "ResourceNotFound", msgResourceNotFound)
		return false
	}
	s.tableError(w, r, http.StatusForbidden, "AuthorizationFailure", msgAuthorizationFailure)
	return false
}

const msgResourceNotFound = "The specified resource does not exist."
