package wire

// Errors: the errors a request ends in (ServiceError, RequestError,
// TransactionError and their sentinels) and how an error of the Azure SDK
// or a transport becomes one of them (Wrap, WrapWrite). Package tablekit
// declares aliases of its public names (tablekit.ServiceError is
// wire.ServiceError, tablekit.ErrNotFound is wire.ErrNotFound, ...), so
// errors.Is and errors.As hold across; the sibling packages wrap the SDK's
// errors of their own requests (queues, blobs) with Wrap.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/opname"
)

// The sentinels of service failures, checked with [errors.Is] (package
// tablekit declares them as its own, the same values; the ones of bad
// input, ErrTooLarge, ErrInvalidKey and ErrInvalidInput, are
// internal/codec's). A service failure returned by
// tablekit matches the sentinel for its status and error code and also
// unwraps to the SDK's *azcore.ResponseError for [errors.As].
var (
	// ErrNotFound: the table, entity, queue, message or blob does not exist (404).
	ErrNotFound = errors.New("tablekit: not found")
	// ErrAlreadyExists: the entity, table, queue or blob already exists (409).
	ErrAlreadyExists = errors.New("tablekit: already exists")
	// ErrPreconditionFailed: an ETag condition did not hold (412), i.e. the
	// entity changed since it was read. A conditional write whose first
	// try's answer was lost, and whose retry then met a new ETag, matches
	// ErrOutcomeUnknown instead (the new ETag may be its own): a
	// read-modify-write loop that reads again on ErrPreconditionFailed must
	// also read on ErrOutcomeUnknown, and decide from what it reads
	// whether its change is there ([Table.Modify] returns it to the caller).
	ErrPreconditionFailed = errors.New("tablekit: precondition failed")
	// ErrThrottled: the service was too busy for the request and the SDK's
	// retries did not get through: 503 (ServerBusy), 429, or 500
	// OperationTimedOut, which Azure answers when a partition is over its
	// target.
	ErrThrottled = errors.New("tablekit: throttled")
	// ErrOutcomeUnknown: a write may or may not have been applied. Its
	// answer was lost (a broken connection, a timeout, a 500 after the
	// request was sent), and the SDK's retry either got no answer either or
	// met a conflict the first try may have caused (an insert finding the
	// entity, an If-Match update finding a new ETag). The stored state
	// cannot settle it: another writer may have stored the same content.
	// Read the entity to find out before writing again anything that must
	// not be applied twice.
	ErrOutcomeUnknown = errors.New("tablekit: outcome unknown")
)

// TransactionError reports an entity group transaction the service refused.
// Nothing in the transaction was applied.
type TransactionError struct {
	// Index is the 0-based index of the caller's action that failed, or -1
	// when the service did not name one.
	Index int
	// Code is the service's error code, e.g. "EntityAlreadyExists".
	Code string
	// Err matches the sentinel for the failure (ErrAlreadyExists,
	// ErrNotFound, ...) and unwraps to the SDK's *azcore.ResponseError.
	Err error
}

// Error names the failing action and the service's error code.
func (e *TransactionError) Error() string {
	msg := "tablekit: transaction failed"
	if e.Index >= 0 {
		msg += fmt.Sprintf(" at action %d", e.Index)
	}
	if e.Code != "" {
		msg += ": " + e.Code
	} else if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if errors.Is(e.Err, ErrOutcomeUnknown) {
		msg += "; outcome unknown: an earlier try's answer was lost, so the transaction may have been applied"
	}
	return msg
}

// Unwrap returns the underlying service error.
func (e *TransactionError) Unwrap() error { return e.Err }

