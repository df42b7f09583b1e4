package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
)

// Outcome is what a writer was told about an operation.
type Outcome int

// The outcomes. The zero Outcome is not one of them, so that an Op whose
// outcome was never set is not taken for acknowledged.
const (
	// OK: the operation was acknowledged; it took effect.
	OK Outcome = iota + 1
	// Failed: the service or tablekit said it did not take effect.
	Failed
	// Unknown: the writer cannot tell (the answer was lost, the context
	// ended, a 5xx other than 503, or tablekit said the outcome is
	// unknown).
	Unknown
)

// String returns "ok", "failed" or "unknown".
func (o Outcome) String() string {
	if names := [...]string{OK: "ok", Failed: "failed", Unknown: "unknown"}; o > 0 && int(o) < len(names) {
		return names[o]
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// OutcomeOf classifies the error an operation returned by what it tells
// the caller:
//
//   - nil: OK;
//   - a context error, a transport error (such as an injected [FaultError]),
//     or a service answer of 500, 502 or 504 (OperationTimedOut and the
//     like: Azure may have applied the request): Unknown;
//   - any other service answer (4xx, 503 ServerBusy, a refused
//     transaction), a conflict a pattern found before writing (an error
//     matching ErrPreconditionFailed, ErrAlreadyExists or ErrNotFound but
//     not ErrOutcomeUnknown: tablekit's promise is that such a write did
//     not happen), input tablekit refused before sending (a
//     ValidationError, ErrInvalidInput, ErrInvalidKey, ErrTooLarge), and a
//     stored entity tablekit could not read (a DecodeError): Failed;
//   - any other error: Unknown, since nothing says it did not happen.
//
// An error whose chain has an `OutcomeUnknown() bool` method returning true
// is Unknown whatever else it wraps.
func OutcomeOf(err error) Outcome {
	if err == nil {
		return OK
	}
	if errors.Is(err, tablekit.ErrOutcomeUnknown) {
		return Unknown // tablekit could not tell whether the write was applied
	}
	if errors.Is(err, tablekit.ErrSkipped) {
		return Failed // a bulk item never sent
	}
	var u interface{ OutcomeUnknown() bool }
	if errors.As(err, &u) && u.OutcomeUnknown() {
		return Unknown
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Unknown
	}
	var fe *FaultError
	var ne net.Error
	if errors.As(err, &fe) || errors.As(err, &ne) {
		return Unknown
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		switch re.StatusCode {
		case http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
			return Unknown
		}
		return Failed
	}
	if errors.Is(err, tablekit.ErrPreconditionFailed) || errors.Is(err, tablekit.ErrAlreadyExists) ||
		errors.Is(err, tablekit.ErrNotFound) {
		return Failed // a conflict, found by the service or by a version check before writing
	}
	var ve *tablekit.ValidationError
	if errors.As(err, &ve) || errors.Is(err, tablekit.ErrInvalidInput) ||
		errors.Is(err, tablekit.ErrInvalidKey) || errors.Is(err, tablekit.ErrTooLarge) {
		return Failed // refused before anything was sent
	}
	var de *tablekit.DecodeError
	if errors.As(err, &de) {
		return Failed // a read whose answer could not be decoded
	}
	return Unknown
}

// Op is one operation in a [History]: who did what to which key, and what
// they were told.
type Op struct {
	Writer int    // the writer's index
	Seq    int    // 0-based order of the op among its writer's ops
	Name   string // what the op is, e.g. "Upsert", "Delete", "Move"
	Key    string // what it touched, e.g. "pk/rk"; "" for none
	Value  any    // what it wrote (or asked for)
	Result any    // what it returned, e.g. the value a read saw
	// Outcome is what the writer was told; Err is the error it got.
	Outcome Outcome
	Err     error
	// Faults are the faults injected into the op's requests, in order
	// (known when the op ran through [Writer.Do]).
	Faults     []Kind
	Start, End time.Time
}

// AnswerLost reports whether the service applied a try of the op whose
// answer a fault then hid (AnswerLost or TimeoutAfter). A Failed op with
// a lost answer may have taken effect: an Insert retried after its first
// try was applied fails with EntityAlreadyExists.
func (o Op) AnswerLost() bool {
	return slices.ContainsFunc(o.Faults, Kind.Applied)
}

// String describes the op on one line, e.g.
// `w3#17 Upsert "p/r" value={...} -> unknown [answer-lost]: <error>`.
func (o Op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "w%d#%d %s", o.Writer, o.Seq, o.Name)
	if o.Key != "" {
		fmt.Fprintf(&b, " %q", o.Key)
	}
	if o.Value != nil {
		fmt.Fprintf(&b, " value=%+v", o.Value)
	}
	fmt.Fprintf(&b, " -> %s", o.Outcome)
	if o.Result != nil {
		fmt.Fprintf(&b, " result=%+v", o.Result)
	}
	if len(o.Faults) > 0 {
		fmt.Fprintf(&b, " %v", o.Faults)
	}
	if o.Err != nil {
		fmt.Fprintf(&b, ": %v", o.Err)
	}
	return b.String()
}

// History collects the operations of concurrent writers. The zero History
// is ready to use, and a History is safe for concurrent use.
type History struct {
	mu  sync.Mutex
	ops []Op
}

// Add records op.
func (h *History) Add(op Op) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Ops returns the recorded ops sorted by start time (then writer and
// sequence). One writer's ops come in the order it ran them.
func (h *History) Ops() []Op {
	h.mu.Lock()
	ops := slices.Clone(h.ops)
	h.mu.Unlock()
	slices.SortStableFunc(ops, func(a, b Op) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		if a.Writer != b.Writer {
			return a.Writer - b.Writer
		}
		return a.Seq - b.Seq
	})
	return ops
}

// ByKey returns the ops of each key, each list sorted as [History.Ops]
// sorts. Ops of one key by different writers that overlap in time have no
// defined order between them: a check that needs an order should give
// each key to one writer.
func (h *History) ByKey() map[string][]Op {
	m := map[string][]Op{}
	for _, op := range h.Ops() {
		m[op.Key] = append(m[op.Key], op)
	}
	return m
}

// Count returns the number of recorded ops with outcome o.
func (h *History) Count(o Outcome) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, op := range h.ops {
		if op.Outcome == o {
			n++
		}
	}
	return n
}

