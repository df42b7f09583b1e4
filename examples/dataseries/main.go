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
// per hour of one day, in the properties H00..H23 that patterns.Series
// writes (Edm.Int64; an hour never written reads as 0).
type Day struct {
	Employee string `table:",pk"`
	Date     string `table:",rk"`

	H00, H01, H02, H03, H04, H05, H06, H07, H08, H09, H10, H11 int64
	H12, H13, H14, H15, H16, H17, H18, H19, H20, H21, H22, H23 int64

	ETag azcore.ETag `table:",etag"`
}

// Total returns the day's messages.
func (d Day) Total() int64 {
	return d.H00 + d.H01 + d.H02 + d.H03 + d.H04 + d.H05 + d.H06 + d.H07 + d.H08 + d.H09 + d.H10 + d.H11 +
		d.H12 + d.H13 + d.H14 + d.H15 + d.H16 + d.H17 + d.H18 + d.H19 + d.H20 + d.H21 + d.H22 + d.H23
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dataseries:", err)
		os.Exit(1)
	}
	acct, err := tablekit.Open(conn, nil)
	if err == nil {
		err = run(ctx, acct, os.Stdout)
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	stop()
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
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer tbl.DeleteTable(context.WithoutCancel(ctx))
	// The Series writes the application's table through its property-bag
	// view: 24 slots named H00..H23 (the defaults).
	s, err := patterns.NewSeries(tbl, nil)
	if err != nil {
		return err
	}
	meter := acct.Meter()
	fmt.Fprintf(out, "one entity per employee and day (PartitionKey employee, RowKey date) holds the messages sent in each hour, %d properties H00..H23\n", s.Slots())

	// Four writers count messages of hour 9 at the same time. Each Add
	// reads the entity and merges the slot only if its ETag is unchanged;
	// a writer that lost the race waits a random, growing pause and tries
	// again.
	const writers, each = 4, 25
	before := meter.Snapshot()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for range each {
				if _, err := s.Add(ctx, "emp000223", "2025-03-14", 9, 1); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	c := meter.Snapshot().Sub(before)
	// Every Add writes once; the writes beyond that were refused (the
	// ETag had changed, or another writer had created the entity first).
	writes := c.Count("table", "MergeEntity") + c.Count("table", "InsertEntity")
	fmt.Fprintf(out, "%d writers added 1 to hour 9, %d times each: %d writes, of which %d lost the race and were retried, %s\n",
		writers, each, writes, writes-writers*each, cost(c))
	if err := s.Set(ctx, "emp000223", "2025-03-14", 17, 42); err != nil {
		return err
	}

	before = meter.Snapshot()
	values, err := s.Get(ctx, "emp000223", "2025-03-14")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the whole day in one point query: H09=%d, H17=%d, %d values (%s)\n", values[9], values[17], len(values), cost(meter.Snapshot().Sub(before)))
	if values[9] != writers*each || values[17] != 42 {
		return fmt.Errorf("hour 9 holds %d and hour 17 %d, want %d and 42: an increment was lost", values[9], values[17], writers*each)
	}

	// Modify changes several slots in one conditional merge: here a
	// correction moves 10 messages counted in hour 9 to hour 10.
	before = meter.Snapshot()
	values, err = s.Modify(ctx, "emp000223", "2025-03-14", func(v []int64) error {
		if v[9] < 10 {
			return errors.New("hour 9 has fewer than 10 messages")
		}
		v[9] -= 10
		v[10] += 10
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Modify moved 10 messages from hour 9 to hour 10 in one conditional merge: H09=%d, H10=%d (%s)\n", values[9], values[10], cost(meter.Snapshot().Sub(before)))

	// A series entity is an ordinary entity: the application reads it as
	// a Day, and queries a range of days of one employee in one query.
	if _, err := s.Add(ctx, "emp000223", "2025-03-15", 9, 7); err != nil {
		return err
	}
	before = meter.Snapshot()
	var days []string
	var total int64
	for d, err := range tbl.Query(ctx, tablekit.PartitionEq("emp000223"), nil) {
		if err != nil {
			return err
		}
		days = append(days, fmt.Sprintf("%s: %d (H09=%d H10=%d H17=%d)", d.Date, d.Total(), d.H09, d.H10, d.H17))
		total += d.Total()
	}
	fmt.Fprintf(out, "the application's Table[Day] reads the days of emp000223 as structs: %s; %d messages in all (%s)\n", strings.Join(days, ", "), total, cost(meter.Snapshot().Sub(before)))
	if len(days) != 2 || total != writers*each+42+7 {
		return fmt.Errorf("read %d days with %d messages, want 2 days and %d", len(days), total, writers*each+42+7)
	}

	// 1,440 slots, one per minute of a day: more properties than an
	// entity may have (252). A longer series needs patterns.Wide.
	_, err = patterns.NewSeries(tbl, &patterns.SeriesOptions{Prefix: "M", Slots: 1440})
	if !errors.Is(err, tablekit.ErrTooLarge) {
		return fmt.Errorf("a 1,440-slot series: want ErrTooLarge, got %v", err)
	}
	fmt.Fprintf(out, "a series of every minute of a day does not fit one entity, refused with ErrTooLarge: %v\n", err)
	return nil
}

// cost states what a step cost in storage transactions, by operation.
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
