package tablekit

import (
	"testing"
	"time"
)

func TestPacerSpacesReservations(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newPacer(1000) // entities per second
	// Idle credit: the first reservations may go at once, up to the burst.
	if at := p.reserve(now, 100); !at.Equal(now.Add(-governorBurst)) {
		t.Fatalf("first reservation at %v, want the start of the burst window", at.Sub(now))
	}
	if at := p.reserve(now, 100); !at.Equal(now) {
		t.Fatalf("second reservation at %v, want now", at.Sub(now))
	}
	// Then one per cost/rate: 100 entities at 1000/s are 100 ms apart.
	if at := p.reserve(now, 100); at.Sub(now) != 100*time.Millisecond {
		t.Fatalf("third reservation %v after now, want 100ms", at.Sub(now))
	}
}

func TestPacerCutsOncePerCooldownAndGrowsBack(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newPacer(2000)
	p.reserve(now, 100)
	if !p.cut(now, 100) || p.rate != 1700 {
		t.Fatalf("first cut: rate %v, want 1700", p.rate)
	}
	if p.cut(now.Add(governorCooldown/2), 100) || p.rate != 1700 {
		t.Fatalf("a second throttle within the cool-down cut again: rate %v", p.rate)
	}
	if !p.cut(now.Add(governorCooldown), 100) || p.rate != 1445 {
		t.Fatalf("cut after the cool-down: rate %v, want 1445", p.rate)
	}
	// Successes raise the rate back to the ceiling, and say so once.
	recovered := 0
	for range 1000 {
		if p.grow(100) {
			recovered++
		}
	}
	if p.rate != 2000 || recovered != 1 {
		t.Fatalf("after growing: rate %v, recovered %d times", p.rate, recovered)
	}
	// Never below a thousandth of the ceiling.
	for i := range 200 {
		p.cut(now.Add(time.Duration(i+10)*governorCooldown), 100)
	}
	if p.rate < 2 {
		t.Fatalf("rate fell to %v", p.rate)
	}
}
