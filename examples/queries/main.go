// Command queries shows how to read many entities cheaply: a bulk write
// grouped into entity group transactions, a RowKey range query, a prefix
// query, and continuation tokens that resume a query page by page.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed): go run ./examples/queries
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/keys"
)

// Employee is stored with the department as PartitionKey and a zero-padded
// employee number as RowKey, so that string order is numeric order.
type Employee struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	LastName   string
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "queries:", err)
		os.Exit(1)
	}
	acct, err := tablekit.Open(conn, nil)
	if err == nil {
		err = run(ctx, acct, os.Stdout)
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	if stop(); err != nil {
		fmt.Fprintln(os.Stderr, "queries:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a table of its own, uses it, and deletes it.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	emp, err := tablekit.OpenTable[Employee](acct, "Staff"+rand.Text()[:8], nil)
	if err != nil {
		return err
	}
	if err := emp.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer emp.DeleteTable(context.WithoutCancel(ctx))
	meter := acct.Meter()

	// 300 employees, numbered 000000 to 000299, dealt round-robin to three
	// departments: Sales gets 000000, 000003, ..., Marketing 000001, ...
	departments := []string{"Sales", "Marketing", "Engineering"}
	var staff []Employee
	for i := range 300 {
		id, err := keys.UintN(uint64(i), 6)
		if err != nil {
			return err
		}
		staff = append(staff, Employee{Department: departments[i%3], ID: id, LastName: fmt.Sprintf("Name%03d", i)})
	}

	// A BulkWriter groups the writes by partition and sends each group as
	// entity group transactions of up to 100 entities: one request each.
	before := meter.Snapshot()
	res, err := emp.BulkWriter(nil).Upsert(ctx, staff)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "BulkWriter wrote %d employees in 3 departments (%d failed): %d transactions (one entity group transaction of 100 per partition)\n",
		res.Succeeded, len(res.Failed), meter.Snapshot().Sub(before).Total())

	// A range query: one partition, a RowKey range [lo, hi). The service
	// reads only that slice of the partition. KeyOrder: in RowKey order on
	// Cosmos DB for Table too (sorted there).
	before = meter.Snapshot()
	inOrder := &tablekit.QueryOptions{KeyOrder: true}
	sales, err := tablekit.Collect(emp.Query(ctx, tablekit.RowKeyRange("Sales", "000100", "000200"), inOrder), 0)
	if err != nil || len(sales) == 0 {
		return fmt.Errorf("range query: %d employees, %v", len(sales), err)
	}
	ids := idsOf(sales)
	fmt.Fprintf(out, "range query Sales 000100–000199: %d employees (%s … %s, in RowKey order: %t), %d transaction\n",
		len(ids), ids[0], ids[len(ids)-1], ascending(ids), meter.Snapshot().Sub(before).Total())

	// A prefix query is a range query too: RowKey ge "0002" and lt "0003";
	// its first 5 by key (emp.Top, on Table storage).
	before = meter.Snapshot()
	prefix, err := tablekit.Collect(emp.Query(ctx, tablekit.RowKeyPrefix("Engineering", "0002"), &tablekit.QueryOptions{KeyOrder: true, Limit: 5}), 0)
	if err != nil {
		return err
	}
	ids = idsOf(prefix)
	fmt.Fprintf(out, "prefix query Engineering 0002*, the first %d: %v, %d transaction\n", len(prefix), ids, meter.Snapshot().Sub(before).Total())

	// Continuation tokens: read one page now and hand the token to whoever
	// reads the next one, later or in another process.
	marketing := tablekit.PartitionEq("Marketing")
	page, err := emp.QueryPage(ctx, marketing, &tablekit.QueryOptions{PageSize: 40})
	if err != nil {
		return err
	}
	token := page.Continuation // the next key, encoded, tied to the query's filter
	fmt.Fprintf(out, "first page of Marketing: %d employees, then the continuation token %.24s…\n", len(page.Items), token)

	// Another process would open the table itself and resume with the token.
	read, pages := page.Items, 1
	for page.Continuation != "" {
		page, err = emp.QueryPage(ctx, marketing, &tablekit.QueryOptions{PageSize: 40, Continuation: page.Continuation})
		if err != nil {
			return err
		}
		read, pages = append(read, page.Items...), pages+min(len(page.Items), 1)
	}
	fmt.Fprintf(out, "resumed with the token: %d employees in %d pages, none twice: %t, in RowKey order: %t\n",
		len(read), pages, len(slices.Compact(slices.Sorted(slices.Values(idsOf(read))))) == len(read), ascending(idsOf(read)))

	// A client can hand the token back to resume, but not with another filter.
	before = meter.Snapshot()
	_, err = emp.QueryPage(ctx, tablekit.PartitionEq("Sales"), &tablekit.QueryOptions{PageSize: 40, Continuation: token})
	fmt.Fprintf(out, "the same token with another filter (Sales) is refused (ErrInvalidInput: %t), %d transactions\n",
		errors.Is(err, tablekit.ErrInvalidInput), meter.Snapshot().Sub(before).Total())
	return nil
}

// ascending reports whether ids are in increasing order, none repeated.
func ascending(ids []string) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i-1] >= ids[i] {
			return false
		}
	}
	return true
}

// idsOf returns the employees' ids.
func idsOf(es []Employee) (ids []string) {
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	return ids
}
