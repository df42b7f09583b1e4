package timing

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestPolicyDefaultsAndDelay(t *testing.T) {
	p := Policy{BaseDelay: 5 * time.Millisecond}.WithDefaults(Conflict)
	if p.MaxAttempts != Conflict.MaxAttempts || p.BaseDelay != 5*time.Millisecond || p.MaxDelay != time.Second {
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
	// Every pause is randomised up to the back-off, never more.
	for range 100 {
		if d := p.Pause(4); d <= 0 || d > 20*time.Millisecond {
			t.Fatalf("Pause(4) = %v, want (0, 20ms]", d)
		}
	}
	if d := p.Pause(1); d != 0 {
		t.Errorf("Pause(1) = %v, want none before the first try", d)
	}
}

func TestPolicyAttempts(t *testing.T) {
	ctx := context.Background()
	count := func(p Policy) int {
		n := 0
		for range p.Attempts(ctx) {
			n++
		}
		return n
	}
	if n := count(Policy{MaxAttempts: 1}); n != 1 {
		t.Errorf("MaxAttempts 1 tried %d times, want 1", n)
	}
	if n := count(Policy{}); n != 1 {
		t.Errorf("a policy without defaults tried %d times, want 1", n)
	}
	if n := count(Policy{MaxAttempts: 4, BaseDelay: time.Microsecond}); n != 4 {
		t.Errorf("MaxAttempts 4 tried %d times", n)
	}

	// A cancelled context stops the loop during the back-off.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := 0
	for range (Policy{MaxAttempts: 5, BaseDelay: time.Hour}).Attempts(cctx) {
		n++
		cancel()
	}
	if n != 1 || !errors.Is(cctx.Err(), context.Canceled) {
		t.Errorf("after cancel: %d tries, ctx err %v", n, cctx.Err())
	}
}

func TestPolicyProblem(t *testing.T) {
	for _, p := range []Policy{{MaxAttempts: -1}, {BaseDelay: -time.Second}, {MaxDelay: -1}} {
		if p.Problem() == "" {
			t.Errorf("%+v: no problem found", p)
		}
	}
	if got := (Policy{}).Problem(); got != "" {
		t.Errorf("zero policy: %s", got)
	}
}

func TestNow(t *testing.T) {
	if time.Since(Now(nil)) > time.Minute {
		t.Error("a nil clock is not the system clock")
	}
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := Now(func() time.Time { return fixed }); !got.Equal(fixed) {
		t.Errorf("Now = %v", got)
	}
}

func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if !Sleep(ctx, time.Millisecond) || !Sleep(ctx, 0) {
		t.Error("a pause of a live context did not elapse")
	}
	cancel()
	if Sleep(ctx, time.Hour) || Sleep(ctx, 0) {
		t.Error("a pause of an ended context elapsed")
	}
}
