// Command queries shows how to read many entities cheaply: a bulk write
// grouped into entity group transactions, a RowKey range query, a prefix
// query, and continuation tokens that resume a query page by page.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/queries
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

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
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "queries:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a table of its own, uses it, and deletes it.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	name := "Staff" + rand.Text()[:8]
	emp, err := tablekit.OpenTable[Employee](acct, name, nil)
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
	if res.Succeeded != len(staff) || len(res.Failed) > 0 {
		return fmt.Errorf("bulk write: %d succeeded, %d failed (first: %v)", res.Succeeded, len(res.Failed), firstFailure(res))
	}
	fmt.Fprintf(out, "BulkWriter wrote %d employees in 3 departments: %d transactions (one entity group transaction of 100 per partition)\n",
		res.Succeeded, meter.Snapshot().Sub(before).Total())

	// A range query: one partition, a RowKey range [lo, hi). The service
	// reads only that slice of the partition.
	before = meter.Snapshot()
	var ids []string
	for e, err := range emp.Query(ctx, tablekit.RowKeyRange("Sales", "000100", "000200"), nil) {
		if err != nil {
			return err
		}
		ids = append(ids, e.ID)
	}
	if len(ids) != 33 || !ascending(ids) || ids[0] != "000102" || ids[len(ids)-1] != "000198" {
		return fmt.Errorf("range query Sales 000100–000199: got %v, want the 33 ids 000102, 000105, ..., 000198 in order", ids)
	}
	fmt.Fprintf(out, "range query Sales 000100–000199: %d employees (%s … %s, in RowKey order), %d transaction\n",
		len(ids), ids[0], ids[len(ids)-1], meter.Snapshot().Sub(before).Total())

	// A prefix query is a range query too: RowKey ge "0002" and lt "0003".
	before = meter.Snapshot()
	prefix, err := emp.Top(ctx, tablekit.RowKeyPrefix("Engineering", "0002"), 5, nil)
	if err != nil {
		return err
	}
	ids = ids[:0]
	for _, e := range prefix {
		ids = append(ids, e.ID)
	}
	if strings.Join(ids, " ") != "000200 000203 000206 000209 000212" {
		return fmt.Errorf("prefix query Engineering 0002*: got %v", ids)
	}
	fmt.Fprintf(out, "prefix query Engineering 0002*, the first %d: %v, %d transaction\n", len(prefix), ids, meter.Snapshot().Sub(before).Total())

	// Continuation tokens: read one page now and hand the token to whoever
	// reads the next one, later or in another process.
	marketing := tablekit.PartitionEq("Marketing")
	page, err := emp.QueryPage(ctx, marketing, &tablekit.QueryOptions{PageSize: 40})
	if err != nil {
		return err
	}
	token := page.Continuation
	fmt.Fprintf(out, "first page of Marketing: %d employees, then the continuation token %.24s…\n", len(page.Items), token)

	// Another process would open the table itself and resume with the
	// token alone; a second Table value stands in for it here.
	resumer, err := tablekit.OpenTable[Employee](acct, name, nil)
	if err != nil {
		return err
	}
	read := page.Items
	pages := 1
	for page.Continuation != "" {
		page, err = resumer.QueryPage(ctx, marketing, &tablekit.QueryOptions{PageSize: 40, Continuation: page.Continuation})
		if err != nil {
			return err
		}
		if len(page.Items) > 0 {
			pages++
		}
		read = append(read, page.Items...)
	}
	ids = ids[:0]
	for _, e := range read {
		ids = append(ids, e.ID)
	}
	if len(ids) != 100 || !ascending(ids) {
		return fmt.Errorf("paged through %d Marketing employees, want 100 in RowKey order, none twice", len(ids))
	}
	fmt.Fprintf(out, "resumed with the token: %d employees in %d pages, in RowKey order, none twice\n", len(ids), pages)

	// The token is not a secret: it is the next key, encoded, and tied to
	// the query's filter. A client can hand it back to resume, but the
	// filter is the server's: with another one the token is refused.
	before = meter.Snapshot()
	_, err = emp.QueryPage(ctx, tablekit.PartitionEq("Sales"), &tablekit.QueryOptions{PageSize: 40, Continuation: token})
	if !errors.Is(err, tablekit.ErrInvalidInput) {
		return fmt.Errorf("a Marketing token used for a Sales query: want ErrInvalidInput, got %v", err)
	}
	fmt.Fprintf(out, "the same token with another filter (Sales) is refused (ErrInvalidInput), %d transactions\n", meter.Snapshot().Sub(before).Total())
	return nil
}

// ascending reports whether ids are in strictly increasing string order,
// which also means that none is repeated.
func ascending(ids []string) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i-1] >= ids[i] {
			return false
		}
	}
	return true
}

// firstFailure is the error of a bulk write's first failed item, or nil.
func firstFailure(res tablekit.BulkResult) error {
	if len(res.Failed) == 0 {
		return nil
	}
	return res.Failed[0].Err
}
