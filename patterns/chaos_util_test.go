package patterns_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testkit/chaos"
)

// chaosInjectors are the Injectors of one chaos run: the writers' (shared,
// as in every suite) and one per reader. A reader has an Injector of its
// own because the Injector's cap on consecutive faults counts per request
// identity, and the identical reads of concurrent goroutines (a range
// query of the same entity) share one: with a shared Injector one read
// could meet more faulted tries in a row than the SDK retries, and fail
// for a reason that says nothing about the pattern. A reader reads one
// thing at a time, so with its own Injector every read gets through, and
// any error it reports is the pattern's.
type chaosInjectors []*chaos.Injector

// add makes an Injector with cfg for a seed derived from seed
// and n (n = 0: seed itself), adds it to the list and returns it.
func (is *chaosInjectors) add(t *testing.T, seed int64, n int, cfg *chaos.Config) *chaos.Injector {
	t.Helper()
	inj, err := chaos.New(seed+int64(n)*1_000_003, cfg)
	if err != nil {
		t.Fatal(err)
	}
	*is = append(*is, inj)
	return inj
}

func (is chaosInjectors) setEnabled(on bool) {
	for _, inj := range is {
		inj.SetEnabled(on)
	}
}

// faultRate is the share of eligible tries that faults failed, over all
// the Injectors.
func (is chaosInjectors) faultRate() float64 {
	var faults, eligible int64
	for _, inj := range is {
		st := inj.Stats()
		faults += st.Faults()
		eligible += st.Eligible("", "")
	}
	if eligible == 0 {
		return 0
	}
	return float64(faults) / float64(eligible)
}

// byKind lists the faults by kind, summed over the Injectors, as
// chaos.Stats.ByKind does, then the tries and the fault rate.
func (is chaosInjectors) byKind() string {
	var parts []string
	var eligible, faults int64
	for _, inj := range is {
		eligible += inj.Stats().Eligible("", "")
		faults += inj.Stats().Faults()
	}
	for _, k := range chaos.Kinds() {
		var n int64
		for _, inj := range is {
			n += inj.Stats().Count(k, "", "")
		}
		parts = append(parts, fmt.Sprintf("%s=%d", k, n))
	}
	return fmt.Sprintf("%s (%d of %d eligible tries failed, %.1f%%)", strings.Join(parts, " "), faults, eligible, 100*is.faultRate())
}

// report turns the Injectors off and logs the run: its ops by outcome,
// the reads made during it and the faults by kind, and the ops not
// acknowledged by name, outcome and reason. It fails the test when fewer
// than 15% of the eligible tries faulted.
func (is chaosInjectors) report(t *testing.T, h *chaos.History, reads int) {
	t.Helper()
	is.setEnabled(false)
	t.Logf("%d ops (%d ok, %d failed, %d unknown); %d reads during the run; faults: %s", h.Len(), h.Count(chaos.OK), h.Count(chaos.Failed), h.Count(chaos.Unknown), reads, is.byKind())
	if rate := is.faultRate(); rate < 0.15 {
		t.Errorf("only %.1f%% of requests faulted, want at least 15%%", 100*rate)
	}
	reasons := map[string]int{}
	for _, op := range h.Ops() {
		if op.Outcome != chaos.OK {
			reasons[op.Name+" "+op.Outcome.String()+": "+failReason(op.Err)]++
		}
	}
	t.Logf("ops not acknowledged, by reason: %v", reasons)
}

// certainlyChanged reports whether an op of kind ("DeleteIfExists",
// "Delete" or a write) certainly changed the stored state: an
// acknowledged write or Delete, or a DeleteIfExists that removed the
// entity (existed).
func certainlyChanged(kind string, existed bool, outcome chaos.Outcome) bool {
	if kind == "DeleteIfExists" {
		return existed
	}
	return outcome == chaos.OK
}

// mayHaveDeleted reports whether an op of kind may have removed the
// entity: a DeleteIfExists that removed it or whose outcome is unknown,
// or a Delete that did not fail.
func mayHaveDeleted(kind string, existed bool, outcome chaos.Outcome) bool {
	switch kind {
	case "DeleteIfExists":
		return existed || outcome == chaos.Unknown
	case "Delete":
		return outcome != chaos.Failed
	}
	return false
}
