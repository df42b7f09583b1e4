package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

// TestChaosKeyedWide is the idempotent-write suite of Wide: chaos.Size(8,
// 12) writers, each with its own Account, through ~20% faulted tries
// (answer-lost included), increment shared wide counters with keyed
// Modify calls (WithKey(k).Modify; each increment adds a property, so the
// counters spread over several parts), each retried with its key until
// acknowledged; a fifth are sent again after their acknowledgement.
//
// Invariants: 0 increments ended in tablekit.ErrOutcomeUnknown; every
// counter equals the number of its acknowledged keys and holds one note
// per increment; one record per key.
func TestChaosKeyedWide(t *testing.T) {
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		inj, err := chaos.New(seed, chaos.Mixed(0.2))
		if err != nil {
			t.Fatal(err)
		}
		n, perWriter := chaos.Size(8, 12), chaos.Size(8, 30)
		accts := make([]*tablekit.Account, n)
		for i := range accts {
			accts[i] = inj.Account(t, nil)
		}
		inj.SetEnabled(false)
		name := testenv.CreateTable(t, accts[0])
		inj.SetEnabled(true)
		counters := []string{"c0", "c1", "c2"}

		var mu sync.Mutex
		acked := map[string]string{} // key -> counter
		var bad []error
		tries, resent := 0, 0
		_, err = chaos.RunWriters(ctx, seed, n, func(ctx context.Context, cw *chaos.Writer) error {
			tbl, err := tablekit.OpenTable[Tally](accts[cw.Index], name, nil)
			if err != nil {
				return err
			}
			w, err := patterns.NewWide(tbl, &patterns.WideOptions{PropertiesPerPart: 20})
			if err != nil {
				return err
			}
			for j := range perWriter {
				key := fmt.Sprintf("w%d-%d", cw.Index, j)
				c := counters[cw.Rand.IntN(len(counters))]
				keyed := w.WithKey(key)
				for attempt := 0; ; attempt++ {
					if attempt == 100 {
						return fmt.Errorf("%s: not acknowledged after 100 tries", key)
					}
					_, err := keyed.Modify(ctx, "m", c, bump)
					mu.Lock()
					tries++
					if err == nil {
						acked[key] = c
					} else if errors.Is(err, tablekit.ErrOutcomeUnknown) {
						bad = append(bad, fmt.Errorf("%s: %w", key, err))
					}
					mu.Unlock()
					if err == nil {
						break
					}
				}
				if cw.Rand.IntN(5) == 0 {
					_, err := keyed.Modify(ctx, "m", c, bump)
					mu.Lock()
					resent++
					if err != nil {
						bad = append(bad, fmt.Errorf("%s: sent again after acknowledgement: %w", key, err))
					}
					mu.Unlock()
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		st := inj.Stats()
		inj.SetEnabled(false)

		var v chaos.Violations
		for _, e := range bad {
			v.Addf("%v", e)
		}
		tbl, _ := tablekit.OpenTable[Tally](accts[0], name, nil)
		w, _ := patterns.NewWide(tbl, &patterns.WideOptions{PropertiesPerPart: 20})
		want := map[string]int64{}
		for _, c := range acked {
			want[c]++
		}
		for _, c := range counters {
			got, err := w.Get(ctx, "m", c)
			if err != nil && !(errors.Is(err, tablekit.ErrNotFound) && want[c] == 0) {
				t.Fatal(err)
			}
			if got.N != want[c] || int64(len(got.Notes)) != want[c] {
				v.Addf("counter %s is %d with %d notes, want %d, its acknowledged keys", c, got.N, len(got.Notes), want[c])
			}
		}
		raw, _ := tablekit.OpenTable[tablekit.Entity](accts[0], name, nil)
		records := 0
		for _, err := range raw.Query(ctx, tablekit.RowKeyPrefix("m", coord.ReservedPrefix), &tablekit.QueryOptions{Reserved: true}) {
			if err != nil {
				t.Fatal(err)
			}
			records++
		}
		if records != len(acked) {
			v.Addf("%d idempotency records, want %d", records, len(acked))
		}
		unknown := 0
		for _, e := range bad {
			if errors.Is(e, tablekit.ErrOutcomeUnknown) {
				unknown++
			}
		}
		t.Logf("%d writers × %d keyed wide increments: %d acknowledged, %d tries, %d sent again after acknowledgement, %d ErrOutcomeUnknown; counters %v", n, perWriter, len(acked), tries, resent, unknown, want)
		t.Logf("faults: %s", st.String())
		// >= 15% at full size (the bar); the few hundred tries of
		// a CI run vary by a few points, so CI asks for 10%.
		minRate := 0.15
		if !chaos.Full() {
			minRate = 0.10
		}
		if st.FaultRate() < minRate || st.Count(chaos.AnswerLost, "", "") == 0 {
			v.Addf("fault rate %.1f%%, %d answers lost: too few", 100*st.FaultRate(), st.Count(chaos.AnswerLost, "", ""))
		}
		if len(acked) != n*perWriter {
			v.Addf("%d of %d increments acknowledged", len(acked), n*perWriter)
		}
		v.Report(t)
	})
}
