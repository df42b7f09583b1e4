package tablekit

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/wire"
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
	// batchPartFixed bounds the bytes of one part besides its entity body,
	// request URL and If-Match value: boundary line, part headers, request
	// line and request headers.
	batchPartFixed = 320
	// batchBaseURLMax bounds the length of a table endpoint URL
	// (https://<account>.table.core.windows.net or a custom domain).
	batchBaseURLMax = 512
)

// boundaries returns a fresh batch and changeset boundary. They are random,
// so that no entity value can contain them.
func boundaries() (batch, changeset string) {
	var b [32]byte
	rand.Read(b[:])
	return "batch_" + hex.EncodeToString(b[:16]), "changeset_" + hex.EncodeToString(b[16:])
}

// appendBatchBody appends the multipart body of a transaction of acts on
// table, whose endpoint is base (no trailing slash); tunnel sends merges
// as POST with X-HTTP-Method: MERGE (Cosmos DB), else as PATCH.
func appendBatchBody(dst []byte, base, table, batch, changeset string, acts []encodedAction, tunnel bool) []byte {
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
		merge := a.kind == actMerge
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
		if a.kind != actInsert {
			dst = wire.AppendKeyPredicate(dst, a.pk, a.rk)
		}
		dst = append(dst, " HTTP/1.1\r\n"...)
		if a.body != nil {
			dst = append(dst, batchJSONHeaders...)
		} else {
			dst = append(dst, batchNoBody...)
		}
		if a.kind == actInsert {
			dst = append(dst, "Prefer: return-no-content\r\n"...)
		}
		if merge && tunnel {
			dst = append(dst, "X-HTTP-Method: MERGE\r\n"...)
		}
		if a.etag != "" {
			dst = append(dst, "If-Match: "...)
			dst = append(dst, a.etag...)
			dst = append(dst, "\r\n"...)
		}
		dst = append(dst, "\r\n"...)
		dst = append(dst, a.body...)
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
// appendBatchBody chooses.
func (a *encodedAction) method() string {
	switch a.kind {
	case actInsert:
		return http.MethodPost
	case actDelete:
		return http.MethodDelete
	}
	return http.MethodPut
}

// batchOutcome is what a transaction's answer says.
type batchOutcome struct {
	// etags holds each action's new ETag on success ("" for deletes).
	etags []azcore.ETag
	// On failure: the failing action's inner status, error code and index
	// (-1 when the answer does not name one).
	status int
	code   string
	index  int
	failed bool
}

// parseBatchResponse reads the answer to a transaction of n actions. It
// reports ok=false when the body is not a batch answer it understands.
func parseBatchResponse(body []byte, n int) (out batchOutcome, ok bool) {
	out.index = -1
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
			out.failed = true
			out.status, out.code, out.index = parseBatchError(line)
			if out.status == 0 {
				out.status = status
			}
			if out.index < 0 {
				out.index = contentIDIndex(head, n)
			}
			return out, true
		}
		if out.etags == nil {
			out.etags = make([]azcore.ETag, 0, n)
		}
		out.etags = append(out.etags, azcore.ETag(headerValue(head, "etag")))
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
