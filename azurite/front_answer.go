package azurite

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// How the live services shape their table answers, as Microsoft's SDK test
// recordings show them (testdata/recordings; FIDELITY.md lists each
// behaviour with the recording that shows it), and as the front answers:
//
//   - No table error carries an x-ms-error-code header, on Table storage
//     (2019-02-02 and 2020-12-06) or Cosmos DB: the code is only in the
//     body. The front sends none and takes Azurite's off.
//   - Table storage words an error "<message>\nRequestId:<id>\nTime:<time
//     with 7 fractional digits>", with Content-Type "application/json;
//     odata=minimalmetadata; streaming=true; charset=utf-8" and the
//     x-ms-request-id and x-ms-version headers.
//   - Cosmos DB words it "<message>\nRequestID:<id>\n" (400s:
//     "<message>\r\nActivityId: <id>, documentdb-dotnet-sdk/2.14.0
//     Host/64-bit MicrosoftWindowsNT/10.0.20348.0\nRequestID:<id>\n"),
//     lang "en-us", Content-Type "application/json; odata=fullmetadata",
//     and sends no Server, x-ms-request-id or x-ms-version header.
//   - Continuation tokens: Table storage's look like "1!12!Y29udFRva2Vu"
//     (NextPartitionKey) and "1!4!MQ--" (NextRowKey): "1!", the length of
//     a base64 text whose padding is '-', "!", the text. Cosmos DB's
//     NextPartitionKey is JSON, {"token":"<base64>","range":{"min":"",
//     "max":"FF"}}, and its NextRowKey is "NA". Clients send them back
//     percent-encoded. The front's tokens (its own when it pages, Azurite's
//     wrapped when it passes a query on) take these shapes.
//   - A failed Cosmos DB batch: 202, the failing action's response in a
//     changeset whose part headers end in a bare LF (the inner status line
//     and headers in CRLF), Content-Type application/json;odata=
//     fullmetadata, message "<index>:<message>\n\nRequestID:<id>\n"; a
//     successful one names each action's response with Content-ID: <n>,
//     from 1. A batch Cosmos DB refuses before running it (the same entity
//     twice) is a top-level 400 whose message still starts "<index>:".

// Cosmos DB's wording where it differs from Table storage's (recorded).
var cosmosWording = map[string]string{
	"The table specified already exists.": "The specified table already exists.",
	msgInvalidInput:                       msgCosmosInvalidInput,
	msgInt64OutOfRange:                    msgCosmosInvalidInput,
	"The values are not specified for all properties in the entity.": "PartitionKey/RowKey cannot be empty",
}

const (
	msgCosmosInvalidInput = "One of the input values is invalid."
	// msgInt64OutOfRange is Table storage's message for an Edm.Int64
	// value beyond int64 (recorded).
	msgInt64OutOfRange   = "An error occurred while processing this request."
	cosmosActivitySuffix = ", documentdb-dotnet-sdk/2.14.0 Host/64-bit MicrosoftWindowsNT/10.0.20348.0"
	storageErrorType     = "application/json; odata=minimalmetadata; streaming=true; charset=utf-8"
)

// cosmosMessage words msg (Table storage's text, without RequestId and
// Time) as Cosmos DB does; inBatch for an action of a batch.
func cosmosMessage(status int, msg, id string, inBatch bool) string {
	index, text, indexed := cutIndex(msg)
	if w, ok := cosmosWording[text]; ok {
		text = w
	}
	if indexed {
		text = index + ":" + text
	}
	switch {
	case inBatch:
		return text + "\n\nRequestID:" + id + "\n"
	case status == http.StatusBadRequest:
		return text + "\r\nActivityId: " + id + cosmosActivitySuffix + "\nRequestID:" + id + "\n"
	}
	return text + "\nRequestID:" + id + "\n"
}

// cutIndex splits "3:message" into "3" and "message".
func cutIndex(msg string) (index, text string, ok bool) {
	n, rest, found := strings.Cut(msg, ":")
	if !found || n == "" {
		return "", msg, false
	}
	if _, err := strconv.Atoi(n); err != nil {
		return "", msg, false
	}
	return n, rest, true
}

// cosmosErrorType is the Content-Type of Cosmos DB's error answer to r:
// full metadata for an entity write, minimal for a read or a table
// request (recorded).
func cosmosErrorType(r *http.Request) string {
	if r != nil && (r.Method == http.MethodGet || strings.Contains(r.URL.Path, "/Tables")) {
		return "application/json; odata=minimalmetadata"
	}
	return "application/json; odata=fullmetadata"
}

