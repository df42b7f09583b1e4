package transfer

import (
	"context"
	"slices"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/limits"
)

// CountResult reports a count. Entities, Partitions and
// DeleteTransactions count over all runs of a resumed count.
type CountResult struct {
	// Entities and Partitions count the entities in the scope and their
	// distinct PartitionKeys.
	Entities, Partitions int64
	// Pages counts this run's listing requests (Meter's QueryEntities
	// when a Meter is given, else the pages read and probes sent), Probes
	// the key-sampling requests among them.
	Pages, Probes int64
	// Transactions is what this run cost: every storage transaction the
	// Meter saw (or Pages without one).
	Transactions int64
	// DeleteTransactions is what deleting the scope would take in entity
	// group transactions: the sum over partitions of ceil(n/100). A
	// [Purge] of the same scope, read the same way, costs about Pages +
	// DeleteTransactions on Table storage; more on Cosmos DB, where it
	// groups each page's entities by partition (see the package
	// documentation).
	DeleteTransactions int64
	// Ranges is the number of ranges read.
	Ranges int
	// Complete is true when every range was counted.
	Complete bool
	// Elapsed is the time this run took.
	Elapsed time.Duration
}

// Count counts the entities in opts.Scope with a keys-only listing
// ($select=PartitionKey,RowKey), and reports what it cost and what a purge
// of the scope would cost. By default it reads the scope as one range, as
// [Purge] does: no key probes, one request per 1,000 entities, the least a
// count can cost. Set MaxProbes (for example to 4 × Concurrency) or
// Boundaries to read in parallel ranges as [Export] reads them: faster on
// a large scope, for the probes and a partial page per range more. When
// ctx ends it saves its checkpoint (if any) and returns the context's
// error with what it counted so far.
//
// On Azure Cosmos DB for Table, whose results are in no key order, a range
// keeps a tally of every partition it meets until it is done: memory grows
// with the partitions of the ranges being read (about 100 bytes each, plus
// the key), and a checkpoint saves at most 256 KiB of them (a range whose
// tally does not fit is saved as not started and read again on resume).
// Split a scope of very many partitions into more ranges (Concurrency,
// MaxProbes, Boundaries) to keep both small.
func Count(ctx context.Context, t *tablekit.Table[tablekit.Entity], opts *Options) (CountResult, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxProbes == 0 && o.Boundaries == nil {
		o.MaxProbes = -1 // one range: see above
	}
	j, err := newJob(ctx, o.config("count", t, keysOnly))
	if err != nil {
		return CountResult{}, err
	}
	rep := startReporter(ctx, o.OnProgress, func() Progress { return j.progress(false) })
	for _, r := range j.state.Ranges {
		if r.TallyN > 0 { // a checkpoint written before Tally
			r.Tally = map[string]int64{r.TallyPK: r.TallyN}
		}
		r.TallyPK, r.TallyN = "", 0
	}
	j.persist = func(s *jobState) *jobState {
		if j.isUnordered() {
			return persistTallies(s)
		}
		return s
	}
	// Ranges never share a partition, so the partitions of the scope are
	// the sum of each range's. A range tallies the entities of each
	// partition it meets and closes a partition's tally when no more of
	// it can come: where results are in key order, at the next
	// PartitionKey; where they are not (Cosmos DB), at the range's end.
	// The open tallies are part of the range's state, saved with its
	// token, so that a resumed count goes on with them.
	var pages int64
	// closeTallies closes the open tallies of r: all of them, or all but
	// that of partition open (where a page in key order ended; "" is a
	// PartitionKey like any other).
	closeTallies := func(s *jobState, r *rangeState, open *string) {
		for pk, n := range r.Tally {
			if open != nil && pk == *open {
				continue
			}
			if open != nil {
				j.reliedOnOrder.Store(true) // closed before the range's end
			}
			s.Partitions++
			s.DeleteTx += (n + limits.TransactionActions - 1) / limits.TransactionActions
			delete(r.Tally, pk)
		}
	}
	err = j.run(ctx, nil, func(ctx context.Context, r *rangeState, _ string, page tablekit.Page[tablekit.Entity]) error {
		last := page.Continuation == ""
		j.commit(r, page.Continuation, last, int64(len(page.Items)), func(s *jobState) {
			pages++
			if r.Tally == nil && len(page.Items) > 0 {
				r.Tally = map[string]int64{}
			}
			for i := range page.Items {
				r.Tally[page.Items[i].PartitionKey]++
			}
			switch {
			case last:
				closeTallies(s, r, nil)
				r.Tally = nil
			case !j.isUnordered() && len(page.Items) > 0:
				closeTallies(s, r, &page.Items[len(page.Items)-1].PartitionKey)
			}
		})
		return nil
	})
	rep.finish()
	j.mu.Lock()
	res := CountResult{
		Entities: j.state.Counts.Read, Partitions: j.state.Partitions, DeleteTransactions: j.state.DeleteTx,
		Ranges: len(j.state.Ranges), Probes: j.probe, Pages: pages + j.probe, Complete: j.state.Complete,
		Elapsed: time.Since(j.started),
	}
	j.mu.Unlock()
	res.Transactions = j.transactions()
	if j.meter != nil {
		res.Pages = j.meter.Snapshot().Sub(j.meterStart).Count("table", "QueryEntities")
	}
	return res, err
}

// maxSavedTally bounds the open tallies a checkpoint of a count on Azure
// Cosmos DB for Table holds, in bytes of PartitionKeys (plus 16 bytes
// each), so that the checkpoint stays small and fits a table checkpoint:
// ranges whose tallies do not fit are saved as not started.
const maxSavedTally = 256 << 10

// persistTallies returns s, or a copy of it in which the unfinished
// ranges whose open tallies do not fit in maxSavedTally are not started
// (no token, no entities read, no tally). It runs under the job's mu, on
// the state of a count where results are not in key order, so that no
// partition of an unfinished range has been closed yet.
func persistTallies(s *jobState) *jobState {
	budget := maxSavedTally
	var out *jobState
	for i, r := range s.Ranges {
		if r.Done || len(r.Tally) == 0 {
			continue
		}
		size := 0
		for pk := range r.Tally {
			size += len(pk) + 16
		}
		if size <= budget {
			budget -= size
			continue
		}
		if out == nil {
			c := *s
			c.Ranges = slices.Clone(s.Ranges)
			out = &c
		}
		out.Ranges[i] = &rangeState{keyRange: r.keyRange, Cap: r.Cap}
		out.Counts.Read -= r.Read
	}
	if out == nil {
		return s
	}
	return out
}
