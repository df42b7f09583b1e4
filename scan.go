package tablekit

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/queryplan"
)

// TableScanPolicy chooses what [Table.Query], [Table.QueryPage] and
// [Table.Top] do with a filter that [Filter.Explain] finds to be a table
// scan (queryplan.Plan.IsTableScan: class TableScan, or Unknown, which may
// be one). Point queries, range queries, partition scans and partition range
// scans are never affected. Set it in [TableOptions].TableScans; a query
// meant to read the whole table (an export, a sweep) sets
// [QueryOptions].AllowTableScan instead of weakening the table's policy.
type TableScanPolicy uint8

const (
	// LogTableScans (the default, the zero value) runs the query and logs
	// a warning, once per Query (or per QueryPage call), through
	// the Account's Logger with the fields table, op, filter, class and
	// reason. The filter's text is logged as sent, values included.
	LogTableScans TableScanPolicy = iota
	// AllowTableScans runs table scans silently (and does not explain
	// filters at all).
	AllowTableScans
	// RefuseTableScans refuses a table scan before anything is sent: the
	// query returns a *[ValidationError] matching [ErrTableScan] (and
	// [ErrInvalidInput]) whose Detail is the plan.
	RefuseTableScans
)

// name returns the policy's name, e.g. "LogTableScans".
func (p TableScanPolicy) name() string {
	if names := [...]string{LogTableScans: "LogTableScans", AllowTableScans: "AllowTableScans", RefuseTableScans: "RefuseTableScans"}; int(p) < len(names) {
		return names[p]
	}
	return fmt.Sprintf("TableScanPolicy(%d)", uint8(p))
}

// ErrTableScan is matched (with [errors.Is]) by the error of a query that
// [RefuseTableScans] refused. It matches [ErrInvalidInput] too.
var ErrTableScan = fmt.Errorf("tablekit: table scan refused: %w", ErrInvalidInput)

// validate checks that p is one of the policies.
func (p TableScanPolicy) validate(table string) error {
	if p > RefuseTableScans {
		return &ValidationError{Op: "OpenTable", Entity: table, Property: "TableScans", Detail: "unknown " + p.name(), Err: ErrInvalidInput}
	}
	return nil
}

// checkScan applies the table's TableScanPolicy to the filter text of a
// query about to be sent by op.
func (t *Table[T]) checkScan(ctx context.Context, op, filter string, opts *QueryOptions) error {
	if t.scans == AllowTableScans || (opts != nil && opts.AllowTableScan) {
		return nil
	}
	plan := queryplan.Explain(filter)
	if !plan.IsTableScan() {
		return nil
	}
	if t.scans == RefuseTableScans {
		return &ValidationError{
			Op:     op,
			Entity: t.name,
			Detail: "filter " + codec.Quote(filter) + ": " + plan.String(),
			Limit:  "TableOptions.TableScans is RefuseTableScans",
			Err:    ErrTableScan,
		}
	}
	logger := t.logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.LogAttrs(ctx, slog.LevelWarn, "tablekit: table scan",
		slog.String("table", t.name),
		slog.String("op", op),
		slog.String("filter", filter),
		slog.String("class", plan.Class.String()),
		slog.String("reason", reasonText(plan)),
	)
	return nil
}

// reasonText is the reason field of the table scan warning: the plan's
// reasons and its parse error, joined with "; ".
func reasonText(p queryplan.Plan) string {
	parts := p.Reasons
	if p.Err != nil {
		parts = append(parts[:len(parts):len(parts)], p.Err.Error())
	}
	return strings.Join(parts, "; ")
}
