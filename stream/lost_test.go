package stream_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/stream"
)

// policyFunc is a pipeline policy of a function.
type policyFunc func(req *policy.Request) (*http.Response, error)

func (f policyFunc) Do(req *policy.Request) (*http.Response, error) { return f(req) }

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

// TestLostAnswerTrimmed: an append is applied, and before its answer
// arrives (it is lost) a Trim drops its events. With ids, the id rows
// settle it: its versions come back (Replayed: the stamp that would tell
// this call's own try is gone with the event). Without ids nothing can
// tell whether it was applied: ErrOutcomeUnknown, not a conflict that
// would say nothing was written, and not an append sent again.
func TestLostAnswerTrimmed(t *testing.T) {
	ctx := context.Background()
	for _, ids := range []bool{true, false} {
		t.Run(fmt.Sprintf("ids %v", ids), func(t *testing.T) {
			var trimmer *stream.Store
			var armed atomic.Bool
			lose := policyFunc(func(req *policy.Request) (*http.Response, error) {
				if !armed.Load() || !strings.HasSuffix(req.Raw().URL.Path, "$batch") {
					return req.Next()
				}
				armed.Store(false)
				resp, err := req.Next()
				if err != nil {
					return resp, err
				}
				_ = resp.Body.Close()
				if err := trimmer.Trim(ctx, stream.ID{PartitionKey: "p"}, 6); err != nil { // drops 1..5: the append's 3..5 too
					t.Error(err)
				}
				return nil, errors.New("connection reset by peer (after the service applied the append)")
			})
			acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{lose}, Retry: policy.RetryOptions{RetryDelay: time.Millisecond}}})
			s, tbl := newStore(t, acct, nil)
			other, err := tablekit.OpenTable[tablekit.Entity](testenv.Account(t, nil), tbl.Name(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if trimmer, err = stream.NewStore(other, registry(t), nil); err != nil {
				t.Fatal(err)
			}
			id := stream.ID{PartitionKey: "p"}
			if _, err := s.Append(ctx, id, 0, placed(2)); err != nil {
				t.Fatal(err)
			}
			evs := placed(4)
			if ids {
				evs = withIDs(evs, "cmd")
			}
			armed.Store(true)
			r, err := s.Append(ctx, id, 2, evs)
			switch {
			case ids && (err != nil || r.First != 3 || r.Last != 6):
				t.Fatalf("append with ids, answer lost, events trimmed: %+v, %v, want versions 3..6", r, err)
			case !ids && !errors.Is(err, tablekit.ErrOutcomeUnknown):
				t.Fatalf("append without ids, answer lost, events trimmed: %+v, %v, want ErrOutcomeUnknown", r, err)
			}
			if v, err := s.Version(ctx, id); err != nil || v != 6 {
				t.Fatalf("version %d, %v: want 6, the append applied once", v, err)
			}
			wantVersions(t, "from the start", collect(t, s.Forward(ctx, id, 6)), 6, 6)
		})
	}
}
