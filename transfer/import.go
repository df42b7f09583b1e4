package transfer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/wire"
)

// Mode says how imported or copied entities are written.
type Mode uint8

const (
	// Insert adds each entity; one that exists already fails alone (and is
	// reported) and is left as it is.
	Insert Mode = iota
	// Merge inserts each entity or merges its properties into the
	// stored one.
	Merge
	// Replace inserts each entity or replaces the stored one.
	Replace
)

// String returns "insert", "merge" or "replace".
func (m Mode) String() string {
	if names := [...]string{Insert: "insert", Merge: "merge", Replace: "replace"}; int(m) < len(names) {
		return names[m]
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

func (m Mode) action(e tablekit.Entity) tablekit.Action[tablekit.Entity] {
	switch m {
	case Merge:
		return tablekit.MergeAction(e, "")
	case Replace:
		return tablekit.UpsertAction(e)
	}
	return tablekit.InsertAction(e)
}

// ErrFailures is matched by the error of an import or copy in which some
// entities failed; the result lists them.
var ErrFailures = errors.New("transfer: some entities failed")

// ImportOptions configures [Import]. A nil *ImportOptions means
// defaults.
//
// The embedded JobOptions' Checkpoint records how far the stream is
// durably imported: the longest run of lines from the start that are all
// done (written, or failed for a reason of their own), saved every
// CheckpointEvery, before a batch goes past the lines sent so far, and
// when the call returns; Resume goes on from it, which must be that of
// an import of the same stream (same header) into a table of the same
// name in the same mode. See [Import] for what a resumed import does.
type ImportOptions struct {
	JobOptions
	// BatchSize is the most entities handed to the BulkWriter at once
	// (default 20,000; at most 100,000); the next batch is read while one
	// is written, so memory holds about two batches.
	BatchSize int
	// Concurrency is how many transactions the BulkWriter has in flight
	// (0: the BulkWriter's default; at most 1,024). The import uses one
	// BulkWriter for all its batches, paced by the Account's Governor.
	Concurrency int
	// MaxFailures stops the import once more than this many entities
	// failed in this run (0: never stop).
	MaxFailures int
}

// importConfig is what Import works with: its options, its mode and what
// it takes from its table and stream.
type importConfig struct {
	ImportOptions
	Mode        Mode
	MaxReported int
	TotalBytes  int64 // the stream's size when known, for Progress
	Meter       *tablekit.Meter
}

// streamSize returns the size of r when r can tell (an *os.File of a
// regular file, a *bytes.Reader, a *strings.Reader), else 0.
func streamSize(r io.Reader) int64 {
	switch s := r.(type) {
	case interface{ Stat() (fs.FileInfo, error) }:
		if fi, err := s.Stat(); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
	case interface{ Size() int64 }:
		return s.Size()
	}
	return 0
}

// ImportResult reports an import. Read, Written, Failed and Verified count
// over all runs of a resumed import.
type ImportResult struct {
	// Header is the export's header.
	Header Header
	// Read counts the entity lines read (or skipped on resume); Written
	// those applied; Failed those that were not (bad lines included).
	Read, Written, Failed int64
	// Skipped counts the entity lines this run skipped because the
	// checkpoint it resumed from recorded them as done.
	Skipped int64
	// Verified counts, among Written, the entities an insert found
	// already stored with exactly the line's properties and so did not
	// write again: lines the run being resumed had sent after its last
	// checkpoint, or an insert whose answer was lost (see [Import]).
	Verified int64
	// Failures lists failed lines of this run, in line order (the first
	// 1,000); all are counted. An error matching tablekit.ErrOutcomeUnknown or a
	// context error means the entity may have been written.
	Failures []*EntityError
	// Requests counts the transactions the BulkWriter sent; Transactions
	// all storage transactions of this run seen by the Meter of the
	// table's Account (see [Progress].Transactions).
	Requests, Transactions int64
	// Complete is true when the stream was read to its trailer and, with
	// a Checkpoint, no line failed for a passing reason (throttled beyond
	// the retries, an unknown outcome, skipped): a call with Resume sends
	// those again.
	Complete bool
	// Elapsed is the time this run took.
	Elapsed time.Duration
}

// importItem is one entity and the line it came from.
type importItem struct {
	seq     int64 // its place in the order of lines read (see importer.q)
	line    int
	carried bool // kept for a later batch once already
	e       tablekit.Entity
}

// Import reads an export from r and writes its entities to t, in batches
// through a BulkWriter, as mode says. Lines that cannot be read and
// entities the service refuses are reported per line in the result and do
// not stop the import (see MaxFailures); then the error matches
// [ErrFailures]. A stream without its trailer is imported as far as it
// goes and the error matches [ErrTruncated].
//
// Entities of one partition are kept together across batches, so that the
// BulkWriter sends full transactions of 100; an entity that appears twice
// is written in the order of the lines.
//
// With a Checkpoint, a call with Resume skips the lines the checkpoint
// records as done and sends the rest, looking up in Insert mode what the
// run being resumed may have written ("Resuming an import" in the package
// documentation).
func Import(ctx context.Context, t *tablekit.Table[tablekit.Entity], r io.Reader, mode Mode, opts *ImportOptions) (ImportResult, error) {
	return importStream(ctx, t, r, mode, opts, nil)
}

// importStream is Import, writing with a BulkWriter of bulk's options
// (Concurrency taken from opts) when bulk is not nil (tests).
func importStream(ctx context.Context, t *tablekit.Table[tablekit.Entity], r io.Reader, mode Mode, opts *ImportOptions, bulk *tablekit.BulkOptions) (ImportResult, error) {
	const op = "transfer.Import"
	if opts == nil {
		opts = &ImportOptions{}
	}
	o := importConfig{ImportOptions: *opts, Mode: mode, MaxReported: maxReported, TotalBytes: streamSize(r), Meter: t.Account().Meter()}
	switch {
	case t == nil:
		return ImportResult{}, validation(op, "nil table")
	case r == nil:
		return ImportResult{}, validation(op, "nil io.Reader")
	case o.Mode > Replace:
		return ImportResult{}, validation(op, fmt.Sprintf("unknown mode %d", o.Mode))
	case o.BatchSize < 0 || o.MaxFailures < 0:
		return ImportResult{}, validation(op, "BatchSize and MaxFailures must not be negative")
	case o.Concurrency < 0 || o.Concurrency > maxConcurrency:
		return ImportResult{}, validation(op, fmt.Sprintf("Concurrency is %d; it must be 0 (default) to %d", o.Concurrency, maxConcurrency))
	case o.BatchSize > maxBatchSize:
		return ImportResult{}, validation(op, fmt.Sprintf("BatchSize is %d; it must be 0 (default 20,000) to %d", o.BatchSize, maxBatchSize))
	case o.Resume && o.Checkpoint == nil:
		return ImportResult{}, validation(op, "Resume needs a Checkpoint")
	}
	if o.BatchSize == 0 {
		o.BatchSize = 20_000
	}
	if o.CheckpointEvery <= 0 {
		o.CheckpointEvery = 5 * time.Second
	}
	rd, err := NewReader(r)
	if err != nil {
		return ImportResult{}, err
	}
	bo := tablekit.BulkOptions{}
	if bulk != nil {
		bo = *bulk
	}
	bo.Concurrency = o.Concurrency
	im := &importer{
		t: t, o: o, w: t.BulkWriter(&bo), cp: o.Checkpoint, started: time.Now(),
		res: ImportResult{Header: rd.Header()}, stopSeq: math.MaxInt64,
	}
	im.state = importState{
		Version: stateVersion, Op: "import", Table: t.Name(), Mode: o.Mode.String(),
		Source: describeHeader(rd.Header()), Started: im.started.UTC(), Line: rd.lineNo(), Offset: rd.offset(),
	}
	if o.Resume {
		if err := im.load(ctx); err != nil {
			return ImportResult{}, err
		}
		rd.skipThrough(im.state.Line, im.state.Offset)
	}
	im.readLine, im.readBytes = im.state.Line, im.state.Offset
	if o.Meter != nil {
		im.meterStart = o.Meter.Snapshot()
	}
	rep := startReporter(ctx, o.OnProgress, im.progress)
	err = im.run(ctx, rd)
	rep.finish()
	im.mu.Lock()
	defer im.mu.Unlock()
	res := im.res
	slices.SortStableFunc(res.Failures, func(a, b *EntityError) int { return a.Line - b.Line })
	res.Elapsed = time.Since(im.started)
	res.Transactions = im.transactions()
	if err == nil && res.Failed > 0 {
		if len(res.Failures) > 0 {
			err = fmt.Errorf("%w: %d of %d entities failed; first: %v", ErrFailures, res.Failed, res.Read, res.Failures[0])
		} else {
			err = fmt.Errorf("%w: %d of %d entities failed, in the runs this one resumed", ErrFailures, res.Failed, res.Read)
		}
	}
	return res, err
}

// maxBatchSize bounds ImportOptions.BatchSize: larger batches only hold
// more memory (two batches are in memory at once), and a batch is made
// with room for BatchSize entities.
const maxBatchSize = 100_000

// importState is what an import's checkpoint holds.
type importState struct {
	Version int    `json:"version"`
	Op      string `json:"op"` // "import"
	Table   string `json:"table"`
	Mode    string `json:"mode"`
	// Source is the stream's header, which a resumed import must have too.
	Source  string    `json:"source"`
	Started time.Time `json:"started"`
	// Line is the 1-based line number up to which every line is done;
	// Offset the number of bytes of the stream up to the end of that line.
	Line   int   `json:"line"`
	Offset int64 `json:"offset"`
	// Sent is the last line handed to the service: no line after it may
	// have been written.
	Sent int `json:"sent,omitempty"`
	// Counts are those of the lines up to Line.
	Counts importCounts `json:"counts"`
	// Complete is true when every line, up to the trailer, is done.
	Complete bool `json:"complete,omitempty"`
}

type importCounts struct {
	Read     int64 `json:"read"`
	Written  int64 `json:"written"`
	Failed   int64 `json:"failed,omitempty"`
	Verified int64 `json:"verified,omitempty"`
}

// describeHeader returns the header as the identity of its stream.
func describeHeader(h Header) string {
	return fmt.Sprintf("version=%d table=%q filter=%q created=%s", h.Version, h.Table, h.Filter, h.Created.UTC().Format(time.RFC3339Nano))
}

// lineState is what became of a line read.
type lineState uint8

const (
	linePending   lineState = iota
	lineWritten             // applied
	lineVerified            // found stored as the line says (insert)
	lineFailed              // failed for a reason of its own: done
	lineAbandoned           // failed for a passing reason: not done
)

// lineEntry is one entity line (or bad line) read, in the order read.
type lineEntry struct {
	line  int
	end   int64 // the stream offset at the end of the line
	state lineState
}

type importer struct {
	t          *tablekit.Table[tablekit.Entity]
	o          importConfig
	w          *tablekit.BulkWriter[tablekit.Entity]
	cp         Checkpoint
	started    time.Time
	meterStart tablekit.MeterSnapshot
	bytes      atomic.Int64
	// resent is the last line the run being resumed may have sent: in
	// Insert mode, lines up to it are looked up before they are sent.
	resent int
	// skipBytes is the size of the stream a resumed run skips.
	skipBytes int64

	saveMu sync.Mutex // orders checkpoint saves

	mu        sync.Mutex
	res       ImportResult
	runFailed int64
	state     importState // Line, Offset, Counts: the done prefix
	// q holds the lines read and not yet part of the done prefix, in the
	// order read; q[0] has sequence number qbase. After a line is
	// abandoned (at stopSeq) the prefix cannot pass it in this run, and
	// later lines are no longer tracked.
	q         []lineEntry
	qbase     int64
	nextSeq   int64
	stopSeq   int64
	readLine  int   // the last line read whose entry is queued (or the end)
	readBytes int64 // the stream offset at its end
	eof       bool  // the trailer was read
}

// load reads the checkpoint and checks that it is an import of this
// stream into this table, in this mode.
func (im *importer) load(ctx context.Context) error {
	data, err := im.cp.Load(ctx)
	if err != nil || data == nil {
		return err
	}
	var s importState
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%w: %v", ErrCorruptCheckpoint, err)
	}
	want := im.state
	switch {
	case s.Version != stateVersion:
		return fmt.Errorf("%w: state version %d, want %d", ErrCorruptCheckpoint, s.Version, stateVersion)
	case s.Op != "import":
		return fmt.Errorf("%w: it is the checkpoint of a %s, not an import", ErrCorruptCheckpoint, s.Op)
	case s.Table != want.Table:
		return fmt.Errorf("%w: it is for table %q, not %q", ErrCorruptCheckpoint, s.Table, want.Table)
	case s.Mode != want.Mode:
		return fmt.Errorf("%w: it is for mode %s, not %s", ErrCorruptCheckpoint, s.Mode, want.Mode)
	case s.Source != want.Source:
		return fmt.Errorf("%w: it is for the export with header %s, not %s", ErrCorruptCheckpoint, s.Source, want.Source)
	case s.Line < want.Line || s.Offset < want.Offset || s.Sent < 0:
		return fmt.Errorf("%w: it records line %d at byte %d", ErrCorruptCheckpoint, s.Line, s.Offset)
	}
	im.state = s
	im.skipBytes = s.Offset
	c := s.Counts
	im.res.Read, im.res.Written, im.res.Failed, im.res.Verified, im.res.Skipped = c.Read, c.Written, c.Failed, c.Verified, c.Read
	if im.o.Mode == Insert && s.Sent > s.Line {
		im.resent = s.Sent
	}
	return nil
}

// save writes a checkpoint of the done prefix. Saves are serialised, so
// that a later one never records less than an earlier one.
func (im *importer) save(ctx context.Context, update func(*importState)) error {
	im.saveMu.Lock()
	defer im.saveMu.Unlock()
	im.mu.Lock()
	if update != nil {
		update(&im.state)
	}
	data, err := json.Marshal(&im.state)
	im.mu.Unlock()
	if err != nil {
		return err
	}
	return im.cp.Save(ctx, data)
}

// enqueue records a line read, in state st, and returns its sequence
// number. The caller holds mu.
func (im *importer) enqueue(line int, end int64, st lineState) int64 {
	seq := im.nextSeq
	im.nextSeq++
	if seq <= im.stopSeq {
		im.q = append(im.q, lineEntry{line: line, end: end, state: st})
	}
	im.readLine, im.readBytes = line, end
	return seq
}

// mark records what became of the line with sequence number seq. The
// caller holds mu.
func (im *importer) mark(seq int64, st lineState) {
	if seq > im.stopSeq || seq < im.qbase {
		return
	}
	if st == lineAbandoned {
		im.stopSeq = seq
		im.q = im.q[:seq-im.qbase+1]
	}
	im.q[seq-im.qbase].state = st
}

// advance moves the done prefix over the lines that are done. The caller
// holds mu.
func (im *importer) advance() {
	for len(im.q) > 0 {
		e := im.q[0]
		switch e.state {
		case lineWritten:
			im.state.Counts.Written++
		case lineVerified:
			im.state.Counts.Written++
			im.state.Counts.Verified++
		case lineFailed:
			im.state.Counts.Failed++
		default:
			return
		}
		im.state.Counts.Read++
		im.state.Line, im.state.Offset = e.line, e.end
		im.q = im.q[1:]
		im.qbase++
	}
	if im.qbase == im.nextSeq && im.stopSeq == math.MaxInt64 {
		// Everything read is done, blank lines and the trailer too.
		im.state.Line, im.state.Offset = im.readLine, im.readBytes
		im.state.Complete = im.eof
	}
}

func (im *importer) transactions() int64 {
	if im.o.Meter != nil {
		return im.o.Meter.Snapshot().Sub(im.meterStart).Service("table")
	}
	return im.res.Requests
}

func (im *importer) progress() Progress {
	im.mu.Lock()
	p := Progress{Op: "import", Read: im.res.Read, Written: im.res.Written, Failed: im.res.Failed, Bytes: im.bytes.Load(), Elapsed: time.Since(im.started)}
	p.Transactions = im.transactions()
	skipped := im.res.Skipped
	im.mu.Unlock()
	done := p.Written + p.Failed
	p.rate(done-skipped, done, -1)
	if im.o.TotalBytes > 0 && p.Bytes > 0 && p.Bytes <= im.o.TotalBytes {
		// Estimate by bytes: entities so far scaled to the whole file, and
		// the time left at this run's rate of bytes.
		p.Total = int64(float64(p.Read) * float64(im.o.TotalBytes) / float64(p.Bytes))
		if s := p.Elapsed.Seconds(); s > 0 && p.Bytes > im.skipBytes {
			p.Remaining = time.Duration(float64(im.o.TotalBytes-p.Bytes) / (float64(p.Bytes-im.skipBytes) / s) * float64(time.Second))
		}
	}
	return p
}

// fail records a failed line of this run. The caller holds mu.
func (im *importer) fail(le *EntityError) {
	im.res.Failed++
	im.runFailed++
	if len(im.res.Failures) < im.o.MaxReported {
		im.res.Failures = append(im.res.Failures, le)
	}
}

func (im *importer) tooManyFailures() bool {
	return im.o.MaxFailures > 0 && im.runFailed > int64(im.o.MaxFailures)
}

// run reads batches on one goroutine and writes them on this one, saving
// checkpoints as it goes.
func (im *importer) run(ctx context.Context, rd *Reader) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	batches := make(chan []importItem, 1)
	var readErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(batches)
		readErr = im.read(ctx, rd, batches)
	})
	var saveErr error
	cpDone := make(chan struct{})
	var cpWG sync.WaitGroup
	if im.cp != nil {
		cpWG.Go(func() {
			t := time.NewTicker(im.o.CheckpointEvery)
			defer t.Stop()
			for {
				select {
				case <-cpDone:
					return
				case <-t.C:
					if err := im.save(context.WithoutCancel(ctx), nil); err != nil {
						saveErr = err
						cancel(err)
						return
					}
				}
			}
		})
	}
	var carry []importItem
	var writeErr error
	for batch := range batches {
		if writeErr != nil {
			continue // drain
		}
		items := append(carry, batch...)
		carry = nil
		if len(batch) > 0 {
			// Keep each partition's last partial transaction for the next
			// batch, where more of the partition may follow.
			items, carry = splitCarry(items)
		}
		if err := im.write(ctx, items); err != nil {
			writeErr = err
			cancel(err)
		}
	}
	wg.Wait()
	if writeErr == nil && len(carry) > 0 {
		writeErr = im.write(ctx, carry)
	}
	close(cpDone)
	cpWG.Wait()
	im.mu.Lock()
	// A line that failed for a passing reason holds the checkpoint back:
	// with a checkpoint, a call with Resume sends it again, so the import
	// is not complete (without one nothing could, and the failures are
	// the result).
	im.res.Complete = rd.complete() && (im.cp == nil || im.stopSeq == math.MaxInt64)
	im.mu.Unlock()
	if im.cp != nil {
		if err := im.save(context.WithoutCancel(ctx), nil); err != nil && writeErr == nil && saveErr == nil {
			saveErr = err
		}
	}
	switch {
	case saveErr != nil:
		return saveErr
	case writeErr != nil:
		return writeErr
	}
	return readErr
}