// Len returns the number of recorded ops.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

// String summarises the history, e.g. "300 ops: 251 ok, 19 failed, 30 unknown".
func (h *History) String() string {
	return fmt.Sprintf("%d ops: %d ok, %d failed, %d unknown", h.Len(), h.Count(OK), h.Count(Failed), h.Count(Unknown))
}

// Reachable returns the states that applying ops in order to start can
// give when every OK op took effect, no Failed op did, and each Unknown op
// (or whose outcome was never set) may or may not have: the states the stored state may be in. apply
// returns the state after op, and false when op cannot have taken effect
// in that state (an acknowledged Insert of an entity that exists): such
// paths are dropped. An empty result means that no in-order application
// explains what the writers were told. States are compared with ==, so
// the work is bounded by the number of distinct states, not 2^unknowns.
//
// Reachable assumes an op that took effect did so between its start and
// end, in ops' order. Reclassify an op before calling when that is not
// what the check means (for example a Failed op that [Op.AnswerLost]).
func Reachable[S comparable](start S, ops []Op, apply func(S, Op) (S, bool)) []S {
	states := []S{start}
	for _, op := range ops {
		var next []S
		seen := map[S]bool{}
		keep := func(s S) {
			if !seen[s] {
				seen[s] = true
				next = append(next, s)
			}
		}
		for _, s := range states {
			switch op.Outcome {
			case OK:
				if n, ok := apply(s, op); ok {
					keep(n)
				}
			case Failed:
				keep(s)
			default: // Unknown, or an outcome never set
				keep(s)
				if n, ok := apply(s, op); ok {
					keep(n)
				}
			}
		}
		states = next
	}
	return states
}
