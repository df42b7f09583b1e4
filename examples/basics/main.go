// Command basics shows tablekit's typed core: a Go struct stored as an
// entity, a point query, merge and replace, optimistic concurrency with
// ETags, a projection and an entity group transaction.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed): go run ./examples/basics
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
)

// Employee is the design guide's running example: the department is the
// PartitionKey, the employee id the RowKey.
type Employee struct {
	Department string      `table:",pk"`
	ID         string      `table:",rk"`
	ETag       azcore.ETag `table:",etag"`
	FirstName  string
	LastName   string
	Email      string
	Age        int       `table:"Age,omitempty"`   // Edm.Int64
	Hired      time.Time `table:"Hired,omitempty"` // Edm.DateTime, 100 ns precision
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "basics:", err)
		os.Exit(1)
	}
	acct, err := tablekit.Open(conn, nil)
	if err == nil {
		err = run(ctx, acct, os.Stdout)
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	if stop(); err != nil {
		fmt.Fprintln(os.Stderr, "basics:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a table of its own, uses it, and deletes it.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	emp, err := tablekit.OpenTable[Employee](acct, "Employees"+rand.Text()[:8], nil)
	if err != nil {
		return err
	}
	if err := emp.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer emp.DeleteTable(context.WithoutCancel(ctx))
	meter := acct.Meter()

	ada := Employee{Department: "Sales", ID: "000223", FirstName: "Ada", LastName: "Lovelace", Email: "ada@contoso.com", Age: 36,
		Hired: time.Date(2012, 3, 4, 0, 0, 0, 0, time.UTC)}
	before := meter.Snapshot()
	if _, err := emp.Insert(ctx, ada); err != nil {
		return err
	}
	fmt.Fprintf(out, "inserted Sales/000223 from a Go struct (Age as Edm.Int64, Hired as Edm.DateTime): %d transaction\n", meter.Snapshot().Sub(before).Total())

	before = meter.Snapshot()
	got, err := emp.Get(ctx, "Sales", "000223")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "point query by PartitionKey+RowKey, the cheapest read: %s %s <%s>, %d transaction\n", got.FirstName, got.LastName, got.Email, meter.Snapshot().Sub(before).Total())

	// Merge keeps the properties the write does not carry; Replace drops
	// them. A struct carries all its fields (an empty string too, unless
	// tagged omitempty), so to merge one property write it through the
	// table's property-bag view.
	email := tablekit.Entity{PartitionKey: "Sales", RowKey: "000223", Properties: map[string]any{"Email": "ada.l@contoso.com"}}
	if _, err := emp.AsEntities().Merge(ctx, email, ""); err != nil {
		return err
	}
	merged, err := emp.Get(ctx, "Sales", "000223")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Merge of a new Email (%s) kept FirstName %q and Age %d\n", merged.Email, merged.FirstName, merged.Age)

	// Optimistic concurrency: two writers read the same version; the second
	// write is refused, so neither change is lost silently.
	first, second := merged, merged
	first.Age, second.Age = 37, 38
	if _, err := emp.Merge(ctx, first, first.ETag); err != nil {
		return err
	}
	if _, err := emp.Merge(ctx, second, second.ETag); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		return fmt.Errorf("second writer: want ErrPreconditionFailed, got %v", err)
	}
	fmt.Fprintln(out, "optimistic concurrency: the second writer's stale ETag was refused (ErrPreconditionFailed), nothing lost")

	if _, err := emp.Upsert(ctx, Employee{Department: "Sales", ID: "000223", FirstName: "Ada", Email: "ada@contoso.com"}); err != nil {
		return err
	}
	replaced, err := emp.Get(ctx, "Sales", "000223")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Replace stored exactly the new properties: LastName now %q, Age %d\n", replaced.LastName, replaced.Age)

	// A point query with a projection reads only the properties named.
	proj, err := tablekit.Collect(emp.Query(ctx, tablekit.PointQuery("Sales", "000223"), &tablekit.QueryOptions{Select: []string{"Email"}}), 1)
	if err != nil || len(proj) != 1 {
		return fmt.Errorf("projection: %d entities, %v", len(proj), err)
	}
	fmt.Fprintf(out, "projection ($select Email): Email %q, FirstName %q (not read)\n", proj[0].Email, proj[0].FirstName)

	// An entity group transaction: all or nothing, in one partition; each
	// action gets its new ETag back.
	before = meter.Snapshot()
	etags, err := emp.Transaction(ctx,
		tablekit.InsertAction(Employee{Department: "Sales", ID: "000224", FirstName: "Grace", LastName: "Hopper"}),
		tablekit.InsertAction(Employee{Department: "Sales", ID: "000225", FirstName: "Alan", LastName: "Turing"}),
		tablekit.DeleteAction(Employee{Department: "Sales", ID: "000223"}, azcore.ETagAny),
	)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "transaction of 2 inserts and a delete: %d transaction, new ETags for the inserts: %t\n", meter.Snapshot().Sub(before).Total(), etags[0] != "" && etags[1] != "")

	_, err = emp.Transaction(ctx,
		tablekit.InsertAction(Employee{Department: "Sales", ID: "000226"}),
		tablekit.InsertAction(Employee{Department: "Sales", ID: "000224"}), // exists
	)
	var te *tablekit.TransactionError
	if !errors.As(err, &te) || te.Index != 1 {
		return fmt.Errorf("conflicting transaction: want a TransactionError at action 1, got %v", err)
	}
	fmt.Fprintf(out, "a conflicting transaction failed as a whole: action %d, %s\n", te.Index, te.Code)
	if _, err := emp.Get(ctx, "Sales", "000226"); !errors.Is(err, tablekit.ErrNotFound) {
		return fmt.Errorf("the failed transaction's first insert: want ErrNotFound, got %v", err)
	}
	fmt.Fprintln(out, "and its first action was not applied: Sales/000226 is not there")
	return nil
}
