package patterns

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/names"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// The high-volume delete pattern ("Enable the deletion of a high volume of
// entities by storing all the entities for simultaneous deletion in their
// own separate table"): one table per period, and retention that deletes a
// whole table — one storage transaction — instead of every entity in it.

// Period divides time into the consecutive intervals that each get a
// table of their own: Hourly, Daily, Monthly or Every(d). The zero Period
// is refused where one is needed.
type Period struct{ p period }

// period is what a Period does.
type period interface {
	// start returns the start of the interval holding t, in UTC.
	start(t time.Time) time.Time
	// add returns the start of the interval n intervals after the one
	// starting at start (n may be negative).
	add(start time.Time, n int) time.Time
	// stamp names the interval starting at start with ASCII digits, all
	// stamps of a Period having the same length, so that they sort in time
	// order.
	stamp(start time.Time) string
	// parse returns the start of the interval stamp named, or an error.
	parse(stamp string) (time.Time, error)
}

// calendarPeriod is an hour, a day or a month, in UTC.
type calendarPeriod struct {
	layout string
	months int
	dur    time.Duration
}

// Hourly returns the Period of UTC hours, stamped "2006010215".
func Hourly() Period { return Period{calendarPeriod{layout: "2006010215", dur: time.Hour}} }

// Daily returns the Period of UTC days, stamped "20060102".
func Daily() Period { return Period{calendarPeriod{layout: "20060102", dur: 24 * time.Hour}} }

// Monthly returns the Period of UTC calendar months, stamped "200601".
func Monthly() Period { return Period{calendarPeriod{layout: "200601", months: 1}} }

func (p calendarPeriod) start(t time.Time) time.Time {
	t = t.UTC()
	if p.months > 0 {
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	if p.dur == time.Hour {
		return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, time.UTC)
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

func (p calendarPeriod) add(start time.Time, n int) time.Time {
	if p.months > 0 {
		return start.AddDate(0, n*p.months, 0)
	}
	if p.dur == time.Hour {
		return start.Add(time.Duration(n) * time.Hour)
	}
	return start.AddDate(0, 0, n)
}

func (p calendarPeriod) stamp(start time.Time) string { return start.UTC().Format(p.layout) }

func (p calendarPeriod) parse(stamp string) (time.Time, error) {
	if len(stamp) != len(p.layout) {
		return time.Time{}, fmt.Errorf("stamp %q: want %d digits", stamp, len(p.layout))
	}
	return time.ParseInLocation(p.layout, stamp, time.UTC)
}

// fixedPeriod is a fixed duration, aligned to the Unix epoch.
type fixedPeriod struct{ d time.Duration }

// Every returns the Period of consecutive intervals of d, aligned to the
// Unix epoch (so Every(6*time.Hour) starts at 00:00, 06:00, ... UTC),
// stamped with their UTC start as "200601021504". d must be a whole number
// of minutes.
func Every(d time.Duration) (Period, error) {
	if d < time.Minute || d%time.Minute != 0 {
		return Period{}, &tablekit.ValidationError{Op: "patterns.Every", Property: "d", Detail: fmt.Sprintf("%v: the interval must be a positive whole number of minutes", d), Err: tablekit.ErrInvalidInput}
	}
	return Period{fixedPeriod{d}}, nil
}

func (p fixedPeriod) start(t time.Time) time.Time {
	u := t.UTC().Unix()
	s := int64(p.d / time.Second)
	u -= ((u % s) + s) % s
	return time.Unix(u, 0).UTC()
}

func (p fixedPeriod) add(start time.Time, n int) time.Time {
	return start.Add(time.Duration(n) * p.d).UTC()
}

func (p fixedPeriod) stamp(start time.Time) string { return start.UTC().Format("200601021504") }

func (p fixedPeriod) parse(stamp string) (time.Time, error) {
	if len(stamp) != len("200601021504") {
		return time.Time{}, fmt.Errorf("stamp %q: want 12 digits", stamp)
	}
	t, err := time.ParseInLocation("200601021504", stamp, time.UTC)
	if err == nil && !p.start(t).Equal(t) {
		err = fmt.Errorf("stamp %q is not the start of an interval of %v", stamp, p.d)
	}
	return t, err
}

// PeriodTables keeps the entities of each period in a table of their own,
// named by a fixed prefix and the period's stamp, e.g. "Logins20250314" for
// Daily. Writes go to the table of their period (Table, which creates it on
// first use), Query reads the tables of the periods it covers, and
// DropBefore deletes whole tables: one storage transaction per period,
// however many entities it held.
//
// Table names are never reused: each period has its own. That matters,
// because Azure keeps a deleted table's name unavailable for a while
// (creating it meanwhile fails with TableBeingDeleted, which Table reports
// with an error matching tablekit.ErrAlreadyExists), so a design that
// emptied and re-created one table would stall. Writing into a period
// after retention deleted its table runs into that too.
//
// A PeriodTables is safe for concurrent use.
type PeriodTables[T any] struct {
	acct    *tablekit.Account
	prefix  string
	period  period
	topts   *tablekit.TableOptions
	width   int
	mu      sync.Mutex
	created map[string]*tablekit.Table[T]
}

// PeriodTable is one period's table.
type PeriodTable struct {
	// Name is the table's name.
	Name string
	// Start and End bound the period: Start <= t < End.
	Start, End time.Time
}

// NewPeriodTables returns the PeriodTables of acct whose names start with
// prefix (letters and digits, starting with a letter) and divide time by
// period; opts configures every period's Table (e.g. its encryption). No
// other table of the account should start with prefix followed by a period
// stamp.
func NewPeriodTables[T any](acct *tablekit.Account, prefix string, period Period, opts *tablekit.TableOptions) (*PeriodTables[T], error) {
	const op = "patterns.NewPeriodTables"
	if acct == nil || period.p == nil {
		return nil, invalid(op, "nil account or zero Period (use Hourly, Daily, Monthly or Every)")
	}
	p := &PeriodTables[T]{acct: acct, prefix: prefix, period: period.p, topts: opts, created: map[string]*tablekit.Table[T]{}}
	sample := p.period.stamp(p.period.start(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)))
	p.width = len(sample)
	if err := names.CheckTable(prefix + sample); err != nil {
		return nil, withOp(op, annotate(err, fmt.Sprintf("the table prefix %q does not make valid table names", prefix)))
	}
	for _, r := range prefix {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return nil, &tablekit.ValidationError{Op: op, Entity: prefix, Detail: "a table prefix holds only ASCII letters and digits", Err: tablekit.ErrInvalidKey}
		}
	}
	if _, err := tablekit.OpenTable[T](acct, prefix+sample, p.topts); err != nil {
		return nil, withOp(op, err)
	}
	return p, nil
}