// writeCosmosError answers r with a Cosmos DB error.
func writeCosmosError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	body := cosmosErrorBody(status, code, msg, false)
	h := w.Header()
	h.Set("Content-Type", cosmosErrorType(r))
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

func cosmosErrorBody(status int, code, msg string, inBatch bool) []byte {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message struct {
				Lang  string `json:"lang"`
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	e.Error.Code = code
	e.Error.Message.Lang = "en-us"
	e.Error.Message.Value = cosmosMessage(status, msg, newRequestID(), inBatch)
	b, _ := json.Marshal(e)
	return b
}

// tableError answers a table request with an error shaped and worded as
// the service the front stands for answers it.
func (s *frontService) tableError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if s.front.cosmos != nil {
		writeCosmosError(w, r, status, code, msg)
		return
	}
	writeTableError(w, r, status, code, msg)
}

// batchFailure answers a $batch request whose changeset fails at one
// action, as the service the front stands for does.
func (s *frontService) batchFailure(w http.ResponseWriter, r *http.Request, b *batch, f *batchFailure) {
	if s.front.cosmos != nil {
		body := cosmosBatchAnswer(b.boundary, b.changeset, []innerAnswer{{status: f.status, code: f.code, msg: f.msg}})
		w.Header().Set("Content-Type", "multipart/mixed; boundary="+responseBoundary(b.boundary, "batch", "batchresponse"))
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusAccepted)
		w.Write(body)
		return
	}
	writeBatchFailure(w, r, b.boundary, b.changeset, f)
}

// batchRefused answers a $batch request the service refuses before
// running it: Table storage as a failed changeset, Cosmos DB with a
// top-level error (recorded for the same entity twice; the front answers
// every batch rule so on Cosmos DB).
func (s *frontService) batchRefused(w http.ResponseWriter, r *http.Request, b *batch, f *batchFailure) {
	if s.front.cosmos != nil {
		writeCosmosError(w, r, f.status, f.code, f.msg)
		return
	}
	writeBatchFailure(w, r, b.boundary, b.changeset, f)
}

// innerAnswer is one action's response in a batch answer: an ETag on
// success, or a failure.
type innerAnswer struct {
	status int
	etag   string
	code   string // failures
	msg    string // failures: Table storage's text, index first
}

// cosmosBatchAnswer writes a 202 batch answer as Cosmos DB does.
func cosmosBatchAnswer(batchBoundary, changesetBoundary string, parts []innerAnswer) []byte {
	outer := responseBoundary(batchBoundary, "batch", "batchresponse")
	inner := responseBoundary(changesetBoundary, "changeset", "changesetresponse")
	var b bytes.Buffer
	b.WriteString("--" + outer + "\r\nContent-Type: multipart/mixed; boundary=" + inner + "\r\n\r\n")
	for i, p := range parts {
		b.WriteString("--" + inner + "\nContent-Type: application/http\nContent-Transfer-Encoding: binary\n\n")
		fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", p.status, http.StatusText(p.status))
		if p.status >= 300 {
			b.WriteString("Content-Type: application/json;odata=fullmetadata\r\n\r\n")
			b.Write(cosmosErrorBody(p.status, p.code, p.msg, true))
			b.WriteString("\r\n")
			break
		}
		if p.etag != "" {
			b.WriteString("ETag: " + p.etag + "\r\n")
		}
		fmt.Fprintf(&b, "Content-ID: %d\r\n\r\n\r\n", i+1)
	}
	b.WriteString("--" + inner + "--\n--" + outer + "--\r\n")
	return b.Bytes()
}

// The continuation token shapes.

// storageToken writes b as Table storage shapes a continuation value:
// "1!<n>!<base64 of b, padding '-'>", n the length of the base64 text.
func storageToken(b []byte) string {
	enc := strings.ReplaceAll(base64.StdEncoding.EncodeToString(b), "=", "-")
	return "1!" + strconv.Itoa(len(enc)) + "!" + enc
}

// parseStorageToken reads a value storageToken wrote.
func parseStorageToken(s string) ([]byte, bool) {
	rest, ok := strings.CutPrefix(s, "1!")
	if !ok {
		return nil, false
	}
	n, enc, ok := strings.Cut(rest, "!")
	if !ok || n != strconv.Itoa(len(enc)) {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(enc, "-", "="))
	return b, err == nil
}

// cosmosToken is Cosmos DB's NextPartitionKey.
type cosmosToken struct {
	Token string `json:"token"`
	Range struct {
		Min string `json:"min"`
		Max string `json:"max"`
	} `json:"range"`
}

// cosmosNextRowKey is the NextRowKey Cosmos DB sends with every token.
const cosmosNextRowKey = "NA"

