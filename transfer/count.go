package transfer

import (
	"context"
	"sync"
	"time"

	"github.com/tablekit/tablekit"
)

// CountOptions configures [Count]. A nil *CountOptions means defaults.
// Checkpoint and Resume of the embedded JobOptions are not used.
type CountOptions struct {
	JobOptions
}

// CountResult reports a count.
type CountResult struct {
	// Entities and Partitions count the entities in the scope and their
	// distinct PartitionKeys.
	Entities, Partitions int64
	// Pages counts the listing requests (Meter's QueryEntities when a
	// Meter is given, else the pages read), Probes the key-sampling
	// requests among them.
	Pages, Probes int64
	// Transactions is what the count cost: every storage transaction the
	// Meter saw (or Pages without one).
	Transactions int64
	// DeleteTransactions is what deleting the scope would take in entity
	// group transactions: the sum over partitions of ceil(n/100). A
	// [Purge] of the same scope costs about Pages + DeleteTransactions.
	DeleteTransactions int64
	// Ranges is the number of ranges read.
	Ranges int
	// Elapsed is the time the count took.
	Elapsed time.Duration
}

// Count counts the entities in opts.Scope with a keys-only listing
// ($select=PartitionKey,RowKey), read in parallel ranges as [Export] reads
// them, and reports what it cost and what a purge of the scope would cost.
func Count(ctx context.Context, t *tablekit.Table[tablekit.Entity], opts *CountOptions) (CountResult, error) {
	if opts == nil {
		opts = &CountOptions{}
	}
	cfg := opts.config("count", t, keysOnly)
	cfg.checkpoint, cfg.resume = nil, false
	j, err := newJob(ctx, cfg)
	if err != nil {
		return CountResult{}, err
	}
	rep := startReporter(ctx, opts.OnProgress, opts.ProgressEvery, func() Progress { return j.progress(false) })
	// Entities of one partition are contiguous within a range, and ranges
	// never share a partition: count partitions at each change of key.
	type tally struct {
		pk string
		n  int64
	}
	var mu sync.Mutex
	tallies := map[*rangeState]*tally{}
	var partitions, deletes, pages int64
	closeTally := func(tl *tally) {
		if tl.n > 0 {
			partitions++
			deletes += (tl.n + tablekit.MaxTransactionActions - 1) / tablekit.MaxTransactionActions
		}
	}
	err = j.run(ctx, nil, func(ctx context.Context, r *rangeState, _ string, page tablekit.Page[tablekit.Entity]) error {
		mu.Lock()
		tl := tallies[r]
		if tl == nil {
			tl = &tally{}
			tallies[r] = tl
		}
		pages++
		for i := range page.Items {
			if pk := page.Items[i].PartitionKey; tl.n == 0 || pk != tl.pk {
				closeTally(tl)
				tl.pk, tl.n = pk, 0
			}
			tl.n++
		}
		if page.Continuation == "" {
			closeTally(tl)
			tl.n = 0
		}
		mu.Unlock()
		j.commit(r, page.Continuation, page.Continuation == "", int64(len(page.Items)), nil)
		return nil
	})
	rep.finish()
	res := CountResult{Partitions: partitions, DeleteTransactions: deletes, Elapsed: time.Since(j.started), Probes: j.state.Probes}
	j.mu.Lock()
	res.Entities, res.Ranges = j.state.Counts.Read, len(j.state.Ranges)
	j.mu.Unlock()
	res.Transactions = j.transactions()
	res.Pages = pages + res.Probes
	if opts.Meter != nil {
		res.Pages = opts.Meter.Snapshot().Sub(j.meterStart).Count(tablekit.ServiceTable, "QueryEntities")
	}
	return res, err
}
