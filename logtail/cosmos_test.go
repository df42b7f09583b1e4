package logtail_test

import (
	"context"
	"errors"
	"slices"
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