// usable refuses a PeriodTables its constructor did not make.
func (p *PeriodTables[T]) usable(op string) error {
	if p == nil || p.acct == nil {
		return unusable(op, "NewPeriodTables")
	}
	return nil
}

// name returns the name of the table of the period holding t.
func (p *PeriodTables[T]) name(t time.Time) string {
	return p.prefix + p.period.stamp(p.period.start(t))
}

// Table returns the table of the period holding t, creating it the first
// time this PeriodTables asks for it: write an entity of time t with
// Table(ctx, t), then the Table's verbs. Writing into a period whose table
// retention deleted recently fails: Azure keeps a deleted table's name
// unavailable for a while.
func (p *PeriodTables[T]) Table(ctx context.Context, t time.Time) (*tablekit.Table[T], error) {
	const op = "patterns.PeriodTables.Table"
	if err := p.usable(op); err != nil {
		return nil, err
	}
	tbl, err := p.table(ctx, t)
	return tbl, withOp(op, err)
}

func (p *PeriodTables[T]) table(ctx context.Context, t time.Time) (*tablekit.Table[T], error) {
	name := p.name(t)
	p.mu.Lock()
	tbl, ok := p.created[name]
	p.mu.Unlock()
	if ok {
		return tbl, nil
	}
	tbl, err := tablekit.OpenTable[T](p.acct, name, p.topts)
	if err != nil {
		return nil, err
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.ErrorCode == "TableBeingDeleted" {
			return nil, fmt.Errorf("table %s of the period of %s was deleted recently (retention?) and Azure refuses its name for a while: %w", name, t.UTC().Format(time.RFC3339), err)
		}
		return nil, err
	}
	p.mu.Lock()
	p.created[name] = tbl
	p.mu.Unlock()
	return tbl, nil
}

// List returns the period tables that exist, oldest first: one query of
// the table service (a prefix range over table names).
func (p *PeriodTables[T]) List(ctx context.Context) ([]PeriodTable, error) {
	const op = "patterns.PeriodTables.List"
	if err := p.usable(op); err != nil {
		return nil, err
	}
	tables, err := p.list(ctx)
	return tables, withOp(op, err)
}

