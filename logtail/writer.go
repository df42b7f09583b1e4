package logtail

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/logs"
	"github.com/tablekit/tablekit/internal/timing"
)

// Metadata names of a log blob. The service may return them with other
// capitalisation (e.g. "Firstrecord"); compare case-insensitively.
const (
	metaFirst   = "firstrecord" // the earliest record time in the blob (record time format)
	metaLast    = "lastrecord"  // the latest record time in the blob
	metaRecords = "records"     // the number of records in the blob
)

// Writer defaults and limits (WriterOptions' docs give them).
const (
	defaultFlushBytes            = 1 << 20
	defaultFlushAge              = time.Minute
	defaultFlushTimeout          = time.Minute
	defaultPeriod                = time.Hour
	defaultMaxBlocks             = 1000 // per blob: each flush sends the whole block list
	defaultWriteThroughMaxBlocks = 200  // every record is a block: keep the list short
	defaultMaxBlobBytes          = 128 << 20
	maxFlushBytes                = 64 << 20 // far below the service's block size limit
	maxBlocks                    = 50000    // the service's limit of committed blocks per blob
)

// ErrClosed is returned by a Writer's Write methods after Close.
var ErrClosed = errors.New("logtail: writer closed")

// WriterOptions configures a [Writer]. A nil *WriterOptions means
// defaults. The Writer logs to its Account's Logger (tablekit.Options).
type WriterOptions struct {
	// FlushBytes flushes the buffer before it would grow past this many
	// bytes of encoded records (default 1 MiB, at most 64 MiB).
	// While a flush is under way, new records collect in a second buffer
	// of the same bound, so a Writer holds at most twice FlushBytes.
	FlushBytes int
	// FlushAge flushes the buffer once its oldest record was accepted
	// this long ago by Clock (default 1 minute; negative: never by age).
	// Age is checked when a record is written, by FlushDue, and every
	// FlushInterval when that is set.
	FlushAge time.Duration
	// FlushInterval, when positive, starts a goroutine that calls
	// FlushDue that often (real time), so that a quiet writer's records
	// still reach storage within about FlushAge+FlushInterval. Close stops
	// it. Zero (the default) starts no goroutine.
	FlushInterval time.Duration
	// FlushTimeout bounds one flush (its Put Block and Put Block List
	// requests, with the SDK's retries), whatever context it runs under
	// (default one minute). A flush that times out
	// fails like any other: its records stay buffered, in order, and the
	// next flush writes them.
	FlushTimeout time.Duration
	// WriteThrough writes every record to storage before Write returns
	// (two requests per record) instead of buffering. See the package
	// documentation for the trade-off.
	WriteThrough bool
	// Period is the span of time one blob name covers, the hhmm folder:
	// a whole number of minutes that divides an hour (default 1 hour, as
	// Storage Analytics does). A blob holds only records of its period.
	Period time.Duration
	// MaxBlobBytes starts the next blob (NNNNNN+1) once a blob holds this
	// many bytes (default 128 MiB), or 1000 blocks (200 in write-through
	// mode, where every record is one): each flush sends the blob's whole
	// block list, so a long list would make every flush slower.
	MaxBlobBytes int64

	maxBlocks int // 0: the default; set by tests (export_test.go)
	// Clock gives record times for Write and the age of the buffer (nil
	// means time.Now). Tests inject a simulated clock.
	Clock func() time.Time
}

// WriterStats counts what a [Writer] did.
type WriterStats struct {
	Accepted        int64 // records accepted by Write and WriteRecord
	Written         int64 // records committed to storage
	Buffered        int   // records accepted but not yet committed
	BufferedBytes   int   // their encoded size
	Flushes         int64 // successful flushes (one block each)
	SizeFlushes     int64 // ... of which triggered by FlushBytes
	AgeFlushes      int64 // ... of which triggered by FlushAge
	Blobs           int64 // blobs created
	NameConflicts   int64 // blob names found taken by another writer
	FailedFlushes   int64 // flushes that failed (their records stay buffered)
	LastFlushError  error // the error of the last failed flush, if any
	BackgroundFlush int64 // flushes done by the FlushInterval goroutine
}

// flush reasons
const (
	reasonExplicit = iota
	reasonSize
	reasonAge
	reasonPeriod
	reasonWriteThrough
	reasonBackground
)

// blobState is the blob a Writer appends to.
type blobState struct {
	name        string
	period      time.Time
	seq         int
	ids         []string
	etag        azcore.ETag
	size        int64
	records     int64
	first, last time.Time
}

