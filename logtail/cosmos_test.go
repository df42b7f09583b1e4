package logtail_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/logtail"
)

// cosmosAccount opens an Account behind package azurite's front in Cosmos
// DB mode: query results in no key order, even within a partition.
func cosmosAccount(t *testing.T) *tablekit.Account {
	t.Helper()
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Seed: 3}})
	acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Service: tablekit.ServiceCosmosDB})
	if err != nil {
		t.Fatal(err)
	}
	return acct
}

// On Cosmos DB, Latest and Page (the newest entries first, read as the
// first of a partition) are refused before anything is sent; Since and
// Window sort their range and still return it newest first.
func TestCosmosLog(t *testing.T) {
	ctx := context.Background()
	acct := cosmosAccount(t)
	tbl, err := tablekit.OpenTable[event](acct, "cosmoslog", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	for _, shards := range []int{1, 3} {
		l, err := logtail.New(tbl, &logtail.Options{Shards: shards, PageSize: 7})
		if err != nil {
			t.Fatal(err)
		}
		pk := "sensor" + string(rune('0'+shards))
		base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		var newestFirst []int
		for i := range 40 {
			if _, err := l.AppendAt(ctx, pk, base.Add(time.Duration(i)*time.Second), event{N: i}); err != nil {
				t.Fatal(err)
			}
			newestFirst = append([]int{i}, newestFirst...)
		}

		before := acct.Meter().Snapshot()
		if _, err := l.Latest(ctx, pk, 5); !errors.Is(err, tablekit.ErrUnsupported) {
			t.Errorf("shards %d: Latest on Cosmos DB: %v, want ErrUnsupported", shards, err)
		}
		if _, err := l.Page(ctx, pk, nil); !errors.Is(err, tablekit.ErrUnsupported) {
			t.Errorf("shards %d: Page on Cosmos DB: %v, want ErrUnsupported", shards, err)
		}
		if n := acct.Meter().Snapshot().Sub(before).Total(); n != 0 {
			t.Errorf("shards %d: refused reads sent %d requests", shards, n)
		}

		var got []int
		for e, err := range l.Window(ctx, pk, time.Time{}, time.Time{}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.N)
		}
		if !slices.Equal(got, newestFirst) {
			t.Errorf("shards %d: Since = %v, want %v", shards, got, newestFirst)
		}
		got = got[:0]
		for e, err := range l.Window(ctx, pk, base.Add(10*time.Second), base.Add(20*time.Second)) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.N)
		}
		if want := newestFirst[20:30]; !slices.Equal(got, want) {
			t.Errorf("shards %d: Window(10s, 20s) = %v, want %v", shards, got, want)
		}
	}
}

// TestCosmosAutoLog: on Cosmos DB behind an address that does not say so,
// through Accounts with the default Options (ServiceAuto), each read on a
// fresh Account that has read nothing: Latest and Page return the newest
// entries or are refused with an error naming Cosmos DB, and Window
// returns its range newest first.
func TestCosmosAutoLog(t *testing.T) {
	ctx := context.Background()
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Paging: true, Seed: 3}})
	open := func(svc tablekit.Service, shards int) *logtail.Log[event] {
		t.Helper()
		acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Service: svc})
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := tablekit.OpenTable[event](acct, "autolog", nil)
		if err != nil {
			t.Fatal(err)
		}
		if svc == tablekit.ServiceCosmosDB {
			if err := tbl.CreateIfNotExists(ctx); err != nil {
				t.Fatal(err)
			}
		}
		l, err := logtail.New(tbl, &logtail.Options{Shards: shards, PageSize: 7})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	refused := func(err error) bool {
		return errors.Is(err, tablekit.ErrUnsupported) && strings.Contains(err.Error(), "Cosmos DB")
	}
	ns := func(es []event) []int {
		var out []int
		for _, e := range es {
			out = append(out, e.N)
		}
		return out
	}
	for _, shards := range []int{1, 3} {
		w := open(tablekit.ServiceCosmosDB, shards)
		pk := "sensor" + string(rune('0'+shards))
		base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		var newestFirst []int
		for i := range 40 {
			if _, err := w.AppendAt(ctx, pk, base.Add(time.Duration(i)*time.Second), event{N: i}); err != nil {
				t.Fatal(err)
			}
			newestFirst = append([]int{i}, newestFirst...)
		}
		if got, err := open(tablekit.ServiceAuto, shards).Latest(ctx, pk, 3); !refused(err) && (err != nil || !slices.Equal(ns(got), newestFirst[:3])) {
			t.Errorf("shards %d: Latest(3) = %v, %v; want %v or ErrUnsupported naming Cosmos DB", shards, ns(got), err, newestFirst[:3])
		}
		if p, err := open(tablekit.ServiceAuto, shards).Page(ctx, pk, nil); !refused(err) && (err != nil || !slices.Equal(ns(p.Items), newestFirst[:7])) {
			t.Errorf("shards %d: Page = %v, %v; want %v or ErrUnsupported naming Cosmos DB", shards, ns(p.Items), err, newestFirst[:7])
		}
		var got []int
		for e, err := range open(tablekit.ServiceAuto, shards).Window(ctx, pk, time.Time{}, time.Time{}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.N)
		}
		if !slices.Equal(got, newestFirst) {
			t.Errorf("shards %d: Window = %v, want %v", shards, got, newestFirst)
		}
		got = got[:0]
		for e, err := range open(tablekit.ServiceAuto, shards).Window(ctx, pk, base.Add(10*time.Second), base.Add(20*time.Second)) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.N)
		}
		if want := newestFirst[20:30]; !slices.Equal(got, want) {
			t.Errorf("shards %d: Window(10s, 20s) = %v, want %v", shards, got, want)
		}
	}
}
