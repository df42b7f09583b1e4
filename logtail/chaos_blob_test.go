package logtail_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/logtail"
)

// The blob log chaos suite: concurrent writers, each with its own Account
// and logtail.Writer (as separate processes would have), write records of
// two shared sources through a fault-injecting pipeline on the blob
// service (Put Block, Put Block List, Get Block List, listings and
// downloads; faults may outlast the SDK's retries), while a group of
// goroutines shares one more Writer. Writers differ: buffered with small
// blocks and short blobs (MaxBlocks), buffered with a FlushInterval,
// write-through; some with a FlushTimeout short enough to cut flushes, some
// writes under a short deadline.
//
// What a writer is told, as the package documents it:
//   - buffered Write: nil means the record is accepted (it will be written
//     by a later flush, once each); an error means it is not, whatever the
//     flush before it met;
//   - Flush (or Close) nil: every record the caller had accepted before is
//     stored;
//   - write-through Write: nil means stored; an error means not stored,
//     unless it matches tablekit.ErrOutcomeUnknown or is a context error
//     (chaos.OutcomeOf: Unknown), when it may be stored, once.
//
// Invariants:
//   - a Reader's time-range read returns records in time order, inside the
//     window, each one a record some writer wrote, intact (time and message
//     byte for byte), of the source read, each at most once, and every
//     record acknowledged as stored before the read started whose time is in
//     the window (checked during the run after flushes, and at the end);
//   - at the end (each Writer closed), every accepted record is stored
//     exactly once, a record whose Write was refused is not stored, a
//     write-through record with an unknown outcome at most once; reads of
//     sub-windows agree with the whole;
//   - each blob holds records of one Writer and of its period only, each
//     writer's records in the order it wrote them, and its metadata (first,
//     last, count) matches its content (Readers skip blobs by it).
//
// Duplicates: the design allows none (a failed flush keeps its block id and
// writes it once), so a duplicate is a violation; the test counts them.

// blobSources are the sources the writers share.
var blobSources = []string{"app", "svc/eu"}

// blobPeriod is every Writer's Period.
const blobPeriod = 10 * time.Minute

// blobT0 is the time of the writers' first records: just before an hour
// and a period boundary.
var blobT0 = time.Date(2024, 5, 6, 13, 52, 0, 0, time.UTC)

// blobRec is a record a writer wrote, as the registry keeps it.
type blobRec struct {
	id     string
	writer int    // the chaos writer (goroutine)
	owner  string // the logtail.Writer it went through
	source string
	n      int
	rec    logtail.Record
	// through: written by a write-through Writer
	through bool
}

// blobMessage is the message of record id: the bytes the record format
// escapes (tab, newline, carriage return, backslash), bytes that are not
// UTF-8, and a hash of id.
func blobMessage(id string) string {
	sum := sha256.Sum256([]byte(id))
	return id + " \ttab\nnl\r\\bs \xff\xfe ü " + hex.EncodeToString(sum[:8])
}

func blobID(msg string) string {
	id, _, _ := strings.Cut(msg, " ")
	return id
}

// blobRegistry is what the writers wrote and were told, shared so that
// every read can be checked as it returns.
type blobRegistry struct {
	mu      sync.Mutex
	written map[string]blobRec   // every record a Write was called with
	durable map[string][]blobRec // by source: records acknowledged as stored, in order
	isDur   map[string]bool
}

func newBlobRegistry() *blobRegistry {
	return &blobRegistry{written: map[string]blobRec{}, durable: map[string][]blobRec{}, isDur: map[string]bool{}}
}

func (r *blobRegistry) write(b blobRec) {
	r.mu.Lock()
	r.written[b.id] = b
	r.mu.Unlock()
}

func (r *blobRegistry) stored(bs ...blobRec) {
	r.mu.Lock()
	for _, b := range bs {
		if !r.isDur[b.id] {
			r.isDur[b.id] = true
			r.durable[b.source] = append(r.durable[b.source], b)
		}
	}
	r.mu.Unlock()
}

func (r *blobRegistry) snapshot(source string) []blobRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.durable[source])
}

