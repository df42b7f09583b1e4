package transfer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tablekit/tablekit"
)

// CopyResult reports a copy.
type CopyResult struct {
	// Read counts the entities read from the source, Written those
	// applied to the destination, Failed those that were not (over all
	// runs of a resumed copy; the entities of pages held back for a
	// resumed run, see [Copy], count in this run's result only).
	Read, Written, Failed int64
	// Verified counts, among Written, the entities a resumed copy in
	// Insert mode found already stored as the source has them (written by
	// the run it resumes, after its last checkpoint or before it kept
	// one) and did not write again (see [Copy]).
	Verified int64
	// Failures lists failed entities of this run (the first 1,000); all
	// are counted. An error matching tablekit.ErrOutcomeUnknown or a
	// context error means the entity may have been written.
	Failures []*EntityError
	// Ranges, Probes and Transactions are as in [ExportResult];
	// Transactions adds the destination's when its Account is another.
	Ranges       int
	Probes       int64
	Transactions int64
	// Complete is true when every range was copied. A copy whose
	// entities failed for a passing reason is not complete.
	Complete bool
	// Elapsed is the time this run took.
	Elapsed time.Duration
}

// Copy copies the entities of src in opts.Scope to dst, which may be in
// another account: the scope is read in parallel ranges (as [Export] reads
// it) and each page is written to dst through one BulkWriter (paced by
// dst's Account's Governor) as mode says, before the range's checkpoint moves past it. Types and keys are
// kept exactly; Timestamps and ETags are the destination's own. Entities
// dst refuses are reported in the result and do not stop the copy; then
// the error matches [ErrFailures].
//
// An entity that fails for a passing reason (throttled beyond the
// retries, an outcome that stays unknown, skipped after other refusals of
// its transaction) is reported too, and with a Checkpoint its page is held
// back: the checkpoint does not move past it, its range stops there for
// this run, the result says Complete false, and a call with Resume copies
// the page again. Before that, a page's entities skipped, and (upsert modes) those
// of unknown outcome, are sent again, up to three writes in all.
//
// With a Checkpoint, a copy saves its plan before its first write, and a
// resumed copy writes again the pages read after the last checkpoint; in
// Insert mode it first looks up what dst holds, also when the checkpoint
// holds nothing ("Resuming a copy" in the package documentation).
func Copy(ctx context.Context, src, dst *tablekit.Table[tablekit.Entity], mode Mode, opts *Options) (CopyResult, error) {
	return copyTable(ctx, src, dst, mode, opts, nil)
}

// copyTable is Copy, writing with a BulkWriter of bulk's options (nil:
// defaults).
func copyTable(ctx context.Context, src, dst *tablekit.Table[tablekit.Entity], mode Mode, opts *Options, bulk *tablekit.BulkOptions) (CopyResult, error) {
	const op = "transfer.Copy"
	if opts == nil {
		opts = &Options{}
	}
	switch {
	case dst == nil:
		return CopyResult{}, validation(op, "nil destination table")
	case mode > Replace:
		return CopyResult{}, validation(op, fmt.Sprintf("unknown mode %d", mode))
	}
	j, err := newJob(ctx, opts.config("copy", src, nil))
	if err != nil {
		return CopyResult{}, err
	}
	destMeter := dst.Account().Meter()
	if destMeter == j.meter {
		destMeter = nil // counted once
	}
	var destStart tablekit.MeterSnapshot
	if destMeter != nil {
		destStart = destMeter.Snapshot()
	}
	c := &copier{j: j, dst: dst, w: dst.BulkWriter(bulk), mode: mode, maxReported: maxReported,
		resumedInsert: mode == Insert && opts.Resume, clean: map[*rangeState]bool{}}
	transactions := func() int64 {
		n := j.transactions()
		if destMeter != nil {
			n += destMeter.Snapshot().Sub(destStart).Service("table")
		} else if j.meter == nil {
			j.mu.Lock()
			n += c.requests
			j.mu.Unlock()
		}
		return n
	}
	rep := startReporter(ctx, opts.OnProgress, func() Progress {
		p := j.progress(true)
		p.Op = "copy"
		p.Transactions = transactions()
		return p
	})
	if j.cp != nil && !j.resumed {
		// Saved before the first write: a copy killed before its first
		// periodic checkpoint then resumes as a resumed copy, which looks
		// up what it wrote, not as a fresh one (whose inserts would fail).
		if err := j.save(ctx); err != nil {
			rep.finish()
			return CopyResult{}, err
		}
	}
	err = j.run(ctx, nil, c.page)
	rep.finish()
	j.mu.Lock()
	n := j.state.Counts
	n.add(c.held)
	res := CopyResult{
		Read: n.Read, Written: n.Written, Failed: n.Failed, Verified: n.Verified,
		Failures: c.failures, Ranges: len(j.state.Ranges), Probes: j.state.Probes,
		Complete: j.state.Complete, Elapsed: time.Since(j.started),
	}
	j.mu.Unlock()
	res.Transactions = transactions()
	if err == nil && res.Failed > 0 {
		if len(res.Failures) > 0 {
			err = fmt.Errorf("%w: %d entities failed; first: %v", ErrFailures, res.Failed, res.Failures[0])
		} else {
			err = fmt.Errorf("%w: %d entities failed, in the runs this one resumed", ErrFailures, res.Failed)
		}
	}
	return res, err
}

