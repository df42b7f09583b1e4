// Command highvolumedelete shows the high-volume delete pattern: a table
// per day, writes routed by time, queries across days, and retention that
// deletes whole tables instead of their entities.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/highvolumedelete
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/patterns"
)

// Login is one login attempt, kept for a few days. The user is the
// PartitionKey; the RowKey is the attempt's time of day and a number.
type Login struct {
	User string    `table:",pk"`
	ID   string    `table:",rk"`
	At   time.Time `table:"At"`
	OK   bool      `table:"OK"`
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "highvolumedelete:", err)
		os.Exit(1)
	}
	acct, err := tablekit.Open(conn, nil)
	if err == nil {
		err = run(ctx, acct, os.Stdout)
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "highvolumedelete:", err)
		os.Exit(1)
	}
}

// run is the example: it creates tables of its own, uses them, and deletes
// them.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	// An application leaves PeriodOptions.Clock nil (time.Now). The example
	// pins "now" so that its today cannot change in the middle of a run
	// that crosses midnight UTC.
	now := time.Now().UTC()
	logins, err := patterns.NewPeriodTables[Login](acct, "Logins"+rand.Text()[:8], patterns.Daily(),
		&patterns.PeriodOptions{Clock: func() time.Time { return now }})
	if err != nil {
		return err
	}
	days := logins.Period()
	today := days.Start(now)
	// Deletes every table of the example, today's included: every period
	// that ends by the end of today.
	defer logins.DropBefore(context.WithoutCancel(ctx), days.Add(today, 1))
	meter := acct.Meter()

	// Five days of logins, 300 a day spread over the day (today's up to
	// now), by 10 users. Table returns the day's table, created on first
	// use, so a day's logins can be written in bulk: one entity group
	// transaction per user.
	const perDay, users = 300, 10
	for d := 4; d >= 0; d-- {
		start := days.Add(today, -d)
		end := days.Add(start, 1)
		if end.After(now) {
			end = now
		}
		items := make([]Login, perDay)
		for i := range items {
			at := start.Add(end.Sub(start) / perDay * time.Duration(i))
			items[i] = Login{User: fmt.Sprintf("user%02d", i%users), ID: fmt.Sprintf("%s-%03d", at.Format("150405"), i), At: at, OK: i%9 != 0}
		}
		before := meter.Snapshot()
		tbl, err := logins.Table(ctx, start)
		if err != nil {
			return err
		}
		res, err := tbl.BulkWriter(nil).Insert(ctx, items)
		if err != nil {
			return err
		}
		if res.Succeeded != perDay || len(res.Failed) > 0 {
			return fmt.Errorf("bulk insert into %s: %d succeeded, %d failed", tbl.Name(), res.Succeeded, len(res.Failed))
		}
		fmt.Fprintf(out, "wrote %d logins of %s into table %s: %s\n", perDay, start.Format("2006-01-02"), tbl.Name(), cost(meter.Snapshot().Sub(before)))
	}

	// Single writes are routed by their time to their period's table.
	if _, err := logins.Insert(ctx, now, Login{User: "ada", ID: "now", At: now, OK: true}); err != nil {
		return err
	}
	fmt.Fprintf(out, "a login now was routed to today's table, %s\n", logins.Name(now))

	// Retention: keep today and the two days before. Deleting the 600
	// logins of the two older days entity by entity would take queries to
	// find them and 600 deletes, 20 entity group transactions at best (one
	// per user and day); deleting their tables takes one request each.
	before := meter.Snapshot()
	dropped, err := logins.Retain(ctx, 3)
	if err != nil {
		return err
	}
	c := meter.Snapshot().Sub(before)
	want := []string{logins.Name(days.Add(today, -4)), logins.Name(days.Add(today, -3))}
	if strings.Join(dropped, " ") != strings.Join(want, " ") || c.Count("table", "DeleteTable") != 2 {
		return fmt.Errorf("Retain(3) dropped %v with %v, want %v with 2 DeleteTable", dropped, c, want)
	}
	fmt.Fprintf(out, "Retain(3) dropped the tables of the 2 oldest days, %v: %s\n", dropped, cost(c))

	left, err := logins.List(ctx)
	if err != nil {
		return err
	}
	var names []string
	for _, t := range left {
		names = append(names, t.Name)
	}
	if len(left) != 3 || left[2].Name != logins.Name(now) {
		return fmt.Errorf("tables left after Retain(3): %v, want the 3 newest", names)
	}
	fmt.Fprintf(out, "%d tables are left, oldest first: %v\n", len(left), names)

	// A query across periods lists the tables (one request) and reads
	// every table it covers, oldest first. Reading a whole table is meant
	// here (a table holds one day), so AllowTableScan keeps tablekit from
	// logging these queries as table scans.
	scan := &tablekit.QueryOptions{AllowTableScan: true}
	before = meter.Snapshot()
	n, failed := 0, 0
	for l, err := range logins.Query(ctx, time.Time{}, time.Time{}, tablekit.Filter{}, scan) {
		if err != nil {
			return err
		}
		n++
		if !l.OK {
			failed++
		}
	}
	// i%9 == 0 failed: 34 of each day's 300.
	if n != 3*perDay+1 || failed != 3*34 {
		return fmt.Errorf("query saw %d logins (%d failed), want %d (%d failed)", n, failed, 3*perDay+1, 3*34)
	}
	fmt.Fprintf(out, "a query across the retained days read %d logins (%d failed), the dropped days are gone: %s\n", n, failed, cost(meter.Snapshot().Sub(before)))

	// A time range reads only the tables of the periods it overlaps; the
	// filter applies inside each table.
	yesterday := days.Add(today, -1)
	before = meter.Snapshot()
	n = 0
	for l, err := range logins.Query(ctx, yesterday, today, tablekit.Where("OK eq ?", false), scan) {
		if err != nil {
			return err
		}
		if l.OK || l.At.Before(yesterday) || !l.At.Before(today) {
			return fmt.Errorf("the query for yesterday's failed logins returned %+v", l)
		}
		n++
	}
	c = meter.Snapshot().Sub(before)
	if n != 34 || c.Count("table", "QueryEntities") != 1 {
		return fmt.Errorf("yesterday's failed logins: %d with %v, want 34 with one QueryEntities", n, c)
	}
	fmt.Fprintf(out, "a query for yesterday's failed logins read yesterday's table alone: %d logins, %s\n", n, cost(c))

	// Table names are never reused: Azure keeps a deleted table's name
	// unavailable for a while (TableBeingDeleted), so emptying and
	// re-creating one table would stall where a new table per day does not.
	return nil
}

// cost states a meter's counts as storage transactions, by operation.
func cost(s tablekit.MeterSnapshot) string {
	var ops []string
	for _, c := range s.Counts() {
		ops = append(ops, fmt.Sprintf("%s=%d", c.Operation, c.Requests))
	}
	unit := "transactions"
	if s.Total() == 1 {
		unit = "transaction"
	}
	return fmt.Sprintf("%d %s (%s)", s.Total(), unit, strings.Join(ops, " "))
}