// read parses the stream into batches; the last batch sent is empty, to
// say the stream ended.
func (im *importer) read(ctx context.Context, rd *Reader, out chan<- []importItem) error {
	batch := make([]importItem, 0, im.o.BatchSize)
	send := func() bool {
		select {
		case out <- batch:
			batch = make([]importItem, 0, im.o.BatchSize)
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		e, err := rd.Next()
		im.bytes.Store(rd.offset())
		var le *EntityError
		switch {
		case err == nil:
			im.mu.Lock()
			im.res.Read++
			seq := im.enqueue(rd.lineNo(), rd.offset(), linePending)
			im.mu.Unlock()
			batch = append(batch, importItem{seq: seq, line: rd.lineNo(), e: e})
			if len(batch) == im.o.BatchSize && !send() {
				return context.Cause(ctx)
			}
			continue
		case errors.As(err, &le):
			im.mu.Lock()
			im.res.Read++
			im.fail(le)
			im.enqueue(rd.lineNo(), rd.offset(), lineFailed)
			im.advance()
			stop := im.tooManyFailures()
			im.mu.Unlock()
			if stop {
				return fmt.Errorf("%w: stopped after %d failures", ErrFailures, im.o.MaxFailures)
			}
			continue
		case err == io.EOF:
			im.mu.Lock()
			im.readLine, im.readBytes, im.eof = rd.lineNo(), rd.offset(), true
			im.advance()
			im.mu.Unlock()
		}
		if len(batch) > 0 {
			if !send() {
				return context.Cause(ctx)
			}
		}
		// The final empty batch flushes the carry.
		if !send() {
			return context.Cause(ctx)
		}
		if err == io.EOF {
			return nil
		}
		return err
	}
}

// splitCarry returns the items to write now and those to keep: for each
// partition, its last len%100 items, so that every partition goes out in
// full transactions until its end. A partition whose tail holds an item
// kept once already is written whole: no line waits more than one batch,
// so that the checkpoint of a resumable import follows the stream closely.
// Order within a partition is kept.
func splitCarry(items []importItem) (now, carry []importItem) {
	count := map[string]int{}
	for i := range items {
		count[items[i].e.PartitionKey]++
	}
	keep := map[string]int{}
	for pk, n := range count {
		if r := n % limits.TransactionActions; r != 0 {
			keep[pk] = r
		}
	}
	seen := map[string]int{}
	for i := range items {
		pk := items[i].e.PartitionKey
		seen[pk]++
		if items[i].carried && count[pk]-seen[pk] < keep[pk] {
			keep[pk] = 0 // in the tail again: write the partition now
		}
	}
	clear(seen)
	now = make([]importItem, 0, len(items))
	for i := range items {
		pk := items[i].e.PartitionKey
		seen[pk]++
		if count[pk]-seen[pk] < keep[pk] {
			it := items[i]
			it.carried = true
			carry = append(carry, it)
		} else {
			now = append(now, items[i])
		}
	}
	return now, carry
}

// write applies items through the import's BulkWriter, after recording
// in the checkpoint that they are sent, and records what became of each.
func (im *importer) write(ctx context.Context, items []importItem) error {
	if len(items) == 0 {
		return nil
	}
	if im.cp != nil {
		last := 0
		for i := range items {
			last = max(last, items[i].line)
		}
		im.mu.Lock()
		ahead := last > im.state.Sent
		im.mu.Unlock()
		if ahead {
			if err := im.save(context.WithoutCancel(ctx), func(s *importState) { s.Sent = max(s.Sent, last) }); err != nil {
				return err
			}
		}
	}
	states := make([]lineState, len(items))
	errs := make([]error, len(items))
	// Lines the run being resumed may have inserted: look them up first.
	send := make([]int, 0, len(items))
	var lookup []int
	for i := range items {
		if im.o.Mode == Insert && items[i].line <= im.resent {
			lookup = append(lookup, i)
		} else {
			send = append(send, i)
		}
	}
	if len(lookup) > 0 {
		st, err := im.lookup(ctx, items, lookup)
		if err != nil {
			return err
		}
		for k, i := range lookup {
			switch st[k] {
			case storedIdentical:
				states[i] = lineVerified
			case storedOther:
				states[i], errs[i] = lineFailed, errStoredOther("Import", "its line")
			default:
				send = append(send, i)
			}
		}
		slices.Sort(send) // keep the order of lines
	}
	var res tablekit.BulkResult
	var err error
	if len(send) > 0 {
		actions := make([]tablekit.Action[tablekit.Entity], len(send))
		for k, i := range send {
			actions[k] = im.o.Mode.action(items[i].e)
		}
		res, err = im.w.Write(ctx, actions)
		for _, k := range send {
			states[k] = lineWritten
		}
		var unknown []int
		for _, f := range res.Failed {
			i := send[f.Index]
			states[i], errs[i] = lineAbandoned, f.Err
			if settled(f.Err) {
				states[i] = lineFailed
			} else if im.o.Mode == Insert && errors.Is(f.Err, tablekit.ErrOutcomeUnknown) && ctx.Err() == nil {
				unknown = append(unknown, i)
			}
		}
		if len(unknown) > 0 {
			// A lost answer: the table says whether the insert was
			// applied.
			if st, lerr := im.lookup(ctx, items, unknown); lerr == nil {
				for k, i := range unknown {
					if st[k] == storedIdentical {
						states[i], errs[i] = lineVerified, nil
					}
				}
			}
		}
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	im.res.Requests += int64(res.Requests)
	for i := range items {
		it := &items[i]
		switch states[i] {
		case lineWritten:
			im.res.Written++
		case lineVerified:
			im.res.Written++
			im.res.Verified++
		default:
			im.fail(&EntityError{Line: it.line, PartitionKey: it.e.PartitionKey, RowKey: it.e.RowKey, Err: errs[i]})
		}
		im.mark(it.seq, states[i])
	}
	im.advance()
	if err != nil && !itemsFailed(res, err) {
		return err
	}
	if im.tooManyFailures() {
		return fmt.Errorf("%w: stopped after %d failures", ErrFailures, im.o.MaxFailures)
	}
	return nil
}

// lookup compares what the table holds for items[idx] with them.
func (im *importer) lookup(ctx context.Context, items []importItem, idx []int) ([]stored, error) {
	es := make([]*tablekit.Entity, len(idx))
	for k, i := range idx {
		es[k] = &items[i].e
	}
	return lookupStored(ctx, im.t, es)
}

// settled reports whether a failed write's error is the entity's own, so
// that sending it again would fail the same way: a value or key the
// service or tablekit refuses, an entity that exists (insert), a stale
// condition. Throttling, lost answers, skipped actions, context ends and
// failures of the whole request are not.
func settled(err error) bool {
	if errors.Is(err, tablekit.ErrOutcomeUnknown) || errors.Is(err, tablekit.ErrSkipped) || wire.IsThrottled(err) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ve *tablekit.ValidationError
	if errors.As(err, &ve) {
		return true
	}
	var te *tablekit.TransactionError
	if !errors.As(err, &te) || te.Index < 0 {
		return false
	}
	switch te.Code {
	case "TableNotFound", "AuthorizationFailure", "AuthenticationFailed", "AuthorizationPermissionMismatch",
		"InsufficientAccountPermissions", "ServerBusy", "OperationTimedOut", "InternalError", "RequestBodyTooLarge", "":
		return false
	}
	return true
}
