package transfer

import (
	"context"
	"time"

	"github.com/tablekit/tablekit"
)

// CountOptions configures [Count]. A nil *CountOptions means defaults.
// With a Checkpoint, each range's position and its partial counts are
// saved as for the other operations, and a count with Resume goes on from
// them.
type CountOptions struct {
	JobOptions
}

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
	// DeleteTransactions.
	DeleteTransactions int64
	// Ranges is the number of ranges read.
	Ranges int
	// Complete is true when every range was counted.
	Complete bool
	// Elapsed is the time this run took.
	Elapsed time.Duration
}

// Count counts the entities in opts.Scope with a keys-only listing
// ($select=PartitionKey,RowKey), read in parallel ranges as [Export] reads
// them, and reports what it cost and what a purge of the scope would cost.
// When ctx ends it saves its checkpoint (if any) and returns the
// context's error with what it counted so far.
func Count(ctx context.Context, t *tablekit.Table[tablekit.Entity], opts *CountOptions) (CountResult, error) {
	if opts == nil {
		opts = &CountOptions{}
	}
	j, err := newJob(ctx, opts.config("count", t, keysOnly))
	if err != nil {
		return CountResult{}, err
	}
	rep := startReporter(ctx, opts.OnProgress, opts.ProgressEvery, func() Progress { return j.progress(false) })
	// Entities of one partition are contiguous within a range, and ranges
	// never share a partition: a partition is counted whole at each change
	// of key. The open tally of each range is part of its state, updated
	// with its token, so that a resumed count goes on with it.
	var pages int64
	closeTally := func(s *jobState, r *rangeState) {
		if r.TallyN > 0 {
			s.Partitions++
			s.DeleteTx += (r.TallyN + tablekit.MaxTransactionActions - 1) / tablekit.MaxTransactionActions
		}
		r.TallyPK, r.TallyN = "", 0
	}
	err = j.run(ctx, nil, func(ctx context.Context, r *rangeState, _ string, page tablekit.Page[tablekit.Entity]) error {
		last := page.Continuation == ""
		j.commit(r, page.Continuation, last, int64(len(page.Items)), func(s *jobState) {
			pages++
			for i := range page.Items {
				if pk := page.Items[i].PartitionKey; r.TallyN == 0 || pk != r.TallyPK {
					closeTally(s, r)
					r.TallyPK = pk
				}
				r.TallyN++
			}
			if last {
				closeTally(s, r)
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
	if opts.Meter != nil {
		res.Pages = opts.Meter.Snapshot().Sub(j.meterStart).Count(tablekit.ServiceTable, "QueryEntities")
	}
	return res, err
}
