package tablekit

import (
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/wire"
)

// Sentinel errors, checked with [errors.Is]. A service failure returned by
// tablekit matches the sentinel for its status and error code and also
// unwraps to the SDK's *azcore.ResponseError for [errors.As].
var (
	// ErrNotFound: the table, entity, queue, message or blob does not exist (404).
	ErrNotFound = wire.ErrNotFound
	// ErrAlreadyExists: the entity, table, queue or blob already exists (409).
	ErrAlreadyExists = wire.ErrAlreadyExists
	// ErrPreconditionFailed: an ETag condition did not hold (412), i.e. the
	// entity changed since it was read. A conditional write whose first
	// try's answer was lost, and whose retry then met a new ETag, matches
	// ErrOutcomeUnknown instead (the new ETag may be its own): a
	// read-modify-write loop that reads again on ErrPreconditionFailed must
	// also read on ErrOutcomeUnknown, and decide from what it reads
	// whether its change is there ([Table.Modify] returns it to the caller).
	ErrPreconditionFailed = wire.ErrPreconditionFailed
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
	ErrThrottled = wire.ErrThrottled
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
	ErrOutcomeUnknown = wire.ErrOutcomeUnknown
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
// Nothing in the transaction was applied. Index is the 0-based index of the
// caller's action that failed (-1 when the service named none), Code the
// service's error code ("EntityAlreadyExists"), and Err matches the
// sentinel of the failure and unwraps to the SDK's *azcore.ResponseError.
type TransactionError = wire.TransactionError

// ServiceError is a failure reported by the storage service. It matches the
// sentinel for its status and code with [errors.Is] and unwraps to the SDK's
// *azcore.ResponseError for [errors.As]. A write whose earlier try may have
// been applied (its answer was lost) also matches [ErrOutcomeUnknown]: a
// throttled last try then matches both ErrThrottled and ErrOutcomeUnknown.
// Its fields: StatusCode (the HTTP status), Code (the service's error
// code, "ResourceNotFound"), Op (the operation, as ValidationError.Op),
// and Table, PartitionKey and RowKey (what the operation addressed, where
// known; a queue or container name goes in Table).
type ServiceError = wire.ServiceError

// RequestError is a request that got no answer from the service: the
// connection could not be made, broke, or timed out, or the answer could
// not be read. Op names the operation; Err is the transport's error (often
// a *url.Error). For a write that may have reached the service it also
// matches [ErrOutcomeUnknown].
type RequestError = wire.RequestError

// wrapError is wire.Wrap: an error of the Azure SDK in tablekit's shape.
func wrapError(op, table, pk, rk string, err error) error { return wire.Wrap(op, table, pk, rk, err) }

// wrapWriteError is wire.WrapWrite with att's record of the tries.
func wrapWriteError(op, table, pk, rk string, err error, att *attempts) error {
	if att == nil {
		return wire.WrapWrite(op, table, pk, rk, err, nil)
	}
	return wire.WrapWrite(op, table, pk, rk, err, &att.maybeApplied)
}