// batch is a run of encoded records of one period, in the order they were
// accepted: what one flush writes as one block.
type batch struct {
	data        []byte
	n           int       // records
	since       time.Time // Clock time the oldest record was accepted
	first, last time.Time // earliest and latest record time
	period      time.Time
	reason      int    // why it was sealed
	id          string // its block id, kept when a flush is tried again
}

// add appends an encoded record of time t, accepted at now.
func (b *batch) add(line []byte, t, period, now time.Time) {
	b.data = append(b.data, line...)
	b.note(t, period, now)
}

// note counts a record of time t, accepted at now, whose encoding was
// appended to b.data.
func (b *batch) note(t, period, now time.Time) {
	if b.n == 0 {
		b.since, b.first, b.last, b.period = now, t, t, period
	} else {
		if t.Before(b.first) {
			b.first = t
		}
		if t.After(b.last) {
			b.last = t
		}
	}
	b.n++
}

// Writer writes the log records of one source to blobs named
// "<source>/YYYY/MM/DD/hhmm/NNNNNN.log". It is safe for concurrent use;
// any number of Writers, in any number of processes, may write the same
// source: each creates its own blobs (create-only, taking the next free
// sequence number when a name is taken) and only ever appends to them.
//
// A flush runs without holding the Writer's lock, one at a time, bounded
// by FlushTimeout: while it waits for storage, Stats answers and Write
// keeps accepting records into a second buffer; a Write that must wait
// (for buffer space, or for its own record in write-through mode) waits
// only as long as its context allows. A failed flush keeps its block
// (records and block id) and the next flush tries it again before any
// later record, so records reach storage in the order they were accepted,
// and a flush whose answer was lost is not written twice: before it moves
// on to a new blob, a flush whose commit failed reads the blob's block
// list to see whether the commit was applied after all, and when it cannot
// read it, it fails (with an error matching tablekit.ErrOutcomeUnknown) and
// keeps the blob, so that the next flush asks again.
type Writer struct {
	c      *container.Client
	cname  string
	source string
	o      WriterOptions
	log    *slog.Logger

	mu       sync.Mutex
	cur      batch         // accepts new records
	head     *batch        // sealed: being flushed, or to be tried again
	spare    []byte        // the buffer of the last block written, for reuse
	flushing bool          // a goroutine is flushing head now
	idle     chan struct{} // closed when that flush ends
	accepted uint64        // records ever accepted
	done     uint64        // records ever committed or dropped, in order
	closed   bool
	stats    WriterStats
	id       [8]byte // random identity: prefix of every block id
	blockSeq uint64  // block ids given so far

	// Owned by the flushing goroutine (flushing set, lock not held).
	blob    *blobState
	seqHint map[time.Time]int // next sequence number to try, per period

	// the FlushInterval goroutine; set by OpenWriter, nil without one
	bgStop   chan struct{}
	bgDone   chan struct{}
	bgCancel context.CancelFunc
	stopOnce sync.Once
}

