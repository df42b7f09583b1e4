package logtail

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
)

// Metadata names of a log blob. The service may return them with other
// capitalisation (e.g. "Firstrecord"); compare case-insensitively.
const (
	// MetaFirst is the earliest record time in the blob (record time format).
	MetaFirst = "firstrecord"
	// MetaLast is the latest record time in the blob.
	MetaLast = "lastrecord"
	// MetaRecords is the number of records in the blob.
	MetaRecords = "records"
)

// Writer defaults and limits.
const (
	// DefaultFlushBytes is the default WriterOptions.FlushBytes.
	DefaultFlushBytes = 1 << 20
	// DefaultFlushAge is the default WriterOptions.FlushAge.
	DefaultFlushAge = time.Minute
	// DefaultPeriod is the default WriterOptions.Period.
	DefaultPeriod = time.Hour
	// DefaultMaxBlocks is the default WriterOptions.MaxBlocks.
	DefaultMaxBlocks = 1000
	// DefaultWriteThroughMaxBlocks is the default MaxBlocks in write-through
	// mode, where every record is a block: the block list every commit
	// sends stays short.
	DefaultWriteThroughMaxBlocks = 200
	// DefaultMaxBlobBytes is the default WriterOptions.MaxBlobBytes.
	DefaultMaxBlobBytes = 128 << 20
	// MaxFlushBytes bounds FlushBytes, far below the service's block size
	// limit.
	MaxFlushBytes = 64 << 20
	// MaxBlocks is the service's limit of committed blocks per blob.
	MaxBlocks = 50000
)

// ErrClosed is returned by a Writer's Write methods after Close.
var ErrClosed = errors.New("logtail: writer closed")

// WriterOptions configures a [Writer]. A nil *WriterOptions means defaults.
type WriterOptions struct {
	// FlushBytes flushes the buffer before it would grow past this many
	// bytes of encoded records (default 1 MiB, at most MaxFlushBytes).
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
	// WriteThrough writes every record to storage before Write returns
	// (two requests per record) instead of buffering. See the package
	// documentation for the trade-off.
	WriteThrough bool
	// Period is the span of time one blob name covers, the hhmm folder:
	// a whole number of minutes that divides an hour (default 1 hour, as
	// Storage Analytics does). A blob holds only records of its period.
	Period time.Duration
	// MaxBlocks starts the next blob (NNNNNN+1) once a blob has this many
	// blocks (one block per flush; default 1000, or 200 in write-through
	// mode; at most 50,000). Each flush sends the blob's whole block list,
	// so a long list makes every flush slower.
	MaxBlocks int
	// MaxBlobBytes starts the next blob once a blob holds this many bytes
	// (default 128 MiB).
	MaxBlobBytes int64
	// Clock gives record times for Write and the age of the buffer
	// (default time.Now). Tests inject a simulated clock.
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
	seq         int
	ids         []string
	etag        azcore.ETag
	size        int64
	records     int64
	first, last time.Time
}

// Writer writes the log records of one source to blobs named
// "<source>/YYYY/MM/DD/hhmm/NNNNNN.log". It is safe for concurrent use;
// any number of Writers, in any number of processes, may write the same
// source: each creates its own blobs (create-only, taking the next free
// sequence number when a name is taken) and only ever appends to them.
type Writer struct {
	c      *container.Client
	source string
	o      WriterOptions

	mu       sync.Mutex
	id       [8]byte // random identity: prefix of every block id
	blockSeq uint64
	buf      []byte
	nbuf     int       // records in buf
	since    time.Time // Clock time the oldest buffered record was accepted
	first    time.Time // earliest record time in buf
	last     time.Time // latest record time in buf
	period   time.Time // period of buf and blob; zero before the first record
	blob     *blobState
	seqHint  map[time.Time]int // next sequence number to try, per period
	closed   bool
	stats    WriterStats

	// the FlushInterval goroutine; set by NewWriter, nil without one
	bgStop   chan struct{}
	bgDone   chan struct{}
	bgCancel context.CancelFunc
	stopOnce sync.Once
}

