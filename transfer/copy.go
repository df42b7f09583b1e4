package transfer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tablekit/tablekit"
)

// CopyOptions configures [Copy]. A nil *CopyOptions means defaults. The
// embedded JobOptions concern the source table (Meter: the source
// account's).
type CopyOptions struct {
	JobOptions
	// Mode says how entities are written to the destination (default
	// Insert).
	Mode Mode
	// Bulk configures the BulkWriter of the destination (nil: defaults).
	// The copy uses one BulkWriter for all its pages, paced by
	// Bulk.Governor or else the destination table's (its Account's), so
	// that what the Governor learns holds for the whole copy.
	Bulk *tablekit.BulkOptions
	// DestMeter, when set, is the Meter of the destination's Account; the
	// result and Progress add its transactions.
	DestMeter *tablekit.Meter
	// MaxReported bounds the failures listed in the result (default
	// 1000); all are counted.
	MaxReported int
}

// CopyFailure is an entity Copy could not write.
type CopyFailure struct {
	PartitionKey, RowKey string
	// Err is the BulkWriter's error for it; one matching
	// tablekit.ErrOutcomeUnknown or a context error means it may have been
	// written.
	Err error
}

// Error names the entity and the problem.
func (f *CopyFailure) Error() string {
	return fmt.Sprintf("%q/%q: %v", f.PartitionKey, f.RowKey, f.Err)
}

// Unwrap returns the underlying error.
func (f *CopyFailure) Unwrap() error { return f.Err }

// CopyResult reports a copy.
type CopyResult struct {
	// Read counts the entities read from the source, Written those
	// applied to the destination, Failed those that were not (over all
	// runs of a resumed copy).
	Read, Written, Failed int64
	// Verified counts, among Written, the entities a resumed copy in
	// Insert mode found already stored as the source has them (written by
	// the run it resumes, after its last checkpoint) and did not write
	// again (see [Copy]).
	Verified int64
	// Failures lists failed entities of this run, up to MaxReported.
	Failures []*CopyFailure
	// Ranges, Probes and Transactions are as in [ExportResult];
	// Transactions includes the destination's when DestMeter is set.
	Ranges       int
	Probes       int64
	Transactions int64
	// Complete is true when every range was copied.
	Complete bool
	// Elapsed is the time this run took.
	Elapsed time.Duration
}

