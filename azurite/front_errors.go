package azurite

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The front answers with Azure's error shapes ("Table Storage error codes",
// "Common REST API error codes" in the Azure Storage REST reference, and
// the services' recorded answers, see front_answer.go):
//   - table service: {"odata.error":{"code":...,"message":{"lang":"en-US","value":...}}}
//     with Content-Type application/json; odata=minimalmetadata; ... and
//     no x-ms-error-code header (Cosmos mode: Cosmos DB's shape);
//   - queue and blob services: <?xml ...?><Error><Code>...</Code><Message>...</Message></Error>
//     with the x-ms-error-code header;
//   - both with the x-ms-request-id and x-ms-version headers, and a
//     message that ends "\nRequestId:<id>\nTime:<time>".

const (
	tableJSONContentType = "application/json;odata=minimalmetadata;streaming=true;charset=utf-8"
	errorTimeFormat      = "2006-01-02T15:04:05.0000000Z"
)

// newRequestID returns a random request id in GUID form.
func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// serviceMessage appends Azure's RequestId and Time lines to msg.
func serviceMessage(msg, requestID string) string {
	return msg + "\nRequestId:" + requestID + "\nTime:" + time.Now().UTC().Format(errorTimeFormat)
}

// setErrorHeaders sets the headers Azure sends with an error; code, when
// not "", as x-ms-error-code (queue and blob errors: table errors carry
// none).
func setErrorHeaders(w http.ResponseWriter, r *http.Request, code, requestID, contentType string) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	if code != "" {
		h.Set("x-ms-error-code", code)
	}
	h.Set("x-ms-request-id", requestID)
	if v := r.Header.Get("x-ms-version"); v != "" {
		h.Set("x-ms-version", v)
	}
	if v := r.Header.Get("x-ms-client-request-id"); v != "" {
		h.Set("x-ms-client-request-id", v)
	}
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
}

// tableErrorBody returns the OData JSON error body.
func tableErrorBody(code, value string) []byte {
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
	e.Error.Message.Lang = "en-US"
	e.Error.Message.Value = value
	b, _ := json.Marshal(e)
	return b
}

// writeTableError answers a table request with an OData JSON error, as
// Table storage does.
func writeTableError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	id := newRequestID()
	body := tableErrorBody(code, serviceMessage(msg, id))
	setErrorHeaders(w, r, "", id, storageErrorType)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// writeXMLError answers a queue or blob request with an XML error.
func writeXMLError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	id := newRequestID()
	var buf bytes.Buffer
	buf.WriteString(`<?xml version="1.0" encoding="utf-8"?><Error><Code>`)
	xml.EscapeText(&buf, []byte(code))
	buf.WriteString("</Code><Message>")
	xml.EscapeText(&buf, []byte(serviceMessage(msg, id)))
	buf.WriteString("</Message></Error>")
	setErrorHeaders(w, r, code, id, "application/xml")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// batchFailure is the failure of one action of a batch: the batch is
// answered 202 Accepted with a changeset response holding this one error,
// as Azure answers a failed entity group transaction.
type batchFailure struct {
	status int
	code   string
	msg    string // with the "<index>:" prefix where Azure puts one
}

// writeBatchFailure answers a $batch request whose changeset fails.
func writeBatchFailure(w http.ResponseWriter, r *http.Request, batchBoundary, changesetBoundary string, f *batchFailure) {
	id := newRequestID()
	outer := responseBoundary(batchBoundary, "batch", "batchresponse")
	inner := responseBoundary(changesetBoundary, "changeset", "changesetresponse")
	var b strings.Builder
	b.WriteString("--" + outer + "\r\n")
	b.WriteString("Content-Type: multipart/mixed; boundary=" + inner + "\r\n\r\n")
	b.WriteString("--" + inner + "\r\n")
	b.WriteString("Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", f.status, http.StatusText(f.status))
	b.WriteString("X-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\nPreference-Applied: return-no-content\r\nDataServiceVersion: 3.0;\r\n")
	b.WriteString("Content-Type: " + tableJSONContentType + "\r\n\r\n")
	b.Write(tableErrorBody(f.code, serviceMessage(f.msg, id)))
	b.WriteString("\r\n--" + inner + "--\r\n")
	b.WriteString("--" + outer + "--\r\n")
	h := w.Header()
	h.Set("Content-Type", "multipart/mixed; boundary="+outer)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("x-ms-request-id", id)
	if v := r.Header.Get("x-ms-version"); v != "" {
		h.Set("x-ms-version", v)
	}
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(http.StatusAccepted)
	w.Write([]byte(b.String()))
}

// responseBoundary names a response boundary after the request's, as Azure
// and Azurite do (batch_X -> batchresponse_X), or a new one.
func responseBoundary(req, from, to string) string {
	if rest, ok := strings.CutPrefix(req, from+"_"); ok {
		return to + "_" + rest
	}
	return to + "_" + newRequestID()
}

// sasSignature matches the signature of a SAS token in a URL's query
// (sig=..., also percent-encoded as sig%3D...).
var sasSignature = regexp.MustCompile(`(?i)\bsig(=|%3d)[^&\s"'<>]*`)

// redactSAS replaces the signatures of SAS tokens in s.
func redactSAS(s string) string {
	return sasSignature.ReplaceAllString(s, "sig=REDACTED")
}

// unreachable is the message of an answer to a request the front could
// not pass on (what, e.g. "reach the target"): err's text without the
// request's URL, whose query may hold a SAS token, and with any SAS
// signature left redacted. No secret of a request goes into an answer.
func unreachable(what string, err error) string {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		err = ue.Err
	}
	return "The front could not " + what + ": " + redactSAS(err.Error())
}
