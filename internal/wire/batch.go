package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// The wire format of an entity group transaction, as the Table service
// REST reference ("Performing entity group transactions") describes it: a
// multipart/mixed batch holding one multipart/mixed changeset, whose parts
// are the actions' HTTP requests. The answer mirrors it: one HTTP response
// per action on success, or the one response of the failing action, whose
// OData error message starts with the action's 0-based index ("3:...").
//
// A merge action goes as the live services are recorded accepting it
// (testdata/recordings, FIDELITY.md): PATCH to Table storage, and POST with
// "X-HTTP-Method: MERGE" to Azure Cosmos DB for Table, as a merge outside
// a transaction does; no recording shows either service taking the MERGE
// method the old REST reference names.

const (
	batchPartHeader  = "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
	batchJSONHeaders = "Content-Type: application/json\r\nAccept: application/json;odata=minimalmetadata\r\nDataServiceVersion: 3.0;\r\n"
	batchNoBody      = "Accept: application/json;odata=minimalmetadata\r\nDataServiceVersion: 3.0;\r\n"
	// BatchPartFixed bounds the bytes of one part besides its entity body,
	// request URL and If-Match value: boundary line, part headers, request
	// line and request headers.
	BatchPartFixed = 320
	// BatchBaseURLMax bounds the length of a table endpoint URL
	// (https://<account>.table.core.windows.net or a custom domain).
	BatchBaseURLMax = 512
)

// Verb is what one write does, one per write verb of tablekit's Table; 0
// is none (a zero Action).
type Verb uint8

// The verbs.
const (
	Insert Verb = iota + 1 // insert; fails if the entity exists
	Upsert                 // insert or replace
	Update                 // replace an existing entity, ETag-conditional
	Merge                  // merge into the entity; ETag-conditional unless ""
	Delete                 // delete an existing entity, ETag-conditional
)

// String returns the verb's name, e.g. "Insert".
func (v Verb) String() string {
	switch v {
	case Insert:
		return "Insert"
	case Upsert:
		return "Upsert"
	case Update:
		return "Update"
	case Merge:
		return "Merge"
	case Delete:
		return "Delete"
	}
	return fmt.Sprintf("Verb(%d)", uint8(v))
}

// BatchAction is one write validated and encoded, ready to send alone or
// as a part of a transaction.
type BatchAction struct {
	Verb   Verb
	PK, RK string
	ETag   azcore.ETag // If-Match; "" for none
	Body   []byte      // the entity's OData JSON; nil for a delete
	Size   int         // bytes the action adds to a transaction body, at most
}

// Boundaries returns a fresh batch and changeset boundary. They are random,
// so that no entity value can contain them.
func Boundaries() (batch, changeset string) {
	var b [32]byte
	rand.Read(b[:])
	return "batch_" + hex.EncodeToString(b[:16]), "changeset_" + hex.EncodeToString(b[16:])
}

// AppendBatchBody appends the multipart body of a transaction of acts on
// table, whose endpoint is base (no trailing slash); tunnel sends merges
// as POST with X-HTTP-Method: MERGE (Cosmos DB), else as PATCH.
func AppendBatchBody(dst []byte, base, table, batch, changeset string, acts []BatchAction, tunnel bool) []byte {
	dst = append(dst, "--"...)
	dst = append(dst, batch...)
	dst = append(dst, "\r\nContent-Type: multipart/mixed; boundary="...)
	dst = append(dst, changeset...)
	dst = append(dst, "\r\n\r\n"...)
	for i := range acts {
		a := &acts[i]
		dst = append(dst, "--"...)
		dst = append(dst, changeset...)
		dst = append(dst, "\r\n"...)
		dst = append(dst, batchPartHeader...)
		merge := a.Verb == Merge
		switch {
		case merge && tunnel:
			dst = append(dst, http.MethodPost...)
		case merge:
			dst = append(dst, http.MethodPatch...)
		default:
			dst = append(dst, a.method()...)
		}
		dst = append(dst, ' ')
		dst = append(dst, base...)
		dst = append(dst, '/')
		dst = append(dst, table...)
		if a.Verb != Insert {
			dst = AppendKeyPredicate(dst, a.PK, a.RK)
		}
		dst = append(dst, " HTTP/1.1\r\n"...)
		if a.Body != nil {
			dst = append(dst, batchJSONHeaders...)
		} else {
			dst = append(dst, batchNoBody...)
		}
		if a.Verb == Insert {
			dst = append(dst, "Prefer: return-no-content\r\n"...)
		}
		if merge && tunnel {
			dst = append(dst, "X-HTTP-Method: MERGE\r\n"...)
		}
		if a.ETag != "" {
			dst = append(dst, "If-Match: "...)
			dst = append(dst, a.ETag...)
			dst = append(dst, "\r\n"...)
		}
		dst = append(dst, "\r\n"...)
		dst = append(dst, a.Body...)
		dst = append(dst, "\r\n"...)
	}
	dst = append(dst, "--"...)
	dst = append(dst, changeset...)
	dst = append(dst, "--\r\n--"...)
	dst = append(dst, batch...)
	dst = append(dst, "--\r\n"...)
	return dst
}

