package logtail_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/logtail"
)

// simClock is a simulated clock a test moves by hand.
type simClock struct{ ns atomic.Int64 }

func (c *simClock) Now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *simClock) Set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func newClock(t time.Time) *simClock    { c := &simClock{}; c.Set(t); return c }
func (c *simClock) Add(d time.Duration) { c.ns.Add(int64(d)) }

// listedBlob is a blob as the test sees it: name, metadata, records.
type listedBlob struct {
	name        string
	start       time.Time
	seq         int
	meta        map[string]string // lower-case names
	first, last time.Time
	records     []logtail.Record
	parseErr    error
}

// listAll lists every blob of c with its metadata and content.
func listAll(t *testing.T, ctx context.Context, c *container.Client) []listedBlob {
	t.Helper()
	var out []listedBlob
	pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Metadata: true}})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			b := listedBlob{name: *it.Name, meta: map[string]string{}}
			for k, v := range it.Metadata {
				b.meta[strings.ToLower(k)] = *v
			}
			var err error
			if _, b.start, b.seq, err = logtail.ParseBlobName(b.name); err != nil {
				t.Fatalf("blob %q: %v", b.name, err)
			}
			b.first, _ = time.Parse(time.RFC3339Nano, b.meta["firstrecord"])
			b.last, _ = time.Parse(time.RFC3339Nano, b.meta["lastrecord"])
			resp, err := c.NewBlobClient(b.name).DownloadStream(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range bytes.SplitAfter(data, []byte("\n")) {
				if len(line) == 0 {
					continue
				}
				r, err := logtail.ParseRecord(line)
				if err != nil {
					b.parseErr = err
					break
				}
				b.records = append(b.records, r)
			}
			out = append(out, b)
		}
	}
	return out
}

func readAll(t *testing.T, ctx context.Context, r *logtail.Reader, from, to time.Time) []logtail.Record {
	t.Helper()
	var out []logtail.Record
	for rec, err := range r.Read(ctx, from, to) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
	return out
}

func equalRecords(t *testing.T, what string, got, want []logtail.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !got[i].Time.Equal(want[i].Time) || got[i].Message != want[i].Message {
			t.Fatalf("%s: record %d is %v %q, want %v %q", what, i, got[i].Time, got[i].Message, want[i].Time, want[i].Message)
		}
	}
}

var blobNameRE = regexp.MustCompile(`^app/\d{4}/\d{2}/\d{2}/\d{4}/\d{6}\.log$`)

