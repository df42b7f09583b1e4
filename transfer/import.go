package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablekit/tablekit"
)

// Mode says how imported or copied entities are written.
type Mode uint8

const (
	// Insert adds each entity; one that exists already fails alone (and is
	// reported) and is left as it is.
	Insert Mode = iota
	// UpsertMerge inserts each entity or merges its properties into the
	// stored one.
	UpsertMerge
	// UpsertReplace inserts each entity or replaces the stored one.
	UpsertReplace
)

// String returns "insert", "merge" or "replace".
func (m Mode) String() string {
	switch m {
	case Insert:
		return "insert"
	case UpsertMerge:
		return "merge"
	case UpsertReplace:
		return "replace"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode parses "insert", "merge" or "replace".
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{Insert, UpsertMerge, UpsertReplace} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, validation("transfer.ParseMode", fmt.Sprintf("unknown mode %q (want insert, merge or replace)", s))
}

func (m Mode) action(e tablekit.Entity) tablekit.Action[tablekit.Entity] {
	switch m {
	case UpsertMerge:
		return tablekit.UpsertAction(e, tablekit.Merge)
	case UpsertReplace:
		return tablekit.UpsertAction(e, tablekit.Replace)
	}
	return tablekit.InsertAction(e)
}

// ErrFailures is matched by the error of an import or copy in which some
// entities failed; the result lists them.
var ErrFailures = errors.New("transfer: some entities failed")

// ImportOptions configures [Import]. A nil *ImportOptions means defaults.
type ImportOptions struct {
	// Mode says how entities are written (default Insert).
	Mode Mode
	// Bulk configures the BulkWriter that writes them (nil: defaults).
	Bulk *tablekit.BulkOptions
	// BatchSize is the most entities handed to the BulkWriter at once
	// (default 20,000); the next batch is read while one is written, so
	// memory holds about two batches.
	BatchSize int
	// MaxFailures stops the import once more than this many entities
	// failed (0: never stop).
	MaxFailures int
	// MaxReported bounds the failures listed in the result (default 1000);
	// all are counted.
	MaxReported int
	// TotalBytes, when known (the file's size), lets Progress estimate the
	// time remaining.
	TotalBytes int64
	// Meter, OnProgress and ProgressEvery are as in [JobOptions].
	Meter         *tablekit.Meter
	OnProgress    func(Progress)
	ProgressEvery time.Duration
}

// ImportResult reports an import.
type ImportResult struct {
	// Header is the export's header.
	Header Header
	// Read counts the entity lines read; Written those applied; Failed
	// those that were not (bad lines included).
	Read, Written, Failed int64
	// Failures lists failed lines, in line order, up to MaxReported. An
	// error matching tablekit.ErrOutcomeUnknown or a context error means
	// the entity may have been written.
	Failures []*LineError
	// Requests counts the transactions the BulkWriter sent; Transactions
	// all storage transactions seen by the Meter (or Requests without one).
	Requests, Transactions int64
	// Complete is true when the stream was read to its trailer.
	Complete bool
	// Elapsed is the time the import took.
	Elapsed time.Duration
}

// importItem is one entity and the line it came from.
type importItem struct {
	line int
	e    tablekit.Entity
}

// Import reads an export from r and writes its entities to t, in batches
// through a BulkWriter, as opts.Mode says. Lines that cannot be read and
// entities the service refuses are reported per line in the result and do
// not stop the import (see MaxFailures); then the error matches
// [ErrFailures]. A stream without its trailer is imported as far as it
// goes and the error matches [ErrTruncated].
//
// Entities of one partition are kept together across batches, so that the
// BulkWriter sends full transactions of 100; an entity that appears twice
// is written in the order of the lines.
func Import(ctx context.Context, t *tablekit.Table[tablekit.Entity], r io.Reader, opts *ImportOptions) (ImportResult, error) {
	const op = "transfer.Import"
	if opts == nil {
		opts = &ImportOptions{}
	}
	o := *opts
	switch {
	case t == nil:
		return ImportResult{}, validation(op, "nil table")
	case r == nil:
		return ImportResult{}, validation(op, "nil io.Reader")
	case o.Mode > UpsertReplace:
		return ImportResult{}, validation(op, fmt.Sprintf("unknown mode %d", o.Mode))
	case o.BatchSize < 0 || o.MaxFailures < 0 || o.MaxReported < 0:
		return ImportResult{}, validation(op, "BatchSize, MaxFailures and MaxReported must not be negative")
	}
	if o.BatchSize == 0 {
		o.BatchSize = 20_000
	}
	if o.MaxReported == 0 {
		o.MaxReported = 1000
	}
	rd, err := NewReader(r)
	if err != nil {
		return ImportResult{}, err
	}
	im := &importer{t: t, o: o, started: time.Now(), res: ImportResult{Header: rd.Header()}}
	if o.Meter != nil {
		im.meterStart = o.Meter.Snapshot()
	}
	rep := startReporter(ctx, o.OnProgress, o.ProgressEvery, im.progress)
	err = im.run(ctx, rd)
	rep.finish()
	im.mu.Lock()
	defer im.mu.Unlock()
	res := im.res
	slices.SortStableFunc(res.Failures, func(a, b *LineError) int { return a.Line - b.Line })
	res.Elapsed = time.Since(im.started)
	res.Transactions = im.transactions()
	if err == nil && res.Failed > 0 {
		err = fmt.Errorf("%w: %d of %d entities failed; first: %v", ErrFailures, res.Failed, res.Read, res.Failures[0])
	}
	return res, err
}

type importer struct {
	t          *tablekit.Table[tablekit.Entity]
	o          ImportOptions
	started    time.Time
	meterStart tablekit.MeterSnapshot
	bytes      atomic.Int64

	mu  sync.Mutex
	res ImportResult
}

func (im *importer) transactions() int64 {
	if im.o.Meter != nil {
		return im.o.Meter.Snapshot().Sub(im.meterStart).Service(tablekit.ServiceTable)
	}
	return im.res.Requests
}

func (im *importer) progress() Progress {
	im.mu.Lock()
	p := Progress{Op: "import", Read: im.res.Read, Written: im.res.Written, Failed: im.res.Failed, Bytes: im.bytes.Load(), Elapsed: time.Since(im.started)}
	p.Transactions = im.transactions()
	im.mu.Unlock()
	p.rate(p.Written+p.Failed, p.Written+p.Failed, -1)
	if im.o.TotalBytes > 0 && p.Bytes > 0 && p.Bytes <= im.o.TotalBytes {
		// Estimate by bytes: entities so far scaled to the whole file.
		p.Total = int64(float64(p.Read) * float64(im.o.TotalBytes) / float64(p.Bytes))
		if s := p.Elapsed.Seconds(); s > 0 {
			p.Remaining = time.Duration(float64(im.o.TotalBytes-p.Bytes) / (float64(p.Bytes) / s) * float64(time.Second))
		}
	}
	return p
}

// fail records a failed line. The caller holds mu.
func (im *importer) fail(le *LineError) {
	im.res.Failed++
	if len(im.res.Failures) < im.o.MaxReported {
		im.res.Failures = append(im.res.Failures, le)
	}
}

func (im *importer) tooManyFailures() bool {
	return im.o.MaxFailures > 0 && im.res.Failed > int64(im.o.MaxFailures)
}

// run reads batches on one goroutine and writes them on this one.
func (im *importer) run(ctx context.Context, rd *Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan []importItem, 1)
	var readErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(batches)
		readErr = im.read(ctx, rd, batches)
	})
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
			cancel()
		}
	}
	wg.Wait()
	if writeErr == nil && len(carry) > 0 {
		writeErr = im.write(ctx, carry)
	}
	if writeErr != nil {
		return writeErr
	}
	im.mu.Lock()
	im.res.Complete = rd.Trailer() != nil
	im.mu.Unlock()
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
		im.bytes.Store(rd.Bytes())
		var le *LineError
		switch {
		case err == nil:
			im.mu.Lock()
			im.res.Read++
			im.mu.Unlock()
			batch = append(batch, importItem{line: rd.Line(), e: e})
			if len(batch) == im.o.BatchSize && !send() {
				return ctx.Err()
			}
			continue
		case errors.As(err, &le):
			im.mu.Lock()
			im.res.Read++
			im.fail(le)
			stop := im.tooManyFailures()
			im.mu.Unlock()
			if stop {
				return fmt.Errorf("%w: stopped after %d failures", ErrFailures, im.o.MaxFailures)
			}
			continue
		}
		if len(batch) > 0 {
			if !send() {
				return ctx.Err()
			}
		}
		// The final empty batch flushes the carry.
		if !send() {
			return ctx.Err()
		}
		if err == io.EOF {
			return nil
		}
		return err
	}
}

