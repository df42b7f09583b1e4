// Command dataseries shows the data series pattern: a whole series (the
// messages an employee sent in each hour of a day) in one entity with a
// property per hour, read with one point query and updated slot by slot
// with optimistic concurrency, so that concurrent increments are never
// lost.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/dataseries
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/patterns"
)

// Day is the application's view of a series entity: an employee's messages
// per hour of one day, in the properties H00..H23 patterns.Series writes.
type Day struct {
	Employee string      `table:",pk"`
	Date     string      `table:",rk"`
	ETag     azcore.ETag `table:",etag"`

	H00, H01, H02, H03, H04, H05, H06, H07, H08, H09, H10, H11 int64
	H12, H13, H14, H15, H16, H17, H18, H19, H20, H21, H22, H23 int64
}

// Total returns the day's messages.
func (d Day) Total() int64 {
	return d.H00 + d.H01 + d.H02 + d.H03 + d.H04 + d.H05 + d.H06 + d.H07 + d.H08 + d.H09 + d.H10 + d.H11 +
		d.H12 + d.H13 + d.H14 + d.H15 + d.H16 + d.H17 + d.H18 + d.H19 + d.H20 + d.H21 + d.H22 + d.H23
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
		fmt.Fprintln(os.Stderr, "dataseries:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a table of its own, uses it, and deletes it.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	tbl, err := tablekit.OpenTable[Day](acct, "MessageStats"+rand.Text()[:8], nil)
	if err != nil {
		return err
	}
	if err = tbl.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer tbl.DeleteTable(context.WithoutCancel(ctx))
	// The Series writes through the table's property-bag view: 24 slots
	// named H00..H23 (the defaults).
	s, err := patterns.NewSeries(tbl.AsEntities(), nil)
	if err != nil {
		return err
	}
	meter := acct.Meter()
	fmt.Fprintln(out, "one entity per employee and day (PartitionKey employee, RowKey date) holds the messages sent in each hour, 24 properties H00..H23")

	// Four writers count messages of hour 9 at once. Each Add merges the
	// slot only if the ETag it read is unchanged, else pauses and retries.
	const writers, each = 4, 25
	before := meter.Snapshot()
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := 0; i < each && errs[w] == nil; i++ {
				_, errs[w] = s.Add(ctx, "emp000223", "2025-03-14", 9, 1)
			}
		})
	}
	if wg.Wait(); errors.Join(errs...) != nil {
		return errors.Join(errs...)
	}
	c := meter.Snapshot().Sub(before)
	writes := c.Count("table", "MergeEntity") + c.Count("table", "InsertEntity")
	fmt.Fprintf(out, "%d writers added 1 to hour 9, %d times each: %d writes, of which %d lost the race and were retried, %s\n",
		writers, each, writes, writes-writers*each, cost(c))
	if _, err := s.Add(ctx, "emp000223", "2025-03-14", 17, 42); err != nil {
		return err
	}

	before = meter.Snapshot()
	values, err := s.Get(ctx, "emp000223", "2025-03-14")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the whole day in one point query: H09=%d, H17=%d, %d values (%s)\n", values[9], values[17], len(values), cost(meter.Snapshot().Sub(before)))

	// Modify changes several slots in one conditional merge.
	before = meter.Snapshot()
	values, err = s.Modify(ctx, "emp000223", "2025-03-14", func(v []int64) error {
		v[9] -= 10
		v[10] += 10
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Modify moved 10 messages from hour 9 to hour 10 in one conditional merge: H09=%d, H10=%d (%s)\n", values[9], values[10], cost(meter.Snapshot().Sub(before)))

	// A series entity is an ordinary entity: the application reads Days.
	if _, err := s.Add(ctx, "emp000223", "2025-03-15", 9, 7); err != nil {
		return err
	}
	before = meter.Snapshot()
	var days []string
	var total int64
	for d, err := range tbl.Query(ctx, tablekit.PartitionEq("emp000223"), &tablekit.QueryOptions{KeyOrder: true}) {
		if err != nil {
			return err
		}
		days = append(days, fmt.Sprintf("%s: %d (H09=%d H10=%d H17=%d)", d.Date, d.Total(), d.H09, d.H10, d.H17))
		total += d.Total()
	}
	fmt.Fprintf(out, "the application's Table[Day] reads the days of emp000223 as structs: %s; %d messages in all (%s)\n", strings.Join(days, ", "), total, cost(meter.Snapshot().Sub(before)))
	return nil
}

// cost states what a step cost in storage transactions, by operation.
func cost(s tablekit.MeterSnapshot) string {
	var ops []string
	for _, c := range s.Counts() {
		ops = append(ops, fmt.Sprintf("%s=%d", c.Operation, c.Requests))
	}
	return fmt.Sprintf("%d transaction%s (%s)", s.Total(), map[bool]string{true: "s"}[s.Total() != 1], strings.Join(ops, " "))
}