// Copy copies the entities of src in opts.Scope to dst, which may be in
// another account: the scope is read in parallel ranges (as [Export] reads
// it) and each page is written to dst through a BulkWriter as opts.Mode
// says, before the range's checkpoint moves past it. Types and keys are
// kept exactly; Timestamps and ETags are the destination's own. Entities
// dst refuses are reported in the result and do not stop the copy; then
// the error matches [ErrFailures].
//
// A resumed copy reads again the pages its ranges had read after the last
// checkpoint, and writes them again: harmless in the upsert modes. In
// Insert mode, where writing an entity again would fail with
// EntityAlreadyExists, a resumed copy first reads what dst holds for the
// entities of each range's pages, until a page of which dst holds none
// (the run being resumed wrote a range's pages in order, so it wrote none
// after that one): an entity stored with exactly the source's properties
// is counted as written (and in Verified), one stored with other values is
// a failure matching tablekit.ErrAlreadyExists, the others are inserted.
// An insert whose answer was lost (tablekit.ErrOutcomeUnknown) is checked
// the same way.
func Copy(ctx context.Context, src, dst *tablekit.Table[tablekit.Entity], opts *CopyOptions) (CopyResult, error) {
	const op = "transfer.Copy"
	if opts == nil {
		opts = &CopyOptions{}
	}
	switch {
	case dst == nil:
		return CopyResult{}, validation(op, "nil destination table")
	case opts.Mode > UpsertReplace:
		return CopyResult{}, validation(op, fmt.Sprintf("unknown mode %d", opts.Mode))
	case opts.MaxReported < 0:
		return CopyResult{}, validation(op, "MaxReported must not be negative")
	}
	maxReported := opts.MaxReported
	if maxReported == 0 {
		maxReported = 1000
	}
	j, err := newJob(ctx, opts.config("copy", src, nil))
	if err != nil {
		return CopyResult{}, err
	}
	var destStart tablekit.MeterSnapshot
	if opts.DestMeter != nil && opts.DestMeter != opts.Meter {
		destStart = opts.DestMeter.Snapshot()
	}
	var failures []*CopyFailure
	var destRequests int64
	transactions := func() int64 {
		n := j.transactions()
		if opts.DestMeter != nil && opts.DestMeter != opts.Meter {
			n += opts.DestMeter.Snapshot().Sub(destStart).Service(tablekit.ServiceTable)
		} else if opts.Meter == nil {
			j.mu.Lock()
			n += destRequests
			j.mu.Unlock()
		}
		return n
	}
	rep := startReporter(ctx, opts.OnProgress, opts.ProgressEvery, func() Progress {
		p := j.progress(true)
		p.Op = "copy"
		p.Transactions = transactions()
		return p
	})
	w := dst.BulkWriter(opts.Bulk)
	// In a resumed insert copy, the ranges whose next pages the run being
	// resumed may have written: every range until a page of it is found
	// not written (a range split off in this run too, as it may hold pages
	// of its parent that were).
	resumedInsert := opts.Mode == Insert && j.resumed
	var verifyMu sync.Mutex
	clean := map[*rangeState]bool{}
	err = j.run(ctx, nil, func(ctx context.Context, r *rangeState, _ string, page tablekit.Page[tablekit.Entity]) error {
		n := len(page.Items)
		errs := make([]error, n)
		verified := make([]bool, n)
		send := make([]int, 0, n)
		verifyMu.Lock()
		check := resumedInsert && !clean[r]
		verifyMu.Unlock()
		if check && n > 0 {
			es := make([]*tablekit.Entity, n)
			for i := range page.Items {
				es[i] = &page.Items[i]
			}
			st, err := lookupStored(ctx, dst, es)
			if err != nil {
				return err
			}
			found := false
			for i := range st {
				switch st[i] {
				case storedIdentical:
					verified[i], found = true, true
				case storedOther:
					errs[i] = errStoredOther("the source's")
				default:
					send = append(send, i)
				}
			}
			if !found {
				verifyMu.Lock()
				clean[r] = true
				verifyMu.Unlock()
			}
		} else {
			for i := range n {
				send = append(send, i)
			}
		}
		actions := make([]tablekit.Action[tablekit.Entity], len(send))
		for k, i := range send {
			actions[k] = opts.Mode.action(page.Items[i])
		}
		var res tablekit.BulkResult
		if len(actions) > 0 {
			var err error
			res, err = w.Write(ctx, actions)
			var be *tablekit.BulkError
			if err != nil && !errors.As(err, &be) {
				return err // ctx ended or the writer failed: the page is not committed
			}
		}
		var unknown []*tablekit.Entity
		var unknownAt []int
		for _, f := range res.Failed {
			i := send[f.Index]
			errs[i] = f.Err
			if opts.Mode == Insert && errors.Is(f.Err, tablekit.ErrOutcomeUnknown) {
				unknown, unknownAt = append(unknown, &page.Items[i]), append(unknownAt, i)
			}
		}
		if len(unknown) > 0 {
			// A lost answer: dst says whether the insert was applied.
			if st, err := lookupStored(ctx, dst, unknown); err == nil {
				for k, i := range unknownAt {
					if st[k] == storedIdentical {
						errs[i], verified[i] = nil, true
					}
				}
			}
		}
		j.commit(r, page.Continuation, page.Continuation == "", int64(n), func(s *jobState) {
			destRequests += int64(res.Requests)
			for i := range n {
				switch {
				case errs[i] != nil:
					s.Counts.Failed++
					if len(failures) < maxReported {
						e := page.Items[i]
						failures = append(failures, &CopyFailure{PartitionKey: e.PartitionKey, RowKey: e.RowKey, Err: errs[i]})
					}
				case verified[i]:
					s.Counts.Written++
					s.Counts.Verified++
				default:
					s.Counts.Written++
				}
			}
		})
		return nil
	})
	rep.finish()
	j.mu.Lock()
	res := CopyResult{
		Read: j.state.Counts.Read, Written: j.state.Counts.Written, Failed: j.state.Counts.Failed, Verified: j.state.Counts.Verified,
		Failures: failures, Ranges: len(j.state.Ranges), Probes: j.state.Probes,
		Complete: j.state.Complete, Elapsed: time.Since(j.started),
	}
	j.mu.Unlock()
	res.Transactions = transactions()
	if err == nil && len(failures) > 0 {
		err = fmt.Errorf("%w: %d entities failed; first: %v", ErrFailures, res.Failed, failures[0])
	}
	return res, err
}