func (r *blobRegistry) lookup(id string) (blobRec, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.written[id]
	return b, ok
}

// checkRead checks the records a Read of source over [from, to) returned
// against the records stored before it started (before). It returns how
// many times each id was read.
func (r *blobRegistry) checkRead(what, source string, from, to time.Time, got []logtail.Record, before []blobRec, v *chaos.Violations) map[string]int {
	count := map[string]int{}
	for i, rec := range got {
		if i > 0 && rec.Time.Before(got[i-1].Time) {
			v.Addf("%s: record %d (%v) is older than record %d (%v)", what, i, rec.Time, i-1, got[i-1].Time)
		}
		if rec.Time.Before(from) || !rec.Time.Before(to) {
			v.Addf("%s: record %q at %v is outside [%v, %v)", what, rec.Message, rec.Time, from, to)
		}
		id := blobID(rec.Message)
		count[id]++
		if count[id] == 2 {
			v.Addf("%s: record %s read more than once", what, id)
		}
		want, ok := r.lookup(id)
		switch {
		case !ok:
			v.Addf("%s: record %q at %v was written by no writer", what, rec.Message, rec.Time)
		case !rec.Time.Equal(want.rec.Time) || rec.Message != want.rec.Message:
			v.Addf("%s: record %s is %v %q, written as %v %q", what, id, rec.Time, rec.Message, want.rec.Time, want.rec.Message)
		case want.source != source:
			v.Addf("%s: record %s of source %s read from source %s", what, id, want.source, source)
		}
	}
	for _, b := range before {
		if !b.rec.Time.Before(from) && b.rec.Time.Before(to) && count[b.id] == 0 {
			v.Addf("%s: record %s (%v), stored before the read started, is missing (%d records read)", what, b.id, b.rec.Time, len(got))
		}
	}
	return count
}

// notAccepted is the error of a Write that the Writer documents as "not
// stored": a buffered Write that failed, whatever the flush it had to make
// first met (a lost answer included), and a write-through Write whose error
// is neither ErrOutcomeUnknown nor a context error (the Writer settles a
// lost answer by reading the block list). The op's outcome is then Failed,
// not what chaos.OutcomeOf makes of a transport error: notAccepted matches
// tablekit.ErrSkipped, which OutcomeOf reads as "not done", and nothing
// else.
type notAccepted struct{ err error }

func (e notAccepted) Error() string        { return "record not accepted: " + e.err.Error() }
func (e notAccepted) Is(target error) bool { return target == tablekit.ErrSkipped }

// blobWriter is one writer (goroutine) of the suite.
type blobWriter struct {
	w       *chaos.Writer
	lw      *logtail.Writer
	owner   string
	through bool // write-through
	source  string
	reader  *logtail.Reader
	reg     *blobRegistry
	v       *chaos.Violations
	step    time.Duration
	n       int
	pending []blobRec // accepted, not yet acknowledged as stored
	checked []blobRec // stored, to check with the next read
}

func (bw *blobWriter) write(ctx context.Context) {
	id := fmt.Sprintf("w%02d#%04d", bw.w.Index, bw.n)
	b := blobRec{id: id, writer: bw.w.Index, owner: bw.owner, source: bw.source, n: bw.n, through: bw.through,
		rec: logtail.Record{Time: blobT0.Add(time.Duration(bw.n)*bw.step + time.Duration(bw.w.Index)*time.Microsecond), Message: blobMessage(id)}}
	bw.n++
	bw.reg.write(b)
	var limit time.Duration
	if bw.w.Rand.IntN(10) == 0 {
		limit = time.Duration(3+bw.w.Rand.IntN(30)) * time.Millisecond // a caller that does not wait long
	}
	op := bw.w.Do(ctx, "Write", bw.source, id, func(ctx context.Context) (any, error) {
		if limit > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, limit)
			defer cancel()
		}
		err := bw.lw.WriteRecord(ctx, b.rec)
		if err != nil && (!bw.through || !errors.Is(err, tablekit.ErrOutcomeUnknown) &&
			!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)) {
			// Documented as not stored: buffered, any error; write-through,
			// any error but an unknown outcome or a context error.
			err = notAccepted{err}
		}
		return nil, err
	})
	switch {
	case op.Outcome != chaos.OK:
	case bw.through:
		bw.reg.stored(b)
		bw.checked = append(bw.checked, b)
	default:
		bw.pending = append(bw.pending, b)
	}
}