// copier writes the pages of a copy.
type copier struct {
	j             *job
	dst           *tablekit.Table[tablekit.Entity]
	w             *tablekit.BulkWriter[tablekit.Entity]
	mode          Mode
	maxReported   int
	resumedInsert bool

	// Under j.mu.
	failures []*EntityError
	requests int64 // transactions sent to dst
	// held counts the entities of pages held back for a resumed run:
	// this run's, not the checkpoint's (the resumed run counts them).
	held counts

	// clean, under cmu, holds the ranges of a resumed insert copy whose
	// next pages the run being resumed did not write: a range starts
	// unclean (as does one split off in this run, which may hold pages of
	// its parent that were written), is clean after a page of which dst
	// holds none, and unclean again when an insert meets an entity the
	// resumed run wrote.
	cmu   sync.Mutex
	clean map[*rangeState]bool
}

// copyRounds bounds the writes of one page: entities found not written
// after a lost answer, skipped, or deleted from dst meanwhile go again.
const copyRounds = 3

// page writes one page of range r and commits it, or holds the range back
// (errHold) when an entity of it failed for a passing reason (throttled,
// an unknown outcome, skipped), so that a resumed run copies the page
// again instead of moving past it.
func (c *copier) page(ctx context.Context, r *rangeState, _ string, page tablekit.Page[tablekit.Entity]) error {
	n := len(page.Items)
	errs := make([]error, n)
	final := make([]bool, n) // errs[i] is the entity's own: sending again would not help
	verified := make([]bool, n)
	send := make([]int, 0, n)
	c.cmu.Lock()
	check := c.resumedInsert && !c.clean[r]
	c.cmu.Unlock()
	if check && n > 0 {
		// The run being resumed may have written this page.
		st, err := lookupStored(ctx, c.dst, entitiesAt(page.Items, nil))
		if err != nil {
			return err
		}
		stored := false
		for i := range st {
			switch st[i] {
			case storedIdentical:
				verified[i], stored = true, true
			case storedOther:
				errs[i], final[i], stored = errStoredOther("Copy", "the source's"), true, true
			default:
				send = append(send, i)
			}
		}
		if !stored {
			c.cmu.Lock()
			c.clean[r] = true
			c.cmu.Unlock()
		}
	} else {
		for i := range n {
			send = append(send, i)
		}
	}
	var requests int
	for round := 1; len(send) > 0; round++ {
		actions := make([]tablekit.Action[tablekit.Entity], len(send))
		for k, i := range send {
			actions[k] = c.mode.action(page.Items[i])
			errs[i] = nil
		}
		res, err := c.w.Write(ctx, actions)
		requests += res.Requests
		if err != nil && !itemsFailed(res, err) {
			c.j.mu.Lock()
			c.requests += int64(requests)
			c.j.mu.Unlock()
			return err // ctx ended or the writer failed: the page is not committed
		}
		var again, look []int
		for _, f := range res.Failed {
			i := send[f.Index]
			errs[i], final[i] = f.Err, settled(f.Err)
			switch {
			case c.mode == Insert && errors.Is(f.Err, tablekit.ErrOutcomeUnknown),
				c.resumedInsert && (final[i] && errors.Is(f.Err, tablekit.ErrAlreadyExists) || errors.Is(f.Err, tablekit.ErrSkipped)):
				// dst says whether it was written (a lost answer, or an
				// entity the run being resumed wrote).
				look = append(look, i)
			case c.mode != Insert && errors.Is(f.Err, tablekit.ErrOutcomeUnknown), errors.Is(f.Err, tablekit.ErrSkipped):
				again = append(again, i) // an upsert again, or never sent
			}
		}
		if len(look) > 0 {
			st, err := lookupStored(ctx, c.dst, entitiesAt(page.Items, look))
			if err == nil {
				met := false
				for k, i := range look {
					switch st[k] {
					case storedIdentical:
						met = met || errors.Is(errs[i], tablekit.ErrAlreadyExists) && final[i]
						errs[i], verified[i] = nil, true
					case storedOther:
						errs[i], final[i] = errStoredOther("Copy", "the source's"), true
					default:
						again = append(again, i)
					}
				}
				if met {
					// The run being resumed wrote here: look up the next
					// pages too.
					c.cmu.Lock()
					c.clean[r] = false
					c.cmu.Unlock()
				}
			}
		}
		send = nil
		if round < copyRounds {
			send = again
		}
	}
	// Without a checkpoint nothing could resume the page: go on.
	hold := false
	for i := range n {
		hold = hold || errs[i] != nil && !final[i] && c.j.cp != nil
	}
	update := func(s *counts) {
		c.requests += int64(requests)
		for i := range n {
			switch {
			case errs[i] != nil:
				s.Failed++
				if len(c.failures) < c.maxReported {
					e := page.Items[i]
					c.failures = append(c.failures, &EntityError{PartitionKey: e.PartitionKey, RowKey: e.RowKey, Err: errs[i]})
				}
			case verified[i]:
				s.Written++
				s.Verified++
			default:
				s.Written++
			}
		}
	}
	if hold {
		c.j.mu.Lock()
		c.held.Read += int64(n)
		update(&c.held)
		c.j.mu.Unlock()
		return errHold
	}
	c.j.commit(r, page.Continuation, page.Continuation == "", int64(n), func(s *jobState) { update(&s.Counts) })
	return nil
}

// add adds o to c (copy's held counts to the checkpoint's).
func (c *counts) add(o counts) {
	c.Read += o.Read
	c.Written += o.Written
	c.Failed += o.Failed
	c.Skipped += o.Skipped
	c.Changed += o.Changed
	c.Verified += o.Verified
}

// entitiesAt returns pointers to items[i] for each i of idx (nil: all).
func entitiesAt(items []tablekit.Entity, idx []int) []*tablekit.Entity {
	if idx == nil {
		out := make([]*tablekit.Entity, len(items))
		for i := range items {
			out[i] = &items[i]
		}
		return out
	}
	out := make([]*tablekit.Entity, len(idx))
	for k, i := range idx {
		out[k] = &items[i]
	}
	return out
}
