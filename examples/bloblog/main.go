// Command bloblog shows log data kept in blobs the way Storage Analytics
// does it, instead of one table entity per log record: records buffered
// into block blobs named <source>/YYYY/MM/DD/hhmm/NNNNNN.log, first and
// last record times in metadata, and time-window reads that touch only the
// window's blobs. main_test.go checks that every message comes back intact.
//
// It runs against AZURE_STORAGE_CONNECTION_STRING's account, or an Azurite
// it starts (Node.js 18+): go run ./examples/bloblog
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/logtail"
)

// simClock is a clock the example moves by hand, so that it covers an hour
// of log traffic in a second.
type simClock struct{ ns atomic.Int64 }

func (c *simClock) Now() time.Time  { return time.Unix(0, c.ns.Load()).UTC() }
func (c *simClock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bloblog:", err)
		os.Exit(1)
	}
	acct, err := tablekit.Open(conn, nil)
	if err == nil {
		err = run(ctx, acct, os.Stdout)
		fmt.Printf("cost: %v\n", acct.Meter().Snapshot())
	}
	if stop(); err != nil {
		fmt.Fprintln(os.Stderr, "bloblog:", err)
		os.Exit(1)
	}
}

// run is the example, in a container of its own that it deletes at the end.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	name := "logs-" + strings.ToLower(rand.Text()[:8])
	c := acct.Blobs().ServiceClient().NewContainerClient(name)
	if _, err := c.Create(ctx, nil); err != nil {
		return err
	}
	defer c.Delete(context.WithoutCancel(ctx), nil)
	fmt.Fprintf(out, "not one entity per record (a transaction per record, a scan per time range): records go to blobs named <source>/YYYY/MM/DD/hhmm/NNNNNN.log in container %s, one tab-delimited line each\n", name)
	before := acct.Meter().Snapshot()
	if _, err := writeHour(ctx, acct, name, out); err != nil {
		return err
	}
	cost := acct.Meter().Snapshot().Sub(before)
	fmt.Fprintf(out, "writing 3000 records cost %d transactions (%v); a table insert per record would cost 3000\n", cost.Total(), cost)

	// Reading a window lists the hour's blobs by prefix and downloads only
	// those whose metadata (first and last record time) overlaps it.
	r, err := logtail.OpenReader(acct, name, "web")
	if err != nil {
		return err
	}
	from, to := start.Add(4*time.Minute), start.Add(6*time.Minute)
	blobs, err := r.Blobs(ctx, from, to)
	if err != nil {
		return err
	}
	for _, b := range blobs {
		fmt.Fprintf(out, "metadata of %s: first %s, last %s, %d records\n", b.Name, b.First.Format("15:04:05.000"), b.Last.Format("15:04:05.000"), b.Records)
	}
	before = acct.Meter().Snapshot()
	var got []logtail.Record
	for rec, err := range r.Read(ctx, from, to) {
		if err != nil {
			return err
		}
		got = append(got, rec)
	}
	cost = acct.Meter().Snapshot().Sub(before)
	if len(got) == 0 {
		return fmt.Errorf("no records in the window")
	}
	fmt.Fprintf(out, "window 15:04-15:06: %d records from both writers in time order (%s ... %s); cost %v: one listing of hour 15, and a download of only the %d blobs whose name and metadata overlap the window\n",
		len(got), got[0].Time.Format("15:04:05.000"), got[len(got)-1].Time.Format("15:04:05.000"), cost, len(blobs))
	fmt.Fprintln(out, "buffered writes trade a bounded window of loss on a crash (FlushBytes, FlushAge) for throughput and cost; WriterOptions.WriteThrough commits each record before Write returns, at 2 transactions a record")
	return nil
}

// start is when the simulated hour of log traffic begins.
var start = time.Date(2024, 5, 6, 15, 0, 0, 0, time.UTC)

// writeHour has two writers of source "web" (two web servers) log one
// simulated hour, one after the other (the output is the same every run).
func writeHour(ctx context.Context, acct *tablekit.Account, container string, out io.Writer) (sent []string, err error) {
	for w := range 2 {
		clock := &simClock{}
		clock.Set(start)
		wr, err := logtail.OpenWriter(acct, container, "web", &logtail.WriterOptions{
			Period:     10 * time.Minute, // one hhmm folder per 10 minutes
			FlushBytes: 4 << 10,          // a block per 4 KiB...
			FlushAge:   2 * time.Minute,  // ...or per 2 minutes of (simulated) time
			Clock:      clock.Now,
		})
		if err != nil {
			return nil, err
		}
		for k := range 1500 {
			clock.Set(schedule(k).Add(time.Duration(w) * time.Millisecond))
			msg := fmt.Sprintf("server%d GET /item/%d 200", w+1, k)
			if k%300 == 150 {
				msg += "\tuser-agent: \"multi\nline\"" // tabs and newlines round-trip
			}
			if err := wr.Write(ctx, msg); err != nil {
				return nil, err
			}
			sent = append(sent, msg)
		}
		buffered := wr.Stats().Buffered
		if err := wr.Close(ctx); err != nil { // flushes: nothing accepted is lost
			return nil, err
		}
		s := wr.Stats()
		fmt.Fprintf(out, "writer %d: %d records in %d flushes (%d by size, %d by age, the rest at period ends and at Close, which wrote the last %d buffered records) into %d blobs; %d names were taken by the other writer\n",
			w+1, s.Written, s.Flushes, s.SizeFlushes, s.AgeFlushes, buffered, s.Blobs, s.NameConflicts)
	}
	return sent, nil
}

// schedule is the time of record k: one every 2 s until 15:20, a burst of
// 300 in the minute after, then one every 3.9 s until 16:00.
func schedule(k int) time.Time {
	switch {
	case k < 600:
		return start.Add(time.Duration(k) * 2 * time.Second)
	case k < 900:
		return start.Add(20*time.Minute + time.Duration(k-600)*200*time.Millisecond)
	default:
		return start.Add(21*time.Minute + time.Duration(k-900)*3900*time.Millisecond)
	}
}
