// Command timeline shows the cure for the prepend/append
// anti-pattern: a time-ordered timeline of clicks spread over shard
// partitions instead of appended to the end of one, and a time window read
// back in time order by merging parallel per-shard range queries.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/timeline
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// Click is the value of one entry of the timeline. The timeline sets the
// keys: the shard's PartitionKey and a RowKey of the entry's time and ID.
type Click struct {
	Shard string `table:",pk"` // e.g. "3!clicks": the shard bucket first
	Key   string `table:",rk"` // the entry's time and ID
	Page  string
	User  string
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err == nil {
		var acct *tablekit.Account
		if acct, err = tablekit.Open(conn, nil); err == nil {
			err = run(ctx, acct, os.Stdout)
			fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
		}
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "timeline:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a table of its own, uses it, and deletes it.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	tbl, err := tablekit.OpenTable[Click](acct, "Clicks"+rand.Text()[:8], nil)
	if err != nil {
		return err
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer tbl.DeleteTable(context.WithoutCancel(ctx))
	meter := acct.Meter()
	fmt.Fprintln(out, "keys that grow with time (PartitionKey = date, RowKey = time) put every new entity at the end of one partition: a hot spot that caps the write rate")

	const shards = 8
	s, err := patterns.NewTimeline[Click](tbl.AsEntities(), "clicks", shards)
	if err != nil {
		return err
	}
	partitions, err := keys.ShardedKeys(shards, "clicks")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "instead, PartitionKey = the shard bucket of the entry ID (FNV-1a mod %d) first, then the timeline's name (keys.ShardedKey): %s; RowKey = time and ID\n",
		shards, strings.Join(partitions, " "))

	// 2,000 clicks, one every 1.5 s from 09:00.
	base := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	const total = 2000
	entries := make([]patterns.TimelineEntry[Click], total)
	for i := range entries {
		entries[i] = patterns.TimelineEntry[Click]{
			Time:  base.Add(time.Duration(i) * 1500 * time.Millisecond),
			ID:    fmt.Sprintf("click-%05d", i),
			Value: Click{Page: fmt.Sprintf("/products/%d", i%13), User: fmt.Sprintf("user%02d", i%17)},
		}
	}
	before := meter.Snapshot()
	res, err := s.Append(ctx, entries...)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "appended %d entries in %d entity group transactions (one partition and at most 100 entries each), sent in parallel: %s\n",
		res.Succeeded, res.Requests, cost(meter.Snapshot().Sub(before)))
	pk, rk, err := s.Keys(entries[400].Time, entries[400].ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  %s at %s is stored as %s / %s (a compound key: the time, whose '.' is escaped as '..', then the ID)\n", entries[400].ID, entries[400].Time.Format("15:04:05.0"), pk, rk)

	var counts []string
	for _, pk := range partitions {
		n, err := tbl.Count(ctx, tablekit.PartitionEq(pk))
		if err != nil {
			return err
		}
		counts = append(counts, fmt.Sprintf("%s=%d", pk, n))
	}
	fmt.Fprintf(out, "entries per partition: %s\n", strings.Join(counts, " "))

	// A time window: one RowKey range query per shard, in parallel, merged
	// back into time order.
	from, until := base.Add(10*time.Minute), base.Add(11*time.Minute)
	before = meter.Snapshot()
	var window []patterns.TimelineEntry[Click]
	for en, err := range s.Query(ctx, from, until, nil) {
		if err != nil {
			return err
		}
		window = append(window, en)
	}
	c := meter.Snapshot().Sub(before)
	first, last := window[0], window[len(window)-1]
	fmt.Fprintf(out, "the window 09:10-09:11, one range query per shard merged in time order: %d entries, %s (%s) .. %s (%s), %s\n",
		len(window), first.ID, first.Time.Format("15:04:05.0"), last.ID, last.Time.Format("15:04:05.0"), cost(c))
	fmt.Fprintf(out, "  each value comes back as a Click: %s, %s, %s, keys set: %t\n", first.ID, first.Value.Page, first.Value.User, first.Value.Shard == pk && first.Value.Key == rk)
	return nil
}

// cost states what a step cost in storage transactions, by operation.
func cost(s tablekit.MeterSnapshot) string {
	var ops []string
	for _, c := range s.Counts() {
		ops = append(ops, fmt.Sprintf("%s=%d", c.Operation, c.Requests))
	}
	return fmt.Sprintf("%d transaction%s (%s)", s.Total(), map[bool]string{true: "s"}[s.Total() != 1], strings.Join(ops, " "))
}