// OpenWriter returns a Writer of source's records into the container
// named container in acct, which must exist. source names the log ("web",
// "billing/eu"): segments of letters, digits, '-', '_' and '.' separated
// by '/', none made only of digits. The Writer logs to acct's Logger what
// no caller hears of (a failed background flush, a commit whose outcome
// is unknown and is checked again, a commit settled as applied after its
// answer was lost), with structured fields (container, source, blob,
// block, records, error). Bad input is refused with a
// *tablekit.ValidationError whose Op is "logtail.OpenWriter"; nothing is
// sent.
func OpenWriter(acct *tablekit.Account, container, source string, opts *WriterOptions) (*Writer, error) {
	const op = "logtail.OpenWriter"
	c, err := openContainer(op, acct, container)
	if err != nil {
		return nil, err
	}
	if err := checkSource(op, source); err != nil {
		return nil, err
	}
	var o WriterOptions
	if opts != nil {
		o = *opts
	}
	bad := func(prop, limit string, size int, detail string) error {
		return &tablekit.ValidationError{Op: op, Property: prop, Limit: limit, Size: size, Detail: detail, Err: tablekit.ErrInvalidInput}
	}
	switch {
	case o.FlushBytes == 0:
		o.FlushBytes = defaultFlushBytes
	case o.FlushBytes < 0 || o.FlushBytes > maxFlushBytes:
		return nil, bad("FlushBytes", "1..64 MiB", o.FlushBytes, "flush size out of range")
	}
	if o.FlushAge == 0 {
		o.FlushAge = defaultFlushAge
	}
	if o.FlushInterval < 0 {
		return nil, bad("FlushInterval", ">= 0", int(o.FlushInterval), "negative flush interval")
	}
	switch {
	case o.FlushTimeout == 0:
		o.FlushTimeout = defaultFlushTimeout
	case o.FlushTimeout < 0:
		return nil, bad("FlushTimeout", "> 0", int(o.FlushTimeout), "negative flush timeout")
	}
	if o.Period == 0 {
		o.Period = defaultPeriod
	}
	if o.Period < time.Minute || o.Period > time.Hour || o.Period%time.Minute != 0 || time.Hour%o.Period != 0 {
		return nil, bad("Period", "whole minutes dividing an hour", int(o.Period/time.Minute), fmt.Sprintf("period %v must be a whole number of minutes that divides an hour", o.Period))
	}
	switch {
	case o.maxBlocks == 0 && o.WriteThrough:
		o.maxBlocks = defaultWriteThroughMaxBlocks
	case o.maxBlocks == 0:
		o.maxBlocks = defaultMaxBlocks
	case o.maxBlocks < 0 || o.maxBlocks > maxBlocks:
		return nil, bad("maxBlocks", "1..50000", o.maxBlocks, "block count out of range")
	}
	switch {
	case o.MaxBlobBytes == 0:
		o.MaxBlobBytes = defaultMaxBlobBytes
	case o.MaxBlobBytes < 0:
		return nil, bad("MaxBlobBytes", "> 0", int(o.MaxBlobBytes), "negative blob size")
	}
	w := &Writer{c: c, cname: container, source: source, o: o, log: logs.Or(acct.Logger()), seqHint: map[time.Time]int{}}
	rand.Read(w.id[:])
	if o.FlushInterval > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		w.bgStop, w.bgDone, w.bgCancel = make(chan struct{}), make(chan struct{}), cancel
		go w.background(ctx)
	}
	return w, nil
}

// Source returns the source the Writer writes ("" for a zero Writer).
func (w *Writer) Source() string {
	if w == nil {
		return ""
	}
	return w.source
}

// ContainerName returns the name of the container the Writer writes to.
func (w *Writer) ContainerName() string {
	if w == nil {
		return ""
	}
	return w.cname
}

// check refuses a nil or zero Writer.
func (w *Writer) check(op string) error {
	if w == nil || w.c == nil {
		return &tablekit.ValidationError{Op: op, Detail: "the Writer is nil or zero: use logtail.OpenWriter", Err: tablekit.ErrInvalidInput}
	}
	return nil
}

// logger returns the Writer's logger: its Account's (nil: slog.Default()
// at the time of logging).
func (w *Writer) logger() *slog.Logger { return w.log }

// background flushes due buffers every FlushInterval until Close.
func (w *Writer) background(ctx context.Context) {
	defer close(w.bgDone)
	t := time.NewTicker(w.o.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-w.bgStop:
			return
		case <-t.C:
			w.mu.Lock()
			flushed, err := w.flushDueLocked(ctx, reasonBackground)
			if flushed && err == nil {
				w.stats.BackgroundFlush++
			}
			buffered, size := w.bufferedLocked()
			w.mu.Unlock()
			if err != nil && ctx.Err() == nil { // not Close cutting it off
				w.logger().LogAttrs(ctx, slog.LevelWarn, "logtail: background flush failed; the records stay buffered for the next flush",
					slog.String("container", w.cname), slog.String("source", w.source),
					slog.Int("buffered", buffered), slog.Int("buffered_bytes", size), slog.Any("error", err))
			}
		}
	}
}

// Write writes a record of msg timed now by the Writer's Clock. See
// WriteRecord.
func (w *Writer) Write(ctx context.Context, msg string) error {
	if err := w.check("logtail.Writer.Write"); err != nil {
		return err
	}
	return w.writeRecord(ctx, "logtail.Writer.Write", Record{Time: timing.Now(w.o.Clock), Message: msg})
}

