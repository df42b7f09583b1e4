package logtail_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/logtail"
)

// TestBlobWriterUnsettledCommit: a Put Block List is applied but its answer
// is lost, the SDK's retry meets the changed blob (409 or 412), and the Get
// Block List that would tell whether the commit was its own fails too. The
// flush fails with an error matching ErrOutcomeUnknown, and the next flush
// writes the block once: in the blob it was committed to, not again in a
// new one. (Before, a failed Get Block List counted as "another writer's
// blob": the next flush wrote the records to a new blob, a second time;
// the chaos suite found it.)
func TestBlobWriterUnsettledCommit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first int // records flushed before: 0 = the lost commit creates the blob
	}{{"create", 0}, {"append", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			// The first Put Block List try is applied, then answered 500;
			// every Get Block List try fails.
			lost, err := chaos.New(1, &chaos.Config{TimeoutAfter: 1, MaxConsecutive: 1, MaxFaults: 1,
				Services: []string{"blob"}, Operations: []string{"PutBlockList"}})
			if err != nil {
				t.Fatal(err)
			}
			blind, err := chaos.New(1, &chaos.Config{Reset: 1, MaxConsecutive: -1,
				Services: []string{"blob"}, Operations: []string{"GetBlockList"}})
			if err != nil {
				t.Fatal(err)
			}
			probe := testenv.Account(t, nil)
			var logs logBuffer
			acct := lost.Account(t, &tablekit.Options{Logger: logs.logger(), ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{blind.Policy(chaos.EndpointsOf(probe))}}})
			lost.SetEnabled(false)
			blind.SetEnabled(false)
			c := testenv.NewContainer(t, acct)
			clock := newClock(time.Date(2024, 5, 6, 15, 4, 5, 0, time.UTC))
			w, err := logtail.OpenWriter(acct, containerName(c), "app", &logtail.WriterOptions{Clock: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			r, err := logtail.OpenReader(acct, containerName(c), "app")
			if err != nil {
				t.Fatal(err)
			}
			want := writeN(t, w, clock, "first", tc.first)
			if err := w.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			want = append(want, writeN(t, w, clock, "lost", 3)...)
			lost.SetEnabled(true)
			blind.SetEnabled(true)
			err = w.Flush(ctx)
			lost.SetEnabled(false)
			blind.SetEnabled(false)
			if lost.Stats().Count(chaos.TimeoutAfter, "", "") != 1 || blind.Stats().Faults() == 0 {
				t.Fatalf("faults injected: %v; %v", lost.Stats(), blind.Stats())
			}
			if err == nil || !errors.Is(err, tablekit.ErrOutcomeUnknown) {
				t.Errorf("the flush whose commit could not be settled: %v, want an error matching ErrOutcomeUnknown", err)
			}
			want = append(want, writeN(t, w, clock, "after", 2)...)
			if err := w.Close(ctx); err != nil {
				t.Fatal(err)
			}
			equalRecords(t, "after Close", readAll(t, ctx, r, want[0].Time, clock.Now()), want)
			if s := w.Stats(); s.Blobs != 1 {
				t.Errorf("%d blobs created, want 1: %+v", s.Blobs, s)
			}
			// The operator sees the unknown outcome, checked again by the
			// next flush, and how it was settled.
			unknown := logs.records(t, "commit outcome unknown; its records stay buffered")
			settled := logs.records(t, "commit settled as applied")
			if len(unknown) != 1 || len(settled) != 1 {
				t.Fatalf("%d outcome-unknown and %d settled records, want 1 each; logged:\n%s", len(unknown), len(settled), logs.String())
			}
			wantFields(t, unknown[0], map[string]string{"level": "WARN", "container": w.ContainerName(), "source": "app", "records": "3"}, "blob", "block", "error", "check_error")
			wantFields(t, settled[0], map[string]string{"level": "INFO", "container": w.ContainerName(), "source": "app", "records": "3",
				"blob": fmt.Sprint(unknown[0]["blob"]), "block": fmt.Sprint(unknown[0]["block"])}, "error")
		})
	}
}

