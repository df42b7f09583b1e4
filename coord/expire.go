package coord

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/transfer"
)

// ExpiresProperty names the property (Edm.DateTime) that holds a row's
// expiry: a row opts in to expiry by carrying it, as a struct field
// `table:"_expires"` of type time.Time. Live leaves expired rows out of
// reads and Sweep deletes them; rows without it are never swept, whatever
// else they hold (a domain property named "Expires", a coupon's end, is
// just data). The leading "_" keeps it apart from domain names, as
// tablekit's other bookkeeping names ("_id", "_append", "_folded") are:
// package stream refuses events that carry it, so that a sweep never
// leaves a gap in a stream. Expiry is wall-clock time, read against the
// clock of the process that reads or sweeps: allow for the skew between
// the writers' clocks and the sweeper's. coord's idempotency records
// carry it too (WriterOptions.KeyTTL).
const ExpiresProperty = "_expires"

// Live returns f restricted to rows whose ExpiresProperty is after now,
// for reads that leave expired rows out (the service filters them). Rows
// without it are left out too, as OData cannot test for an absent
// property: give every row read this way one (far in the future for rows
// that never expire), or filter on the client instead.
func Live(f tablekit.Filter, now time.Time) tablekit.Filter {
	return tablekit.And(f, tablekit.Where(ExpiresProperty+" gt ?", now.UTC()))
}

// Sweep deletes the rows of t that expired at now (their ExpiresProperty
// at or before it), and coord's idempotency records that did (also those
// earlier versions wrote, whose expiry was "Expires": the only rows an
// "Expires" property still makes sweepable are these records, under
// ReservedPrefix). It is transfer.Purge with opts.Scope (nil opts: the
// whole table, a table scan) restricted to expired rows, so it has Purge's
// guarantees and costs: bounded by opts.Budget, resumable through
// opts.Checkpoint and Resume, safe to run in several processes at once, each
// row deleted only at the version listed (a row renewed since, its Expires
// moved, is kept and counted in Changed), lost answers settled by reading
// back. Costs: 1 keys-only query per 1,000 expired rows + 1 transaction
// per 100 expired rows of a partition.
//
// Pass time.Now() as now. A resumed sweep (Resume, with something saved in
// Checkpoint) keeps the now of its first run, kept with the checkpoint, so
// that it goes on over the scope the checkpoint was made for; rows
// expiring later are the next sweep's.
//
// Azure Cosmos DB for Table also expires rows itself, with a time to live
// set on the whole table outside the data plane (Azure portal, ARM,
// az cosmosdb): no per-row expiry there; Live and Sweep work on it as
// they do on Table storage.
func Sweep(ctx context.Context, t *tablekit.Table[tablekit.Entity], now time.Time, opts *transfer.PurgeOptions) (transfer.PurgeResult, error) {
	res, err := sweep(ctx, t, now, opts)
	return res, fail("Sweep", err)
}

func sweep(ctx context.Context, t *tablekit.Table[tablekit.Entity], now time.Time, opts *transfer.PurgeOptions) (transfer.PurgeResult, error) {
	var o transfer.PurgeOptions
	if opts != nil {
		o = *opts
	}
	switch {
	case t == nil:
		return transfer.PurgeResult{}, invalid("Sweep", "table", "nil table (use tablekit.OpenTable)")
	case now.IsZero():
		return transfer.PurgeResult{}, invalid("Sweep", "now", "zero time (pass time.Now())")
	}
	if o.Checkpoint != nil {
		cp := &sweepCheckpoint{cp: o.Checkpoint, now: now.UTC()}
		if o.Resume {
			saved, err := cp.load(ctx)
			if err != nil {
				return transfer.PurgeResult{}, err
			}
			if saved != nil {
				cp.now = saved.Now
			}
		}
		now, o.Checkpoint = cp.now, cp
	}
	o.Scope.Filter = tablekit.And(o.Scope.Filter, expired(now))
	return transfer.Purge(ctx, t, &o)
}

// expired is the filter of the rows expired at now: rows whose
// ExpiresProperty is at or before now, and idempotency records written by
// earlier versions whose "Expires" is (a RowKey range of coord's own
// rows, so that no domain "Expires" matches).
func expired(now time.Time) tablekit.Filter {
	now = now.UTC()
	hi, _ := keys.PrefixEnd(KeyRecordPrefix)
	return tablekit.Or(
		tablekit.Where(ExpiresProperty+" le ?", now),
		tablekit.Where("RowKey ge ? and RowKey lt ? and "+propOldExpires+" le ?", KeyRecordPrefix, hi, now))
}

// sweepState is what a sweep keeps in its checkpoint: the now of its first
// run, and the purge's own state.
type sweepState struct {
	Now   time.Time       `json:"now"`
	Purge json.RawMessage `json:"purge"`
}

// sweepCheckpoint keeps a sweep's now with the purge's state in the
// caller's Checkpoint.
type sweepCheckpoint struct {
	cp  transfer.Checkpoint
	now time.Time
}

func (c *sweepCheckpoint) load(ctx context.Context) (*sweepState, error) {
	data, err := c.cp.Load(ctx)
	if err != nil || data == nil {
		return nil, err
	}
	var s sweepState
	if err := json.Unmarshal(data, &s); err != nil || s.Now.IsZero() || len(s.Purge) == 0 {
		return nil, fmt.Errorf("%w: not the checkpoint of a coord.Sweep", transfer.ErrCorruptCheckpoint)
	}
	return &s, nil
}

func (c *sweepCheckpoint) Load(ctx context.Context) ([]byte, error) {
	s, err := c.load(ctx)
	if err != nil || s == nil {
		return nil, err
	}
	return s.Purge, nil
}

func (c *sweepCheckpoint) Save(ctx context.Context, state []byte) error {
	data, err := json.Marshal(sweepState{Now: c.now, Purge: state})
	if err != nil {
		return err
	}
	return c.cp.Save(ctx, data)
}