// flush flushes (or closes) the Writer; when it is acknowledged, the
// records accepted before are stored.
func (bw *blobWriter) flush(ctx context.Context, name string) bool {
	acked := slices.Clone(bw.pending)
	op := bw.w.Do(ctx, name, bw.source, len(acked), func(ctx context.Context) (any, error) {
		if name == "Close" {
			return nil, bw.lw.Close(ctx)
		}
		return nil, bw.lw.Flush(ctx)
	})
	if op.Outcome != chaos.OK {
		return false
	}
	bw.reg.stored(acked...)
	bw.checked = append(bw.checked, acked...)
	bw.pending = bw.pending[len(acked):]
	return true
}

// verify reads the window of the records stored since the last check and
// checks it.
func (bw *blobWriter) verify(ctx context.Context) {
	if len(bw.checked) == 0 {
		return
	}
	from, to := bw.checked[0].rec.Time, bw.checked[0].rec.Time
	for _, b := range bw.checked {
		from, to = minTime(from, b.rec.Time), maxTime(to, b.rec.Time)
	}
	to = to.Add(time.Nanosecond)
	if bw.w.Rand.IntN(2) == 0 {
		from = from.Add(-time.Duration(bw.w.Rand.IntN(20)) * time.Minute) // wider: other writers' records
	}
	before := bw.reg.snapshot(bw.source)
	var got []logtail.Record
	op := bw.w.Do(ctx, "Read", bw.source, nil, func(ctx context.Context) (any, error) {
		for rec, err := range bw.reader.Read(ctx, from, to) {
			if err != nil {
				return len(got), err
			}
			got = append(got, rec)
		}
		return len(got), nil
	})
	if op.Outcome != chaos.OK {
		return
	}
	bw.reg.checkRead(fmt.Sprintf("writer %d: Read %s [%v, %v)", bw.w.Index, bw.source, from, to), bw.source, from, to, got, before, bw.v)
	bw.checked = nil
}