// method is the HTTP method of an action's request but a merge's, which
// AppendBatchBody chooses.
func (a *BatchAction) method() string {
	switch a.Verb {
	case Insert:
		return http.MethodPost
	case Delete:
		return http.MethodDelete
	}
	return http.MethodPut
}

// BatchOutcome is what a transaction's answer says.
type BatchOutcome struct {
	// ETags holds each action's new ETag on success ("" for deletes).
	ETags []azcore.ETag
	// On failure: the failing action's inner status, error code and index
	// (-1 when the answer does not name one).
	Status int
	Code   string
	Index  int
	Failed bool
}

// ParseBatchResponse reads the answer to a transaction of n actions. It
// reports ok=false when the body is not a batch answer it understands.
func ParseBatchResponse(body []byte, n int) (out BatchOutcome, ok bool) {
	out.Index = -1
	parts := 0
	rest := body
	for {
		i := bytes.Index(rest, []byte("HTTP/1.1 "))
		if i < 0 {
			break
		}
		if i > 0 && rest[i-1] != '\n' {
			rest = rest[i+9:]
			continue
		}
		line := rest[i:]
		if len(line) < 12 {
			return out, false
		}
		status, err := strconv.Atoi(string(line[9:12]))
		if err != nil {
			return out, false
		}
		head, after, found := cutHeaders(line)
		if !found {
			return out, false
		}
		if status >= 300 {
			out.Failed = true
			out.Status, out.Code, out.Index = parseBatchError(line)
			if out.Status == 0 {
				out.Status = status
			}
			if out.Index < 0 {
				out.Index = contentIDIndex(head, n)
			}
			return out, true
		}
		if out.ETags == nil {
			out.ETags = make([]azcore.ETag, 0, n)
		}
		out.ETags = append(out.ETags, azcore.ETag(headerValue(head, "etag")))
		parts++
		rest = after
	}
	return out, parts == n
}

// cutHeaders splits an inner HTTP response at the blank line after its
// headers.
func cutHeaders(b []byte) (head, rest []byte, ok bool) {
	if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
		return b[:i+2], b[i+4:], true
	}
	if i := bytes.Index(b, []byte("\n\n")); i >= 0 {
		return b[:i+1], b[i+2:], true
	}
	return nil, nil, false
}

// headerValue returns the value of the header called name (lower case) in
// head, or "".
func headerValue(head []byte, name string) string {
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if ok && strings.EqualFold(string(bytes.TrimSpace(k)), name) {
			return string(bytes.TrimSpace(v))
		}
	}
	return ""
}

// contentIDIndex reads the failing action's index from the 1-based
// Content-ID header some services send, or returns -1.
func contentIDIndex(head []byte, n int) int {
	id, err := strconv.Atoi(headerValue(head, "content-id"))
	if err != nil || id < 1 || id > n {
		return -1
	}
	return id - 1
}

// RefusedIndex returns the index of the action a transaction of n actions
// refused as a whole names in its error message ("3:..."), or -1.
func RefusedIndex(err error, n int) int {
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.RawResponse == nil {
		return -1
	}
	payload, perr := runtime.Payload(re.RawResponse)
	if perr != nil {
		return -1
	}
	if _, _, i := parseBatchError(payload); i < n {
		return i
	}
	return -1
}

// parseBatchError reads the inner status, error code and action index from
// a failed batch response: a multipart body whose failing part is an HTTP
// response with an OData error, or that OData error alone.
func parseBatchError(payload []byte) (status int, code string, index int) {
	index = -1
	if i := bytes.Index(payload, []byte("HTTP/1.1 ")); i >= 0 && len(payload) >= i+12 {
		status, _ = strconv.Atoi(string(payload[i+9 : i+12]))
	}
	start := odataErrorStart(payload)
	if start < 0 {
		return status, code, index
	}
	var body struct {
		Err struct {
			Code    string `json:"code"`
			Message struct {
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	if err := json.NewDecoder(bytes.NewReader(payload[start:])).Decode(&body); err != nil {
		return status, code, index
	}
	code = body.Err.Code
	if n, _, ok := strings.Cut(body.Err.Message.Value, ":"); ok {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 {
			index = i
		}
	}
	if status == 0 {
		status = statusForCode(code)
	}
	return status, code, index
}

// odataErrorStart returns the offset of the JSON object that holds the
// "odata.error" member in payload, whatever whitespace JSON allows between
// its brace and the member, or -1.
func odataErrorStart(payload []byte) int {
	i := bytes.Index(payload, []byte(`"odata.error"`))
	if i < 0 {
		return -1
	}
	j := bytes.LastIndexByte(payload[:i], '{')
	if j < 0 || len(bytes.TrimSpace(payload[j+1:i])) != 0 {
		return -1
	}
	return j
}

// statusForCode gives the HTTP status of common batch error codes when the
// body does not carry one.
func statusForCode(code string) int {
	switch code {
	case "EntityAlreadyExists", "TableAlreadyExists":
		return http.StatusConflict
	case "ResourceNotFound", "TableNotFound":
		return http.StatusNotFound
	case "UpdateConditionNotSatisfied", "ConditionNotMet":
		return http.StatusPreconditionFailed
	case "RequestBodyTooLarge", "EntityTooLarge":
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}
