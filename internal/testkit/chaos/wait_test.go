package chaos_test

import (
	"math"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/testkit/chaos"
)

// TestWaitProgress: a wait goes on past stall while its progress grows,
// and gives up once it has not passed its highest value for stall (a
// progress that falls and comes back is no progress), however long it
// ran before.
func TestWaitProgress(t *testing.T) {
	const stall, interval = 200 * time.Millisecond, 5 * time.Millisecond

	// Growing at every poll, done after 100 polls (500 ms or more,
	// past the 200 ms stall).
	calls := 0
	waited, ok := chaos.WaitProgress(stall, interval, func() (int64, bool) {
		calls++
		return int64(calls), calls == 100
	})
	if !ok || calls != 100 || waited < stall {
		t.Errorf("a wait that progressed at every poll: ok %v after %d polls, %v; want done after 100, past the %v stall", ok, calls, waited, stall)
	}

	// The waits that must give up say they are done after giveUp polls
	// (10 s or more), so that a WaitProgress that does not give up fails
	// here instead of hanging.
	const giveUp = 2000

	// Growing for 50 polls (250 ms or more), then not: it gives up, and
	// not before stall has passed since the last growth.
	calls = 0
	var grew time.Time
	waited, ok = chaos.WaitProgress(stall, interval, func() (int64, bool) {
		calls++
		if calls <= 50 {
			grew = time.Now()
		}
		return int64(min(calls, 50)), calls == giveUp
	})
	if ok || calls <= 50 || time.Since(grew) < stall || waited < 50*interval+stall {
		t.Errorf("a wait that stopped progressing: ok %v after %d polls, %v, %v after the last growth; want false, %v or more after it", ok, calls, waited, time.Since(grew), stall)
	}

	// Going up and down between the same values, or failing to read
	// (math.MinInt64), is no progress.
	for name, poll := range map[string]func(int) int64{
		"oscillating": func(c int) int64 { return int64(c % 2) },
		"failing":     func(int) int64 { return math.MinInt64 },
	} {
		calls = 0
		waited, ok = chaos.WaitProgress(stall, interval, func() (int64, bool) {
			calls++
			return poll(calls), calls == giveUp
		})
		if ok || waited < stall {
			t.Errorf("%s: ok %v after %d polls, %v; want false after the %v stall", name, ok, calls, waited, stall)
		}
	}

	// Done at the first poll: no wait, whatever the progress.
	calls = 0
	_, ok = chaos.WaitProgress(stall, interval, func() (int64, bool) {
		calls++
		return -5, true
	})
	if !ok || calls != 1 {
		t.Errorf("a wait done at once: ok %v after %d polls, want done after 1", ok, calls)
	}
}
