package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

// The data series chaos suite: concurrent writers, each with its own
// Account and Series (as separate processes would have), add increments
// to slots of a few shared series through a fault-injecting pipeline.
//
// Invariant: each stored slot equals the sum of the acknowledged
// increments plus the sum of some subset of the increments whose outcome
// is unknown; a failed increment is not counted.
func TestChaosSeries(t *testing.T) {
	const series, slots = 2, 4
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		inj, err := chaos.New(seed, &chaos.Config{
			Reset: 0.05, AnswerLost: 0.07, ServerBusy: 0.04, TimeoutBefore: 0.02, TimeoutAfter: 0.03, Delay: 0.05,
			Services: []string{"table"},
		})
		if err != nil {
			t.Fatal(err)
		}
		setup := inj.Account(t, nil)
		inj.SetEnabled(false)
		tbl := entityTable(t, setup)
		inj.SetEnabled(true)

		writers, perWriter := chaos.Size(8, 16), chaos.Size(40, 60)
		h, err := chaos.RunWriters(ctx, seed, writers, func(ctx context.Context, w *chaos.Writer) error {
			acct, err := inj.Open(testenv.ConnectionString(t), nil)
			if err != nil {
				return err
			}
			// The retry a series with many writers needs (what Series
			// used by default before issue 25).
			mine, err := tablekit.OpenTable[tablekit.Entity](acct, tbl.Name(), &tablekit.TableOptions{Retry: tablekit.RetryPolicy{MaxAttempts: 100, BaseDelay: 20 * time.Millisecond, MaxDelay: time.Second}})
			if err != nil {
				return err
			}
			s, err := patterns.NewSeries(mine, &patterns.SeriesOptions{Slots: slots})
			if err != nil {
				return err
			}
			for range perWriter {
				rk := fmt.Sprintf("s%d", w.Rand.IntN(series))
				slot := w.Rand.IntN(slots)
				delta := int64(1 + w.Rand.IntN(5))
				w.Do(ctx, "Add", fmt.Sprintf("%s/%d", rk, slot), delta, func(ctx context.Context) (any, error) {
					return s.Add(ctx, "meter", rk, slot, delta)
				})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		inj.SetEnabled(false)
		st := inj.Stats()
		t.Logf("%d ops (%d ok, %d failed, %d unknown); faults: %s", h.Len(), h.Count(chaos.OK), h.Count(chaos.Failed), h.Count(chaos.Unknown), st.ByKind())
		if rate := st.FaultRate(); rate < 0.15 {
			t.Errorf("only %.1f%% of requests faulted, want at least 15%%", 100*rate)
		}

		acked := map[string]int64{}
		unknown := map[string][]int64{}
		failedReasons := map[string]int{}
		for _, op := range h.Ops() {
			d := op.Value.(int64)
			switch op.Outcome {
			case chaos.OK:
				acked[op.Key] += d
			case chaos.Unknown:
				unknown[op.Key] = append(unknown[op.Key], d)
			default:
				failedReasons[failReason(op.Err)]++
			}
		}
		t.Logf("failed ops by reason: %v", failedReasons)
		reader, err := patterns.NewSeries(tbl, &patterns.SeriesOptions{Slots: slots})
		if err != nil {
			t.Fatal(err)
		}
		var v chaos.Violations
		for i := range series {
			rk := fmt.Sprintf("s%d", i)
			values, err := reader.Get(chaos.NoFaults(ctx), "meter", rk)
			if errors.Is(err, tablekit.ErrNotFound) {
				values = make([]int64, slots)
			} else if err != nil {
				t.Fatal(err)
			}
			for slot, stored := range values {
				key := fmt.Sprintf("%s/%d", rk, slot)
				if !subsetSum(unknown[key], stored-acked[key]) {
					v.Addf("%s: stored %d, acknowledged %d, unknown increments %v: no subset of the unknown ones makes up the difference", key, stored, acked[key], unknown[key])
				}
			}
		}
		if h.Len() < 300 && chaos.Full() {
			v.Addf("only %d operations ran, want at least 300", h.Len())
		}
		v.Report(t)
	})
}

// subsetSum reports whether some subset of xs (positive) sums to target.
func subsetSum(xs []int64, target int64) bool {
	if target < 0 {
		return false
	}
	reach := map[int64]bool{0: true}
	for _, x := range xs {
		next := maps.Clone(reach)
		for s := range reach {
			if s+x <= target {
				next[s+x] = true
			}
		}
		reach = next
	}
	return reach[target]
}

// failReason sorts the error of a failed op.
func failReason(err error) string {
	var se *tablekit.ServiceError
	switch {
	case errors.As(err, &se):
		return se.Code
	case errors.Is(err, tablekit.ErrPreconditionFailed):
		return "precondition"
	case errors.Is(err, tablekit.ErrThrottled):
		return "throttled"
	}
	return fmt.Sprintf("%T", err)
}