// ServiceError is a failure reported by the storage service. It matches the
// sentinel for its status and code with [errors.Is] and unwraps to the SDK's
// *azcore.ResponseError for [errors.As]. A write whose earlier try may have
// been applied (its answer was lost) also matches [ErrOutcomeUnknown]: a
// throttled last try then matches both ErrThrottled and ErrOutcomeUnknown.
type ServiceError struct {
	// StatusCode is the HTTP status of the failure.
	StatusCode int
	// Code is the service's error code, e.g. "ResourceNotFound".
	Code string
	// Op names the operation that failed, as ValidationError.Op does:
	// "Get", "archive.Client.Enqueue".
	Op string
	// Table, PartitionKey and RowKey name what the operation addressed,
	// where known (a queue or container name goes in Table).
	Table, PartitionKey, RowKey string
	sentinel                    error
	resp                        *azcore.ResponseError
	// unknown: an earlier try may have been applied, although this
	// failure (a throttled try) changed nothing; the error also matches
	// ErrOutcomeUnknown.
	unknown bool
}

// Error names the operation, what it addressed, the service's error code
// and the HTTP status.
func (e *ServiceError) Error() string {
	msg := opname.Prefix(e.Op)
	if e.Table != "" || e.PartitionKey != "" || e.RowKey != "" {
		msg += " " + e.target()
	}
	msg += ": "
	switch {
	case e.Code != "":
		msg += e.Code
	case http.StatusText(e.StatusCode) != "":
		msg += http.StatusText(e.StatusCode)
	default:
		msg += "the service refused the request"
	}
	if e.StatusCode != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.StatusCode)
	}
	if e.sentinel == ErrOutcomeUnknown || e.unknown {
		msg += "; the write may have been applied: an earlier try's answer was lost"
	}
	return msg
}

func (e *ServiceError) target() string {
	if e.PartitionKey == "" && e.RowKey == "" {
		return codec.Quote(e.Table)
	}
	return codec.Quote(codec.DescribeKeys(e.Table, e.PartitionKey, e.RowKey))
}

// Unwrap returns the matching sentinel (if any) and the SDK's response error.
func (e *ServiceError) Unwrap() []error {
	errs := make([]error, 0, 3)
	if e.sentinel != nil {
		errs = append(errs, e.sentinel)
	}
	if e.unknown {
		errs = append(errs, ErrOutcomeUnknown)
	}
	if e.resp != nil {
		errs = append(errs, e.resp)
	}
	return errs
}

// RequestError is a request that got no answer from the service: the
// connection could not be made, broke, or timed out, or the answer could
// not be read. It unwraps to the
// transport's error (often a *url.Error). For a write that may have
// reached the service it also matches [ErrOutcomeUnknown].
type RequestError struct {
	// Op names the operation that failed, as ValidationError.Op does.
	Op string
	// Err is the transport's error.
	Err     error
	unknown bool
}

// Error names the operation and the transport's error.
func (e *RequestError) Error() string {
	msg := opname.Prefix(e.Op) + ": no answer from the service"
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.unknown {
		msg += "; the write may have been applied"
	}
	return msg
}

// Unwrap returns the transport's error, and ErrOutcomeUnknown for a write
// that may have been applied.
func (e *RequestError) Unwrap() []error {
	if e.unknown {
		return []error{e.Err, ErrOutcomeUnknown}
	}
	return []error{e.Err}
}

// Sentinel maps an HTTP status and service error code to a sentinel,
// or nil.
func Sentinel(status int, code string) error {
	switch code {
	case "OperationTimedOut":
		if status == http.StatusInternalServerError || status == http.StatusServiceUnavailable {
			return ErrThrottled
		}
	case "PropertyValueTooLarge", "EntityTooLarge", "RequestBodyTooLarge", "TooManyProperties":
		return codec.ErrTooLarge
	case "InvalidKey", "OutOfRangeInput", "InvalidResourceName":
		if code != "OutOfRangeInput" || status == http.StatusBadRequest {
			return codec.ErrInvalidKey
		}
	}
	switch status {
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusConflict:
		return ErrAlreadyExists
	case http.StatusPreconditionFailed:
		return ErrPreconditionFailed
	case http.StatusRequestEntityTooLarge:
		return codec.ErrTooLarge
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return ErrThrottled
	}
	return nil
}

