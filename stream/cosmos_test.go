package stream_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/stream"
)

// TestCosmos runs streams behind package azurite's front in Cosmos DB mode
// (query results in no key order, Cosmos DB's limits and answers) with
// Azure's paging (short and empty pages): reads order each range of
// versions themselves, conflicts and repeats are recognised from Cosmos
// DB's answers, and several streams share a partition.
func TestCosmos(t *testing.T) {
	ctx := context.Background()
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Paging: true, Seed: 7}})
	acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Service: tablekit.ServiceCosmosDB})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, "cosmosstreams", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := stream.NewStore(tbl, registry(t), &stream.Options{PageSize: 25})
	if err != nil {
		t.Fatal(err)
	}
	ids := []stream.ID{{PartitionKey: "p"}, {PartitionKey: "p", Prefix: "x"}, {PartitionKey: "q", Prefix: "y"}}
	for round := range 4 {
		for _, id := range ids {
			evs := withIDs(placed(30), fmt.Sprintf("%s-r%d", id.Prefix, round))
			r, err := s.Append(ctx, id, int64(30*round), evs)
			if err != nil || r.First != int64(30*round+1) {
				t.Fatalf("%v round %d: %+v, %v", id, round, r, err)
			}
		}
	}
	// The front answers out of key order: the reads below must order.
	rows, err := tablekit.Collect(tbl.Query(ctx, tablekit.RowKeyPrefix("p", "~ev~"), nil), 0)
	if err != nil || len(rows) != 120 {
		t.Fatalf("raw read: %d rows, %v", len(rows), err)
	}
	if slices.IsSortedFunc(rows, func(a, b tablekit.Entity) int { return strings.Compare(a.RowKey, b.RowKey) }) {
		t.Fatal("the Cosmos front answered in key order: this test shows nothing")
	}
	for _, id := range ids {
		all := collect(t, s.Forward(ctx, id, 1))
		wantVersions(t, fmt.Sprint(id), all, 1, 120)
		for i, ev := range all {
			if want := fmt.Sprintf("%s-r%d-%d", id.Prefix, i/30, i%30); ev.ID != want || ev.Kind != "Placed" || ev.Data.(Placed).Count != i%30 {
				t.Fatalf("%v version %d: id %q kind %q data %+v, want id %q, kind Placed", id, ev.Version, ev.ID, ev.Kind, ev.Data, want)
			}
		}
		wantVersions(t, fmt.Sprint(id)+" backward", collect(t, s.Backward(ctx, id, 0)), 120, 1)
		wantVersions(t, fmt.Sprint(id)+" from 50", collect(t, s.Forward(ctx, id, 50)), 50, 120)
	}
	id := ids[1]
	_, err = s.Append(ctx, id, 100, placed(1))
	var ce *stream.ConflictError
	if !errors.As(err, &ce) || ce.Current != 120 {
		t.Fatalf("conflict: %v", err)
	}
	if r, err := s.Append(ctx, id, 120, withIDs(placed(30), "x-r2")); err != nil || !r.Replayed || r.First != 61 || r.Last != 90 {
		t.Fatalf("repeat: %+v, %v", r, err)
	}
	if _, err := s.Append(ctx, id, 120, []stream.Event{{ID: "new", Data: Placed{}}, {ID: "x-r1-3", Data: Placed{}}}); !errors.Is(err, stream.ErrPartlyApplied) {
		t.Fatalf("partly applied: %v", err)
	}
	// Cosmos DB's 2 MB transaction limit is checked before sending.
	big := make([]stream.Event, 40) // 40 × 60,000 bytes
	for i := range big {
		big[i].Data = tablekit.Entity{Properties: map[string]any{"A": fmt.Sprintf("%030000d", i), "B": fmt.Sprintf("%030000d", i)}}
	}
	before := acct.Meter().Snapshot()
	if _, err := s.Append(ctx, id, 120, big); !errors.Is(err, tablekit.ErrTooLarge) {
		t.Fatalf("2.4 MB append on Cosmos DB: %v", err)
	}
	if c := acct.Meter().Snapshot().Sub(before); c.Total() != 0 {
		t.Errorf("refused append sent %v", c)
	}
}