// NewWriter returns a Writer of source's records into the container c,
// which must exist. source names the log ("web", "billing/eu"): segments of
// letters, digits, '-', '_' and '.' separated by '/', none made only of
// digits.
func NewWriter(c *container.Client, source string, opts *WriterOptions) (*Writer, error) {
	if c == nil {
		return nil, &tablekit.ValidationError{Detail: "logtail: nil container client", Err: tablekit.ErrInvalidInput}
	}
	if err := checkSource(source); err != nil {
		return nil, err
	}
	var o WriterOptions
	if opts != nil {
		o = *opts
	}
	bad := func(prop, limit string, size int, detail string) error {
		return &tablekit.ValidationError{Property: prop, Limit: limit, Size: size, Detail: "logtail: " + detail, Err: tablekit.ErrInvalidInput}
	}
	switch {
	case o.FlushBytes == 0:
		o.FlushBytes = DefaultFlushBytes
	case o.FlushBytes < 0 || o.FlushBytes > MaxFlushBytes:
		return nil, bad("FlushBytes", "1..64 MiB", o.FlushBytes, "flush size out of range")
	}
	if o.FlushAge == 0 {
		o.FlushAge = DefaultFlushAge
	}
	if o.FlushInterval < 0 {
		return nil, bad("FlushInterval", ">= 0", int(o.FlushInterval), "negative flush interval")
	}
	if o.Period == 0 {
		o.Period = DefaultPeriod
	}
	if o.Period < time.Minute || o.Period > time.Hour || o.Period%time.Minute != 0 || time.Hour%o.Period != 0 {
		return nil, bad("Period", "whole minutes dividing an hour", int(o.Period/time.Minute), fmt.Sprintf("period %v must be a whole number of minutes that divides an hour", o.Period))
	}
	switch {
	case o.MaxBlocks == 0 && o.WriteThrough:
		o.MaxBlocks = DefaultWriteThroughMaxBlocks
	case o.MaxBlocks == 0:
		o.MaxBlocks = DefaultMaxBlocks
	case o.MaxBlocks < 0 || o.MaxBlocks > MaxBlocks:
		return nil, bad("MaxBlocks", "1..50000", o.MaxBlocks, "block count out of range")
	}
	switch {
	case o.MaxBlobBytes == 0:
		o.MaxBlobBytes = DefaultMaxBlobBytes
	case o.MaxBlobBytes < 0:
		return nil, bad("MaxBlobBytes", "> 0", int(o.MaxBlobBytes), "negative blob size")
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	w := &Writer{c: c, source: source, o: o, seqHint: map[time.Time]int{}}
	rand.Read(w.id[:])
	if o.FlushInterval > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		w.bgStop, w.bgDone, w.bgCancel = make(chan struct{}), make(chan struct{}), cancel
		go w.background(ctx)
	}
	return w, nil
}

// Source returns the source the Writer writes.
func (w *Writer) Source() string { return w.source }

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
			if w.dueLocked() {
				if w.flushLocked(ctx, reasonBackground) == nil {
					w.stats.BackgroundFlush++
				}
			}
			w.mu.Unlock()
		}
	}
}

// Write writes a record of msg timed now by the Writer's Clock. See
// WriteRecord.
func (w *Writer) Write(ctx context.Context, msg string) error {
	return w.WriteRecord(ctx, Record{Time: w.o.Clock(), Message: msg})
}

// WriteRecord accepts r (a zero r.Time means now, by the Clock). It returns
// nil once the record is accepted: buffered, to be written by a later
// flush, or, in write-through mode, committed to storage. When a flush is
// due first (the buffer is full or old, or r belongs to another period
// than the buffered records) and fails, WriteRecord returns that error and
// does not accept r; the buffered records stay buffered.
func (w *Writer) WriteRecord(ctx context.Context, r Record) error {
	if r.Time.IsZero() {
		r.Time = w.o.Clock()
	}
	r.Time = r.Time.UTC()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	n0 := len(w.buf)
	line, err := AppendRecord(w.buf, r) // encode in place, then decide
	if err != nil {
		return err
	}
	size := len(line) - n0
	w.buf = line[:n0]
	if size > MaxRecordBytes {
		return &tablekit.ValidationError{Property: "Message", Limit: "4 MiB encoded", Size: size, Detail: "logtail: record too large", Err: tablekit.ErrTooLarge}
	}
	p := r.Time.Truncate(w.o.Period)
	if n0 > 0 {
		reason := -1
		switch {
		case !p.Equal(w.period):
			reason = reasonPeriod
		case n0+size > w.o.FlushBytes:
			reason = reasonSize
		case w.dueLocked():
			reason = reasonAge
		}
		if reason >= 0 {
			if err := w.flushLocked(ctx, reason); err != nil {
				return err
			}
			// re-encode: the flush emptied the buffer
			line, _ = AppendRecord(w.buf[:0], r)
		}
	}
	if !p.Equal(w.period) {
		if w.blob != nil {
			w.seqHint[w.period] = w.blob.seq + 1
		}
		w.period, w.blob = p, nil
	}
	w.buf = line
	if w.nbuf == 0 {
		w.since, w.first, w.last = w.o.Clock(), r.Time, r.Time
	} else {
		if r.Time.Before(w.first) {
			w.first = r.Time
		}
		if r.Time.After(w.last) {
			w.last = r.Time
		}
	}
	w.nbuf++
	w.stats.Accepted++
	if w.o.WriteThrough {
		if err := w.flushLocked(ctx, reasonWriteThrough); err != nil {
			// not accepted: drop it again (the buffer held only it)
			w.buf, w.nbuf = w.buf[:0], 0
			w.stats.Accepted--
			return err
		}
	}
	return nil
}