func TestChaosBlobLog(t *testing.T) {
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		inj, err := chaos.New(seed, &chaos.Config{
			Reset: 0.04, AnswerLost: 0.07, ServerBusy: 0.04, TimeoutBefore: 0.02, TimeoutAfter: 0.04, Delay: 0.06,
			Services: []string{"blob"},
			// Faults may outlast the SDK's retries: flushes then fail
			// (their records stay buffered), Get Block List included.
			MaxConsecutive: -1,
		})
		if err != nil {
			t.Fatal(err)
		}
		cs := blobChaosConnectionString(t)
		setup, err := inj.Open(cs, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { t.Logf("chaos seed %d: %v", seed, inj.Stats()) })
		inj.SetEnabled(false)
		c := testenv.NewContainer(t, setup)
		inj.SetEnabled(true)
		cname := c.URL()[strings.LastIndex(c.URL(), "/")+1:]
		open := func() (*tablekit.Account, error) { return inj.Open(cs, nil) }

		reg := newBlobRegistry()
		var v chaos.Violations
		separate, shared, perWriter := chaos.Size(8, 16), chaos.Size(3, 4), chaos.Size(30, 100)
		// One Writer shared by several goroutines, on an Account of its own.
		sacct, err := open()
		if err != nil {
			t.Fatal(err)
		}
		sharedW, err := logtail.OpenWriter(sacct, cname, blobSources[0], logtail.WithMaxBlocks(logtail.WriterOptions{FlushBytes: 500, Period: blobPeriod, FlushTimeout: 2 * time.Second}, 3))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		all := map[string]*logtail.Writer{"shared": sharedW}
		closed := map[string]bool{}

		h, err := chaos.RunWriters(ctx, seed, separate+shared, func(ctx context.Context, w *chaos.Writer) error {
			acct, err := open()
			if err != nil {
				return err
			}
			bw := &blobWriter{w: w, reg: reg, v: &v, step: time.Duration(5+w.Rand.IntN(40)) * time.Second}
			if w.Index >= separate {
				bw.lw, bw.owner, bw.source = sharedW, "shared", blobSources[0]
			} else {
				bw.owner, bw.source = fmt.Sprintf("w%02d", w.Index), blobSources[w.Index%len(blobSources)]
				o := logtail.WithMaxBlocks(logtail.WriterOptions{
					FlushBytes:   150 + w.Rand.IntN(650),
					Period:       blobPeriod,
					FlushTimeout: 5 * time.Second,
				}, 2+w.Rand.IntN(4))
				if w.Rand.IntN(3) == 0 {
					// Short enough that flushes slowed by faults time out.
					o.FlushTimeout = time.Duration(80+w.Rand.IntN(200)) * time.Millisecond
				}
				switch w.Index % 4 {
				case 2:
					o.FlushInterval, o.FlushAge = 20*time.Millisecond, 30*time.Millisecond
				case 3:
					o.WriteThrough, bw.through = true, true
				}
				if bw.lw, err = logtail.OpenWriter(acct, cname, bw.source, o); err != nil {
					return err
				}
				mu.Lock()
				all[bw.owner] = bw.lw
				mu.Unlock()
			}
			if bw.reader, err = logtail.OpenReader(acct, cname, bw.source); err != nil {
				return err
			}
			logtail.SetConcurrency(bw.reader, 1+w.Rand.IntN(8))
			for range perWriter {
				bw.write(ctx)
				if w.Rand.IntN(6) == 0 && bw.flush(ctx, "Flush") && w.Rand.IntN(3) == 0 {
					bw.verify(ctx)
				}
			}
			if bw.owner == "shared" {
				bw.flush(ctx, "Flush")
			} else {
				for range 3 {
					if bw.flush(ctx, "Close") {
						mu.Lock()
						closed[bw.owner] = true
						mu.Unlock()
						break
					}
				}
			}
			bw.verify(ctx)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		inj.SetEnabled(false)
		st := inj.Stats()

		// Close every Writer without faults: each accepted record is then
		// stored. (A short FlushTimeout can still cut a flush on a slow
		// machine; each try keeps its block and goes on from there.)
		for owner, lw := range all {
			if closed[owner] {
				continue
			}
			var cerr error
			for range 50 {
				if cerr = lw.Close(ctx); cerr == nil {
					break
				}
			}
			if cerr != nil {
				t.Fatalf("Writer %s: Close without faults: %v", owner, cerr)
			}
		}
		for owner, lw := range all {
			if s := lw.Stats(); s.Buffered != 0 {
				v.Addf("Writer %s: %d records still buffered after Close: %+v", owner, s.Buffered, s)
			}
		}
		logBlobOps(t, h, st, all)
		if rate := st.FaultRate(); rate < 0.15 {
			t.Errorf("only %.1f%% of requests faulted, want at least 15%%", 100*rate)
		}
		checkBlobFinal(t, chaos.NoFaults(ctx), setup, c, h, reg, &v)
		if h.Len() < 300 && chaos.Full() {
			v.Addf("only %d operations ran, want at least 300", h.Len())
		}
		v.Report(t)
	})
}

// blobChaosConnectionString returns the account the suite writes to: the
// tests' account, except at full size on Azurite, where each seed gets an
// Azurite of its own. Azurite's blob garbage collector runs every ten
// minutes and deletes unreferenced extents (one per Put Block) in time
// quadratic in their number: after some fifteen seeds at full size (tens
// of thousands of blocks in deleted containers) it holds the emulator for
// longer than the run, and every request waits.
func blobChaosConnectionString(t *testing.T) string {
	if !chaos.Full() || os.Getenv(testenv.ConnectionStringEnv) != "" {
		return testenv.ConnectionString(t)
	}
	front, err := testenv.FrontOptions()
	if err != nil {
		t.Fatal(err)
	}
	return azurite.StartForTest(t, &azurite.Options{Front: front}).ConnectionString()
}