func writeCosmosToken(b []byte) string {
	var t cosmosToken
	t.Token = base64.StdEncoding.EncodeToString(b)
	t.Range.Max = "FF"
	out, _ := json.Marshal(t)
	return string(out)
}

func parseCosmosToken(s string) ([]byte, bool) {
	var t cosmosToken
	if json.Unmarshal([]byte(s), &t) != nil || t.Token == "" {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(t.Token)
	return b, err == nil
}

// passThroughTokens turns the continuation of a query passed on to the
// target back into the target's own tokens (the front wrapped them in
// Table storage's shape); ok is false for a token that is not such.
func passThroughTokens(q url.Values) (url.Values, bool) {
	out := url.Values{}
	for k, v := range q {
		out[k] = v
	}
	for _, k := range []string{"NextPartitionKey", "NextRowKey"} {
		v := q.Get(k)
		if v == "" {
			continue
		}
		b, ok := parseStorageToken(v)
		if !ok {
			return nil, false
		}
		out.Set(k, string(b))
	}
	return out, true
}

// Answers passed on from the target.

// tableNote is what the front notes about a table request it passes on.
type tableNote struct {
	createTable bool   // POST Tables (Cosmos mode)
	batch       *batch // a $batch, parsed
}

// modifyTableAnswer rewrites an answer of the target to a table request
// as the live service shapes it: no x-ms-error-code header; the
// service's error wording and shape, batch answers and continuation
// token shape; in Cosmos mode, Cosmos DB's headers.
func (s *frontService) modifyTableAnswer(resp *http.Response, note *tableNote) error {
	h := resp.Header
	h.Del("x-ms-error-code")
	cosmos := s.front.cosmos != nil
	for _, k := range []string{"x-ms-continuation-NextPartitionKey", "x-ms-continuation-NextRowKey"} {
		if v := h.Get(k); v != "" && !cosmos {
			h.Set(k, storageToken([]byte(v)))
		}
	}
	if cosmos {
		cosmosHeaders(h, resp.StatusCode)
		if note != nil && note.createTable && resp.StatusCode < 300 {
			// Cosmos DB gives a new table an ETag (recorded).
			h.Set("ETag", `W/"datetime'`+url.QueryEscape(time.Now().UTC().Format(errorTimeFormat))+`'"`)
		}
	}
	ct := h.Get("Content-Type")
	switch {
	case resp.StatusCode >= 400 && strings.HasPrefix(ct, "application/json"):
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if code, msg, ok := odataError(body); ok {
			if cosmos {
				body = cosmosErrorBody(resp.StatusCode, code, msg, false)
				h.Set("Content-Type", cosmosErrorType(resp.Request))
			} else {
				id := h.Get("x-ms-request-id")
				if id == "" {
					id = newRequestID()
				}
				body = tableErrorBody(code, serviceMessage(msg, id))
				h.Set("Content-Type", storageErrorType)
			}
		}
		setBody(resp, body)
	case resp.StatusCode == http.StatusAccepted && note != nil && note.batch != nil:
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if parts, ok := readBatchAnswer(ct, body); ok {
			b := note.batch
			if cosmos {
				body = cosmosBatchAnswer(b.boundary, b.changeset, parts)
			} else {
				body = storageBatchAnswer(b.boundary, b.changeset, parts)
			}
			h.Set("Content-Type", "multipart/mixed; boundary="+responseBoundary(b.boundary, "batch", "batchresponse"))
		}
		setBody(resp, body)
	}
	return nil
}

// storageBatchAnswer writes a 202 batch answer as Table storage does:
// CRLF throughout, no Content-ID, the failure's message indexed.
func storageBatchAnswer(batchBoundary, changesetBoundary string, parts []innerAnswer) []byte {
	outer := responseBoundary(batchBoundary, "batch", "batchresponse")
	inner := responseBoundary(changesetBoundary, "changeset", "changesetresponse")
	var b bytes.Buffer
	b.WriteString("--" + outer + "\r\nContent-Type: multipart/mixed; boundary=" + inner + "\r\n\r\n")
	for _, p := range parts {
		b.WriteString("--" + inner + "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
		fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n", p.status, http.StatusText(p.status))
		if p.status >= 300 {
			b.WriteString("Preference-Applied: return-no-content\r\nDataServiceVersion: 3.0;\r\n")
			b.WriteString("Content-Type: " + tableJSONContentType + "\r\n\r\n")
			b.Write(tableErrorBody(p.code, serviceMessage(p.msg, newRequestID())))
			b.WriteString("\r\n")
			break
		}
		b.WriteString("DataServiceVersion: 1.0;\r\n")
		if p.etag != "" {
			b.WriteString("ETag: " + p.etag + "\r\n")
		}
		b.WriteString("\r\n\r\n")
	}
	b.WriteString("--" + inner + "--\r\n--" + outer + "--\r\n")
	return b.Bytes()
}

// relay answers with an answer of the target whose body has been read,
// rewritten as modifyTableAnswer rewrites the answers the front passes on.
func (s *frontService) relay(w http.ResponseWriter, resp *http.Response, body []byte) {
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err := s.modifyTableAnswer(resp, nil); err == nil {
		if b, err := io.ReadAll(resp.Body); err == nil {
			body = b
		}
	}
	copyHeader(w.Header(), resp.Header)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}

// cosmosHeaders takes off the headers Cosmos DB does not send, and gives
// a successful answer (status) Cosmos DB's Content-Type: every recorded
// 204 "application/json" (Table storage's 204s have none), a JSON body
// "application/json; odata=minimalmetadata" (Azurite writes it without
// the space).
func cosmosHeaders(h http.Header, status int) {
	for _, k := range []string{"Server", "x-ms-request-id", "x-ms-version", "x-ms-client-request-id", "Cache-Control", "X-Content-Type-Options"} {
		h.Del(k)
	}
	switch ct := h.Get("Content-Type"); {
	case status == http.StatusNoContent:
		h.Set("Content-Type", "application/json")
	case status < 300 && strings.HasPrefix(ct, "application/json;"):
		h.Set("Content-Type", "application/json; "+strings.TrimSpace(strings.TrimPrefix(ct, "application/json;")))
	}
}

func setBody(resp *http.Response, body []byte) {
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Del("Transfer-Encoding")
}

// odataError reads an OData error body: its code, and its message without
// the RequestId and Time lines the target adds.
func odataError(body []byte) (code, msg string, ok bool) {
	var e struct {
		Error *struct {
			Code    string `json:"code"`
			Message struct {
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == nil {
		return "", "", false
	}
	msg = e.Error.Message.Value
	if i := strings.Index(msg, "\nRequestId:"); i >= 0 {
		msg = msg[:i]
	}
	return e.Error.Code, msg, true
}

// readBatchAnswer reads the inner responses of a batch answer: each
// action's status and ETag, or the failure's code and message.
func readBatchAnswer(contentType string, body []byte) ([]innerAnswer, bool) {
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil || params["boundary"] == "" {
		return nil, false
	}
	var out []innerAnswer
	for _, part := range splitParts(body, params["boundary"]) {
		head, rest := cutHead(part)
		_, cs, err := mime.ParseMediaType(headerOf(head, "Content-Type"))
		if err != nil || cs["boundary"] == "" {
			continue
		}
		for _, p := range splitParts(rest, cs["boundary"]) {
			_, msg := cutHead(p)
			line, after, _ := bytes.Cut(bytes.TrimLeft(msg, "\r\n"), []byte("\n"))
			f := strings.Fields(string(line))
			if len(f) < 2 {
				return nil, false
			}
			status, err := strconv.Atoi(f[1])
			if err != nil {
				return nil, false
			}
			hdr, inner := cutHead(after)
			a := innerAnswer{status: status, etag: headerOf(hdr, "ETag")}
			if status >= 300 {
				var ok bool
				if a.code, a.msg, ok = odataError(bytes.TrimSpace(inner)); !ok {
					return nil, false
				}
			}
			out = append(out, a)
		}
	}
	return out, len(out) > 0
}

// splitParts splits a multipart body at its boundary lines.
func splitParts(body []byte, boundary string) [][]byte {
	chunks := bytes.Split(body, []byte("--"+boundary))
	var out [][]byte
	for _, c := range chunks[1:] {
		if bytes.HasPrefix(c, []byte("--")) {
			break
		}
		out = append(out, bytes.TrimLeft(c, "\r\n"))
	}
	return out
}

// cutHead splits a message at the blank line after its headers (CRLF or
// bare LF).
func cutHead(b []byte) (head, rest []byte) {
	if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
		if j := bytes.Index(b, []byte("\n\n")); j >= 0 && j < i {
			return b[:j], b[j+2:]
		}
		return b[:i], b[i+4:]
	}
	if j := bytes.Index(b, []byte("\n\n")); j >= 0 {
		return b[:j], b[j+2:]
	}
	return b, nil
}

// headerOf returns the value of the header called name in head.
func headerOf(head []byte, name string) string {
	for _, line := range strings.Split(string(head), "\n") {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), ":")
		if ok && strings.EqualFold(strings.TrimSpace(k), name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
