package chaos

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Event is one fault an [Injector] injected.
type Event struct {
	Kind      Kind
	Service   string // "table", "queue", "blob", or "" if unknown
	Operation string // as tablekit's Meter names it, e.g. "InsertEntity"
	// Identity is a short hash of the request's identity (see the package
	// doc): the tries of one request share it.
	Identity string
	// Seen is how many tries of this identity came before this one.
	Seen  int
	Delay time.Duration // for a Delay fault
}

// String describes the event, e.g. "table/InsertEntity answer-lost (try 1 of 3fa2…)".
func (e Event) String() string {
	s := fmt.Sprintf("%s/%s %s", e.Service, e.Operation, e.Kind)
	if e.Kind == Delay {
		s += " " + e.Delay.String()
	}
	return s + fmt.Sprintf(" (try %d of %s)", e.Seen+1, e.Identity)
}

// Events returns the faults injected so far, in the order they were
// decided.
func (inj *Injector) Events() []Event {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	return slices.Clone(inj.events)
}

type opKey struct{ service, operation string }

type faultKey struct {
	opKey
	kind Kind
}

// stats are the Injector's running counts (guarded by its mutex).
type stats struct {
	tries, eligible map[opKey]int64
	faults          map[faultKey]int64
	heldBack        int64
}

func (s *stats) add(service, op string, eligible bool, kind Kind) {
	if s.tries == nil {
		s.tries, s.eligible, s.faults = map[opKey]int64{}, map[opKey]int64{}, map[faultKey]int64{}
	}
	k := opKey{service, op}
	s.tries[k]++
	if eligible {
		s.eligible[k]++
	}
	if kind != "" {
		s.faults[faultKey{k, kind}]++
	}
}

// Stats returns what the Injector has seen and injected so far.
func (inj *Injector) Stats() Stats {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	return Stats{
		tries:    maps.Clone(inj.stats.tries),
		eligible: maps.Clone(inj.stats.eligible),
		faults:   maps.Clone(inj.stats.faults),
		heldBack: inj.stats.heldBack,
	}
}

// Stats are the counts of an [Injector] at one moment: tries seen, tries
// eligible for faults (injection enabled, filters matched), and faults
// injected by kind, service and operation. Its String method prints them
// for a test log or RELIABILITY.md.
type Stats struct {
	tries, eligible map[opKey]int64
	faults          map[faultKey]int64
	heldBack        int64
}

// Tries returns the tries the policy saw of service and operation ("" for
// any), eligible or not.
func (s Stats) Tries(service, operation string) int64 { return sumOps(s.tries, service, operation) }

// Eligible returns the tries of service and operation ("" for any) that
// faults could go into.
func (s Stats) Eligible(service, operation string) int64 {
	return sumOps(s.eligible, service, operation)
}

// Count returns the faults of kind injected into service and operation (""
// for any).
func (s Stats) Count(kind Kind, service, operation string) int64 {
	var n int64
	for k, c := range s.faults {
		if k.kind == kind && match(k.opKey, service, operation) {
			n += c
		}
	}
	return n
}

// Faults returns the tries that faults made fail (every kind but Delay).
func (s Stats) Faults() int64 {
	var n int64
	for k, c := range s.faults {
		if k.kind.Fails() {
			n += c
		}
	}
	return n
}

// FaultRate returns Faults divided by the eligible tries (0 when none).
func (s Stats) FaultRate() float64 {
	if e := s.Eligible("", ""); e > 0 {
		return float64(s.Faults()) / float64(e)
	}
	return 0
}

// HeldBack returns the failing faults drawn but not injected because of
// Config.MaxConsecutive or Config.MaxFaults.
func (s Stats) HeldBack() int64 { return s.heldBack }

// ByKind lists the faults by kind, e.g. "reset=12 answer-lost=20
// server-busy=9 timeout-before=4 timeout-after=8 delay=15".
func (s Stats) ByKind() string {
	return s.byKind("", "")
}

func (s Stats) byKind(service, operation string) string {
	var parts []string
	for _, k := range Kinds() {
		parts = append(parts, fmt.Sprintf("%s=%d", k, s.Count(k, service, operation)))
	}
	return strings.Join(parts, " ")
}

// String prints a summary line, then one line per operation that had
// eligible tries, e.g.
//
//	812 tries, 790 eligible, 170 failed by faults (21.5%), 12 held back; reset=40 answer-lost=51 ...
//	  table/InsertEntity: 300 tries, 300 eligible, 64 failed; reset=12 answer-lost=20 ...
func (s Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d tries, %d eligible, %d failed by faults (%.1f%%), %d held back; %s",
		s.Tries("", ""), s.Eligible("", ""), s.Faults(), 100*s.FaultRate(), s.heldBack, s.ByKind())
	keys := slices.SortedFunc(maps.Keys(s.eligible), func(a, b opKey) int {
		return strings.Compare(a.service+"/"+a.operation, b.service+"/"+b.operation)
	})
	for _, k := range keys {
		var failed int64
		for _, kind := range Kinds() {
			if kind.Fails() {
				failed += s.Count(kind, k.service, k.operation)
			}
		}
		fmt.Fprintf(&b, "\n  %s/%s: %d tries, %d eligible, %d failed; %s", k.service, k.operation,
			s.tries[k], s.eligible[k], failed, s.byKind(k.service, k.operation))
	}
	return b.String()
}

func match(k opKey, service, operation string) bool {
	return (service == "" || k.service == service) && (operation == "" || k.operation == operation)
}

func sumOps(m map[opKey]int64, service, operation string) int64 {
	var n int64
	for k, c := range m {
		if match(k, service, operation) {
			n += c
		}
	}
	return n
}
