package tablekit

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"time"
)

// RetryPolicy says how often, and how patiently, tablekit tries an operation
// again when it lost a race with another writer (a stale ETag, an entity
// created or deleted meanwhile) or when the service throttled it after the
// Azure SDK's own retries. Every option struct of tablekit that retries
// holds one, in a field called Retry. The layer below, the Azure SDK's
// retry of each HTTP request, is the Account's Options.ClientOptions.Retry
// (azcore's policy.RetryOptions), and nowhere else.
//
// The zero value means the default documented by the option that holds it;
// each zero field alone means that field's default. [NoRetries] tries once.
// Back-off is exponential: BaseDelay before the second try, doubling with
// each further try, never more than MaxDelay, randomised as Jitter says.
type RetryPolicy struct {
	// MaxAttempts is how many times the operation is tried in all, the
	// first try included: 1 means no retries. 0 means the default.
	MaxAttempts int
	// BaseDelay is the back-off before the second try. 0 means the default.
	BaseDelay time.Duration
	// MaxDelay caps one back-off. 0 means the default.
	MaxDelay time.Duration
	// Jitter says how each back-off is randomised; the zero value is
	// [FullJitter].
	Jitter Jitter
}

// Jitter is how a [RetryPolicy] randomises its back-off.
type Jitter uint8

const (
	// FullJitter pauses a random time between zero and the back-off, so
	// that competing writers spread out instead of colliding again. It is
	// the default.
	FullJitter Jitter = iota
	// NoJitter pauses exactly the back-off.
	NoJitter
)

// NoRetries is the RetryPolicy that tries an operation once.
var NoRetries = RetryPolicy{MaxAttempts: 1}

// DefaultConflictRetry is the default of every optimistic-concurrency retry
// in tablekit (index entities, wide entities, data series, ...): enough for
// tens of concurrent writers on one entity.
var DefaultConflictRetry = RetryPolicy{MaxAttempts: 30, BaseDelay: 10 * time.Millisecond, MaxDelay: time.Second}

// DefaultThrottleRetry is the default retry of work the service throttled
// after the SDK's own retries (BulkWriter and other bulk paths).
var DefaultThrottleRetry = RetryPolicy{MaxAttempts: 6, BaseDelay: time.Second, MaxDelay: 30 * time.Second}

// WithDefaults returns p with each zero field taken from def.
func (p RetryPolicy) WithDefaults(def RetryPolicy) RetryPolicy {
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
	if p.Jitter == FullJitter {
		p.Jitter = def.Jitter
	}
	return p
}

// Validate reports a negative field or an unknown Jitter as a
// *ValidationError naming op, the operation that was given p.
func (p RetryPolicy) Validate(op string) error {
	var problem string
	switch {
	case p.MaxAttempts < 0:
		problem = fmt.Sprintf("RetryPolicy.MaxAttempts is %d; it must be 0 (default), 1 (no retries) or more", p.MaxAttempts)
	case p.BaseDelay < 0 || p.MaxDelay < 0:
		problem = "RetryPolicy delays must not be negative"
	case p.Jitter > NoJitter:
		problem = fmt.Sprintf("unknown RetryPolicy.Jitter %d", p.Jitter)
	default:
		return nil
	}
	return &ValidationError{Op: op, Detail: problem, Err: ErrInvalidInput}
}

// Delay returns the back-off before try number attempt (1-based; the first
// try has none), before jitter.
func (p RetryPolicy) Delay(attempt int) time.Duration {
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

// pause returns the randomised back-off before try number attempt.
func (p RetryPolicy) pause(attempt int) time.Duration {
	d := p.Delay(attempt)
	if d <= 0 || p.Jitter == NoJitter {
		return d
	}
	return rand.N(d) + 1
}

// Attempts yields the try numbers 1, 2, ... up to MaxAttempts (a policy
// with MaxAttempts 0 tries once: apply [RetryPolicy.WithDefaults] first),
// sleeping the back-off before every try but the first. It stops early when
// ctx ends, so after the loop ctx.Err() tells whether it was cut short:
//
//	var err error
//	for range policy.Attempts(ctx) {
//		if err = try(ctx); !errors.Is(err, tablekit.ErrPreconditionFailed) {
//			return err
//		}
//	}
//	if ctx.Err() != nil {
//		return ctx.Err()
//	}
//	return err // still conflicting after MaxAttempts tries
func (p RetryPolicy) Attempts(ctx context.Context) iter.Seq[int] {
	return func(yield func(int) bool) {
		for n := 1; n == 1 || n <= p.MaxAttempts; n++ {
			if n > 1 && !Sleep(ctx, p.pause(n)) {
				return
			}
			if ctx.Err() != nil || !yield(n) {
				return
			}
		}
	}
}

// Sleep pauses for d, or until ctx ends; it reports whether the whole pause
// elapsed.
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

// Clock tells the current time. Options of tablekit that depend on the time
// (record times, periods, ages, leases) take one in a field called Clock;
// nil means [time.Now]. Tests set it to a fake clock.
type Clock func() time.Time

// Now returns c's time, or time.Now() when c is nil.
func (c Clock) Now() time.Time {
	if c == nil {
		return time.Now()
	}
	return c()
}
