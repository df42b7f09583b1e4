// Command logtail shows the log tail pattern: RowKeys that sort newest
// first (inverted ticks), so the latest entries of a partition are one
// short range query away, time windows, paging with continuation tokens,
// and shard buckets for a log too busy for one partition.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/logtail
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/logtail"
)

// Reading is one log tail entry. It embeds logtail.Entry, whose keys the
// Log sets: PartitionKey = the sensor, RowKey = the newest-first time key.
type Reading struct {
	logtail.Entry
	Celsius float64 `table:"Celsius"`
	Note    string  `table:"Note,omitempty"`
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "logtail:", err)
		os.Exit(1)
	}
	acct, err := tablekit.Open(conn, nil)
	if err == nil {
		err = run(ctx, acct, os.Stdout)
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "logtail:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a table of its own, uses it, and deletes it.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	name := "LogTail" + rand.Text()[:8]
	tbl, err := tablekit.OpenTable[Reading](acct, name, nil)
	if err != nil {
		return err
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer tbl.DeleteTable(context.WithoutCancel(ctx))
	meter := acct.Meter()

	log, err := logtail.New(tbl, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "table %s holds sensor readings: PartitionKey = sensor, RowKey = inverted ticks, so the newest sorts first\n", name)

	// 60 readings, one a minute from 15:00; the last three share one tick.
	// AppendAt inserts each under a RowKey of its own: the guide's
	// {0:D19} of DateTime.MaxValue.Ticks - t.Ticks, then '_' and a sequence
	// number that keeps entries of the same tick apart (the later first).
	const sensor = "sensor-7"
	base := time.Date(2024, 5, 6, 15, 0, 0, 0, time.UTC)
	before := meter.Snapshot()
	var last Reading
	for i := range 60 {
		at := base.Add(time.Duration(i) * time.Minute)
		if i >= 57 {
			at = base.Add(57 * time.Minute)
		}
		if last, err = log.AppendAt(ctx, sensor, at, Reading{Celsius: 20 + float64(i%7)/2, Note: fmt.Sprint("reading ", i)}); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "appended 60 readings, the last three in the same tick: %d transactions (one insert each); the newest RowKey is %s\n",
		meter.Snapshot().Sub(before).Total(), last.RowKey)

	// The latest N: one range query from the head of the partition.
	before = meter.Snapshot()
	latest, err := log.Latest(ctx, sensor, 5, nil)
	if err != nil {
		return err
	}
	queries := meter.Snapshot().Sub(before).Count("table", "QueryEntities")
	if err := wantNotes("Latest(5)", latest, "reading 59", "reading 58", "reading 57", "reading 56", "reading 55"); err != nil {
		return err
	}
	fmt.Fprintf(out, "Latest(5) = %s, queries: %d\n", notes(latest), queries)

	// The service may return short pages at any time; Latest reads on until
	// it has n. A page size per call shows it: pages of 2 entities.
	before = meter.Snapshot()
	short, err := log.Latest(ctx, sensor, 5, &logtail.LatestOptions{PageSize: 2})
	if err != nil {
		return err
	}
	queries = meter.Snapshot().Sub(before).Count("table", "QueryEntities")
	if !slices.Equal(notesOf(short), notesOf(latest)) {
		return fmt.Errorf("Latest(5) with pages of 2 = %s, want %s", notes(short), notes(latest))
	}
	fmt.Fprintf(out, "with pages of 2 (LatestOptions.PageSize) Latest(5) still returns the same 5, in %d queries\n", queries)

	// A time window [from, to) is one RowKey range query, newest first.
	before = meter.Snapshot()
	var window []Reading
	for r, err := range log.Window(ctx, sensor, base.Add(10*time.Minute), base.Add(14*time.Minute)) {
		if err != nil {
			return err
		}
		window = append(window, r)
	}
	queries = meter.Snapshot().Sub(before).Count("table", "QueryEntities")
	if err := wantNotes("Window(15:10, 15:14)", window, "reading 13", "reading 12", "reading 11", "reading 10"); err != nil {
		return err
	}
	fmt.Fprintf(out, "Window(15:10, 15:14) = %s, newest first, queries: %d\n", notes(window), queries)

	// A row a .NET program wrote with the guide's formula and no suffix,
	// through the table's property-bag view.
	netAt := base.Add(56*time.Minute + 30*time.Second)
	const maxTicks, epochTicks = 3155378975999999999, 621355968000000000 // DateTime.MaxValue.Ticks, Unix epoch
	netKey := fmt.Sprintf("%019d", maxTicks-(netAt.Unix()*10_000_000+epochTicks))
	if _, err := tbl.AsEntities().Insert(ctx, tablekit.Entity{PartitionKey: sensor, RowKey: netKey, Properties: map[string]any{"Celsius": 19.0, "Note": "written by .NET"}}); err != nil {
		return err
	}
	latest, err = log.Latest(ctx, sensor, 5, nil)
	if err != nil {
		return err
	}
	if err := wantNotes("Latest(5) with the .NET row", latest, "reading 59", "reading 58", "reading 57", "written by .NET", "reading 56"); err != nil {
		return err
	}
	if !latest[3].Time().Equal(netAt) {
		return fmt.Errorf("the .NET row's time: %v, want %v", latest[3].Time(), netAt)
	}
	fmt.Fprintf(out, "a .NET writer's row at 15:56:30 (RowKey %s) sorts among ours by time: Latest(5) = %s\n", netKey, notes(latest))

	// Paging back: each page's continuation token is a position in the
	// log, valid while new entries arrive.
	pages, total := 0, 0
	for tok := ""; ; {
		p, err := log.Page(ctx, sensor, &logtail.PageOptions{PageSize: 25, Continuation: tok})
		if err != nil {
			return err
		}
		pages++
		total += len(p.Items)
		if tok = p.Continuation; tok == "" {
			break
		}
	}
	if total != 61 || pages != 3 {
		return fmt.Errorf("paging: %d entries in %d pages, want 61 in 3", total, pages)
	}
	fmt.Fprintf(out, "paging back 25 at a time with continuation tokens: %d entries in %d pages\n", total, pages)

	// The hot partition: every insert of a busy log goes to the head of one
	// partition (the prepend anti-pattern). Shards spreads it over 4
	// partitions keys.ShardedKey(bucket, 4, sensor), the bucket chosen by a
	// hash of the RowKey.
	sharded, err := logtail.New(tbl, &logtail.Options{Shards: 4})
	if err != nil {
		return err
	}
	const busy = "busy-sensor"
	parts := map[string]int{}
	for i := range 40 {
		r, err := sharded.AppendAt(ctx, busy, base.Add(time.Duration(i)*time.Second), Reading{Celsius: 30, Note: fmt.Sprint("busy ", i)})
		if err != nil {
			return err
		}
		if _, pk, err := keys.ParseShardedKey(r.PartitionKey, 4); err != nil || pk != busy {
			return fmt.Errorf("entry stored in partition %q, not a sharded key of %s: %v", r.PartitionKey, busy, err)
		}
		parts[r.PartitionKey]++
	}
	var spread []string
	for _, pk := range slices.Sorted(maps.Keys(parts)) {
		spread = append(spread, fmt.Sprintf("%s=%d", pk, parts[pk]))
	}
	fmt.Fprintf(out, "with Shards: 4 the 40 entries of %s went to %d partitions: %s\n", busy, len(parts), strings.Join(spread, " "))

	// Reads fan out over the buckets and merge newest first.
	before = meter.Snapshot()
	latest, err = sharded.Latest(ctx, busy, 3, nil)
	if err != nil {
		return err
	}
	queries = meter.Snapshot().Sub(before).Count("table", "QueryEntities")
	if err := wantNotes("sharded Latest(3)", latest, "busy 39", "busy 38", "busy 37"); err != nil {
		return err
	}
	fmt.Fprintf(out, "reads fan out and merge newest first: Latest(3) = %s, %d queries (one per bucket)\n", notes(latest), queries)
	return nil
}

func notesOf(rs []Reading) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Note
	}
	return out
}

func notes(rs []Reading) string { return "[" + strings.Join(notesOf(rs), ", ") + "]" }

// wantNotes returns an error unless rs holds the readings noted want, in
// that order.
func wantNotes(what string, rs []Reading, want ...string) error {
	if !slices.Equal(notesOf(rs), want) {
		return fmt.Errorf("%s = %s, want [%s]", what, notes(rs), strings.Join(want, ", "))
	}
	return nil
}
