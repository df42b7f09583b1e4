package coord_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// TestCost measures what each operation costs in storage transactions,
// with the Meter (the figures of BENCHMARKS.md), and asserts the counts
// the docs promise.
func TestCost(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[Order](t, acct, nil)
	ents := tbl.AsEntities()
	m := acct.Meter()
	var report strings.Builder
	measure := func(what string, want int64, fn func() error) {
		t.Helper()
		before := m.Snapshot()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		c := m.Snapshot().Sub(before)
		fmt.Fprintf(&report, "\n  %-44s %d (%v)", what, c.Total(), c)
		if c.Total() != want {
			t.Errorf("%s cost %d transactions (%v), want %d", what, c.Total(), c, want)
		}
	}
	clock := newFakeClock()
	a, _ := coord.NewLease(ents, "leases", "cost", "a", &coord.LeaseOptions{Duration: 10 * time.Second, Clock: clock.Now})
	b, _ := coord.NewLease(ents, "leases", "cost", "b", &coord.LeaseOptions{Duration: 10 * time.Second, Clock: clock.Now})
	measure("Lease.Acquire (absent)", 2, func() error { _, err := a.Acquire(ctx); return err })
	measure("Lease.Renew", 1, func() error { return a.Renew(ctx) })
	measure("Lease.Acquire (held by another)", 1, func() error { _, err := b.Acquire(ctx); return ignoreHeld(err) })
	clock.Add(11 * time.Second)
	measure("Lease.Acquire (takeover after Duration)", 2, func() error { _, err := b.Acquire(ctx); return err })
	measure("Lease.Release", 1, func() error { return b.Release(ctx) })
	measure("Lease.Acquire (released)", 2, func() error { _, err := a.Acquire(ctx); return err })

	w, _ := coord.NewWriter(tbl, nil)
	measure("Table.Transaction (unkeyed, 1 action)", 1, func() error {
		_, err := tbl.Transaction(ctx, tablekit.InsertAction(Order{Shop: "s", ID: "1"}))
		return err
	})
	measure("Writer.Transaction, keyed", 1, func() error {
		_, err := w.Transaction(ctx, coord.Write{Key: "k2"}, tablekit.InsertAction(Order{Shop: "s", ID: "2"}))
		return err
	})
	measure("Writer.Transaction, keyed, repeated (replay)", 2, func() error {
		_, err := w.Transaction(ctx, coord.Write{Key: "k2"}, tablekit.InsertAction(Order{Shop: "s", ID: "2"}))
		return err
	})
	measure("Writer.Transaction, fenced (fence not cached)", 2, func() error {
		_, err := w.Transaction(ctx, coord.Write{Term: 3}, tablekit.InsertAction(Order{Shop: "s", ID: "3"}))
		return err
	})
	measure("Writer.Transaction, fenced and keyed (cached)", 1, func() error {
		_, err := w.Transaction(ctx, coord.Write{Term: 3, Key: "k4"}, tablekit.InsertAction(Order{Shop: "s", ID: "4"}))
		return err
	})
	measure("Writer.Fence (raise, cached)", 1, func() error { return w.Fence(ctx, "s", 4) })

	// Leadership: 1 read and 1 insert to win, then 1 write per renewal,
	// no reads, and 1 write to release. The lease lasts a minute, so that
	// a loaded machine (renewals late by seconds) cannot lose it; the
	// leader leads until it has renewed 10 times, however long that takes.
	l, _ := coord.NewLease(ents, "leases", "lead", "l", &coord.LeaseOptions{Duration: time.Minute})
	lctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	before := m.Snapshot()
	var led time.Duration
	err := l.Lead(lctx, func(ctx context.Context, term int64) error {
		s := time.Now()
		defer func() { led = time.Since(s) }()
		for m.Snapshot().Sub(before).Count("table", "UpdateEntity") < 10 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
		return nil
	}, &coord.LeadOptions{RetryPeriod: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Snapshot().Sub(before)
	renewals := c.Count("table", "UpdateEntity") - 1 // the release
	fmt.Fprintf(&report, "\n  Lease.Lead for %v (RetryPeriod 50 ms, jittered to 37-50 ms): %v: %d renewals, one per %v (pause + round trip)",
		led.Round(time.Millisecond), c, renewals, (led / time.Duration(max(renewals, 1))).Round(time.Millisecond))
	if c.Count("table", "GetEntity") != 1 || c.Count("table", "InsertEntity") != 1 || renewals < 10 || c.Total() != int64(renewals)+3 {
		t.Errorf("leading cost %v, want 1 read, 1 insert, then only renewals (%d) and the release", c, renewals)
	}
	t.Logf("transactions per operation:%s", report.String())
}

func ignoreHeld(err error) error {
	if errors.Is(err, coord.ErrHeld) {
		return nil
	}
	return err
}
