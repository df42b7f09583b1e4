package patterns_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

func TestSeriesConcurrentIncrements(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	// A longer first back-off than the default: under the race detector a
	// read-modify-write cycle takes longer, and 16 writers collide more.
	// 100 tries, as a series with many writers needs (the Table's
	// TableOptions.Retry is the Series' conflict retry).
	retrying := typed[tablekit.Entity](t, tbl, &tablekit.TableOptions{Retry: tablekit.RetryPolicy{MaxAttempts: 100, BaseDelay: 50 * time.Millisecond}})
	s, err := patterns.NewSeries(retrying, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for range 100 {
				if _, err := s.Add(ctx, "emp000223", "2025-03-14", 9, 1); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	before := acct.Meter().Snapshot()
	values, err := s.Get(ctx, "emp000223", "2025-03-14")
	if err != nil {
		t.Fatal(err)
	}
	if cost := acct.Meter().Snapshot().Sub(before); cost.Total() != 1 || cost.Count("table", "GetEntity") != 1 {
		t.Fatalf("Get cost %v; want one point query", cost)
	}
	if len(values) != 24 || values[9] != 1600 {
		t.Fatalf("slot 9 = %d, want 1600 (%v)", values[9], values)
	}
	for i, v := range values {
		if i != 9 && v != 0 {
			t.Fatalf("slot %d = %d", i, v)
		}
	}
	// The entity holds exactly the written slot, named H09.
	e, err := tbl.Get(ctx, "emp000223", "2025-03-14")
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Properties) != 1 || e.Properties["H09"] != int64(1600) {
		t.Fatalf("stored %v", e.Properties)
	}
}

func TestSeriesSetAndLimits(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	s, err := patterns.NewSeries(tbl, &patterns.SeriesOptions{Prefix: "Day", Slots: 31})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "p", "2025-01"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("Get of a missing series: %v", err)
	}
	if _, err := s.Modify(ctx, "p", "2025-01", func(v []int64) error { v[30] = -5; return nil }); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Add(ctx, "p", "2025-01", 0, 7); err != nil || n != 7 {
		t.Fatalf("Add: %d, %v", n, err)
	}
	if e, err := tbl.Get(ctx, "p", "2025-01"); err != nil || e.Properties["Day30"] != int64(-5) {
		t.Fatalf("slot 30 is not stored as Day30: %v, %v", e.Properties, err)
	}
	values, err := s.Get(ctx, "p", "2025-01")
	if err != nil || values[0] != 7 || values[30] != -5 {
		t.Fatalf("values %v, %v", values, err)
	}
	if _, err := s.Add(ctx, "p", "2025-01", 31, 1); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Fatalf("slot out of range: %v", err)
	}
	_, err = patterns.NewSeries(tbl, &patterns.SeriesOptions{Slots: 300})
	if !errors.Is(err, tablekit.ErrTooLarge) || !strings.Contains(err.Error(), "patterns.Wide") {
		t.Fatalf("a 300-slot series: %v", err)
	}
	// A series entity that also holds other properties can overflow at write time.
	s2, err := patterns.NewSeries(tbl, &patterns.SeriesOptions{Slots: 250})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Insert(ctx, tablekit.Entity{PartitionKey: "q", RowKey: "r", Properties: map[string]any{"A": 1, "B": 2, "C": 3}}); err != nil {
		t.Fatal(err)
	}
	_, err = s2.Add(ctx, "q", "r", 0, 1)
	if err != nil {
		t.Fatalf("one slot more fits: %v", err)
	}
	_, err = s2.Modify(ctx, "q", "r", func(v []int64) error {
		for i := range v {
			v[i] = 1
		}
		return nil
	})
	if !errors.Is(err, tablekit.ErrTooLarge) || !strings.Contains(err.Error(), "patterns.Wide") {
		t.Fatalf("253 properties: %v", err)
	}
}
