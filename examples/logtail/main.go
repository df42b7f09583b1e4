// Command logtail shows the log tail pattern: RowKeys that sort newest
// first (inverted ticks), so the latest entries of a partition are one
// short range query away, time windows, paging with continuation tokens,
// and shard buckets for a log too busy for one partition. main_test.go
// checks the results and shows a .NET writer's rows among ours.
//
// It runs against AZURE_STORAGE_CONNECTION_STRING's account, or an Azurite
// it starts (Node.js 18+): go run ./examples/logtail
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
		fmt.Printf("cost: %v\n", acct.Meter().Snapshot())
	}
	if stop(); err != nil {
		fmt.Fprintln(os.Stderr, "logtail:", err)
		os.Exit(1)
	}
}

// run is the example, on a table of its own that it deletes at the end.
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
	log, err := logtail.New(tbl, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "table %s holds sensor readings: PartitionKey = sensor, RowKey = inverted ticks, so the newest sorts first\n", name)

	// 60 readings, one a minute from 15:00; the last three share one tick.
	// Each RowKey is the guide's {0:D19} of DateTime.MaxValue.Ticks - t.Ticks,
	// then '_' and a sequence number that orders one tick's entries.
	const sensor = "sensor-7"
	base := time.Date(2024, 5, 6, 15, 0, 0, 0, time.UTC)
	before := acct.Meter().Snapshot()
	var last Reading
	for i := range 60 {
		at := base.Add(time.Duration(min(i, 57)) * time.Minute)
		if last, err = log.AppendAt(ctx, sensor, at, Reading{Celsius: 20 + float64(i%7)/2, Note: fmt.Sprint("reading ", i)}); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "appended 60 readings, the last three in the same tick: %d transactions (one insert each); the newest RowKey is %s\n",
		acct.Meter().Snapshot().Sub(before).Total(), last.RowKey)

	// The latest N: one range query from the head of the partition.
	before = acct.Meter().Snapshot()
	latest, err := log.Latest(ctx, sensor, 5)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Latest(5) = %s, queries: %d\n", notes(latest), acct.Meter().Snapshot().Sub(before).Count("table", "QueryEntities"))

	// A time window [from, to) is one RowKey range query, newest first.
	before = acct.Meter().Snapshot()
	var window []Reading
	for r, err := range log.Window(ctx, sensor, base.Add(10*time.Minute), base.Add(14*time.Minute)) {
		if err != nil {
			return err
		}
		window = append(window, r)
	}
	fmt.Fprintf(out, "Window(15:10, 15:14) = %s, newest first, queries: %d\n", notes(window), acct.Meter().Snapshot().Sub(before).Count("table", "QueryEntities"))

	// Paging back: each page's continuation token is a position in the
	// log, valid while new entries arrive.
	total, pages, tok := 0, 0, ""
	for first := true; first || tok != ""; first = false {
		p, err := log.Page(ctx, sensor, &logtail.PageOptions{PageSize: 25, Continuation: tok})
		if err != nil {
			return err
		}
		total, pages, tok = total+len(p.Items), pages+1, p.Continuation
	}
	fmt.Fprintf(out, "paging back 25 at a time with continuation tokens: %d entries in %d pages\n", total, pages)

	// A busy log's inserts all go to the head of one partition (the prepend
	// anti-pattern): Shards spreads them over 4 partitions "<bucket>!<pk>".
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
		parts[r.PartitionKey]++
	}
	fmt.Fprintf(out, "with Shards: 4 the 40 entries of %s went to %d partitions: %v\n", busy, len(parts), parts)

	// Reads fan out over the buckets and merge newest first.
	before = acct.Meter().Snapshot()
	if latest, err = sharded.Latest(ctx, busy, 3); err != nil {
		return err
	}
	fmt.Fprintf(out, "reads fan out and merge newest first: Latest(3) = %s, %d queries (one per bucket)\n",
		notes(latest), acct.Meter().Snapshot().Sub(before).Count("table", "QueryEntities"))
	return nil
}

// notes lists the readings' notes.
func notes(rs []Reading) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Note
	}
	return "[" + strings.Join(out, ", ") + "]"
}
