package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/logtail"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results and costs the pattern promises. On Azure
// Cosmos DB for Table, which does not keep key order (the design guide
// says the pattern does not suit it), the example stops at its first
// Latest, refused.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), testenv.Account(t, nil), &out)
	if onCosmos() {
		if !refusedOnCosmos(err) {
			t.Fatalf("the example on Cosmos DB: %v, want Latest refused with ErrUnsupported naming Cosmos DB\n%s", err, out.String())
		}
		testenv.Narrates(t, out.String(), "appended 60 readings, the last three in the same tick: 60 transactions (one insert each)")
		return
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	testenv.Narrates(t, out.String(),
		"appended 60 readings, the last three in the same tick: 60 transactions (one insert each)",
		"Latest(5) = [reading 59, reading 58, reading 57, reading 56, reading 55], queries: {1}",
		"Window(15:10, 15:14) = [reading 13, reading 12, reading 11, reading 10], newest first, queries: {1}",
		"60 entries in 3 pages",
		"with Shards: 4 the 40 entries of busy-sensor went to 4 partitions: map[0!busy-sensor:",
		"Latest(3) = [busy 39, busy 38, busy 37], {4} queries (one per bucket)",
	)
}

// onCosmos reports whether the test account is Cosmos DB's, where Latest
// and Page are refused; refusedOnCosmos whether err is their refusal.
func onCosmos() bool { return testenv.Service() == tablekit.ServiceCosmosDB }

func refusedOnCosmos(err error) bool {
	return errors.Is(err, tablekit.ErrUnsupported) && strings.Contains(err.Error(), "Cosmos DB")
}

// newLog returns a Log of a new table, with readings 0..n-1 one a minute
// from base.
func newLog(t *testing.T, acct *tablekit.Account, opts *logtail.Options, base time.Time, n int) (*tablekit.Table[Reading], *logtail.Log[Reading]) {
	t.Helper()
	ctx := context.Background()
	tbl := testenv.OpenTable[Reading](t, acct, nil)
	log, err := logtail.New(tbl, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := log.AppendAt(ctx, "sensor-7", base.Add(time.Duration(i)*time.Minute), Reading{Note: fmt.Sprint("reading ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	return tbl, log
}

// The service may return short pages at any time; Latest reads on until it
// has n. A Log asking for pages of 2 shows it: the same 5, in 3 queries.
func TestLatestReadsOnPastShortPages(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	_, log := newLog(t, acct, &logtail.Options{PageSize: 2}, time.Date(2024, 5, 6, 15, 0, 0, 0, time.UTC), 10)
	before := acct.Meter().Snapshot()
	latest, err := log.Latest(ctx, "sensor-7", 5)
	if onCosmos() {
		if !refusedOnCosmos(err) || acct.Meter().Snapshot().Sub(before).Total() != 0 {
			t.Errorf("Latest on Cosmos DB: %v, want it refused before sending", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if got, want := notes(latest), "[reading 9, reading 8, reading 7, reading 6, reading 5]"; got != want {
		t.Errorf("Latest(5) with pages of 2 = %s, want %s", got, want)
	}
	if q := acct.Meter().Snapshot().Sub(before).Count("table", "QueryEntities"); q < 3 || (q != 3 && !testenv.PagesAsAzure()) {
		t.Errorf("Latest(5) with pages of 2 took %d queries, want 3", q)
	}
}

// A row a .NET program wrote with the guide's formula and no suffix sorts
// among the Log's entries by time, and Entry.Time decodes it.
func TestDotNetRow(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2024, 5, 6, 15, 0, 0, 0, time.UTC)
	tbl, log := newLog(t, testenv.Account(t, nil), nil, base, 5)
	netAt := base.Add(2*time.Minute + 30*time.Second)
	const maxTicks, epochTicks = 3155378975999999999, 621355968000000000 // DateTime.MaxValue.Ticks, Unix epoch
	netKey := fmt.Sprintf("%019d", maxTicks-(netAt.Unix()*10_000_000+epochTicks))
	if _, err := tbl.AsEntities().Insert(ctx, tablekit.Entity{PartitionKey: "sensor-7", RowKey: netKey, Properties: map[string]any{"Note": "written by .NET"}}); err != nil {
		t.Fatal(err)
	}
	latest, err := log.Latest(ctx, "sensor-7", 4)
	if onCosmos() {
		if !refusedOnCosmos(err) {
			t.Errorf("Latest on Cosmos DB: %v, want it refused", err)
		}
		// The .NET row still sorts by time: Window reads it in place.
		latest = nil
		for r, err := range log.Window(ctx, "sensor-7", time.Time{}, time.Time{}) {
			if err != nil {
				t.Fatal(err)
			}
			if len(latest) < 4 {
				latest = append(latest, r)
			}
		}
	} else if err != nil {
		t.Fatal(err)
	}
	if got, want := notes(latest), "[reading 4, reading 3, written by .NET, reading 2]"; got != want {
		t.Errorf("Latest(4) = %s, want %s", got, want)
	}
	if len(latest) == 4 && !latest[2].Time().Equal(netAt) {
		t.Errorf("the .NET row's time: %v, want %v", latest[2].Time(), netAt)
	}
	if !slices.ContainsFunc(latest, func(r Reading) bool { return r.RowKey == netKey }) {
		t.Errorf("the .NET row (RowKey %s) is not among the latest", netKey)
	}
}
