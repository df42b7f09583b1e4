package tablekit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/opname"
	"github.com/tablekit/tablekit/internal/tablewire"
)

// Sentinel errors, checked with [errors.Is]. A service failure returned by
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
	// ErrTooLarge: a key, property, entity, transaction or message is over a
	// storage limit; checked before sending, or reported by the service (413).
	ErrTooLarge = codec.ErrTooLarge
	// ErrInvalidKey: a PartitionKey, RowKey or resource name breaks the
	// service's rules, or an entity has no key where one is required.
	ErrInvalidKey = codec.ErrInvalidKey
	// ErrThrottled: the service was too busy for the request and the SDK's
	// retries did not get through: 503 (ServerBusy), 429, or 500
	// OperationTimedOut, which Azure answers when a partition is over its
	// target.
	ErrThrottled = errors.New("tablekit: throttled")
	// ErrInvalidInput: an argument or value tablekit cannot encode or send,
	// such as a filter whose placeholders and arguments disagree.
	ErrInvalidInput = codec.ErrInvalidInput
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

// ValidationError reports input refused before anything was sent. It
// matches [ErrTooLarge], [ErrInvalidKey] or [ErrInvalidInput] with
// [errors.Is]. Op names the operation that refused the input as its caller
// wrote it ("Insert", "patterns.Wide.Merge"); Entity, Property, Limit,
// Size, Unit and Detail say what was refused and why; Err is the sentinel.
type ValidationError = codec.ValidationError

// DecodeError reports a stored entity that tablekit read but cannot turn
// into the caller's value: a property whose stored type or value does not
// fit its field, an answer it cannot parse, or an encrypted property that
// cannot be decrypted. Unlike a [ValidationError] it is not about the
// caller's input: the data came from the service (or from the Entity given
// to [FromEntity]), and nothing was written. A decryption failure matches
// [ErrDecrypt] (and [ErrKeyNotFound] when the key resolver lacks the key).
type DecodeError = codec.DecodeError

// withOp names op in err's *ValidationError or *DecodeError when that
// names no operation yet (codec.WithOp, the one mechanism every package
// uses); exported functions wrap their returns with it so every refusal
// says who refused.
func withOp(op string, err error) error { return codec.WithOp(op, err) }

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
	return codec.Quote(describeKeys(e.Table, e.PartitionKey, e.RowKey))
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

// sentinelFor maps an HTTP status and service error code to a sentinel.
func sentinelFor(status int, code string) error {
	switch code {
	case "OperationTimedOut":
		if status == http.StatusInternalServerError || status == http.StatusServiceUnavailable {
			return ErrThrottled
		}
	case "PropertyValueTooLarge", "EntityTooLarge", "RequestBodyTooLarge", "TooManyProperties":
		return ErrTooLarge
	case "InvalidKey", "OutOfRangeInput", "InvalidResourceName":
		if code != "OutOfRangeInput" || status == http.StatusBadRequest {
			return ErrInvalidKey
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
		return ErrTooLarge
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return ErrThrottled
	}
	return nil
}

// wrapError turns an error from the Azure SDK into tablekit's shape: a
// service failure becomes a *ServiceError that matches the sentinel for its
// status and code, a transport failure a *RequestError; context errors are
// returned bare, and errors already in tablekit's shape as they are. op
// names the operation for the message; table, pk and rk what it addressed,
// where known. A nil err gives nil. Sibling packages use it through
// internal/core.WrapError.
func wrapError(op, table, pk, rk string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if ctxErr := contextError(err); ctxErr != nil {
			return ctxErr
		}
	}
	var (
		se  *ServiceError
		ve  *ValidationError
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
			sentinel:     sentinelFor(re.StatusCode, re.ErrorCode),
			resp:         re,
		}
	}
	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, tablewire.ErrUnreadableAnswer) {
		return &RequestError{Op: op, Err: err}
	}
	return err
}

// wrapWriteError is wrapError for a write: when an earlier try may have
// been applied and the final failure does not settle it (a transport
// error, or a 408, 500, 502 or 504 answer), the error matches
// ErrOutcomeUnknown.
func wrapWriteError(op, table, pk, rk string, err error, att *attempts) error {
	werr := wrapError(op, table, pk, rk, err)
	if att == nil {
		return werr
	}
	var rqe *RequestError
	if errors.As(werr, &rqe) && !notSent(err) {
		// No answer, or one that could not be read: the request may have
		// been applied, and a caller that sends it again must know.
		rqe.unknown = true
		att.maybeApplied.Store(true)
		return werr
	}
	var se *ServiceError
	if errors.As(werr, &se) && att.maybeApplied.Load() {
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

// contextError returns the bare context error inside err, if any.
func contextError(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	}
	return nil
}