// WriteRecord accepts r (a zero r.Time means now, by the Clock). It returns
// nil once the record is accepted: buffered, to be written by a later
// flush, or, in write-through mode, committed to storage.
//
// When the buffer has no room for r, or r belongs to another period than
// the buffered records, or they are FlushAge old, the buffer is flushed
// first; if another flush is under way, WriteRecord waits for it, as long
// as ctx allows. When that flush fails, or ctx ends first, WriteRecord
// returns the error and does not accept r; the buffered records stay
// buffered. In write-through mode a failed write is not accepted either.
// When a commit fails, the Writer reads the blob's block list to see
// whether a try of it was applied all the same (its answer lost) and then
// reports success; so a write-through error means the record was not
// stored, unless it matches tablekit.ErrOutcomeUnknown (that read failed
// too) or is a context error (ctx or FlushTimeout cut the commit off):
// then the record may or may not be stored, at most once.
//
// Cost: buffered, nothing, unless the buffer is flushed first (see Flush);
// write-through, 2 transactions (Put Block, Put Block List). A commit that
// fails adds a Get Block List to settle it; a new blob whose name another
// writer took adds 4 (the refused Put Block List, that Get Block List, a
// List Blobs, and the Put Block again under the next name). A record
// with a time outside years 1..9999 or an encoding over maxRecordBytes is
// refused with a *tablekit.ValidationError whose Op is
// "logtail.Writer.WriteRecord" ("logtail.Writer.Write" from Write).
func (w *Writer) WriteRecord(ctx context.Context, r Record) error {
	if err := w.check("logtail.Writer.WriteRecord"); err != nil {
		return err
	}
	return w.writeRecord(ctx, "logtail.Writer.WriteRecord", r)
}

func (w *Writer) writeRecord(ctx context.Context, op string, r Record) error {
	if r.Time.IsZero() {
		r.Time = timing.Now(w.o.Clock)
	}
	r.Time = r.Time.UTC()
	p := r.Time.Truncate(w.o.Period)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.o.WriteThrough {
		line, err := w.encode(op, nil, r)
		if err != nil {
			return err
		}
		return w.writeThroughLocked(ctx, line, r.Time, p)
	}
	for {
		if w.closed {
			return ErrClosed
		}
		n0 := len(w.cur.data)
		line, err := w.encode(op, w.cur.data, r) // in place, then decide
		if err != nil {
			return err
		}
		w.cur.data = line[:n0]
		reason := -1
		switch {
		case w.cur.n > 0 && !p.Equal(w.cur.period):
			reason = reasonPeriod
		case w.cur.n > 0 && len(line) > w.o.FlushBytes:
			reason = reasonSize
		case !w.flushing && w.dueLocked():
			reason = reasonAge // a flush under way will be followed by another
		}
		if reason < 0 {
			w.cur.data = line
			w.cur.note(r.Time, p, timing.Now(w.o.Clock))
			w.accepted++
			w.stats.Accepted++
			return nil
		}
		if err := w.flushStepLocked(ctx, reason); err != nil {
			return err
		}
	}
}

// encode appends r's encoding to dst, refusing a record over
// maxRecordBytes; on error dst is returned unchanged.
func (w *Writer) encode(op string, dst []byte, r Record) ([]byte, error) {
	n0 := len(dst)
	line, err := appendRecord(op, dst, r)
	if err != nil {
		return dst, err
	}
	if size := len(line) - n0; size > maxRecordBytes {
		return dst, &tablekit.ValidationError{Op: op, Entity: w.cname, Property: "Message", Limit: "4 MiB encoded", Size: size, Detail: "record too large", Err: tablekit.ErrTooLarge}
	}
	return line, nil
}

// writeThroughLocked writes one record as a block of its own, after every
// earlier one.
func (w *Writer) writeThroughLocked(ctx context.Context, line []byte, t, p time.Time) error {
	for w.closed || w.flushing || w.head != nil || w.cur.n > 0 {
		if w.closed {
			return ErrClosed
		}
		if err := w.flushStepLocked(ctx, reasonExplicit); err != nil {
			return err
		}
	}
	w.cur.add(line, t, p, timing.Now(w.o.Clock))
	w.accepted++
	w.stats.Accepted++
	if err := w.flushStepLocked(ctx, reasonWriteThrough); err != nil {
		// not accepted: drop it again (the block held only it)
		if w.head != nil && !w.flushing {
			w.head = nil
			w.done++
			w.stats.Accepted--
			// Its commit may have been applied all the same (a lost
			// answer): the blob's block list and ETag would then differ
			// from those the Writer knows, and the next record's commit
			// would fail on them. Start the next record in a new blob.
			if w.blob != nil {
				w.seqHint[w.blob.period] = w.blob.seq + 1
				w.blob = nil
			}
		}
		return err
	}
	return nil
}

// dueLocked reports whether the oldest buffered record is FlushAge old.
func (w *Writer) dueLocked() bool {
	if w.o.FlushAge <= 0 {
		return false
	}
	oldest := &w.cur
	if w.head != nil {
		oldest = w.head
	}
	return oldest.n > 0 && timing.Now(w.o.Clock).Sub(oldest.since) >= w.o.FlushAge
}

