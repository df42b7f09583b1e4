package coord

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/core"
)

// ExpiresProperty names the property (Edm.DateTime) that holds a row's
// expiry: give a struct a field `table:"Expires"` of type time.Time. Live
// leaves expired rows out of reads and Sweep deletes them. coord's
// idempotency records carry it too (WriterOptions.KeyTTL).
const ExpiresProperty = "Expires"

// Live returns f restricted to rows whose Expires is after now, for reads
// that leave expired rows out (the service filters them). Rows without an
// Expires are left out too, as OData cannot test for an absent property:
// give every row read this way an Expires (far in the future for rows
// that never expire), or filter on the client instead.
func Live(f tablekit.Filter, now time.Time) tablekit.Filter {
	return tablekit.And(f, tablekit.Where(ExpiresProperty+" gt ?", now.UTC()))
}

// SweepOptions configure Sweep. The zero value (or nil) means the
// defaults.
type SweepOptions struct {
	// Limit is the most rows one call deletes. Default 1,000.
	Limit int
	// Continuation resumes a sweep where an earlier call's
	// SweepResult.Continuation left off, with the same filter. A sweep
	// deletes the rows expired when its first call began; rows expiring
	// later are the next sweep's.
	Continuation string
	// Clock tells the time rows expire against; nil means time.Now.
	Clock func() time.Time
}

// SweepResult is what a Sweep call did.
type SweepResult struct {
	// Deleted counts the expired rows deleted (or found deleted already).
	Deleted int
	// Continuation resumes the sweep (SweepOptions.Continuation); "" when
	// it reached the end of the filter's rows.
	Continuation string
}

// Sweep deletes up to Limit rows of t that match f and whose Expires is
// not after now, and returns how far it got so that the next call
// resumes there: a bounded, resumable sweeper, safe to run in several
// processes at once. Each row is deleted conditional on the version read,
// so a row renewed (its Expires moved) since is kept; rows of a partition
// go in transactions of up to 100. A zero f sweeps the whole table (a
// table scan, allowed here). Costs: 1 query per 1,000 rows read + 1
// transaction per partition and 100 rows (+1 delete per row when a
// transaction is refused).
//
// Azure Cosmos DB for Table also expires rows itself, with a time to live
// set on the whole table outside the data plane (Azure portal, ARM,
// az cosmosdb): no per-row expiry there; Live and Sweep work on it as
// they do on Table storage.
func Sweep(ctx context.Context, t *tablekit.Table[tablekit.Entity], f tablekit.Filter, opts *SweepOptions) (SweepResult, error) {
	res, err := sweep(ctx, t, f, opts)
	return res, fail("Sweep", err)
}

func sweep(ctx context.Context, t *tablekit.Table[tablekit.Entity], f tablekit.Filter, opts *SweepOptions) (SweepResult, error) {
	var o SweepOptions
	if opts != nil {
		o = *opts
	}
	if t == nil {
		return SweepResult{}, invalid("Sweep", "table", "nil table (use tablekit.OpenTable)")
	}
	if o.Limit < 0 {
		return SweepResult{}, invalid("Sweep", "Limit", "negative")
	}
	if o.Limit == 0 {
		o.Limit = 1000
	}
	// A sweep deletes the rows expired when its first call began: the
	// continuation carries that time with the query's token (a query's
	// token is valid only with the same filter).
	now, token := core.Now(o.Clock), ""
	if o.Continuation != "" {
		at, rest, ok := strings.Cut(o.Continuation, " ")
		ns, err := strconv.ParseInt(at, 10, 64)
		if !ok || err != nil || rest == "" {
			return SweepResult{}, invalid("Sweep", "Continuation", "not a continuation of Sweep")
		}
		now, token = time.Unix(0, ns), rest
	}
	expired := tablekit.Where(ExpiresProperty+" le ?", now.UTC())
	if !f.IsZero() {
		expired = tablekit.And(f, expired)
	}
	res := SweepResult{Continuation: o.Continuation}
	for {
		page, err := t.QueryPage(ctx, expired, &tablekit.QueryOptions{PageSize: min(1000, o.Limit-res.Deleted),
			Select: []string{ExpiresProperty}, Continuation: token, AllowTableScan: true})
		if err != nil {
			return res, err
		}
		n, err := deleteRows(ctx, t, page.Items)
		res.Deleted += n
		if err != nil {
			return res, err
		}
		token, res.Continuation = page.Continuation, ""
		if token != "" {
			res.Continuation = strconv.FormatInt(now.UnixNano(), 10) + " " + token
		}
		if token == "" || res.Deleted >= o.Limit {
			return res, nil
		}
	}
}

// deleteRows deletes rows (in query order, so grouped by partition on
// Table storage), each at the version read.
func deleteRows(ctx context.Context, t *tablekit.Table[tablekit.Entity], rows []tablekit.Entity) (int, error) {
	byPK := map[string][]tablekit.Action[tablekit.Entity]{}
	var order []string
	for _, e := range rows {
		if _, ok := byPK[e.PartitionKey]; !ok {
			order = append(order, e.PartitionKey)
		}
		byPK[e.PartitionKey] = append(byPK[e.PartitionKey], tablekit.DeleteAction(e, e.ETag))
	}
	n := 0
	for _, pk := range order {
		acts := byPK[pk]
		for len(acts) > 0 {
			batch := acts[:min(100, len(acts))]
			acts = acts[len(batch):]
			if _, err := t.Transaction(ctx, batch...); err == nil {
				n += len(batch)
				continue
			} else if ctx.Err() != nil {
				return n, ctx.Err()
			}
			// Refused (a row renewed or deleted meanwhile) or unknown:
			// one by one, keeping renewed rows.
			for _, a := range batch {
				e := core.ActionValue(a)
				err := t.Delete(ctx, e.PartitionKey, e.RowKey, e.ETag)
				switch {
				case err == nil, errors.Is(err, tablekit.ErrNotFound):
					n++ // deleted, by this call or another
				case errors.Is(err, tablekit.ErrPreconditionFailed), errors.Is(err, tablekit.ErrOutcomeUnknown):
					// renewed since it was read (kept), or perhaps deleted:
					// a later sweep finds it if not
				default:
					return n, err
				}
			}
		}
	}
	return n, nil
}
