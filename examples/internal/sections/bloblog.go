package sections

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/logtail"
)

// BlobLog shows log data kept in blobs the way Storage Analytics does it,
// instead of the log data anti-pattern of one table entity per record:
// buffered block writes, time-named blobs, and time-window reads that
// touch only the blobs of the window.
func BlobLog() demo.Section {
	return demo.Section{
		Name:        "bloblog",
		Description: "log data in blobs: <source>/YYYY/MM/DD/hhmm/NNNNNN.log, buffered block writes, time-window reads",
		Run:         runBlobLog,
	}
}

// blClock is a simulated clock, so the example covers an hour in a second.
type blClock struct{ ns atomic.Int64 }

func (c *blClock) Now() time.Time  { return time.Unix(0, c.ns.Load()).UTC() }
func (c *blClock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

func runBlobLog(ctx context.Context, env *demo.Env) error {
	name := env.ContainerName("logs")
	c := env.Account.Container(name)
	if _, err := c.Create(ctx, nil); err != nil {
		return err
	}
	env.Defer(func(ctx context.Context) error { _, err := c.Delete(ctx, nil); return err })
	env.Say("the anti-pattern: one table entity per log record costs a transaction per record and a scan per time range")
	env.Say("instead, records go to blobs named <source>/YYYY/MM/DD/hhmm/NNNNNN.log in container %s, one tab-delimited line each", name)

	// Two writers of source "web" (two web servers), one simulated hour
	// with a burst of traffic at 15:20.
	start := time.Date(2024, 5, 6, 15, 0, 0, 0, time.UTC)
	const perWriter = 1500
	before := env.Account.Meter().Snapshot()
	var stats []logtail.WriterStats
	for w := range 2 {
		clock := &blClock{}
		clock.Set(start)
		wr, err := logtail.NewWriter(c, "web", &logtail.WriterOptions{
			Period:     10 * time.Minute, // one hhmm folder per 10 minutes
			FlushBytes: 4 << 10,          // a block per 4 KiB...
			FlushAge:   2 * time.Minute,  // ...or per 2 minutes of simulated time
			Clock:      clock.Now,
		})
		if err != nil {
			return err
		}
		for k := range perWriter {
			clock.Set(blSchedule(start, k).Add(time.Duration(w) * time.Millisecond))
			msg := fmt.Sprintf("server%d GET /item/%d 200", w+1, k)
			if k%300 == 150 {
				msg += "\tuser-agent: \"multi\nline\"" // tabs and newlines round-trip
			}
			if err := wr.Write(ctx, msg); err != nil {
				return err
			}
		}
		buffered := wr.Stats().Buffered
		if err := wr.Close(ctx); err != nil { // flushes: nothing accepted is lost
			return err
		}
		s := wr.Stats()
		stats = append(stats, s)
		env.Say("writer %d: %d records in %d flushes (%d by size, %d by age, the rest at period ends and Close, which wrote the last %d buffered records) into %d blobs",
			w+1, s.Written, s.Flushes, s.SizeFlushes, s.AgeFlushes, buffered, s.Blobs)
	}
	cost := env.Account.Meter().Snapshot().Sub(before)
	env.Say("writing %d records cost %d transactions (%v); one entity per record would cost %d",
		2*perWriter, cost.Total(), cost, 2*perWriter)
	if stats[1].NameConflicts > 0 {
		env.Say("writer 2 found %d names taken by writer 1 and moved on to the next NNNNNN: create-only commits (If-None-Match: *) never overwrite", stats[1].NameConflicts)
	}

	names, err := blListNames(ctx, c, "web/2024/05/06/1500/")
	if err != nil {
		return err
	}
	env.Say("the 15:00-15:10 folder: %s", strings.Join(names, ", "))

	r, err := logtail.NewReader(c, "web", nil)
	if err != nil {
		return err
	}
	blobs, err := r.Blobs(ctx, start.Add(4*time.Minute), start.Add(6*time.Minute))
	if err != nil {
		return err
	}
	for _, b := range blobs {
		env.Say("metadata of %s: first %s, last %s, %d records", b.Name, b.First.Format("15:04:05.000"), b.Last.Format("15:04:05.000"), b.Records)
	}

	before = env.Account.Meter().Snapshot()
	var got []logtail.Record
	for rec, err := range r.Read(ctx, start.Add(4*time.Minute), start.Add(6*time.Minute)) {
		if err != nil {
			return err
		}
		got = append(got, rec)
	}
	cost = env.Account.Meter().Snapshot().Sub(before)
	if len(got) == 0 {
		return fmt.Errorf("the window 15:04-15:06 returned no records")
	}
	env.Say("window 15:04-15:06: %d records from both writers in time order (%s ... %s); cost %v: one listing of hour 15, and only the blobs whose metadata overlaps",
		len(got), got[0].Time.Format("15:04:05.000"), got[len(got)-1].Time.Format("15:04:05.000"), cost)
	for _, rec := range got {
		if strings.Contains(rec.Message, "\n") {
			env.Say("a message with a tab and a newline came back intact: %q", rec.Message)
			break
		}
	}

	// Write-through: durable at once, two transactions per record.
	clock := &blClock{}
	clock.Set(start.Add(2 * time.Hour))
	audit, err := logtail.NewWriter(c, "audit", &logtail.WriterOptions{WriteThrough: true, Clock: clock.Now})
	if err != nil {
		return err
	}
	before = env.Account.Meter().Snapshot()
	for i := range 3 {
		if err := audit.Write(ctx, fmt.Sprint("admin action ", i)); err != nil {
			return err
		}
	}
	cost = env.Account.Meter().Snapshot().Sub(before)
	if err := audit.Close(ctx); err != nil {
		return err
	}
	env.Say("write-through (for records that must never be lost): 3 records cost %d transactions, each durable when Write returns", cost.Total())
	env.Say("buffered writes trade a bounded window of loss on a crash (FlushBytes, FlushAge) for throughput and cost")
	return nil
}

// blSchedule is the time of record k: one every 2 s until 15:20, a burst
// of 300 in the minute after, then one every 3.9 s until 16:00.
func blSchedule(start time.Time, k int) time.Time {
	switch {
	case k < 600:
		return start.Add(time.Duration(k) * 2 * time.Second)
	case k < 900:
		return start.Add(20*time.Minute + time.Duration(k-600)*200*time.Millisecond)
	default:
		return start.Add(21*time.Minute + time.Duration(k-900)*3900*time.Millisecond)
	}
}

func blListNames(ctx context.Context, c *container.Client, prefix string) ([]string, error) {
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
