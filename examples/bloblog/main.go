// Command bloblog shows log data kept in blobs the way Storage Analytics
// does it, instead of one table entity per log record: records buffered
// into block blobs named <source>/YYYY/MM/DD/hhmm/NNNNNN.log, first and
// last record times in metadata, and time-window reads that touch only the
// window's blobs.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/bloblog
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
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
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bloblog:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a container of its own, uses it, and
// deletes it.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	c := acct.Blobs().ServiceClient().NewContainerClient("logs-" + strings.ToLower(rand.Text()[:8]))
	if _, err := c.Create(ctx, nil); err != nil {
		return err
	}
	defer c.Delete(context.WithoutCancel(ctx), nil)
	meter := acct.Meter()
	fmt.Fprintln(out, "the anti-pattern: one table entity per log record costs a transaction per record and a scan per time range")

	// Two writers of source "web" (two web servers) log one simulated hour
	// with a burst of traffic at 15:20. They run one after the other here,
	// so that the output is the same every run; concurrent writers end up
	// with the same blobs.
	start := time.Date(2024, 5, 6, 15, 0, 0, 0, time.UTC)
	const perWriter = 1500
	var sent []string // every message, for the checks below
	before := meter.Snapshot()
	var conflicts int64
	for w := range 2 {
		clock := &simClock{}
		clock.Set(start)
		wr, err := logtail.NewWriter(c, "web", &logtail.WriterOptions{
			Period:     10 * time.Minute, // one hhmm folder per 10 minutes
			FlushBytes: 4 << 10,          // a block per 4 KiB...
			FlushAge:   2 * time.Minute,  // ...or per 2 minutes of (simulated) time
			Clock:      clock.Now,
		})
		if err != nil {
			return err
		}
		if w == 0 {
			fmt.Fprintf(out, "records go to blobs named <source>/YYYY/MM/DD/hhmm/NNNNNN.log in container %s, one tab-delimited line each\n", wr.ContainerName())
		}
		for k := range perWriter {
			clock.Set(schedule(start, k).Add(time.Duration(w) * time.Millisecond))
			msg := fmt.Sprintf("server%d GET /item/%d 200", w+1, k)
			if k%300 == 150 {
				msg += "\tuser-agent: \"multi\nline\"" // tabs and newlines round-trip
			}
			if err := wr.Write(ctx, msg); err != nil {
				return err
			}
			sent = append(sent, msg)
		}
		buffered := wr.Stats().Buffered
		if err := wr.Close(ctx); err != nil { // flushes: nothing accepted is lost
			return err
		}
		s := wr.Stats()
		if s.Written != perWriter || s.Buffered != 0 {
			return fmt.Errorf("writer %d: %d records written, %d still buffered; want %d and 0", w+1, s.Written, s.Buffered, perWriter)
		}
		conflicts += s.NameConflicts
		fmt.Fprintf(out, "writer %d: %d records in %d flushes (%d by size, %d by age, the rest at period ends and at Close, which wrote the last %d buffered records) into %d blobs\n",
			w+1, s.Written, s.Flushes, s.SizeFlushes, s.AgeFlushes, buffered, s.Blobs)
	}
	cost := meter.Snapshot().Sub(before)
	fmt.Fprintf(out, "writing %d records cost %d transactions (%v); a table insert per record, as they come, would cost %d\n",
		2*perWriter, cost.Total(), cost, 2*perWriter)
	if conflicts > 0 {
		fmt.Fprintf(out, "writer 2 found %d blob names taken by writer 1 and moved on to the next NNNNNN: blobs are created only if the name is free (If-None-Match: *), never overwritten\n", conflicts)
	}

	names, err := listNames(ctx, c, "web/2024/05/06/1500/")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the 15:00-15:10 folder: %s\n", strings.Join(names, ", "))

	// Reading a window lists the hour's blobs by prefix and downloads only
	// those whose metadata (first and last record time) overlaps it.
	r, err := logtail.NewReader(c, "web", nil)
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
	before = meter.Snapshot()
	var got []logtail.Record
	for rec, err := range r.Read(ctx, from, to) {
		if err != nil {
			return err
		}
		got = append(got, rec)
	}
	cost = meter.Snapshot().Sub(before)
	// One record every 2 s per writer: 60 each in two minutes.
	if len(got) != 120 {
		return fmt.Errorf("the window 15:04-15:06 returned %d records, want 120", len(got))
	}
	if !slices.IsSortedFunc(got, func(a, b logtail.Record) int { return a.Time.Compare(b.Time) }) {
		return fmt.Errorf("the window's records are not in time order")
	}
	if got[0].Time.Before(from) || !got[len(got)-1].Time.Before(to) {
		return fmt.Errorf("the window's records run from %v to %v, outside [%v, %v)", got[0].Time, got[len(got)-1].Time, from, to)
	}
	if lists, gets := cost.Count("blob", "ListBlobs"), cost.Count("blob", "GetBlob"); lists != 1 || gets != int64(len(blobs)) {
		return fmt.Errorf("reading the window cost %v, want one listing and %d downloads", cost, len(blobs))
	}
	hour, err := listNames(ctx, c, "web/2024/05/06/15")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "window 15:04-15:06: %d records from both writers in time order (%s ... %s); cost %v: one listing of hour 15 (%d blobs), and a download of only the %d whose name and metadata overlap the window\n",
		len(got), got[0].Time.Format("15:04:05.000"), got[len(got)-1].Time.Format("15:04:05.000"), cost, len(hour), len(blobs))
	intact := 0
	for _, rec := range got {
		if strings.Contains(rec.Message, "\n") {
			if !slices.Contains(sent, rec.Message) {
				return fmt.Errorf("a message came back changed: %q", rec.Message)
			}
			intact++
		}
	}
	if intact != 2 {
		return fmt.Errorf("%d messages with a tab and a newline in the window, want 2 (one per writer)", intact)
	}
	fmt.Fprintf(out, "the %d messages with a tab and a newline came back intact, e.g. %q\n", intact, got[slices.IndexFunc(got, func(r logtail.Record) bool { return strings.Contains(r.Message, "\n") })].Message)

	// Write-through: each record is committed before Write returns, at two
	// transactions (Put Block, Put Block List) per record.
	clock := &simClock{}
	clock.Set(start.Add(2 * time.Hour))
	audit, err := logtail.NewWriter(c, "audit", &logtail.WriterOptions{WriteThrough: true, Clock: clock.Now})
	if err != nil {
		return err
	}
	before = meter.Snapshot()
	for i := range 3 {
		if err := audit.Write(ctx, fmt.Sprint("admin action ", i)); err != nil {
			return err
		}
	}
	cost = meter.Snapshot().Sub(before)
	if err := audit.Close(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "write-through (for records that must never be lost): 3 records cost %d transactions, each durable when Write returns\n", cost.Total())
	fmt.Fprintln(out, "buffered writes trade a bounded window of loss on a crash (FlushBytes, FlushAge) for throughput and cost")
	return nil
}

// schedule is the time of record k: one every 2 s until 15:20, a burst of
// 300 in the minute after, then one every 3.9 s until 16:00.
func schedule(start time.Time, k int) time.Time {
	switch {
	case k < 600:
		return start.Add(time.Duration(k) * 2 * time.Second)
	case k < 900:
		return start.Add(20*time.Minute + time.Duration(k-600)*200*time.Millisecond)
	default:
		return start.Add(21*time.Minute + time.Duration(k-900)*3900*time.Millisecond)
	}
}

// listNames lists the names of the blobs under prefix.
func listNames(ctx context.Context, c *container.Client, prefix string) ([]string, error) {
	var names []string
	pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Segment.BlobItems {
			names = append(names, *it.Name)
		}
	}
	return names, nil
}