// dueLocked reports whether the buffer is older than FlushAge.
func (w *Writer) dueLocked() bool {
	return w.nbuf > 0 && w.o.FlushAge > 0 && w.o.Clock().Sub(w.since) >= w.o.FlushAge
}

// FlushDue flushes the buffer if its oldest record is FlushAge old (by the
// Clock). Call it from a timer of your own, or set FlushInterval.
func (w *Writer) FlushDue(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.dueLocked() {
		return nil
	}
	return w.flushLocked(ctx, reasonAge)
}

// Flush writes every buffered record to storage. On error the records
// stay buffered and a later Flush, Write or Close tries again.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked(ctx, reasonExplicit)
}

// Close stops the FlushInterval goroutine, flushes, and makes later writes
// fail with ErrClosed. If the final flush fails, Close returns its error
// and the records stay buffered: call Close (or Flush) again to retry.
func (w *Writer) Close(ctx context.Context) error {
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
	return w.flushLocked(ctx, reasonExplicit)
}

// Stats returns the Writer's counts so far.
func (w *Writer) Stats() WriterStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	s.Buffered, s.BufferedBytes = w.nbuf, len(w.buf)
	return s
}

// newBlockID returns a block id unique to this writer: its random identity
// and a counter, 16 bytes in base64. Two writers staging blocks on the
// same name (before one of them wins the create) never overwrite each
// other's blocks, and all ids have the length the service requires.
func (w *Writer) newBlockID() string {
	var b [16]byte
	copy(b[:8], w.id[:])
	w.blockSeq++
	binary.BigEndian.PutUint64(b[8:], w.blockSeq)
	return base64.StdEncoding.EncodeToString(b[:])
}

// flushLocked writes the buffer as one block of the current blob, or of a
// new blob when there is none, and commits the blob's block list.
func (w *Writer) flushLocked(ctx context.Context, reason int) error {
	if w.nbuf == 0 {
		return nil
	}
	err := w.commitLocked(ctx)
	if err != nil {
		w.stats.FailedFlushes++
		w.stats.LastFlushError = err
		return err
	}
	w.stats.Flushes++
	switch reason {
	case reasonSize:
		w.stats.SizeFlushes++
	case reasonAge, reasonBackground:
		w.stats.AgeFlushes++
	}
	w.stats.Written += int64(w.nbuf)
	w.buf, w.nbuf = w.buf[:0], 0
	if b := w.blob; len(b.ids) >= w.o.MaxBlocks || b.size >= w.o.MaxBlobBytes {
		w.seqHint[w.period] = b.seq + 1
		w.blob = nil
	}
	if len(w.seqHint) > 64 {
		for k := range w.seqHint {
			if !k.Equal(w.period) {
				delete(w.seqHint, k)
			}
		}
	}
	return nil
}

func (w *Writer) metadata(b *blobState) map[string]*string {
	return map[string]*string{
		MetaFirst:   to.Ptr(formatTime(b.first)),
		MetaLast:    to.Ptr(formatTime(b.last)),
		MetaRecords: to.Ptr(strconv.FormatInt(b.records, 10)),
	}
}

var textHeaders = &blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain; charset=utf-8")}

