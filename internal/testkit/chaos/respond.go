package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tablekit/tablekit/internal/wire"
)

// The messages Azure Storage sends with these codes (Azure docs, "Common
// REST API error codes"). Azure appends "\nRequestId:<id>\nTime:<time>".
const (
	serverBusyMessage = "The server is currently unable to receive requests. Please retry your request."
	timedOutMessage   = "The operation could not be completed within the permitted time."
)

// FaultError is the transport error an [Injector] returns for a [Reset]
// or [AnswerLost] fault. It unwraps to a *net.OpError caused by
// syscall.ECONNRESET, as a connection reset by the peer gives; the SDK
// retries it like any transport error.
type FaultError struct {
	// Kind is Reset or AnswerLost.
	Kind Kind
	// Err is the transport error the caller would have seen.
	Err error
}

// Error names the fault and the transport error.
func (e *FaultError) Error() string {
	return "chaos: injected " + string(e.Kind) + ": " + e.Err.Error()
}

// Unwrap returns the transport error.
func (e *FaultError) Unwrap() error { return e.Err }

// connReset is the error of a connection reset while doing op ("read" or
// "write").
func connReset(op string) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, syscall.ECONNRESET)}
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// errorResponse makes the error response Azure Storage sends for code:
// the status, the x-ms-error-code header, and the body the service uses
// (OData JSON for tables, XML for queues and blobs; none for HEAD).
func errorResponse(req *http.Request, service string, status int, code, message, requestID string) *http.Response {
	now := time.Now().UTC()
	full := message + "\nRequestId:" + requestID + "\nTime:" + now.Format("2006-01-02T15:04:05.0000000Z")
	h := http.Header{}
	var body []byte
	switch service {
	case wire.ServiceTable:
		type odataMessage struct {
			Lang  string `json:"lang"`
			Value string `json:"value"`
		}
		type odataError struct {
			Code    string       `json:"code"`
			Message odataMessage `json:"message"`
		}
		body, _ = json.Marshal(map[string]odataError{"odata.error": {code, odataMessage{"en-US", full}}})
		h.Set("Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8")
		h.Set("Server", "Windows-Azure-Table/1.0 Microsoft-HTTPAPI/2.0")
	default:
		body = []byte(`<?xml version="1.0" encoding="utf-8"?><Error><Code>` + code + `</Code><Message>` +
			xmlEscaper.Replace(full) + `</Message></Error>`)
		h.Set("Content-Type", "application/xml")
		if service == wire.ServiceQueue {
			h.Set("Server", "Windows-Azure-Queue/1.0 Microsoft-HTTPAPI/2.0")
		} else {
			h.Set("Server", "Windows-Azure-Blob/1.0 Microsoft-HTTPAPI/2.0")
		}
	}
	if req.Method == http.MethodHead {
		body = nil
	}
	h.Set("x-ms-error-code", code)
	h.Set("x-ms-request-id", requestID)
	if v := req.Header.Get("x-ms-version"); v != "" {
		h.Set("x-ms-version", v)
	}
	if v := req.Header.Get("x-ms-client-request-id"); v != "" {
		h.Set("x-ms-client-request-id", v)
	}
	h.Set("Date", now.Format(http.TimeFormat))
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", status, message),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
