package coord_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// TestChaosKeyed is the idempotent-write suite: chaos.Size(8, 12) writers,
// each with its own Account, through ~20% faulted tries (answer-lost
// included), append to the logs of 3 partitions. An append is a keyed
// transaction that advances the partition's sequence row (If-Match) and
// inserts the log row of the new sequence number holding the key. A
// writer retries an append with the same key until it is acknowledged
// (applied, or Replayed): after a lost answer, a refused sequence update
// (another writer advanced it) or any other failure, re-reading the
// sequence first. Without a key such a retry applies an append twice when
// the first try's answer was lost; with one it must not.
//
// Invariants: 0 appends ended in tablekit.ErrOutcomeUnknown; each key
// is in at most one log row (0 duplicates); every acknowledged key is in
// exactly one; each partition's log is the sequence 1..n without gaps.
// A fifth of the acknowledged appends are sent again with their key (an
// application that lost the acknowledgement): each must come back
// Replayed. As a control, the same appends without keys are run too, and the test
// logs how many of them ended in ErrOutcomeUnknown (the faults bite).
func TestChaosKeyed(t *testing.T) {
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		inj, err := chaos.New(seed, chaos.Mixed(0.2))
		if err != nil {
			t.Fatal(err)
		}
		n, perWriter := chaos.Size(8, 12), chaos.Size(15, 30)
		accts := make([]*tablekit.Account, n)
		for i := range accts {
			accts[i] = inj.Account(t, nil)
		}
		inj.SetEnabled(false)
		name := testenv.CreateTable(t, accts[0])
		inj.SetEnabled(true)
		parts := []string{"p0", "p1", "p2"}

		var mu sync.Mutex
		acked := map[string]bool{}
		var bad []error // violations found by the writers
		tries, retried, replayed, controlUnknown, controlOps := 0, 0, 0, 0, 0
		_, err = chaos.RunWriters(ctx, seed, n, func(ctx context.Context, w *chaos.Writer) error {
			logs, err := tablekit.OpenTable[keyedRow](accts[w.Index], name, nil)
			if err != nil {
				return err
			}
			cw, err := coord.NewWriter(logs, nil)
			if err != nil {
				return err
			}
			for j := range perWriter {
				key := fmt.Sprintf("w%d-%d", w.Index, j)
				pk := parts[w.Rand.IntN(len(parts))]
				for attempt := 0; ; attempt++ {
					if attempt == 200 {
						return fmt.Errorf("%s: not acknowledged after 200 tries", key)
					}
					res, err := appendKeyed(ctx, logs, cw, pk, key)
					mu.Lock()
					tries++
					if attempt > 0 {
						retried++
					}
					if err == nil {
						acked[key] = true
						_ = res
					} else if errors.Is(err, tablekit.ErrOutcomeUnknown) {
						bad = append(bad, fmt.Errorf("%s: %w", key, err))
					}
					mu.Unlock()
					if err == nil {
						break
					}
				}
				// An application that lost the acknowledgement sends the
				// append again with its key: it must be replayed, not applied.
				if w.Rand.IntN(5) == 0 {
					res, err := appendKeyed(ctx, logs, cw, pk, key)
					mu.Lock()
					switch {
					case err == nil && res.Replayed:
						replayed++
					case err == nil:
						bad = append(bad, fmt.Errorf("%s: sent again after acknowledgement and applied again", key))
					case errors.Is(err, tablekit.ErrOutcomeUnknown):
						bad = append(bad, fmt.Errorf("%s: %w", key, err))
					default:
						bad = append(bad, fmt.Errorf("%s: sent again after acknowledgement: %w", key, err))
					}
					mu.Unlock()
				}
				// Control: the same append without a key, once.
				if j%3 == 0 {
					_, err := appendKeyed(ctx, logs, cw, "control", "")
					mu.Lock()
					controlOps++
					if errors.Is(err, tablekit.ErrOutcomeUnknown) {
						controlUnknown++
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
		logs, _ := tablekit.OpenTable[keyedRow](accts[0], name, nil)
		rows := map[string]int{}
		for _, pk := range parts {
			all, err := tablekit.Collect(logs.Query(ctx, tablekit.RowKeyPrefix(pk, "log-"), &tablekit.QueryOptions{KeyOrder: true}), 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range all {
				if want := fmt.Sprintf("log-%08d", i+1); r.RK != want {
					v.Addf("%s: row %d is %s, want %s", pk, i, r.RK, want)
				}
				rows[r.Key]++
			}
		}
		dups := 0
		for k, c := range rows {
			if c > 1 {
				dups++
				v.Addf("key %s applied %d times", k, c)
			}
		}
		for k := range acked {
			if rows[k] != 1 {
				v.Addf("acknowledged key %s applied %d times", k, rows[k])
			}
		}
		t.Logf("%d writers × %d keyed appends: %d acknowledged (%d replayed), %d tries (%d retries), %d duplicates, %d ErrOutcomeUnknown; control without keys: %d of %d ErrOutcomeUnknown",
			n, perWriter, len(acked), replayed, tries, retried, dups, countUnknown(bad), controlUnknown, controlOps)
		t.Logf("faults: %s", st.String())
		if st.FaultRate() < 0.15 || st.Count(chaos.AnswerLost, "", "") == 0 {
			v.Addf("fault rate %.1f%%, %d answers lost: too few", 100*st.FaultRate(), st.Count(chaos.AnswerLost, "", ""))
		}
		if len(acked) != n*perWriter {
			v.Addf("%d of %d appends acknowledged", len(acked), n*perWriter)
		}
		v.Report(t)
	})
}

type keyedRow struct {
	PK   string      `table:",pk"`
	RK   string      `table:",rk"`
	Seq  int64       `table:"Seq"`
	Key  string      `table:"Key"`
	ETag azcore.ETag `table:",etag"`
}

// appendKeyed appends a log row holding key to partition pk: reads the
// sequence row, then one transaction (keyed when key is not "", with the
// fingerprint of the intent, since a retry recomputes the actions)
// advances it and inserts the row.
func appendKeyed(ctx context.Context, logs *tablekit.Table[keyedRow], w *coord.Writer[keyedRow], pk, key string) (coord.Result, error) {
	seq, err := logs.Get(ctx, pk, "seq")
	var act tablekit.Action[keyedRow]
	switch {
	case errors.Is(err, tablekit.ErrNotFound):
		act = tablekit.InsertAction(keyedRow{PK: pk, RK: "seq", Seq: 1})
	case err != nil:
		return coord.Result{}, err
	default:
		act = tablekit.UpdateAction(keyedRow{PK: pk, RK: "seq", Seq: seq.Seq + 1}, seq.ETag)
	}
	next := seq.Seq + 1
	row := keyedRow{PK: pk, RK: fmt.Sprintf("log-%08d", next), Seq: next, Key: key}
	g := coord.Write{Key: key}
	if key != "" {
		// A retry reads the sequence again and recomputes the actions:
		// the key stands for "append key to pk", not for the actions.
		g.Fingerprint = pk + "/" + key
	}
	return w.Transaction(ctx, g, act, tablekit.InsertAction(row))
}

func countUnknown(errs []error) int {
	n := 0
	for _, e := range errs {
		if errors.Is(e, tablekit.ErrOutcomeUnknown) {
			n++
		}
	}
	return n
}