func (w *Writer) commitLocked(ctx context.Context) error {
	id := w.newBlockID()
	data := w.buf
	if w.blob == nil {
		return w.createLocked(ctx, id, data)
	}
	b := w.blob
	next := *b
	next.ids = append(b.ids[:len(b.ids):len(b.ids)], id)
	next.size += int64(len(data))
	next.records += int64(w.nbuf)
	if w.first.Before(next.first) {
		next.first = w.first
	}
	if w.last.After(next.last) {
		next.last = w.last
	}
	bb := w.c.NewBlockBlobClient(b.name)
	if _, err := bb.StageBlock(ctx, id, streaming.NopCloser(bytes.NewReader(data)), nil); err != nil {
		return tablekit.WrapError("PutBlock "+b.name, err)
	}
	resp, err := bb.CommitBlockList(ctx, next.ids, &blockblob.CommitBlockListOptions{
		Metadata:         w.metadata(&next),
		HTTPHeaders:      textHeaders,
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &b.etag}},
	})
	if err != nil {
		err = tablekit.WrapError("PutBlockList "+b.name, err)
		if !errors.Is(err, tablekit.ErrPreconditionFailed) && !errors.Is(err, tablekit.ErrNotFound) {
			return err
		}
		// Our own commit, retried by the SDK after the service had applied
		// it? Then the committed list is exactly ours.
		etag, ok := w.confirm(ctx, bb, next.ids)
		if !ok {
			// Someone else changed or deleted the blob: leave it alone
			// and write these records to a new blob on the next try.
			w.seqHint[w.period] = b.seq + 1
			w.blob = nil
			return err
		}
		next.etag = etag
	} else {
		next.etag = *resp.ETag
	}
	w.blob = &next
	return nil
}

// createLocked writes data as the first block of a new blob of the current
// period: create-only (If-None-Match: *), so it never overwrites a blob of
// another writer; when the name is taken it moves past the highest
// sequence number in use.
func (w *Writer) createLocked(ctx context.Context, id string, data []byte) error {
	seq := w.seqHint[w.period]
	listed := false
	for {
		if seq > MaxSeq {
			return &tablekit.ValidationError{Property: "seq", Limit: "999999", Size: seq, Detail: "logtail: no free blob sequence number left in period " + w.period.Format(time.RFC3339), Err: tablekit.ErrTooLarge}
		}
		name := blobName(w.source, w.period, seq)
		b := &blobState{name: name, seq: seq, ids: []string{id}, size: int64(len(data)), records: int64(w.nbuf), first: w.first, last: w.last}
		bb := w.c.NewBlockBlobClient(name)
		if _, err := bb.StageBlock(ctx, id, streaming.NopCloser(bytes.NewReader(data)), nil); err != nil {
			return tablekit.WrapError("PutBlock "+name, err)
		}
		resp, err := bb.CommitBlockList(ctx, b.ids, &blockblob.CommitBlockListOptions{
			Metadata:         w.metadata(b),
			HTTPHeaders:      textHeaders,
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}},
		})
		if err == nil {
			b.etag = *resp.ETag
			w.blob = b
			w.stats.Blobs++
			return nil
		}
		err = tablekit.WrapError("PutBlockList "+name, err)
		if !errors.Is(err, tablekit.ErrAlreadyExists) && !errors.Is(err, tablekit.ErrPreconditionFailed) {
			return err
		}
		if etag, ok := w.confirm(ctx, bb, b.ids); ok { // our own retried create
			b.etag = etag
			w.blob = b
			w.stats.Blobs++
			return nil
		}
		w.stats.NameConflicts++
		if !listed {
			listed = true
			top, lerr := w.highestSeq(ctx, w.period)
			if lerr != nil {
				return lerr
			}
			seq = max(seq, top) + 1
		} else {
			seq++
		}
		w.seqHint[w.period] = seq
	}
}

// confirm reports whether the blob's committed block list is exactly ids,
// and its ETag.
func (w *Writer) confirm(ctx context.Context, bb *blockblob.Client, ids []string) (azcore.ETag, bool) {
	resp, err := bb.GetBlockList(ctx, blockblob.BlockListTypeCommitted, nil)
	if err != nil || resp.ETag == nil || len(resp.BlockList.CommittedBlocks) != len(ids) {
		return "", false
	}
	for i, blk := range resp.BlockList.CommittedBlocks {
		if blk == nil || blk.Name == nil || *blk.Name != ids[i] {
			return "", false
		}
	}
	return *resp.ETag, true
}

// highestSeq returns the highest sequence number of the source's blobs of
// the period starting at p, or -1 when there are none.
func (w *Writer) highestSeq(ctx context.Context, p time.Time) (int, error) {
	prefix := blobName(w.source, p, 0)
	prefix = prefix[:len(prefix)-len("000000.log")]
	top := -1
	pager := w.c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return 0, tablekit.WrapError("ListBlobs "+prefix, err)
		}
		for _, it := range page.Segment.BlobItems {
			if it.Name == nil {
				continue
			}
			if _, _, seq, err := ParseBlobName(*it.Name); err == nil && seq > top {
				top = seq
			}
		}
	}
	return top, nil
}