// logBlobOps logs the ops by name and outcome, the reasons of the failed
// ones, and the faults.
func logBlobOps(t *testing.T, h *chaos.History, st chaos.Stats, all map[string]*logtail.Writer) {
	t.Helper()
	byName := map[string]map[chaos.Outcome]int{}
	reasons := map[string]int{}
	for _, op := range h.Ops() {
		if byName[op.Name] == nil {
			byName[op.Name] = map[chaos.Outcome]int{}
		}
		byName[op.Name][op.Outcome]++
		if op.Outcome != chaos.OK {
			reasons[fmt.Sprintf("%s %s: %s", op.Name, op.Outcome, blobReason(op.Err))]++
		}
	}
	var parts []string
	for _, name := range []string{"Write", "Flush", "Close", "Read"} {
		m := byName[name]
		parts = append(parts, fmt.Sprintf("%s %d/%d/%d", name, m[chaos.OK], m[chaos.Failed], m[chaos.Unknown]))
	}
	var ws logtail.WriterStats
	for _, lw := range all {
		s := lw.Stats()
		ws.Flushes += s.Flushes
		ws.FailedFlushes += s.FailedFlushes
		ws.Blobs += s.Blobs
		ws.NameConflicts += s.NameConflicts
		ws.Written += s.Written
	}
	t.Logf("%d ops (%d ok, %d failed, %d unknown): %s (ok/failed/unknown); faults: %s",
		h.Len(), h.Count(chaos.OK), h.Count(chaos.Failed), h.Count(chaos.Unknown), strings.Join(parts, ", "), st.ByKind())
	t.Logf("writers: %d records written in %d flushes, %d failed flushes, %d blobs, %d name conflicts", ws.Written, ws.Flushes, ws.FailedFlushes, ws.Blobs, ws.NameConflicts)
	t.Logf("ops not acknowledged, by reason: %v", reasons)
}

