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

// Login is one login attempt, kept for a few days.
type Login struct {
	User string    `table:",pk"`
	ID   string    `table:",rk"`
	At   time.Time `table:"At"`
	OK   bool      `table:"OK"`
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err == nil {
		var acct *tablekit.Account
		if acct, err = tablekit.Open(conn, nil); err == nil {
			err = run(ctx, acct, os.Stdout)
			fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
		}
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "highvolumedelete:", err)
		os.Exit(1)
	}
}

// run is the example: it creates tables of its own and deletes them.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	logins, err := patterns.NewPeriodTables[Login](acct, "Logins"+rand.Text()[:8], patterns.Daily(), nil)
	if err != nil {
		return err
	}
	// "now" is pinned, so that today cannot change during a run that
	// crosses midnight UTC. The deferred DropBefore deletes every table.
	now := time.Now().UTC()
	today := now.Truncate(24 * time.Hour)
	defer logins.DropBefore(context.WithoutCancel(ctx), today.AddDate(0, 0, 1))
	meter := acct.Meter()

	// Five days of logins, 300 a day spread over the day (today's up to
	// now), by 10 users. Table routes by time: it returns the table of the
	// period holding a time, created on first use. A day's logins are
	// written in bulk, one entity group transaction per user.
	const perDay, users = 300, 10
	for d := 4; d >= 0; d-- {
		start := today.AddDate(0, 0, -d)
		end := start.AddDate(0, 0, 1)
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
		if _, err := tbl.BulkWriter(nil).Insert(ctx, items); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote %d logins of %s into table %s: %s\n", perDay, start.Format("2006-01-02"), tbl.Name(), cost(meter.Snapshot().Sub(before)))
	}

	// Retention: keep today and the two days before. Deleting 600 logins
	// one by one takes queries and 20 transactions at best; their two
	// tables take a request each.
	before := meter.Snapshot()
	dropped, err := logins.DropBefore(ctx, today.AddDate(0, 0, -2))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "DropBefore(2 days ago) dropped the tables of the 2 oldest days, %v: %s\n", dropped, cost(meter.Snapshot().Sub(before)))
	left, err := logins.List(ctx)
	if err != nil {
		return err
	}
	var names []string
	for _, t := range left {
		names = append(names, t.Name)
	}
	fmt.Fprintf(out, "%d tables are left, oldest first: %v\n", len(left), names)

	// A query across periods lists the tables (one request) and reads those
	// it covers, oldest first; whole tables, as AllowTableScan says.
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
	fmt.Fprintf(out, "a query across the retained days read %d logins (%d failed), the dropped days are gone: %s\n", n, failed, cost(meter.Snapshot().Sub(before)))

	// A time range reads only the tables it overlaps; the filter applies
	// inside each.
	before = meter.Snapshot()
	n = 0
	for _, err := range logins.Query(ctx, today.AddDate(0, 0, -1), today, tablekit.Where("OK eq ?", false), scan) {
		if err != nil {
			return err
		}
		n++
	}
	fmt.Fprintf(out, "a query for yesterday's failed logins read yesterday's table alone: %d logins, %s\n", n, cost(meter.Snapshot().Sub(before)))
	return nil
}

// cost states a meter's counts as storage transactions, by operation.
func cost(s tablekit.MeterSnapshot) string {
	var ops []string
	for _, c := range s.Counts() {
		ops = append(ops, fmt.Sprintf("%s=%d", c.Operation, c.Requests))
	}
	return fmt.Sprintf("%d transaction%s (%s)", s.Total(), map[bool]string{true: "s"}[s.Total() != 1], strings.Join(ops, " "))
}