// TestBlobWriteThroughAfterLostCommit: in write-through mode, a record
// whose commit was applied but never answered is reported stored when the
// Writer can read the block list ("settled"), and otherwise fails with
// ErrOutcomeUnknown ("unsettled"); either way the next record is written
// and the lost one is stored once. (Before, the write failed with the
// transport error even when the block list showed the commit, and after
// it the Writer kept the blob's old block list and ETag, so the next
// record's commit met 412 and failed too, though nothing was wrong with
// it.)
func TestBlobWriteThroughAfterLostCommit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		blind   bool // Get Block List fails too
		settled bool
	}{{"settled", false, true}, {"unsettled", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			// Every try of the commit is applied (or meets the applied
			// one), and every answer is lost.
			inj, err := chaos.New(1, &chaos.Config{AnswerLost: 1, MaxConsecutive: -1, MaxFaults: 4,
				Services: []string{"blob"}, Operations: []string{"PutBlockList"}})
			if err != nil {
				t.Fatal(err)
			}
			blind, err := chaos.New(1, &chaos.Config{Reset: 1, MaxConsecutive: -1,
				Services: []string{"blob"}, Operations: []string{"GetBlockList"}})
			if err != nil {
				t.Fatal(err)
			}
			probe := testenv.Account(t, nil)
			var logs logBuffer
			acct := inj.Account(t, &tablekit.Options{Logger: logs.logger(), ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{blind.Policy(chaos.EndpointsOf(probe))}}})
			inj.SetEnabled(false)
			blind.SetEnabled(false)
			c := testenv.NewContainer(t, acct)
			clock := newClock(time.Date(2024, 5, 6, 15, 4, 5, 0, time.UTC))
			w, err := logtail.OpenWriter(acct, containerName(c), "app", &logtail.WriterOptions{WriteThrough: true, Clock: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			r, err := logtail.OpenReader(acct, containerName(c), "app")
			if err != nil {
				t.Fatal(err)
			}
			want := writeN(t, w, clock, "first", 2)
			inj.SetEnabled(true)
			blind.SetEnabled(tc.blind)
			lost := logtail.Record{Time: clock.Now(), Message: "lost"}
			err = w.WriteRecord(ctx, lost)
			inj.SetEnabled(false)
			blind.SetEnabled(false)
			if inj.Stats().Faults() != 4 {
				t.Fatalf("faults injected: %v", inj.Stats())
			}
			switch {
			case tc.settled && err != nil:
				t.Errorf("the write whose commit was applied, its answers lost: %v, want nil (the block list shows it)", err)
			case !tc.settled && !errors.Is(err, tablekit.ErrOutcomeUnknown):
				t.Errorf("the write whose commit could not be settled: %v, want an error matching ErrOutcomeUnknown", err)
			}
			if tc.settled {
				recs := logs.records(t, "commit settled as applied after its answer was lost")
				if len(recs) != 1 {
					t.Fatalf("%d settled records, want 1; logged:\n%s", len(recs), logs.String())
				}
				wantFields(t, recs[0], map[string]string{"level": "INFO", "container": w.ContainerName(), "source": "app", "records": "1"}, "blob", "block", "error")
			} else {
				recs := logs.records(t, "commit outcome unknown; the write fails")
				if len(recs) != 1 {
					t.Fatalf("%d outcome-unknown records, want 1; logged:\n%s", len(recs), logs.String())
				}
				wantFields(t, recs[0], map[string]string{"level": "WARN", "container": w.ContainerName(), "source": "app", "records": "1"}, "blob", "block", "error", "check_error")
			}
			want = append(want, lost) // it was applied
			clock.Add(time.Second)
			want = append(want, writeN(t, w, clock, "after", 2)...) // fails the test on an error
			if err := w.Close(ctx); err != nil {
				t.Fatal(err)
			}
			equalRecords(t, "after Close", readAll(t, ctx, r, want[0].Time, clock.Now()), want)
		})
	}
}