// TestBlobLog: three concurrent writers, 20,000 records over a simulated
// three hours, size- and age-triggered flushes, and time-window reads.
func TestBlobLog(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	c := testenv.NewContainer(t, acct)
	const source = "app"
	const period = 10 * time.Minute
	start := time.Date(2024, 5, 6, 14, 0, 0, 0, time.UTC)
	counts := []int{6667, 6667, 6666}

	// The schedule: each writer mostly writes every 2.127 s, in bursts
	// every 100 ms (which fill the buffer: size flushes), and every tenth
	// record at the same time as the one before. Writer w's times are
	// offset by w*7 µs, so no two writers share a time.
	perWriter := make([][]logtail.Record, len(counts))
	for w, n := range counts {
		cur := start.Add(time.Duration(w) * 7 * time.Microsecond)
		for k := range n {
			if k > 0 {
				switch {
				case k%10 == 9:
				case k%200 < 50:
					cur = cur.Add(100 * time.Millisecond)
				default:
					cur = cur.Add(2127 * time.Millisecond)
				}
			}
			msg := fmt.Sprintf("w%d k%05d", w, k)
			if k%97 == 0 {
				msg += " tricky:\ttab\nnewline\\backslash\r\x00\xff ü"
			}
			perWriter[w] = append(perWriter[w], logtail.Record{Time: cur, Message: msg})
		}
	}
	var expected []logtail.Record
	for _, rs := range perWriter {
		expected = append(expected, rs...)
	}
	slices.SortStableFunc(expected, func(a, b logtail.Record) int { return a.Time.Compare(b.Time) })
	window := func(from, to time.Time) []logtail.Record {
		var out []logtail.Record
		for _, r := range expected {
			if !r.Time.Before(from) && r.Time.Before(to) {
				out = append(out, r)
			}
		}
		return out
	}

	stats := make([]logtail.WriterStats, len(counts))
	var wg sync.WaitGroup
	for w := range counts {
		wg.Go(func() {
			clock := newClock(start)
			wr, err := logtail.OpenWriter(acct, containerName(c), source, &logtail.WriterOptions{
				FlushBytes:   2048,
				FlushAge:     45 * time.Second,
				Period:       period,
				MaxBlobBytes: 4 << 10,
				Clock:        clock.Now,
			})
			if err != nil {
				t.Error(err)
				return
			}
			for _, r := range perWriter[w] {
				clock.Set(r.Time)
				if err := wr.Write(ctx, r.Message); err != nil {
					t.Error(err)
					return
				}
			}
			if s := wr.Stats(); s.Buffered == 0 {
				t.Errorf("writer %d: nothing buffered before Close; the test wants a close mid-buffer", w)
			}
			if err := wr.Close(ctx); err != nil {
				t.Error(err)
			}
			stats[w] = wr.Stats()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var sizeFlushes, ageFlushes int64
	for w, s := range stats {
		t.Logf("writer %d: %+v", w, s)
		if s.Accepted != int64(counts[w]) || s.Written != s.Accepted || s.Buffered != 0 {
			t.Fatalf("writer %d: accepted %d, written %d, buffered %d; want %d, %d, 0", w, s.Accepted, s.Written, s.Buffered, counts[w], counts[w])
		}
		sizeFlushes += s.SizeFlushes
		ageFlushes += s.AgeFlushes
	}
	if sizeFlushes == 0 || ageFlushes == 0 {
		t.Fatalf("%d size-triggered and %d age-triggered flushes; want both", sizeFlushes, ageFlushes)
	}

	// Names, metadata and content of every blob.
	blobs := listAll(t, ctx, c)
	seen := map[string]bool{}
	for _, b := range blobs {
		if !blobNameRE.MatchString(b.name) || b.start.Minute()%10 != 0 {
			t.Fatalf("blob name %q does not follow app/YYYY/MM/DD/hhmm/NNNNNN.log with 10-minute periods", b.name)
		}
		if b.parseErr != nil || len(b.records) == 0 {
			t.Fatalf("blob %s: %v, %d records", b.name, b.parseErr, len(b.records))
		}
		writer := strings.Fields(b.records[0].Message)[0]
		first, last := b.records[0].Time, b.records[0].Time
		for _, r := range b.records {
			if !strings.HasPrefix(r.Message, writer+" ") {
				t.Fatalf("blob %s mixes writers: %q and %q", b.name, writer, r.Message)
			}
			if r.Time.Before(b.start) || !r.Time.Before(b.start.Add(period)) {
				t.Fatalf("blob %s (period %v) holds a record at %v", b.name, b.start, r.Time)
			}
			first, last = minTime(first, r.Time), maxTime(last, r.Time)
			if seen[r.Message] {
				t.Fatalf("record %q stored twice", r.Message)
			}
			seen[r.Message] = true
		}
		if !b.first.Equal(first) || !b.last.Equal(last) || b.meta["records"] != strconv.Itoa(len(b.records)) {
			t.Fatalf("blob %s metadata %v; content has %d records from %v to %v", b.name, b.meta, len(b.records), first, last)
		}
	}
	if len(seen) != len(expected) {
		t.Fatalf("the blobs hold %d records, want %d", len(seen), len(expected))
	}
	t.Logf("%d blobs", len(blobs))

	r, err := logtail.OpenReader(acct, containerName(c), source)
	if err != nil {
		t.Fatal(err)
	}

	// The window 15:04-15:06: exactly its records, in order, reading only
	// the blobs whose metadata overlaps it.
	from, to := time.Date(2024, 5, 6, 15, 4, 0, 0, time.UTC), time.Date(2024, 5, 6, 15, 6, 0, 0, time.UTC)
	before := acct.Meter().Snapshot()
	got := readAll(t, ctx, r, from, to)
	cost := acct.Meter().Snapshot().Sub(before)
	equalRecords(t, "window 15:04-15:06", got, window(from, to))
	inPeriod, overlapping := 0, 0
	for _, b := range blobs {
		if b.start.Equal(time.Date(2024, 5, 6, 15, 0, 0, 0, time.UTC)) {
			inPeriod++
			if !b.last.Before(from) && b.first.Before(to) {
				overlapping++
			}
		}
	}
	if cost.Count("blob", "ListBlobs") != 1 || cost.Count("blob", "GetBlob") != int64(overlapping) || cost.Total() != int64(1+overlapping) {
		t.Fatalf("window read cost %v; want 1 ListBlobs and %d GetBlob", cost, overlapping)
	}
	if overlapping >= inPeriod {
		t.Fatalf("%d of the %d blobs of 15:00-15:10 overlap the window; the metadata skipped none", overlapping, inPeriod)
	}
	t.Logf("window 15:04-15:06: %d records, read %d of %d blobs in its period (%v)", len(got), overlapping, inPeriod, cost)

	// One hour: one listing and that hour's blobs only.
	hourFrom, hourTo := time.Date(2024, 5, 6, 15, 0, 0, 0, time.UTC), time.Date(2024, 5, 6, 16, 0, 0, 0, time.UTC)
	hourBlobs := 0
	for _, b := range blobs {
		if !b.start.Before(hourFrom) && b.start.Before(hourTo) {
			hourBlobs++
		}
	}
	before = acct.Meter().Snapshot()
	got = readAll(t, ctx, r, hourFrom, hourTo)
	cost = acct.Meter().Snapshot().Sub(before)
	equalRecords(t, "hour 15", got, window(hourFrom, hourTo))
	if cost.Count("blob", "ListBlobs") != 1 || cost.Count("blob", "GetBlob") != int64(hourBlobs) || cost.Total() != int64(1+hourBlobs) {
		t.Fatalf("hour read cost %v; want 1 ListBlobs and %d GetBlob", cost, hourBlobs)
	}
	if hourBlobs >= len(blobs)/2 {
		t.Fatalf("hour 15 has %d of %d blobs", hourBlobs, len(blobs))
	}
	t.Logf("hour 15:00-16:00: %d records from %d of %d blobs (%v)", len(got), hourBlobs, len(blobs), cost)

	// Everything, in order: the writers closed mid-buffer lost nothing.
	got = readAll(t, ctx, r, start, start.Add(4*time.Hour))
	equalRecords(t, "all records", got, expected)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func blobRecords(t *testing.T, blobs []listedBlob, name string) []string {
	t.Helper()
	for _, b := range blobs {
		if b.name == name {
			var out []string
			for _, r := range b.records {
				out = append(out, r.Message)
			}
			return out
		}
	}
	t.Fatalf("no blob %s", name)
	return nil
}

// TestBlobWritersShareSource: writers of one source never overwrite each
// other, and a writer whose blob was changed behind its back keeps its
// records and moves on to a new blob.
func TestBlobWritersShareSource(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	c := testenv.NewContainer(t, acct)
	clock := newClock(time.Date(2024, 5, 6, 15, 4, 5, 0, time.UTC))
	newWriter := func() *logtail.Writer {
		w, err := logtail.OpenWriter(acct, containerName(c), "app", &logtail.WriterOptions{Clock: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	write := func(w *logtail.Writer, msgs ...string) {
		t.Helper()
		for _, m := range msgs {
			if err := w.Write(ctx, m); err != nil {
				t.Fatal(err)
			}
			clock.Add(time.Millisecond)
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	a, b, cw := newWriter(), newWriter(), newWriter()
	write(a, "a1")
	write(b, "b1") // 000000 is taken: b moves on to 000001
	before := acct.Meter().Snapshot()
	write(a, "a2")
	if cost := acct.Meter().Snapshot().Sub(before); cost.Count("blob", "PutBlock") != 1 || cost.Count("blob", "PutBlockList") != 1 || cost.Total() != 2 {
		t.Fatalf("an appending flush cost %v, want one PutBlock and one PutBlockList", cost)
	}
	write(b, "b2")
	write(cw, "c1") // 000000 taken: lists, jumps past 000001
	if s := b.Stats(); s.NameConflicts != 1 || s.Blobs != 1 {
		t.Fatalf("writer b: %+v, want one name conflict and one blob", s)
	}
	if s := cw.Stats(); s.NameConflicts != 1 || s.Blobs != 1 {
		t.Fatalf("writer c: %+v, want one name conflict and one blob", s)
	}
	blobs := listAll(t, ctx, c)
	const dir = "app/2024/05/06/1500/"
	for name, want := range map[string][]string{"000000": {"a1", "a2"}, "000001": {"b1", "b2"}, "000002": {"c1"}} {
		if got := blobRecords(t, blobs, dir+name+".log"); !slices.Equal(got, want) {
			t.Fatalf("%s holds %q, want %q", name, got, want)
		}
	}

	// Someone overwrites a's blob: a's next flush fails, keeps its record,
	// and the retry goes to a new blob.
	if _, err := c.NewBlockBlobClient(dir+"000000.log").UploadBuffer(ctx, []byte("not a log\n"), nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Write(ctx, "a3"); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(ctx); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Fatalf("flush to a changed blob: %v, want ErrPreconditionFailed", err)
	}
	if s := a.Stats(); s.Buffered != 1 {
		t.Fatalf("after the failed flush %d records are buffered, want 1", s.Buffered)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := blobRecords(t, listAll(t, ctx, c), dir+"000003.log"); !slices.Equal(got, []string{"a3"}) {
		t.Fatalf("000003 holds %q, want a3", got)
	}
	if err := a.Write(ctx, "late"); !errors.Is(err, logtail.ErrClosed) {
		t.Fatalf("write after Close: %v, want ErrClosed", err)
	}
}

// TestBlobWriterLosesNothing: a flush that fails keeps its records, and
// Close writes them.
func TestBlobWriterLosesNothing(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	c := testenv.NewContainer(t, acct)
	clock := newClock(time.Date(2024, 5, 6, 15, 4, 5, 0, time.UTC))
	w, err := logtail.OpenWriter(acct, containerName(c), "app", &logtail.WriterOptions{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var want []logtail.Record
	for i := range 5 {
		r := logtail.Record{Time: clock.Now(), Message: fmt.Sprint("record ", i)}
		if err := w.WriteRecord(ctx, r); err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
		clock.Add(time.Second)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.Flush(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("flush with a cancelled context: %v", err)
	}
	if s := w.Stats(); s.Buffered != 5 || s.Written != 0 {
		t.Fatalf("after a failed flush: %+v; want 5 buffered", s)
	}
	if err := w.Close(cancelled); err == nil {
		t.Fatal("Close with a cancelled context succeeded")
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := logtail.OpenReader(acct, containerName(c), "app")
	if err != nil {
		t.Fatal(err)
	}
	equalRecords(t, "after Close", readAll(t, ctx, r, want[0].Time, clock.Now()), want)
}

// TestBlobWriteThrough: every record is in storage when Write returns.
func TestBlobWriteThrough(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	c := testenv.NewContainer(t, acct)
	clock := newClock(time.Date(2024, 5, 6, 15, 4, 5, 0, time.UTC))
	w, err := logtail.OpenWriter(acct, containerName(c), "audit", &logtail.WriterOptions{WriteThrough: true, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	r, err := logtail.OpenReader(acct, containerName(c), "audit")
	if err != nil {
		t.Fatal(err)
	}
	from := clock.Now()
	for i := range 4 {
		before := acct.Meter().Snapshot()
		if err := w.Write(ctx, fmt.Sprint("audit ", i)); err != nil {
			t.Fatal(err)
		}
		if cost := acct.Meter().Snapshot().Sub(before); cost.Count("blob", "PutBlock") != 1 || cost.Count("blob", "PutBlockList") != 1 {
			t.Fatalf("a write-through write cost %v, want one PutBlock and one PutBlockList", cost)
		}
		clock.Add(time.Second)
		if got := readAll(t, ctx, r, from, clock.Now()); len(got) != i+1 || got[i].Message != fmt.Sprint("audit ", i) {
			t.Fatalf("after write %d the reader sees %v", i, got)
		}
	}
	if s := w.Stats(); s.Buffered != 0 || s.Flushes != 4 || s.Blobs != 1 {
		t.Fatalf("write-through stats %+v", s)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestBlobWriterFlushInterval: the optional goroutine flushes a quiet
// writer's records, and Close stops it.
func TestBlobWriterFlushInterval(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	c := testenv.NewContainer(t, acct)
	w, err := logtail.OpenWriter(acct, containerName(c), "app", &logtail.WriterOptions{FlushAge: time.Millisecond, FlushInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, "quiet"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for w.Stats().Written == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if s := w.Stats(); s.Written != 1 || s.BackgroundFlush == 0 {
		t.Fatalf("the background flush did not happen: %+v", s)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil { // idempotent
		t.Fatal(err)
	}
}

func TestBlobWriterInput(t *testing.T) {
	ctx := context.Background()
	acct, err := tablekit.Open("UseDevelopmentStorage=true", nil) // nothing is sent
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []*logtail.WriterOptions{
		{FlushBytes: -1}, {FlushBytes: 64<<20 + 1}, {Period: 7 * time.Minute},
		{Period: 2 * time.Hour}, {Period: 90 * time.Second}, logtail.WithMaxBlocks(logtail.WriterOptions{}, 50001),
		{FlushInterval: -1}, {FlushTimeout: -1}, {MaxBlobBytes: -1},
	} {
		_, err := logtail.OpenWriter(acct, "unused", "app", o)
		wantRefusal(t, fmt.Sprintf("OpenWriter with options %+v", o), err, "logtail.OpenWriter", tablekit.ErrInvalidInput)
	}
	_, err = logtail.OpenWriter(nil, "unused", "app", nil)
	wantRefusal(t, "OpenWriter(nil)", err, "logtail.OpenWriter", tablekit.ErrInvalidInput)
	_, err = logtail.OpenWriter(&tablekit.Account{}, "unused", "app", nil)
	wantRefusal(t, "OpenWriter of a zero Account", err, "logtail.OpenWriter", tablekit.ErrInvalidInput)
	_, err = logtail.OpenWriter(acct, "Bad_Container", "app", nil)
	wantRefusal(t, "OpenWriter of a bad container name", err, "logtail.OpenWriter", tablekit.ErrInvalidKey)
	_, err = logtail.OpenWriter(acct, "unused", "2024", nil)
	wantRefusal(t, "OpenWriter of a digits-only source", err, "logtail.OpenWriter", tablekit.ErrInvalidInput)
	for _, bad := range []string{"", "/web", "web/", "a//b", "2024", "web/05", "we b", "web?", "..", "a/./b", strings.Repeat("a", 513)} {
		_, err = logtail.OpenWriter(acct, "unused", bad, nil)
		wantRefusal(t, fmt.Sprintf("OpenWriter of source %q", bad), err, "logtail.OpenWriter", tablekit.ErrInvalidInput)
	}
	_, err = logtail.OpenReader(nil, "unused", "app")
	wantRefusal(t, "OpenReader(nil)", err, "logtail.OpenReader", tablekit.ErrInvalidInput)
	_, err = logtail.OpenReader(acct, "unused", "app/")
	wantRefusal(t, "OpenReader of source app/", err, "logtail.OpenReader", tablekit.ErrInvalidInput)

	w, err := logtail.OpenWriter(acct, "unused", "app", nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.ContainerName() != "unused" || w.Source() != "app" {
		t.Errorf("Writer names container %q, source %q; want unused, app", w.ContainerName(), w.Source())
	}
	err = w.WriteRecord(ctx, logtail.Record{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)})
	wantRefusal(t, "WriteRecord after 9999", err, "logtail.Writer.WriteRecord", tablekit.ErrInvalidInput)
	err = w.Write(ctx, strings.Repeat("x", 4<<20))
	wantRefusal(t, "Write of a record too large", err, "logtail.Writer.Write", tablekit.ErrTooLarge)

	r, err := logtail.OpenReader(acct, "unused", "app")
	if err != nil {
		t.Fatal(err)
	}
	if r.ContainerName() != "unused" || r.Source() != "app" {
		t.Errorf("Reader names container %q, source %q; want unused, app", r.ContainerName(), r.Source())
	}
	now := time.Now()
	_, err = r.Blobs(ctx, now, now)
	wantRefusal(t, "Blobs of an empty window", err, "logtail.Reader.Blobs", tablekit.ErrInvalidInput)
	for _, err := range r.Read(ctx, now, now.Add(-time.Second)) {
		wantRefusal(t, "Read of an empty window", err, "logtail.Reader.Read", tablekit.ErrInvalidInput)
	}
	_, err = logtail.AppendRecord(nil, logtail.Record{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)})
	wantRefusal(t, "AppendRecord after 9999", err, "logtail.AppendRecord", tablekit.ErrInvalidInput)
	var de *tablekit.DecodeError
	if _, err := logtail.ParseRecord([]byte("not a record\n")); !errors.As(err, &de) || de.Op != "logtail.ParseRecord" {
		t.Errorf("ParseRecord of a bad line: %v, want a *tablekit.DecodeError with Op logtail.ParseRecord", err)
	}
}

// TestBlobReaderCorruptBlob: a blob of the source's names whose content is
// not in the record format stops Read with a *tablekit.DecodeError naming
// the container and blob (stored data, not the caller's input).
func TestBlobReaderCorruptBlob(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	c := testenv.NewContainer(t, acct)
	start := time.Date(2024, 5, 6, 15, 0, 0, 0, time.UTC)
	name := logtail.BlobName("app", start, 0)
	if _, err := c.NewBlockBlobClient(name).UploadBuffer(ctx, []byte("2024-05-06T15:00:01.000000000Z\tok\ngarbage\n"), nil); err != nil {
		t.Fatal(err)
	}
	r, err := logtail.OpenReader(acct, containerName(c), "app")
	if err != nil {
		t.Fatal(err)
	}
	if n := r.ContainerName(); n == "" || !strings.HasSuffix(c.URL(), "/"+n) {
		t.Errorf("ContainerName %q, want the last segment of %s", n, c.URL())
	}
	var got error
	for _, err := range r.Read(ctx, start, start.Add(time.Hour)) {
		if err != nil {
			got = err
		}
	}
	var de *tablekit.DecodeError
	if !errors.As(got, &de) || de.Op != "logtail.Reader.Read" || !strings.Contains(de.Detail, r.ContainerName()+"/"+name) {
		t.Fatalf("Read of a corrupt blob: %v, want a *tablekit.DecodeError of Reader.Read naming %s/%s", got, r.ContainerName(), name)
	}
}

// containerName returns the name of the container c addresses.
func containerName(c *container.Client) string {
	u := strings.TrimRight(c.URL(), "/")
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i]
	}
	return u[strings.LastIndexByte(u, '/')+1:]
}