// flushStepLocked makes one step towards an empty buffer: when another
// goroutine is flushing, it waits for that flush to end (or ctx);
// otherwise it flushes the sealed block, sealing the open one first when
// there is none. It is called, and returns, with w.mu held, and releases
// it while it waits or writes.
func (w *Writer) flushStepLocked(ctx context.Context, reason int) error {
	if w.flushing {
		idle := w.idle
		w.mu.Unlock()
		defer w.mu.Lock()
		select {
		case <-idle:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if w.head == nil {
		if w.cur.n == 0 {
			return nil
		}
		b := w.cur
		b.reason = reason
		b.id = w.newBlockID()
		w.head, w.cur = &b, batch{data: w.spare}
		w.spare = nil
	}
	b := w.head
	w.flushing, w.idle = true, make(chan struct{})
	w.mu.Unlock()
	fctx, cancel := context.WithTimeout(ctx, w.o.FlushTimeout)
	res, err := w.commit(fctx, b)
	if err != nil && ctx.Err() == nil && errors.Is(fctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("logtail: flush timed out after %v (FlushTimeout): %w", w.o.FlushTimeout, err)
	}
	cancel()
	w.mu.Lock()
	w.flushing = false
	close(w.idle)
	w.stats.Blobs += res.blobs
	w.stats.NameConflicts += res.nameConflicts
	if err != nil {
		w.stats.FailedFlushes++
		w.stats.LastFlushError = err
		return err
	}
	w.head = nil
	w.spare = b.data[:0]
	w.done += uint64(b.n)
	w.stats.Flushes++
	switch b.reason {
	case reasonSize:
		w.stats.SizeFlushes++
	case reasonAge, reasonBackground:
		w.stats.AgeFlushes++
	}
	w.stats.Written += int64(b.n)
	return nil
}

// flushAllLocked flushes until every record accepted before the call is
// written.
func (w *Writer) flushAllLocked(ctx context.Context, reason int) error {
	target := w.accepted
	for w.done < target {
		if err := w.flushStepLocked(ctx, reason); err != nil {
			return err
		}
	}
	return nil
}

// flushDueLocked flushes everything buffered if the oldest record is
// FlushAge old and no flush is under way, and reports whether it did.
func (w *Writer) flushDueLocked(ctx context.Context, reason int) (bool, error) {
	if w.flushing || !w.dueLocked() {
		return false, nil
	}
	return true, w.flushAllLocked(ctx, reason)
}

// FlushDue flushes the buffer if its oldest record is FlushAge old (by the
// Clock) and no flush is under way. Call it from a timer of your own, or
// set FlushInterval.
func (w *Writer) FlushDue(ctx context.Context) error {
	if err := w.check("logtail.Writer.FlushDue"); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.flushDueLocked(ctx, reasonAge)
	return err
}

// Flush writes every record accepted before the call to storage, waiting
// for a flush under way first. On error the records stay buffered and a
// later Flush, Write or Close tries again.
//
// Cost: 2 transactions per block written (Put Block, Put Block List):
// one block for the buffer, one more when a flush under way or a period
// boundary split it; nothing when nothing is buffered.
func (w *Writer) Flush(ctx context.Context) error {
	if err := w.check("logtail.Writer.Flush"); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushAllLocked(ctx, reasonExplicit)
}

// Close stops the FlushInterval goroutine, flushes (costing what Flush
// costs), and makes later writes fail with ErrClosed. If the final flush
// fails, Close returns its error and the records stay buffered: call Close
// (or Flush) again to retry.
func (w *Writer) Close(ctx context.Context) error {
	if err := w.check("logtail.Writer.Close"); err != nil {
		return err
	}
	if w.bgStop != nil {
		w.stopOnce.Do(func() { close(w.bgStop) })
		select {
		case <-w.bgDone:
		case <-ctx.Done():
			w.bgCancel() // abort a flush in progress: its records stay buffered
			<-w.bgDone
		}
		w.bgCancel()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return w.flushAllLocked(ctx, reasonExplicit)
}

// Stats returns the Writer's counts so far. It does not wait for a flush
// under way.
func (w *Writer) Stats() WriterStats {
	if w == nil {
		return WriterStats{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	s.Buffered, s.BufferedBytes = w.bufferedLocked()
	return s
}

// bufferedLocked returns the number of records accepted but not yet
// committed, and their encoded size.
func (w *Writer) bufferedLocked() (n, size int) {
	n, size = w.cur.n, len(w.cur.data)
	if w.head != nil {
		n += w.head.n
		size += len(w.head.data)
	}
	return n, size
}
