package stream_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/chaos"
	"github.com/tablekit/tablekit/stream"
)

// TestLostAnswer: the service applies an append and its answer is lost
// (the SDK's retry then meets the append's own effect). With ids or
// without, the append reads back that it was applied and returns its
// versions, where a plain transaction ends in tablekit.ErrOutcomeUnknown.
func TestLostAnswer(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		ids  bool
		kind chaos.Kind
	}{
		{"answer lost, ids", true, chaos.AnswerLost},
		{"answer lost, no ids", false, chaos.AnswerLost},
		{"timeout after applying, ids", true, chaos.TimeoutAfter},
		{"timeout after applying, no ids", false, chaos.TimeoutAfter},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := &chaos.Config{Operations: []string{"Transaction"}, MaxFaults: 1}
			if c.kind == chaos.AnswerLost {
				cfg.AnswerLost = 1
			} else {
				cfg.TimeoutAfter = 1
			}
			inj, err := chaos.New(1, cfg)
			if err != nil {
				t.Fatal(err)
			}
			inj.SetEnabled(false)
			acct := inj.Account(t, nil)
			s, tbl := newStore(t, acct, nil)
			id := stream.ID{PartitionKey: "p", Prefix: "s"}
			if _, err := s.Append(ctx, id, 0, placed(2)); err != nil {
				t.Fatal(err)
			}
			evs := placed(3)
			if c.ids {
				evs = withIDs(evs, "cmd")
			}
			inj.SetEnabled(true)
			before := acct.Meter().Snapshot()
			r, err := s.Append(ctx, id, 2, evs)
			cost := acct.Meter().Snapshot().Sub(before)
			if err != nil || r.First != 3 || r.Last != 5 || r.Replayed {
				t.Fatalf("append after a lost answer: %+v, %v", r, err)
			}
			if st := inj.Stats(); st.Faults() != 1 {
				t.Fatalf("%d faults injected, want 1", st.Faults())
			}
			// The lost try, the SDK's retry (refused), and the read that
			// settles it (the first event's row holds the append's stamp).
			if cost.Total() != 3 || cost.Count("table", "Transaction") != 2 {
				t.Errorf("cost after a lost answer: %v, want 2 transactions and 1 read", cost)
			}
			wantVersions(t, "stream", collect(t, s.Forward(ctx, id, 1)), 1, 5)

			// Control: the same fault on a plain transaction.
			inj2, _ := chaos.New(1, cfg)
			acct2 := inj2.Account(t, nil)
			plain, _ := tablekit.OpenTable[tablekit.Entity](acct2, tbl.Name(), nil)
			_, err = plain.Transaction(ctx, tablekit.DeleteAction(tablekit.Entity{PartitionKey: "p", RowKey: "s~head~0000000005"}, "*"),
				tablekit.InsertAction(tablekit.Entity{PartitionKey: "p", RowKey: "s~head~0000000006"}))
			if !errors.Is(err, tablekit.ErrOutcomeUnknown) {
				t.Fatalf("control: %v, want ErrOutcomeUnknown", err)
			}
		})
	}
}
