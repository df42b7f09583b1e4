package tablekit

import (
	"context"
	"iter"
	"time"

	"github.com/tablekit/tablekit/internal/timing"
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
// each zero field alone means that field's default; {MaxAttempts: 1} tries
// once. Back-off is exponential: BaseDelay before the second try, doubling
// with each further try, never more than MaxDelay, and randomised (a pause
// is a random time up to the back-off) so that competing writers spread out
// instead of colliding again. Negative values are refused.
type RetryPolicy struct {
	// MaxAttempts is how many times the operation is tried in all, the
	// first try included: 1 means no retries. 0 means the default.
	MaxAttempts int
	// BaseDelay is the back-off before the second try. 0 means the default.
	BaseDelay time.Duration
	// MaxDelay caps one back-off. 0 means the default.
	MaxDelay time.Duration
}

// withDefaults returns p with each zero field taken from def.
func (p RetryPolicy) withDefaults(def timing.Policy) RetryPolicy {
	return RetryPolicy(timing.Policy(p).WithDefaults(def))
}

// validate reports a negative field as a *ValidationError naming op, the
// operation that was given p.
func (p RetryPolicy) validate(op string) error {
	return timing.Policy(p).Validate(op)
}

// attempts yields the try numbers, sleeping the back-off between them (see
// timing.Policy.Attempts).
func (p RetryPolicy) attempts(ctx context.Context) iter.Seq[int] {
	return timing.Policy(p).Attempts(ctx)
}

// pause returns the randomised back-off before try number attempt.
func (p RetryPolicy) pause(attempt int) time.Duration { return timing.Policy(p).Pause(attempt) }