// splitCarry returns the items to write now and those to keep: for each
// partition, its last len%100 items, so that every partition goes out in
// full transactions until its end. Order within a partition is kept.
func splitCarry(items []importItem) (now, carry []importItem) {
	count := map[string]int{}
	for i := range items {
		count[items[i].e.PartitionKey]++
	}
	keep := map[string]int{}
	for pk, n := range count {
		if r := n % tablekit.MaxTransactionActions; r != 0 {
			keep[pk] = r
		}
	}
	seen := map[string]int{}
	now = make([]importItem, 0, len(items))
	for i := range items {
		pk := items[i].e.PartitionKey
		seen[pk]++
		if count[pk]-seen[pk] < keep[pk] {
			carry = append(carry, items[i])
		} else {
			now = append(now, items[i])
		}
	}
	return now, carry
}

// write applies items through one BulkWriter call.
func (im *importer) write(ctx context.Context, items []importItem) error {
	if len(items) == 0 {
		return nil
	}
	actions := make([]tablekit.Action[tablekit.Entity], len(items))
	for i := range items {
		actions[i] = im.o.Mode.action(items[i].e)
	}
	res, err := im.t.BulkWriter(im.o.Bulk).Write(ctx, actions)
	im.mu.Lock()
	defer im.mu.Unlock()
	im.res.Requests += int64(res.Requests)
	im.res.Written += int64(res.Succeeded)
	for _, f := range res.Failed {
		it := &items[f.Index]
		im.fail(&LineError{Line: it.line, PartitionKey: it.e.PartitionKey, RowKey: it.e.RowKey, Err: f.Err})
	}
	var be *tablekit.BulkError
	if err != nil && !errors.As(err, &be) {
		return err
	}
	if im.tooManyFailures() {
		return fmt.Errorf("%w: stopped after %d failures", ErrFailures, im.o.MaxFailures)
	}
	return nil
}