// Wrap turns an error from the Azure SDK into tablekit's shape: a service
// failure becomes a *ServiceError that matches the sentinel for its status
// and code, a transport failure a *RequestError; context errors are
// returned bare, and errors already in tablekit's shape as they are. op
// names the operation for the message (as ValidationError.Op does); table,
// pk and rk what it addressed, where known (a queue or container name goes
// in table). A nil err gives nil.
func Wrap(op, table, pk, rk string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if ctxErr := ContextError(err); ctxErr != nil {
			return ctxErr
		}
	}
	var (
		se  *ServiceError
		ve  *codec.ValidationError
		te  *TransactionError
		rqe *RequestError
	)
	if errors.As(err, &se) || errors.As(err, &ve) || errors.As(err, &te) || errors.As(err, &rqe) {
		return err
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return &ServiceError{
			StatusCode:   re.StatusCode,
			Code:         re.ErrorCode,
			Op:           op,
			Table:        table,
			PartitionKey: pk,
			RowKey:       rk,
			sentinel:     Sentinel(re.StatusCode, re.ErrorCode),
			resp:         re,
		}
	}
	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrUnreadableAnswer) {
		return &RequestError{Op: op, Err: err}
	}
	return err
}

// WrapWrite is Wrap for a write whose tries record in maybeApplied (nil:
// none recorded) whether one may have been applied: when one may have
// and the final failure does not settle it (a transport error, or a 408,
// 500, 502 or 504 answer), the error matches ErrOutcomeUnknown.
func WrapWrite(op, table, pk, rk string, err error, maybeApplied *atomic.Bool) error {
	werr := Wrap(op, table, pk, rk, err)
	if maybeApplied == nil {
		return werr
	}
	var rqe *RequestError
	if errors.As(werr, &rqe) && !NotSent(err) {
		// No answer, or one that could not be read: the request may have
		// been applied, and a caller that sends it again must know.
		rqe.unknown = true
		maybeApplied.Store(true)
		return werr
	}
	var se *ServiceError
	if errors.As(werr, &se) && maybeApplied.Load() {
		switch se.StatusCode {
		case http.StatusRequestTimeout, http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
			if se.sentinel == nil {
				se.sentinel = ErrOutcomeUnknown
			} else {
				// A 500 OperationTimedOut: throttled, and perhaps applied.
				se.unknown = true
			}
		case http.StatusServiceUnavailable, http.StatusTooManyRequests:
			// The last try was throttled, so it changed nothing, but an
			// earlier one may have been applied: throttled, and unknown.
			se.unknown = true
		}
	}
	return werr
}

// ContextError returns the bare context error inside err, if any.
func ContextError(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	}
	return nil
}

// NotSent reports whether a transport error certainly happened before the
// request reached the service: a failed dial or DNS lookup.
func NotSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// IsThrottled reports whether err says the service was too busy for the
// request (ErrThrottled: 503, 429, 500 OperationTimedOut), also for an
// error of the Azure SDK that tablekit has not wrapped.
func IsThrottled(err error) bool {
	return err != nil && errors.Is(Wrap("", "", "", "", err), ErrThrottled)
}

// NewServiceError is the *ServiceError of a failure the service reported
// inside an answer (a transaction's part), matching the sentinel of its
// status and code and unwrapping to resp.
func NewServiceError(status int, code, op, table string, resp *azcore.ResponseError) *ServiceError {
	return &ServiceError{StatusCode: status, Code: code, Op: op, Table: table, sentinel: Sentinel(status, code), resp: resp}
}

// Unreadable is the *RequestError of a write whose answer could not be
// read: it may have been applied (it matches ErrOutcomeUnknown).
func Unreadable(op string, err error) *RequestError {
	return &RequestError{Op: op, Err: err, unknown: true}
}

// Unsettled makes se, a conflict that an earlier, maybe-applied try of
// the same write may have caused, match ErrOutcomeUnknown in place of its
// sentinel.
func Unsettled(se *ServiceError) { se.sentinel = ErrOutcomeUnknown }
