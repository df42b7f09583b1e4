package replay

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Property is one entity property as the service stores it: its EDM type
// and its value in a canonical text (a Double as Go's shortest form or
// NaN/Infinity/-Infinity, a DateTime in UTC RFC 3339 with up to 7
// fractional digits, a Guid in lower case, a Binary in standard base64).
type Property struct {
	Type, Value string
}

func (p Property) String() string { return p.Type + " " + strconv.Quote(p.Value) }

// Normalize reads an entity's OData JSON (a request body, or an answer in
// any metadata level) into its properties as the service stores them:
// PartitionKey and RowKey included; Timestamp (set by the service, ignored
// when sent), odata.* members and null values (absent) left out. An
// untyped property takes the type the service gives it: a string is
// Edm.String, true/false Edm.Boolean, a whole number within 32 bits
// Edm.Int32, any other number Edm.Double (as Table storage stores
// 9223372036854775808000).
func Normalize(body []byte) (map[string]Property, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	out := make(map[string]Property, len(m))
	for name, v := range m {
		if strings.HasPrefix(name, "odata.") || strings.Contains(name, "@odata.") || name == "Timestamp" || v == nil {
			continue
		}
		typ, _ := m[name+"@odata.type"].(string)
		p, err := property(typ, v)
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		out[name] = p
	}
	return out, nil
}

func property(typ string, v any) (Property, error) {
	if typ == "" {
		switch v := v.(type) {
		case string:
			typ = "Edm.String"
		case bool:
			typ = "Edm.Boolean"
		case json.Number:
			if n, err := strconv.ParseInt(v.String(), 10, 32); err == nil {
				return Property{"Edm.Int32", strconv.FormatInt(n, 10)}, nil
			}
			typ = "Edm.Double"
		default:
			return Property{}, fmt.Errorf("a %T value", v)
		}
	}
	text := fmt.Sprint(v)
	switch typ {
	case "Edm.String":
		s, ok := v.(string)
		if !ok {
			return Property{}, fmt.Errorf("Edm.String holds %v", v)
		}
		return Property{typ, s}, nil
	case "Edm.Boolean":
		b, ok := v.(bool)
		if !ok {
			return Property{}, fmt.Errorf("Edm.Boolean holds %v", v)
		}
		return Property{typ, strconv.FormatBool(b)}, nil
	case "Edm.Int32", "Edm.Int64":
		// Int64 travels as a string; the value is kept exactly, also out
		// of range, so that what was sent is what is compared.
		n, ok := new(big.Int).SetString(text, 10)
		if !ok {
			return Property{}, fmt.Errorf("%s holds %q", typ, text)
		}
		return Property{typ, n.String()}, nil
	case "Edm.Double":
		switch text {
		case "NaN", "Infinity", "-Infinity":
			return Property{typ, text}, nil
		case "INF":
			return Property{typ, "Infinity"}, nil
		case "-INF":
			return Property{typ, "-Infinity"}, nil
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return Property{}, fmt.Errorf("Edm.Double holds %q", text)
		}
		return Property{typ, formatDouble(f)}, nil
	case "Edm.DateTime":
		t, err := time.Parse(time.RFC3339Nano, text)
		if err != nil {
			return Property{}, fmt.Errorf("Edm.DateTime holds %q", text)
		}
		return Property{typ, t.UTC().Format("2006-01-02T15:04:05.9999999Z07:00")}, nil
	case "Edm.Guid":
		return Property{typ, strings.ToLower(text)}, nil
	case "Edm.Binary":
		b, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			return Property{}, fmt.Errorf("Edm.Binary holds %q", text)
		}
		return Property{typ, base64.StdEncoding.EncodeToString(b)}, nil
	}
	return Property{}, fmt.Errorf("unknown type %q", typ)
}

func formatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// DiffEntities describes how two normalised entities differ ("" when they
// are the same), naming each property that differs.
func DiffEntities(want, got map[string]Property) string {
	var diffs []string
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: missing (want %s)", name, w))
		case g != w:
			diffs = append(diffs, fmt.Sprintf("%s: %s, want %s", name, g, w))
		}
	}
	for name, g := range got {
		if _, ok := want[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %s not in the recording", name, g))
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}

// Request is an HTTP request reduced to what the service acts on.
type Request struct {
	// Method is the HTTP method, and Tunnel the X-HTTP-Method header
	// ("MERGE" for a tunnelled merge), as sent.
	Method, Tunnel string
	// Path is the URL's path, percent-decoded, without the account's
	// path prefix (e.g. "/t(PartitionKey='a''b',RowKey='1')").
	Path string
	// Query holds the query parameters, decoded, but $format and the SAS
	// signature (sig), which the recordings sanitize.
	Query url.Values
	// IfMatch is the If-Match header.
	IfMatch string
	// Body is the request body.
	Body []byte
	// ContentType is the Content-Type header.
	ContentType string
}

// RequestOf reduces an HTTP request (and its body, read by the caller);
// prefix is the account's path prefix to take off the path ("" for
// none).
func RequestOf(method string, u *url.URL, h http.Header, body []byte, prefix string) Request {
	p := u.Path
	if prefix != "" {
		p = strings.TrimPrefix(p, prefix)
	}
	q := url.Values{}
	for k, v := range u.Query() {
		if k == "$format" || k == "sig" {
			continue
		}
		q[k] = v
	}
	return Request{
		Method: method, Tunnel: h.Get("X-HTTP-Method"), Path: p, Query: q,
		IfMatch: h.Get("If-Match"), Body: body, ContentType: h.Get("Content-Type"),
	}
}

// EntryRequest is the recorded request of e, reduced.
func EntryRequest(e Entry) Request {
	return RequestOf(e.Method, e.URL, e.RequestHeader, e.RequestBody, "")
}

// CompareRequest describes how got differs from the recorded request want
// ("" when the service would read them the same): method and tunnel,
// path, query, If-Match and, for an entity body, the normalised
// properties; for a $batch, the same for each action.
func CompareRequest(want, got Request) string {
	var diffs []string
	if want.Method != got.Method || !strings.EqualFold(want.Tunnel, got.Tunnel) {
		diffs = append(diffs, fmt.Sprintf("method %s%s, want %s%s", got.Method, tunnelText(got.Tunnel), want.Method, tunnelText(want.Tunnel)))
	}
	if want.Path != got.Path {
		diffs = append(diffs, fmt.Sprintf("path %q, want %q", got.Path, want.Path))
	}
	if d := diffQuery(want.Query, got.Query); d != "" {
		diffs = append(diffs, d)
	}
	if want.IfMatch != got.IfMatch {
		diffs = append(diffs, fmt.Sprintf("If-Match %q, want %q", got.IfMatch, want.IfMatch))
	}
	if d := compareBodies(want, got); d != "" {
		diffs = append(diffs, d)
	}
	return strings.Join(diffs, "; ")
}

func tunnelText(t string) string {
	if t == "" {
		return ""
	}
	return " (X-HTTP-Method: " + t + ")"
}

func diffQuery(want, got url.Values) string {
	var diffs []string
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	for k := range keys {
		w, g := strings.Join(want[k], ","), strings.Join(got[k], ",")
		if w != g {
			diffs = append(diffs, fmt.Sprintf("query %s=%q, want %q", k, g, w))
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}

func compareBodies(want, got Request) string {
	if len(bytes.TrimSpace(want.Body)) == 0 && len(bytes.TrimSpace(got.Body)) == 0 {
		return ""
	}
	if strings.HasPrefix(strings.ToLower(want.ContentType), "multipart/") {
		wantParts, err := BatchRequests(want.ContentType, want.Body)
		if err != nil {
			return "the recorded $batch body: " + err.Error()
		}
		gotParts, err := BatchRequests(got.ContentType, got.Body)
		if err != nil {
			return "the $batch body: " + err.Error()
		}
		if len(wantParts) != len(gotParts) {
			return fmt.Sprintf("%d actions, want %d", len(gotParts), len(wantParts))
		}
		var diffs []string
		for i := range wantParts {
			if d := CompareRequest(wantParts[i], gotParts[i]); d != "" {
				diffs = append(diffs, fmt.Sprintf("action %d: %s", i, d))
			}
		}
		return strings.Join(diffs, "; ")
	}
	w, err := Normalize(want.Body)
	if err != nil {
		return "the recorded body: " + err.Error()
	}
	g, err := Normalize(got.Body)
	if err != nil {
		return "the body: " + err.Error()
	}
	if d := DiffEntities(w, g); d != "" {
		return "entity: " + d
	}
	return ""
}

// BatchRequests reads the actions of a $batch request body: each part of
// its changeset (or the lone part of a batch without one) as a Request
// whose Path is its URL's path.
func BatchRequests(contentType string, body []byte) ([]Request, error) {
	parts, err := batchParts(contentType, body)
	if err != nil {
		return nil, err
	}
	out := make([]Request, 0, len(parts))
	for _, p := range parts {
		line, h, b, err := innerMessage(p)
		if err != nil {
			return nil, err
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			return nil, fmt.Errorf("a batch action's request line %q", line)
		}
		u, err := url.Parse(f[1])
		if err != nil {
			return nil, err
		}
		out = append(out, RequestOf(f[0], u, h, b, ""))
	}
	return out, nil
}

// Response is one inner response of a $batch answer.
type Response struct {
	// StatusLine is its first line, e.g. "HTTP/1.1 409 Conflict".
	Status     int
	StatusLine string
	Header     http.Header
	Body       []byte
	// PartHeader holds the MIME part's own headers (Content-Type:
	// application/http, ...), and PartHeaderLF says they end their lines
	// with a bare LF rather than CRLF.
	PartHeader   http.Header
	PartHeaderLF bool
}

// BatchResponses reads the inner responses of a $batch answer.
func BatchResponses(contentType string, body []byte) ([]Response, error) {
	boundary, err := bodyBoundary(contentType, body)
	if err != nil {
		return nil, err
	}
	var out []Response
	for _, raw := range rawParts(body, boundary) {
		head, rest, lf := splitHead(raw)
		ph := parseHeader(head)
		if inner, err := boundaryOf(ph.Get("Content-Type")); err == nil {
			for _, p := range rawParts(rest, inner) {
				r, err := response(p)
				if err != nil {
					return nil, err
				}
				out = append(out, r)
			}
			continue
		}
		r, err := response(raw)
		if err != nil {
			return nil, err
		}
		r.PartHeaderLF = lf
		out = append(out, r)
	}
	return out, nil
}

func response(raw []byte) (Response, error) {
	head, rest, lf := splitHead(raw)
	line, h, b, err := innerMessage(rest)
	if err != nil {
		return Response{}, err
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		return Response{}, fmt.Errorf("a batch response's status line %q", line)
	}
	status, err := strconv.Atoi(f[1])
	if err != nil {
		return Response{}, fmt.Errorf("a batch response's status line %q", line)
	}
	return Response{Status: status, StatusLine: line, Header: h, Body: b, PartHeader: parseHeader(head), PartHeaderLF: lf}, nil
}

// batchParts returns the raw contents (part headers taken off) of the
// parts of a batch's changeset, or of the batch when it has no changeset.
func batchParts(contentType string, body []byte) ([][]byte, error) {
	boundary, err := bodyBoundary(contentType, body)
	if err != nil {
		return nil, err
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	var out [][]byte
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		inner, err := boundaryOf(p.Header.Get("Content-Type"))
		if err != nil {
			b, err := io.ReadAll(p)
			if err != nil {
				return nil, err
			}
			out = append(out, b)
			continue
		}
		cr := multipart.NewReader(p, inner)
		for {
			cp, err := cr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			b, err := io.ReadAll(cp)
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
	}
}

// rawParts splits a multipart body at its boundary lines by hand, keeping
// each part's bytes (headers and line ends) as sent: Go's multipart
// reader accepts bare LF but hides which was used.
func rawParts(body []byte, boundary string) [][]byte {
	delim := []byte("--" + boundary)
	var out [][]byte
	chunks := bytes.Split(body, delim)
	for _, c := range chunks[1:] {
		if bytes.HasPrefix(c, []byte("--")) {
			break
		}
		c = bytes.TrimPrefix(c, []byte("\r\n"))
		c = bytes.TrimPrefix(c, []byte("\n"))
		c = bytes.TrimSuffix(c, []byte("\n"))
		c = bytes.TrimSuffix(c, []byte("\r"))
		out = append(out, c)
	}
	return out
}

// splitHead splits a MIME part at the blank line after its headers and
// says whether its header lines end with a bare LF.
func splitHead(raw []byte) (head, rest []byte, lf bool) {
	crlf := bytes.Index(raw, []byte("\r\n\r\n"))
	bare := bytes.Index(raw, []byte("\n\n"))
	switch {
	case bare >= 0 && (crlf < 0 || bare < crlf):
		return raw[:bare], raw[bare+2:], !bytes.Contains(raw[:bare], []byte("\r"))
	case crlf >= 0:
		return raw[:crlf], raw[crlf+4:], false
	}
	return raw, nil, false
}

// innerMessage reads an HTTP message inside a batch part: its first line,
// its headers and its body (trailing line end removed).
func innerMessage(raw []byte) (line string, h http.Header, body []byte, err error) {
	raw = bytes.TrimLeft(raw, "\r\n")
	head, rest, _ := splitHead(raw)
	first, hdr, _ := bytes.Cut(head, []byte("\n"))
	h = parseHeader(hdr)
	body = bytes.TrimSuffix(bytes.TrimSuffix(rest, []byte("\n")), []byte("\r"))
	return strings.TrimSpace(string(first)), h, body, nil
}

func parseHeader(head []byte) http.Header {
	r := textproto.NewReader(bufio.NewReader(io.MultiReader(bytes.NewReader(head), strings.NewReader("\r\n\r\n"))))
	h, _ := r.ReadMIMEHeader()
	return http.Header(h)
}

// bodyBoundary returns the boundary a multipart body's first line opens
// with, after checking that contentType is multipart: the recordings
// sanitize the boundary in a request's Content-Type
// (batch_00000000-0000-0000-0000-000000000000), not in its body.
func bodyBoundary(contentType string, body []byte) (string, error) {
	b, err := boundaryOf(contentType)
	if err != nil {
		return "", err
	}
	line, _, _ := bytes.Cut(body, []byte("\n"))
	if first, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("--")); ok && len(first) > 0 {
		return string(first), nil
	}
	return b, nil
}

func boundaryOf(contentType string) (string, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return "", fmt.Errorf("not a multipart content type: %q", contentType)
	}
	return params["boundary"], nil
}

// ErrorCode reads the OData error code of an error answer's body ("" when
// it has none).
func ErrorCode(body []byte) string {
	var e struct {
		Err struct {
			Code string `json:"code"`
		} `json:"odata.error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return e.Err.Code
}

// ErrorMessage reads the OData error message of an error answer's body.
func ErrorMessage(body []byte) string {
	var e struct {
		Err struct {
			Message struct {
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return e.Err.Message.Value
}
