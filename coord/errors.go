package coord

import (
	"context"
	"errors"
	"strings"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/codec"
)

var (
	// ErrHeld reports that another holder holds the lease: Acquire found
	// it held and not yet expired on this process's clock. Try again
	// later (Lease.Lead does).
	ErrHeld = errors.New("coord: lease held by another holder")
	// ErrLost reports that this process no longer holds the lease: another
	// holder took it over (Renew found a higher term or a changed ETag),
	// or its validity lapsed on this process's clock before a renewal
	// succeeded.
	ErrLost = errors.New("coord: lease lost")
	// ErrFenced reports a fenced write refused because the partition's
	// fence already holds a higher term than the write's: a newer holder
	// has written there, so the writer's lease is stale whatever its clock
	// says. Nothing was written.
	ErrFenced = errors.New("coord: fenced: a newer term has written to the partition")
	// ErrKeyReused reports a keyed write whose key was recorded for
	// another write: the key's record holds another fingerprint
	// (Write.Fingerprint) than this write's. The first write with the
	// key was applied; this one wrote nothing. A caller that recomputes a
	// repeat from changed state on purpose sets Write.Fingerprint to what
	// the key stands for instead.
	ErrKeyReused = errors.New("coord: idempotency key reused for another write")
)

// invalid returns the *tablekit.ValidationError of a refused argument of
// op ("Lease.Renew", without the package).
func invalid(op, property, detail string) error {
	return &tablekit.ValidationError{Op: "coord." + op, Property: property, Detail: detail, Err: tablekit.ErrInvalidInput}
}

// fail names op in err: a tablekit error that names no operation yet gets
// "coord.<op>" (internal/opname), any other error but a context error is
// wrapped as "coord: <op>: <err>", without repeating "coord: " when err's
// message starts with it (ErrHeld reads "coord: Lease.Acquire: lease held
// by another holder"). Context errors are returned as they are, as
// everywhere in tablekit.
func fail(op string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ve *tablekit.ValidationError
	var de *tablekit.DecodeError
	switch {
	case errors.As(err, &ve) && (ve.Op == "" || strings.HasPrefix(ve.Op, "coord.")):
		return codec.WithOp("coord."+op, err)
	case errors.As(err, &de) && (de.Op == "" || strings.HasPrefix(de.Op, "coord.")):
		return codec.WithOp("coord."+op, err)
	}
	return &opError{op: op, err: err}
}

// opError is an error of coord's operation op: "coord: <op>: <err>".
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string {
	return "coord: " + e.op + ": " + strings.TrimPrefix(e.err.Error(), "coord: ")
}

func (e *opError) Unwrap() error { return e.err }
