package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/codec"
)

// ErrPartlyApplied reports an append refused because some of its events'
// ids are recorded in the stream, but not as this very append: another
// append recorded some of them, or they are at versions that are not
// consecutive in this order. Nothing was written. An append whose ids are
// all recorded, consecutively and in its order, is a repeat instead and
// returns the first result (Result.Replayed).
var ErrPartlyApplied = errors.New("stream: event ids partly applied by another append")

// ConflictError reports an append refused because the stream's version
// was not the expected one: another append came first, or the expected
// version is ahead of the stream. Nothing was written. It matches
// tablekit.ErrPreconditionFailed with errors.Is. Read the events after
// Expected (Store.Forward), decide again, and append at Current.
type ConflictError struct {
	// Stream is the stream appended to.
	Stream ID
	// Expected is the version the append expected.
	Expected int64
	// Current is the stream's version read after the refusal, or -1 when
	// that read failed too.
	Current int64
}

// Error says the stream, the expected and the current version.
func (e *ConflictError) Error() string {
	cur := fmt.Sprint(e.Current)
	if e.Current < 0 {
		cur = "unknown (the read after the refusal failed)"
	}
	return fmt.Sprintf("stream: Store.Append: version conflict on stream %s: expected version %d, current %s", e.Stream.name(), e.Expected, cur)
}

// Is reports whether target is tablekit.ErrPreconditionFailed, so that a
// conflict is handled like any optimistic-concurrency refusal.
func (e *ConflictError) Is(target error) bool { return target == tablekit.ErrPreconditionFailed }

// ErrTrimmed is matched by the error of a read from a version that
// Store.Trim dropped: a *TrimmedError, which says where the stream starts
// now.
var ErrTrimmed = errors.New("stream: events trimmed")

// TrimmedError reports a read (Store.Forward) that needed a version below
// the stream's start: Store.Trim dropped it. Nothing was skipped: the read
// yielded the versions before From, if any, in order. Read again from
// Start (after a snapshot of the state up to Start-1, say), or from
// elsewhere. It matches ErrTrimmed with errors.Is.
type TrimmedError struct {
	// Stream is the stream read.
	Stream ID
	// From is the version the read needed: the from it was given (1 if
	// below), or the one after the last version it yielded.
	From int64
	// Start is the stream's first version, as read after From was not
	// found.
	Start int64
}

// Error says the stream, the version needed and the start.
func (e *TrimmedError) Error() string {
	return fmt.Sprintf("stream: Store.Forward: stream %s was trimmed: version %d is gone, the stream starts at version %d", e.Stream.name(), e.From, e.Start)
}

// Is reports whether target is ErrTrimmed.
func (e *TrimmedError) Is(target error) bool { return target == ErrTrimmed }

// invalid returns the *tablekit.ValidationError of a refused argument of
// op ("Store.Append", without the package).
func invalid(op, property, detail string) error {
	return &tablekit.ValidationError{Op: "stream." + op, Property: property, Detail: detail, Err: tablekit.ErrInvalidInput}
}

// The limits of keys, as the root names them.
const (
	keyLimit       = "<= 1 KiB, no / \\ # ? or control characters"
	cosmosKeyLimit = "<= 255 bytes on Azure Cosmos DB for Table"
)

// badKey returns the *tablekit.ValidationError of an argument of op that
// makes a key the service refuses.
func badKey(op, property, limit, detail string) error {
	return &tablekit.ValidationError{Op: "stream." + op, Property: property, Limit: limit, Detail: detail, Err: tablekit.ErrInvalidKey}
}

// tooLarge returns the *tablekit.ValidationError of an append over a
// limit of one entity group transaction.
func tooLarge(op, limit string, size int, unit, detail string) error {
	return &tablekit.ValidationError{Op: "stream." + op, Limit: limit, Size: size, Unit: unit, Detail: detail, Err: tablekit.ErrTooLarge}
}

// fail names op in err, as coord does: a tablekit error that names no
// operation yet (or one of this package) gets "stream.<op>"; any other
// error but a context error, a ConflictError or an error of this package
// is wrapped as "stream: <op>: <err>".
func fail(op string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ve *tablekit.ValidationError
	var de *tablekit.DecodeError
	var ce *ConflictError
	var te *TrimmedError
	switch {
	case errors.As(err, &ce), errors.As(err, &te):
		return err
	case errors.As(err, &ve) && (ve.Op == "" || strings.HasPrefix(ve.Op, "stream.")):
		return codec.WithOp("stream."+op, err)
	case errors.As(err, &de) && (de.Op == "" || strings.HasPrefix(de.Op, "stream.")):
		return codec.WithOp("stream."+op, err)
	}
	return &opError{op: op, err: err}
}

// opError is an error of operation op: "stream: <op>: <err>".
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string {
	return "stream: " + e.op + ": " + strings.TrimPrefix(e.err.Error(), "stream: ")
}

func (e *opError) Unwrap() error { return e.err }