// TestCosmosReadWhileAppending reads a stream forward behind the Cosmos DB
// front (no key order, Azure's short pages) while appends land: every
// read sees versions 1, 2, 3... without a gap or an error, however the
// pages of a range and the appends interleave.
func TestCosmosReadWhileAppending(t *testing.T) {
	ctx := context.Background()
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Paging: true, Seed: 11}})
	acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Service: tablekit.ServiceCosmosDB})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, "cosmosreads", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := stream.NewStore(tbl, registry(t), &stream.Options{PageSize: 6})
	if err != nil {
		t.Fatal(err)
	}
	id := stream.ID{PartitionKey: "p", Prefix: "s"}
	done := make(chan error, 1)
	go func() {
		var v int64
		for range 300 {
			r, err := s.Append(ctx, id, v, placed(1+int(v%3)))
			if err != nil {
				done <- err
				return
			}
			v = r.Last
		}
		done <- nil
	}()
	reads := 0
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		next := int64(1)
		for ev, err := range s.Forward(ctx, id, 1) {
			if err != nil {
				t.Fatalf("read %d: %v", reads, err)
			}
			if ev.Version != next {
				t.Fatalf("read %d: version %d after %d", reads, ev.Version, next-1)
			}
			next++
		}
		reads++
	}
	t.Logf("%d forward reads alongside 300 appends", reads)
}

// TestCosmosTrim trims streams behind the Cosmos DB front (query results
// in no key order, Azure's short and empty pages): Trim's keys-only
// queries find every row below the start whatever their order, reads say
// where the streams start, the other streams of the partition keep every
// event, and repeats of trimmed appends are recognised (or, with
// DropTrimmedIDs, their ids are gone).
func TestCosmosTrim(t *testing.T) {
	ctx := context.Background()
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Paging: true, Seed: 5}})
	acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Service: tablekit.ServiceCosmosDB})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, "cosmostrim", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := stream.NewStore(tbl, registry(t), &stream.Options{PageSize: 20})
	if err != nil {
		t.Fatal(err)
	}
	dropping, err := stream.NewStore(tbl, registry(t), &stream.Options{PageSize: 20, DropTrimmedIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	ids := []stream.ID{{PartitionKey: "p"}, {PartitionKey: "p", Prefix: "x"}, {PartitionKey: "p", Prefix: "y"}}
	for round := range 5 {
		for _, id := range ids {
			if _, err := s.Append(ctx, id, int64(30*round), withIDs(placed(30), fmt.Sprintf("%s-r%d", id.Prefix, round))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Trim(ctx, ids[0], 71); err != nil {
		t.Fatal(err)
	}
	if err := dropping.Trim(ctx, ids[1], 61); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id          stream.ID
		start       int64
		idRows, evs int
	}{{ids[0], 71, 150, 81}, {ids[1], 61, 90, 91}, {ids[2], 1, 150, 150}} {
		if start, err := s.Start(ctx, c.id); err != nil || start != c.start {
			t.Fatalf("%v: Start %d, %v", c.id, start, err)
		}
		wantVersions(t, fmt.Sprint(c.id), collect(t, s.Forward(ctx, c.id, c.start)), c.start, 150)
		wantVersions(t, fmt.Sprint(c.id)+" backward", collect(t, s.Backward(ctx, c.id, 0)), 150, c.start)
		if c.start > 1 {
			for _, from := range []int64{1, 2, c.start - 1} {
				_, err := readUntil(s.Forward(ctx, c.id, from))
				wantTrimmed(t, fmt.Sprintf("%v Forward(%d)", c.id, from), err, c.id, from, c.start)
			}
		}
		evs := rawRows(t, tbl, "p", c.id.Prefix+"~ev~")
		if len(evs) != c.evs {
			t.Errorf("%v: %d event rows, want %d", c.id, len(evs), c.evs)
		}
		if idr := rawRows(t, tbl, "p", c.id.Prefix+"~id~"); len(idr) != c.idRows {
			t.Errorf("%v: %d id rows, want %d", c.id, len(idr), c.idRows)
		}
	}
	if r, err := s.Append(ctx, ids[0], 150, withIDs(placed(30), "-r1")); err != nil || !r.Replayed || r.First != 31 {
		t.Fatalf("repeat of a trimmed append: %+v, %v", r, err)
	}
	if r, err := s.Append(ctx, ids[0], 150, withIDs(placed(30), "-r2")); err != nil || !r.Replayed || r.First != 61 {
		t.Fatalf("repeat of an append the start cuts through: %+v, %v", r, err)
	}
	var ce *stream.ConflictError
	if _, err := s.Append(ctx, ids[1], 30, withIDs(placed(30), "x-r1")); !errors.As(err, &ce) {
		t.Fatalf("repeat of an append whose ids were dropped: %v, want a conflict", err)
	}
}