// checkBlobFinal reads every source without faults and checks the stored
// records and blobs against the history.
func checkBlobFinal(t *testing.T, ctx context.Context, acct *tablekit.Account, c *container.Client, h *chaos.History, reg *blobRegistry, v *chaos.Violations) {
	t.Helper()
	from, to := blobT0.Add(-time.Hour), blobT0.Add(4*time.Hour)
	count := map[string]int{}
	var total, subWindows int
	for _, source := range blobSources {
		r, err := logtail.OpenReader(acct, containerName(c), source)
		if err != nil {
			t.Fatal(err)
		}
		got := readAll(t, ctx, r, from, to)
		total += len(got)
		for id, n := range reg.checkRead("final Read "+source, source, from, to, got, reg.snapshot(source), v) {
			count[id] += n
		}
		// Sub-windows, around period and hour boundaries and at random
		// record times: the records of the whole read in that window.
		var cuts []time.Time
		for i := -1; i < 8; i++ {
			cuts = append(cuts, blobT0.Truncate(blobPeriod).Add(time.Duration(i)*blobPeriod))
		}
		for i := 0; i < len(got); i += 1 + len(got)/7 {
			cuts = append(cuts, got[i].Time, got[i].Time.Add(time.Nanosecond))
		}
		slices.SortFunc(cuts, time.Time.Compare)
		for i := 0; i+1 < len(cuts); i++ {
			for _, j := range []int{i + 1, min(i+3, len(cuts)-1)} {
				a, b := cuts[i], cuts[j]
				if !a.Before(b) {
					continue
				}
				var want []string
				for _, rec := range got {
					if !rec.Time.Before(a) && rec.Time.Before(b) {
						want = append(want, blobID(rec.Message))
					}
				}
				var sub []string
				for _, rec := range readAll(t, ctx, r, a, b) {
					sub = append(sub, blobID(rec.Message))
				}
				if !slices.Equal(sub, want) {
					v.Addf("Read %s [%v, %v): %d records %v, want the %d of the whole read in it %v", source, a, b, len(sub), sub, len(want), want)
				}
				subWindows++
			}
		}
	}

	// Each record by what its writer was told.
	var unknownStored, unknownAbsent, lostFailed int
	for _, op := range h.Ops() {
		if op.Name != "Write" {
			continue
		}
		id := op.Value.(string)
		b, _ := reg.lookup(id)
		outcome := op.Outcome
		if b.through && outcome == chaos.Failed && op.AnswerLost() {
			lostFailed++ // told "not stored" though a try was applied: the Writer settled it
		}
		switch n := count[id]; {
		case outcome == chaos.OK && n != 1:
			v.Addf("record %s (%s, %v) was accepted, and is stored %d times, want once: %s", id, b.owner, b.rec.Time, n, op)
		case outcome == chaos.Failed && n != 0:
			v.Addf("record %s (%s, %v) is stored %d times, but its Write failed: %s", id, b.owner, b.rec.Time, n, op)
		case outcome == chaos.Unknown && n > 1:
			v.Addf("record %s (%s, %v) is stored %d times, want at most once: %s", id, b.owner, b.rec.Time, n, op)
		case outcome == chaos.Unknown && n == 1:
			unknownStored++
		case outcome == chaos.Unknown:
			unknownAbsent++
		}
	}
	dups := 0
	for _, n := range count {
		dups += max(n-1, 0)
	}

	// The blobs themselves.
	blobs := listAll(t, ctx, c)
	where := map[string][]string{} // id -> the blobs that hold it
	for _, bl := range blobs {
		for _, rec := range bl.records {
			id := blobID(rec.Message)
			where[id] = append(where[id], bl.name)
		}
	}
	for id, names := range where {
		if len(names) > 1 {
			v.Addf("record %s is stored %d times, in blobs %v", id, len(names), names)
		}
	}
	for _, bl := range blobs {
		if bl.parseErr != nil {
			v.Addf("blob %s: %v", bl.name, bl.parseErr)
			continue
		}
		if bl.meta["records"] != fmt.Sprint(len(bl.records)) {
			v.Addf("blob %s: metadata says %s records, it holds %d", bl.name, bl.meta["records"], len(bl.records))
		}
		owners := map[string]bool{}
		lastN := map[int]int{}
		var first, last time.Time
		for i, rec := range bl.records {
			b, ok := reg.lookup(blobID(rec.Message))
			if !ok {
				continue // reported by the reads
			}
			owners[b.owner] = true
			if i == 0 {
				first, last = rec.Time, rec.Time
			}
			first, last = minTime(first, rec.Time), maxTime(last, rec.Time)
			if rec.Time.Truncate(blobPeriod) != bl.start {
				v.Addf("blob %s (period %v) holds record %s of %v", bl.name, bl.start, b.id, rec.Time)
			}
			if n, ok := lastN[b.writer]; ok && b.n <= n {
				v.Addf("blob %s: writer %d's record %d after its record %d", bl.name, b.writer, b.n, n)
			}
			lastN[b.writer] = b.n
		}
		if len(owners) > 1 {
			v.Addf("blob %s holds records of several Writers: %v", bl.name, owners)
		}
		if len(bl.records) > 0 && (!bl.first.Equal(first) || !bl.last.Equal(last)) {
			v.Addf("blob %s: metadata first/last %v/%v, records span %v/%v", bl.name, bl.first, bl.last, first, last)
		}
	}
	t.Logf("final: %d records read in %d blobs, %d sub-window reads; write-through records with unknown outcome: %d stored, %d not; failed after a lost answer: %d; duplicates: %d",
		total, len(blobs), subWindows, unknownStored, unknownAbsent, lostFailed, dups)
}

// blobReason sorts the error of an op that was not acknowledged.
func blobReason(err error) string {
	var na notAccepted
	if errors.As(err, &na) {
		err = na.err
	}
	var se *tablekit.ServiceError
	var re *tablekit.RequestError
	switch {
	case strings.Contains(fmt.Sprint(err), "FlushTimeout"):
		return "flush timed out"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "context"
	case errors.As(err, &se):
		return se.Code
	case errors.As(err, &re):
		return "no answer"
	}
	return fmt.Sprintf("%T", err)
}
