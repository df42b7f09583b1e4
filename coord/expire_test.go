package coord_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/testenv"
)

type Session struct {
	User    string    `table:",pk"`
	ID      string    `table:",rk"`
	Expires time.Time `table:"Expires"`
}

func TestLiveAndSweep(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[Session](t, acct, nil)
	now := time.Now().UTC()
	var all []Session
	for i := range 250 {
		all = append(all, Session{User: fmt.Sprintf("u%d", i%3), ID: fmt.Sprintf("old%03d", i), Expires: now.Add(-time.Minute)})
	}
	for i := range 10 {
		all = append(all, Session{User: fmt.Sprintf("u%d", i%3), ID: fmt.Sprintf("new%03d", i), Expires: now.Add(time.Hour)})
	}
	if _, err := tbl.BulkWriter(nil).Upsert(ctx, all); err != nil {
		t.Fatal(err)
	}
	live, err := tablekit.Collect(tbl.Query(ctx, coord.Live(tablekit.PartitionEq("u0"), now), nil), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 4 {
		t.Errorf("Live read %d rows of u0, want the 4 unexpired", len(live))
	}
	ents := tbl.AsEntities()
	var res coord.SweepResult
	total, calls := 0, 0
	before := acct.Meter().Snapshot()
	for {
		res, err = coord.Sweep(ctx, ents, tablekit.Filter{}, &coord.SweepOptions{Limit: 100, Continuation: res.Continuation})
		if err != nil {
			t.Fatal(err)
		}
		calls++
		if res.Deleted > 100 {
			t.Errorf("a Sweep call with Limit 100 deleted %d", res.Deleted)
		}
		total += res.Deleted
		if res.Continuation == "" {
			break
		}
		if calls > 10 {
			t.Fatal("sweep does not end")
		}
	}
	t.Logf("swept %d rows in %d calls: %v", total, calls, acct.Meter().Snapshot().Sub(before))
	if total != 250 || calls < 3 {
		t.Errorf("swept %d rows in %d calls, want 250 in >= 3", total, calls)
	}
	n, err := tbl.Count(ctx, tablekit.Filter{})
	if err != nil || n != 10 {
		t.Errorf("%d rows left (%v), want the 10 unexpired", n, err)
	}
	if _, err := coord.Sweep(ctx, nil, tablekit.Filter{}, nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("Sweep(nil): %v", err)
	}
}

// TestSweepKeys: idempotency records expire after KeyTTL and are swept
// like any expiring row.
func TestSweepKeys(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[Session](t, acct, nil)
	w, err := coord.NewWriter(tbl, &coord.WriterOptions{KeyTTL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Transaction(ctx, coord.Write{Key: "k"}, tablekit.UpsertAction(Session{User: "u", ID: "s", Expires: time.Now().Add(time.Hour)})); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	res, err := coord.Sweep(ctx, tbl.AsEntities(), tablekit.RowKeyPrefix("u", coord.ReservedPrefix), nil)
	if err != nil || res.Deleted != 1 {
		t.Fatalf("sweeping records: %+v, %v; want 1 deleted", res, err)
	}
	r, err := w.Transaction(ctx, coord.Write{Key: "k"}, tablekit.UpsertAction(Session{User: "u", ID: "s"}))
	if err != nil || r.Replayed {
		t.Errorf("after its record was swept, a key is new again: %+v, %v", r, err)
	}
}
