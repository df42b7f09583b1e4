package transfer

import (
	"context"
	"sync"
	"time"
)

// Progress is a report of a running operation, passed to the OnProgress
// callback of the options.
type Progress struct {
	// Op is the operation: "export", "import", "copy", "purge" or "count".
	Op string
	// Read counts the entities read: listed from the table (export, copy,
	// purge, count) or from the stream (import).
	Read int64
	// Written counts the entities applied: lines written (export),
	// entities written (import, copy), entities deleted (purge).
	Written int64
	// Failed counts the entities that could not be applied.
	Failed int64
	// Skipped counts entities purge left alone because they changed
	// (or were deleted by someone else) after they were listed.
	Skipped int64
	// Transactions counts the storage transactions (requests billed) since
	// the operation started: from the Meter in the options, else as
	// counted by the operation itself (without the SDK's retries).
	Transactions int64
	// Bytes counts the bytes written (export) or read (import) so far,
	// over all runs of a resumed export.
	Bytes int64
	// Elapsed is the time since this run started.
	Elapsed time.Duration
	// Rate is entities per second in this run: written for import, copy
	// and purge, read for export and count.
	Rate float64
	// Total is the number of entities expected in all, -1 when unknown.
	Total int64
	// Remaining estimates the time left, -1 when unknown.
	Remaining time.Duration
	// Ranges and RangesDone count the key ranges and those finished.
	Ranges, RangesDone int
	// Done is true on the final report.
	Done bool
}

// reporter calls a progress callback now and then, and once at the end.
type reporter struct {
	fn    func(Progress)
	every time.Duration
	get   func() Progress
	stop  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex // calls fn one at a time
}

// startReporter starts calling fn with get() every interval (default 1 s)
// until finish is called. A nil fn does nothing.
func startReporter(ctx context.Context, fn func(Progress), get func() Progress) *reporter {
	r := &reporter{fn: fn, every: time.Second, get: get, stop: make(chan struct{})}
	if fn == nil {
		return r
	}
	r.wg.Go(func() {
		t := time.NewTicker(r.every)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				r.call(false)
			}
		}
	})
	return r
}

func (r *reporter) call(done bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.get()
	p.Done = done
	r.fn(p)
}

// finish stops the ticker and sends the final report.
func (r *reporter) finish() {
	if r.fn == nil {
		return
	}
	close(r.stop)
	r.wg.Wait()
	r.call(true)
}

// rate fills Rate and Remaining from a count done in elapsed, of total
// (-1 unknown) with done so far.
func (p *Progress) rate(count int64, done, total int64) {
	p.Total, p.Remaining = total, -1
	if s := p.Elapsed.Seconds(); s > 0 {
		p.Rate = float64(count) / s
	}
	if total >= 0 && p.Rate > 0 && done <= total {
		p.Remaining = time.Duration(float64(total-done) / p.Rate * float64(time.Second))
	}
}
