package index_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keys"
)

// TestChaosKeyedIndex is the idempotent-write suite of SamePartition:
// chaos.Size(8, 12) writers, each with its own Account, through ~20%
// faulted tries (answer-lost included), increment shared counters with
// keyed Modify calls (WithKey(k).Modify). A counter has a unique label
// (a copy rewritten by every write) and a bucket that changes with every
// increment (a List index: two index entities change), so each
// transaction holds the entity, its copy, two list entities and the
// record. A writer retries an increment with its key until it is
// acknowledged (a nil error), whatever failed; a fifth of the
// acknowledged increments are sent again with their key (an application
// that lost the acknowledgement), which must not count.
//
// Invariants: 0 increments ended in tablekit.ErrOutcomeUnknown; every
// counter equals the number of acknowledged keys applied to it (a
// duplicate apply would make it larger, a lost one smaller); one record
// per key; the index entries agree with the entities (a copy per entity
// with its value, each entity listed in its bucket's entity and no other).
// As a control, unkeyed increments of another counter run too, and the
// test logs how many ended in ErrOutcomeUnknown and how far that counter
// is from its acknowledged increments.
func TestChaosKeyedIndex(t *testing.T) {
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
		counters := []index.ID{{"p0", "c0"}, {"p0", "c1"}, {"p0", "c2"}, {"p1", "c0"}, {"p1", "c1"}}
		control := index.ID{PartitionKey: "p0", RowKey: "control"}

		var mu sync.Mutex
		acked := map[string]index.ID{} // key -> counter
		var bad []error
		tries, retried, resent, controlUnknown, controlAcked, controlOps := 0, 0, 0, 0, 0, 0
		_, err = chaos.RunWriters(ctx, seed, n, func(ctx context.Context, w *chaos.Writer) error {
			tbl, err := tablekit.OpenTable[Tally](accts[w.Index], name, nil)
			if err != nil {
				return err
			}
			ix, err := index.NewSamePartition(tbl, tallyIndexes(), nil)
			if err != nil {
				return err
			}
			for j := range perWriter {
				key := fmt.Sprintf("w%d-%d", w.Index, j)
				c := counters[w.Rand.IntN(len(counters))]
				keyed := ix.WithKey(key)
				for attempt := 0; ; attempt++ {
					if attempt == 100 {
						return fmt.Errorf("%s: not acknowledged after 100 tries", key)
					}
					_, err := keyed.Modify(ctx, c.PartitionKey, c.RowKey, increment)
					mu.Lock()
					tries++
					if attempt > 0 {
						retried++
					}
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
				if w.Rand.IntN(5) == 0 {
					_, err := keyed.Modify(ctx, c.PartitionKey, c.RowKey, increment)
					mu.Lock()
					resent++
					if err != nil {
						bad = append(bad, fmt.Errorf("%s: sent again after acknowledgement: %w", key, err))
					}
					mu.Unlock()
				}
				if j%3 == 0 {
					_, err := ix.Modify(ctx, control.PartitionKey, control.RowKey, increment)
					mu.Lock()
					controlOps++
					switch {
					case err == nil:
						controlAcked++
					case errors.Is(err, tablekit.ErrOutcomeUnknown):
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
		tbl, _ := tablekit.OpenTable[Tally](accts[0], name, nil)
		ix, _ := index.NewSamePartition(tbl, tallyIndexes(), nil)
		raw, _ := tablekit.OpenTable[tablekit.Entity](accts[0], name, nil)
		want := map[index.ID]int{}
		for _, c := range acked {
			want[c]++
		}
		for _, c := range counters {
			got, err := ix.Get(ctx, c.PartitionKey, c.RowKey)
			if err != nil && !(errors.Is(err, tablekit.ErrNotFound) && want[c] == 0) {
				t.Fatal(err)
			}
			if got.N != want[c] {
				v.Addf("counter %s is %d, want %d, its acknowledged keys", c, got.N, want[c])
			}
		}
		records := checkTallyRows(t, ctx, ix, raw, []string{"p0", "p1"}, &v)
		if records != len(acked) {
			v.Addf("%d idempotency records, want %d (one per acknowledged key)", records, len(acked))
		}
		ctl, _ := ix.Get(ctx, control.PartitionKey, control.RowKey)
		t.Logf("%d writers × %d keyed increments: %d acknowledged, %d tries (%d retries), %d sent again after acknowledgement, %d ErrOutcomeUnknown; control without keys: %d of %d ErrOutcomeUnknown, counter %d for %d acknowledged",
			n, perWriter, len(acked), tries, retried, resent, countUnknown(bad), controlUnknown, controlOps, ctl.N, controlAcked)
		t.Logf("faults: %s", st.String())
		if st.FaultRate() < 0.15 || st.Count(chaos.AnswerLost, "", "") == 0 {
			v.Addf("fault rate %.1f%%, %d answers lost: too few", 100*st.FaultRate(), st.Count(chaos.AnswerLost, "", ""))
		}
		if len(acked) != n*perWriter {
			v.Addf("%d of %d increments acknowledged", len(acked), n*perWriter)
		}
		v.Report(t)
	})
}

// increment adds 1 to a Tally and moves it to the bucket of its new
// count, so that every increment changes two List index entities.
func increment(v *Tally) error {
	v.N++
	v.Label = "label-" + v.ID
	v.Bucket = "b" + strconv.Itoa(v.N%3)
	return nil
}

// checkTallyRows checks that the index rows of partitions pks agree with
// their entities, and returns the number of idempotency records.
func checkTallyRows(t *testing.T, ctx context.Context, ix *index.SamePartition[Tally], raw *tablekit.Table[tablekit.Entity], pks []string, v *chaos.Violations) (records int) {
	t.Helper()
	labelPrefix, _ := keys.Compound("label")
	for _, pk := range pks {
		entities := map[string]Tally{}
		for e, err := range ix.Query(ctx, tablekit.PartitionEq(pk), nil) {
			if err != nil {
				t.Fatal(err)
			}
			entities[e.ID] = e
		}
		copies := 0
		for e, err := range raw.Query(ctx, tablekit.PartitionEq(pk), &tablekit.QueryOptions{Reserved: true}) {
			if err != nil {
				t.Fatal(err)
			}
			switch rk := e.RowKey; {
			case strings.HasPrefix(rk, coord.ReservedPrefix):
				records++
			case strings.HasPrefix(rk, labelPrefix+"!"):
				copies++
			}
		}
		if copies != len(entities) {
			v.Addf("partition %s: %d label copies for %d entities", pk, copies, len(entities))
		}
		listed := map[string][]string{} // id -> buckets listing it
		for b := range 3 {
			bucket := "b" + strconv.Itoa(b)
			ids, err := ix.IDs(ctx, pk, "bucket", bucket)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				listed[id.RowKey] = append(listed[id.RowKey], bucket)
			}
		}
		for id, e := range entities {
			c, err := ix.Find(ctx, pk, "label", e.Label)
			if err != nil || c.ID != id || c.N != e.N {
				v.Addf("%s/%s (N %d): label copy %+v, %v", pk, id, e.N, c, err)
			}
			if !slices.Equal(listed[id], []string{e.Bucket}) {
				v.Addf("%s/%s in bucket %s is listed in %v", pk, id, e.Bucket, listed[id])
			}
			delete(listed, id)
		}
		for id, bs := range listed {
			v.Addf("%s/%s is no entity, but listed in %v", pk, id, bs)
		}
	}
	return records
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
