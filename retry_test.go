package tablekit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
)

func TestRetryPolicyDefaultsAndDelay(t *testing.T) {
	p := tablekit.RetryPolicy{BaseDelay: 5 * time.Millisecond}.WithDefaults(tablekit.DefaultConflictRetry)
	if p.MaxAttempts != tablekit.DefaultConflictRetry.MaxAttempts || p.BaseDelay != 5*time.Millisecond || p.MaxDelay != time.Second {
		t.Fatalf("WithDefaults = %+v", p)
	}
	want := []time.Duration{0, 0, 5, 10, 20, 40}
	for attempt, w := range want {
		if got := p.Delay(attempt); got != w*time.Millisecond {
			t.Errorf("Delay(%d) = %v, want %v", attempt, got, w*time.Millisecond)
		}
	}
	if got := p.Delay(40); got != time.Second {
		t.Errorf("Delay(40) = %v, want the 1s cap", got)
	}
}

func TestRetryPolicyAttempts(t *testing.T) {
	ctx := context.Background()
	count := func(p tablekit.RetryPolicy) int {
		n := 0
		for range p.Attempts(ctx) {
			n++
		}
		return n
	}
	if n := count(tablekit.NoRetries); n != 1 {
		t.Errorf("NoRetries tried %d times, want 1", n)
	}
	if n := count(tablekit.RetryPolicy{}); n != 1 {
		t.Errorf("a policy without defaults tried %d times, want 1", n)
	}
	if n := count(tablekit.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Microsecond, Jitter: tablekit.NoJitter}); n != 4 {
		t.Errorf("MaxAttempts 4 tried %d times", n)
	}

	// A cancelled context stops the loop during the back-off.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := 0
	for range (tablekit.RetryPolicy{MaxAttempts: 5, BaseDelay: time.Hour}).Attempts(cctx) {
		n++
		cancel()
	}
	if n != 1 || !errors.Is(cctx.Err(), context.Canceled) {
		t.Errorf("after cancel: %d tries, ctx err %v", n, cctx.Err())
	}
}

func TestRetryPolicyValidate(t *testing.T) {
	for _, p := range []tablekit.RetryPolicy{{MaxAttempts: -1}, {BaseDelay: -time.Second}, {Jitter: 9}} {
		err := p.Validate("index.NewIntra")
		var ve *tablekit.ValidationError
		if !errors.As(err, &ve) || ve.Op != "index.NewIntra" || !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("Validate(%+v) = %v", p, err)
		}
	}
	if err := (tablekit.RetryPolicy{}).Validate("x"); err != nil {
		t.Errorf("zero policy: %v", err)
	}
}

func TestClockNil(t *testing.T) {
	var c tablekit.Clock
	if time.Since(c.Now()) > time.Minute {
		t.Error("nil Clock is not the system clock")
	}
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := tablekit.Clock(func() time.Time { return fixed }).Now(); !got.Equal(fixed) {
		t.Errorf("Clock.Now = %v", got)
	}
}
