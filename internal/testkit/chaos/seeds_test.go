package chaos_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testkit/chaos"
)

// recorder is a testing.TB that records what a helper reports instead of
// failing the test.
type recorder struct {
	testing.TB
	errors, logs, fatals []string
}

func (r *recorder) Helper()           {}
func (r *recorder) Error(args ...any) { r.errors = append(r.errors, fmt.Sprint(args...)) }
func (r *recorder) Errorf(f string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(f, args...))
}
func (r *recorder) Fatalf(f string, args ...any) {
	r.fatals = append(r.fatals, fmt.Sprintf(f, args...))
}
func (r *recorder) Logf(f string, args ...any) { r.logs = append(r.logs, fmt.Sprintf(f, args...)) }

func TestSeeds(t *testing.T) {
	cases := []struct {
		seed, seeds string
		want        []int64
	}{
		{"", "", []int64{1, 2, 3}},
		{"", "5", []int64{1, 2, 3, 4, 5}},
		{"", "7, 42,-3", []int64{7, 42, -3}},
		{"12345", "5", []int64{12345}},
	}
	for _, c := range cases {
		t.Setenv(chaos.EnvSeed, c.seed)
		t.Setenv(chaos.EnvSeeds, c.seeds)
		r := &recorder{TB: t}
		if got := chaos.Seeds(r); !slices.Equal(got, c.want) || len(r.fatals) > 0 {
			t.Errorf("SEED=%q SEEDS=%q: %v %v, want %v", c.seed, c.seeds, got, r.fatals, c.want)
		}
	}
	for _, c := range []struct{ seed, seeds string }{{"x", ""}, {"", "0"}, {"", "many"}, {"", "1,x"}} {
		t.Setenv(chaos.EnvSeed, c.seed)
		t.Setenv(chaos.EnvSeeds, c.seeds)
		r := &recorder{TB: t}
		if got := chaos.Seeds(r); got != nil || len(r.fatals) != 1 {
			t.Errorf("SEED=%q SEEDS=%q: %v, fatals %q", c.seed, c.seeds, got, r.fatals)
		}
	}
}

func TestSize(t *testing.T) {
	for v, full := range map[string]bool{"": false, "0": false, "false": false, "1": true, "yes": true} {
		t.Setenv(chaos.EnvFull, v)
		if chaos.Full() != full || chaos.Size(10, 300) != map[bool]int{false: 10, true: 300}[full] {
			t.Errorf("FULL=%q: Full() = %v, Size = %d", v, chaos.Full(), chaos.Size(10, 300))
		}
	}
}

func TestRunAndReplayCommand(t *testing.T) {
	t.Setenv(chaos.EnvSeed, "")
	t.Setenv(chaos.EnvSeeds, "4,9")
	t.Setenv(chaos.EnvFull, "")
	var ran []int64
	chaos.Run(t, func(t *testing.T, seed int64) {
		ran = append(ran, seed)
		want := fmt.Sprintf("TABLEKIT_CHAOS_SEED=%d go test -race -run '^TestRunAndReplayCommand$/^seed=%d$' ./internal/testkit/chaos", seed, seed)
		if got := chaos.ReplayCommand(t, seed); got != want {
			t.Errorf("ReplayCommand = %s\nwant %s", got, want)
		}
	})
	if !slices.Equal(ran, []int64{4, 9}) {
		t.Errorf("ran seeds %v", ran)
	}
	t.Setenv(chaos.EnvFull, "1")
	if got := chaos.ReplayCommand(t, 5); !strings.HasPrefix(got, "TABLEKIT_CHAOS_SEED=5 TABLEKIT_CHAOS_FULL=1 go test") {
		t.Errorf("ReplayCommand at full size = %s", got)
	}
}

func TestRunVariant(t *testing.T) {
	for _, c := range []struct {
		seed, seeds string
		want        []int64
	}{
		{"", "", []int64{1}},
		{"", "3", []int64{1, 2, 3}},
		{"", "7,42", []int64{7, 42}},
		{"12", "", []int64{12}},
	} {
		t.Setenv(chaos.EnvSeed, c.seed)
		t.Setenv(chaos.EnvSeeds, c.seeds)
		var ran []int64
		chaos.RunVariant(t, func(t *testing.T, seed int64) { ran = append(ran, seed) })
		if !slices.Equal(ran, c.want) {
			t.Errorf("SEED=%q SEEDS=%q: ran seeds %v, want %v", c.seed, c.seeds, ran, c.want)
		}
	}
}

func TestViolationsReport(t *testing.T) {
	var v chaos.Violations
	r := &recorder{TB: t}
	v.Report(r)
	if len(r.errors) != 0 || len(r.logs) != 1 || r.logs[0] != "0 invariant violations" {
		t.Errorf("empty: errors %q, logs %q", r.errors, r.logs)
	}
	for i := range 35 {
		v.Addf("entity %d: stored %q, want one of %v\nop: w1#%d", i, "x", []string{"a", "b"}, i)
	}
	r = &recorder{TB: t}
	v.Report(r)
	if v.Len() != 35 || len(r.errors) != 1 {
		t.Fatalf("Len %d, errors %q", v.Len(), r.errors)
	}
	msg := r.errors[0]
	for _, want := range []string{"35 invariant violation(s):", "\n  1. entity 0: stored \"x\", want one of [a b]\n     op: w1#0", "\n  30. entity 29", "... and 5 more"} {
		if !strings.Contains(msg, want) {
			t.Errorf("report lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "entity 30:") {
		t.Errorf("report lists more than 30:\n%s", msg)
	}
}
