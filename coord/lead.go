package coord

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tablekit/tablekit"
)

// LeadOptions configure Lease.Lead, as client-go's leader election does
// with the lease's Duration (LeaseOptions.Duration). The zero value (or
// nil) means the defaults.
type LeadOptions struct {
	// RenewDeadline is how long the leader keeps leading without a
	// successful renewal: past it, its function's context ends. Default
	// 2/3 of the lease's Duration, at most Duration - DriftMargin.
	RenewDeadline time.Duration
	// RetryPeriod is the time between tries to acquire, and between
	// renewals, each randomised to 75-100% of it so that contenders
	// spread out. Default 2/15 of the lease's Duration (2 s for 15 s);
	// must be less than RenewDeadline, and at least MinRetryPeriod.
	RetryPeriod time.Duration
}

// MinRetryPeriod is the shortest LeadOptions.RetryPeriod Lead accepts:
// each period costs a write (a renewal) or a read (a campaign try), and a
// shorter one is a tight loop of requests, not a lease. The default
// RetryPeriod of a lease Duration under 75 ms is below it: give such a
// lease a RetryPeriod.
const MinRetryPeriod = 10 * time.Millisecond

// Lead campaigns for the lease and runs fn while this process leads:
// it tries to acquire every RetryPeriod (sooner when the lease it sees
// is about to lapse), then calls fn with a context that ends when
// leadership is lost (a renewal refused, or none succeeding for
// RenewDeadline, or ctx ending) and the lease's term as fencing token. It
// renews every RetryPeriod while fn runs.
//
// Lead returns fn's error after releasing the lease when fn returns; an
// error matching ErrLost after fn has returned when leadership was lost;
// ctx's error when ctx ends (after fn has returned and the lease is
// released); at once, a refusal of its input, which trying again cannot
// change (an error matching tablekit.ErrInvalidInput, ErrInvalidKey or
// ErrTooLarge: options refused, or the lease's entity refused by the
// service). Call it again to campaign again. A new leader is elected at
// most Duration + RetryPeriod after a leader dies, plus the requests'
// latency and a RetryPeriod more for each campaign try that fails (the
// service unreachable). Costs: 1 read per campaign try; 1 write per
// renewal.
func (l *Lease) Lead(ctx context.Context, fn func(ctx context.Context, term int64) error, opts *LeadOptions) error {
	if err := l.check("Lease.Lead"); err != nil {
		return err
	}
	if fn == nil {
		return invalid("Lease.Lead", "fn", "nil function")
	}
	var o LeadOptions
	if opts != nil {
		o = *opts
	}
	if o.RenewDeadline < 0 || o.RetryPeriod < 0 {
		return invalid("Lease.Lead", "RetryPeriod", "negative duration")
	}
	valid := l.o.Duration - l.o.DriftMargin
	if o.RenewDeadline == 0 {
		o.RenewDeadline = min(l.o.Duration*2/3, valid)
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = l.o.Duration * 2 / 15
	}
	if o.RenewDeadline > valid {
		return invalid("Lease.Lead", "RenewDeadline", "must be at most the lease's Duration - DriftMargin")
	}
	if o.RetryPeriod >= o.RenewDeadline {
		return invalid("Lease.Lead", "RetryPeriod", "must be less than RenewDeadline")
	}
	if o.RetryPeriod < MinRetryPeriod {
		return invalid("Lease.Lead", "RetryPeriod", fmt.Sprintf("%v is under the minimum, MinRetryPeriod (%v): a tight loop of requests", o.RetryPeriod, MinRetryPeriod))
	}
	jitter := func() time.Duration { return o.RetryPeriod*3/4 + rand.N(o.RetryPeriod/4+1) }

	var term int64
	for {
		t, err := l.Acquire(ctx)
		if err == nil {
			term = t
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if refused(err) {
			return err // trying again cannot help
		}
		if !sleep(ctx, l.wait(jitter())) {
			return ctx.Err()
		}
	}

	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan error, 1)
	go func() { done <- fn(lctx, term) }()
	lastRenew := l.now()
	release := func() {
		rctx, stop := context.WithTimeout(context.WithoutCancel(ctx), o.RenewDeadline)
		defer stop()
		_ = l.Release(rctx)
	}
	lost := func() error {
		cancel(ErrLost)
		<-done
		l.drop(term)
		return ErrLost
	}
	for {
		// The claim ends at the sooner of the lease's validity and the
		// renew deadline, on this process's clock.
		now := l.now()
		end := lastRenew.Add(o.RenewDeadline)
		if _, ok := l.Held(); !ok {
			return lost()
		}
		l.mu.Lock()
		if l.until.Before(end) {
			end = l.until
		}
		l.mu.Unlock()
		left := end.Sub(now)
		if left <= 0 {
			return lost()
		}
		timer := time.NewTimer(min(jitter(), left))
		select {
		case err := <-done:
			timer.Stop()
			release()
			return err
		case <-ctx.Done():
			timer.Stop()
			cancel(ctx.Err())
			<-done
			release()
			return ctx.Err()
		case <-timer.C:
		}
		if !l.now().Before(end) {
			return lost()
		}
		rctx, stop := context.WithTimeout(lctx, end.Sub(l.now()))
		sent := l.now()
		err := l.Renew(rctx)
		stop()
		switch {
		case err == nil:
			lastRenew = sent
		case errors.Is(err, ErrLost):
			return lost()
		}
	}
}

// refused reports whether err refuses the input (tablekit.ErrInvalidInput,
// ErrInvalidKey or ErrTooLarge), checked on the client or answered by the
// service: the same request can only be refused again.
func refused(err error) bool {
	return errors.Is(err, tablekit.ErrInvalidInput) || errors.Is(err, tablekit.ErrInvalidKey) || errors.Is(err, tablekit.ErrTooLarge)
}

// sleep pauses for d or until ctx ends; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
