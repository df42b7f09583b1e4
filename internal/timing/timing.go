// Package timing holds the waiting and clock logic every package of
// tablekit shares: the back-off of a tablekit.RetryPolicy (whose fields
// [Policy] mirrors, so that one converts to the other), sleeping until a
// context ends, and the clock options that default to time.Now. It imports
// only internal/codec (for the error of a bad policy), so the root and
// every sibling package use it, converting a tablekit.RetryPolicy with
// timing.Policy(p).
package timing

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"time"

	"github.com/tablekit/tablekit/internal/codec"
)

// Policy is a tablekit.RetryPolicy: the two types have the same fields, so
// that tablekit.RetryPolicy(p) and timing.Policy(r) convert.
type Policy struct {
	MaxAttempts int
	BaseDelay   time.Duration
	MaxDelay    time.Duration
}

// Conflict is the default of every optimistic-concurrency retry (a stale
// ETag, an entity created or deleted meanwhile): enough for tens of
// concurrent writers on one entity.
var Conflict = Policy{MaxAttempts: 30, BaseDelay: 10 * time.Millisecond, MaxDelay: time.Second}

// Throttle is the default retry of work the service throttled after the
// SDK's own retries (BulkWriter and other bulk paths).
var Throttle = Policy{MaxAttempts: 6, BaseDelay: time.Second, MaxDelay: 30 * time.Second}

// Validate reports a negative field of p as a *codec.ValidationError
// (tablekit.ValidationError) matching ErrInvalidInput, naming op, the
// operation p was given to, and the property "Retry".
func (p Policy) Validate(op string) error {
	if problem := p.Problem(); problem != "" {
		return &codec.ValidationError{Op: op, Property: "Retry", Detail: problem, Err: codec.ErrInvalidInput}
	}
	return nil
}

// WithDefaults returns p with each zero field taken from def.
func (p Policy) WithDefaults(def Policy) Policy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = def.MaxAttempts
	}
	if p.BaseDelay == 0 {
		p.BaseDelay = def.BaseDelay
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = def.MaxDelay
	}
	if p.MaxDelay < p.BaseDelay {
		p.MaxDelay = p.BaseDelay
	}
	return p
}

// Problem says what is wrong with p (a negative field), or returns "".
func (p Policy) Problem() string {
	switch {
	case p.MaxAttempts < 0:
		return fmt.Sprintf("RetryPolicy.MaxAttempts is %d; it must be 0 (default), 1 (no retries) or more", p.MaxAttempts)
	case p.BaseDelay < 0 || p.MaxDelay < 0:
		return "RetryPolicy delays must not be negative"
	}
	return ""
}

// Delay returns the back-off before try number attempt (1-based; the
// first try has none), before jitter: BaseDelay before the second try,
// doubling with each further try, never more than MaxDelay.
func (p Policy) Delay(attempt int) time.Duration {
	if attempt <= 1 || p.BaseDelay <= 0 {
		return 0
	}
	d := p.BaseDelay
	for i := 2; i < attempt && d < p.MaxDelay; i++ {
		d *= 2
	}
	if p.MaxDelay > 0 && d > p.MaxDelay {
		d = p.MaxDelay
	}
	return d
}

// Pause returns the back-off before try number attempt with full jitter:
// a random time up to Delay(attempt), so that competing writers spread
// out instead of colliding again.
func (p Policy) Pause(attempt int) time.Duration {
	d := p.Delay(attempt)
	if d <= 0 {
		return d
	}
	return rand.N(d) + 1
}

// Attempts yields the try numbers 1, 2, ... up to MaxAttempts (a policy
// with MaxAttempts 0 tries once: apply WithDefaults first), sleeping the
// back-off before every try but the first. It stops early when ctx ends,
// so after the loop ctx.Err() tells whether it was cut short.
func (p Policy) Attempts(ctx context.Context) iter.Seq[int] {
	return func(yield func(int) bool) {
		for n := 1; n == 1 || n <= p.MaxAttempts; n++ {
			if n > 1 && !Sleep(ctx, p.Pause(n)) {
				return
			}
			if ctx.Err() != nil || !yield(n) {
				return
			}
		}
	}
}

// Sleep pauses for d, or until ctx ends; it reports whether the whole
// pause elapsed.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Now returns clock's time, or time.Now() when clock is nil: the meaning
// of every Clock option of tablekit.
func Now(clock func() time.Time) time.Time {
	if clock == nil {
		return time.Now()
	}
	return clock()
}