func (p *PeriodTables[T]) list(ctx context.Context) ([]PeriodTable, error) {
	end, ok := keys.PrefixEnd(p.prefix)
	f := tablekit.Where("TableName ge ?", p.prefix)
	if ok {
		f = tablekit.Where("TableName ge ? and TableName lt ?", p.prefix, end)
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	text := f.String()
	var out []PeriodTable
	pager := p.acct.Tables().NewListTablesPager(&aztables.ListTablesOptions{Filter: to.Ptr(text)})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, wire.Wrap("ListTables", "", "", "", err)
		}
		for _, t := range page.Tables {
			if t == nil || t.Name == nil {
				continue
			}
			stamp, ok := strings.CutPrefix(*t.Name, p.prefix)
			if !ok || len(stamp) != p.width {
				continue
			}
			start, err := p.period.parse(stamp)
			if err != nil {
				continue // another family of tables sharing the prefix
			}
			out = append(out, PeriodTable{Name: *t.Name, Start: start, End: p.period.add(start, 1)})
		}
	}
	slices.SortFunc(out, func(a, b PeriodTable) int { return a.Start.Compare(b.Start) })
	return out, nil
}

// Query returns the entities matching f in the tables of the periods that
// overlap [from, until), oldest period first; a zero from or until leaves that
// side open. f applies inside each table: narrow by your own time property
// to cut the first and last period exactly. opts.Limit counts across
// tables; opts.Continuation is not supported.
func (p *PeriodTables[T]) Query(ctx context.Context, from, until time.Time, f tablekit.Filter, opts *tablekit.QueryOptions) iter.Seq2[T, error] {
	const op = "patterns.PeriodTables.Query"
	return func(yield func(T, error) bool) {
		var zero T
		if err := p.usable(op); err != nil {
			yield(zero, err)
			return
		}
		if opts != nil && (opts.Continuation != "" || opts.Cursor != nil) {
			yield(zero, &tablekit.ValidationError{Op: op, Property: "Continuation", Detail: "the query spans tables and cannot resume from a continuation token or cursor", Err: tablekit.ErrInvalidInput})
			return
		}
		tables, err := p.list(ctx)
		if err != nil {
			yield(zero, withOp(op, err))
			return
		}
		limit := 0
		var o tablekit.QueryOptions
		if opts != nil {
			o = *opts
			limit = o.Limit
		}
		n := 0
		for _, pt := range tables {
			if !until.IsZero() && !pt.Start.Before(until) || !from.IsZero() && !pt.End.After(from) {
				continue
			}
			tbl, err := tablekit.OpenTable[T](p.acct, pt.Name, p.topts)
			if err != nil {
				yield(zero, withOp(op, err))
				return
			}
			if limit > 0 {
				o.Limit = limit - n
			}
			for v, err := range tbl.Query(ctx, f, &o) {
				if errors.Is(err, tablekit.ErrNotFound) {
					break // dropped by a concurrent retention
				}
				err = withOp(op, err)
				if !yield(v, err) || err != nil {
					return
				}
				n++
			}
			if limit > 0 && n >= limit {
				return
			}
		}
	}
}

// DropBefore deletes the tables of every period that ended at or before
// cutoff (one delete per table) and returns their names, oldest first:
// DropBefore(ctx, time.Now().AddDate(0, 0, -2)) with Daily keeps today,
// yesterday and the day before.
func (p *PeriodTables[T]) DropBefore(ctx context.Context, cutoff time.Time) ([]string, error) {
	const op = "patterns.PeriodTables.DropBefore"
	if err := p.usable(op); err != nil {
		return nil, err
	}
	dropped, err := p.dropBefore(ctx, cutoff)
	return dropped, withOp(op, err)
}

func (p *PeriodTables[T]) dropBefore(ctx context.Context, cutoff time.Time) ([]string, error) {
	tables, err := p.list(ctx)
	if err != nil {
		return nil, err
	}
	var dropped []string
	for _, pt := range tables {
		if pt.End.After(cutoff) {
			continue
		}
		_, err := p.acct.Tables().DeleteTable(ctx, pt.Name, nil)
		if err = wire.Wrap("DeleteTable", "", "", "", err); err != nil && !errors.Is(err, tablekit.ErrNotFound) {
			return dropped, err
		}
		p.mu.Lock()
		delete(p.created, pt.Name)
		p.mu.Unlock()
		dropped = append(dropped, pt.Name)
	}
	return dropped, nil
}
