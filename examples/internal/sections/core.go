package sections

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/keys"
)

// Employee is the design guide's running example.
type Employee struct {
	Department string      `table:",pk"`
	ID         string      `table:",rk"`
	ETag       azcore.ETag `table:",etag"`
	FirstName  string
	LastName   string
	Email      string
	Age        int       `table:"Age,omitempty"`
	Hired      time.Time `table:"Hired,omitempty"`
}

// openTable creates a table for a section and registers its removal.
func openTable[T any](ctx context.Context, env *demo.Env, base string) (*tablekit.Table[T], error) {
	name := env.TableName(base)
	tbl, err := tablekit.OpenTable[T](env.Account, name, nil)
	if err != nil {
		return nil, err
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		return nil, err
	}
	env.Say("created table %s", name)
	env.Defer(func(ctx context.Context) error { return tbl.DeleteTable(ctx) })
	return tbl, nil
}

// cost runs f and returns the storage transactions it cost.
func cost(env *demo.Env, f func() error) (int64, error) {
	before := env.Account.Meter().Snapshot()
	err := f()
	return env.Account.Meter().Snapshot().Sub(before).Total(), err
}

// Basics shows the typed core: point queries, merge and replace, optimistic
// concurrency with ETags, projection, and an entity group transaction.
func Basics() demo.Section {
	return demo.Section{
		Name:        "basics",
		Description: "typed entities: point query, merge/replace, optimistic concurrency, projection, transactions",
		Run:         runBasics,
	}
}

func runBasics(ctx context.Context, env *demo.Env) error {
	emp, err := openTable[Employee](ctx, env, "TourEmployees")
	if err != nil {
		return err
	}
	ada := Employee{Department: "Sales", ID: "000223", FirstName: "Ada", LastName: "Lovelace", Email: "ada@contoso.com", Age: 36,
		Hired: time.Date(2012, 3, 4, 0, 0, 0, 0, time.UTC)}
	n, err := cost(env, func() error { _, err := emp.Insert(ctx, ada); return err })
	if err != nil {
		return err
	}
	env.Say("inserted Sales/000223 from a Go struct (Age as Edm.Int64, Hired as Edm.DateTime): %d transaction", n)

	var got Employee
	n, err = cost(env, func() error { got, err = emp.Get(ctx, "Sales", "000223", nil); return err })
	if err != nil {
		return err
	}
	env.Say("point query by PartitionKey+RowKey, the cheapest read: %s %s <%s>, %d transaction", got.FirstName, got.LastName, got.Email, n)

	// Merge keeps properties the write does not carry; Replace drops them.
	if _, err := emp.Upsert(ctx, Employee{Department: "Sales", ID: "000223", Email: "ada.l@contoso.com"}, tablekit.Merge); err != nil {
		return err
	}
	merged, _ := emp.Get(ctx, "Sales", "000223", nil)
	env.Say("Merge of a new Email kept FirstName %q and Age %d", merged.FirstName, merged.Age)

	// Optimistic concurrency: two writers read the same version.
	first, second := merged, merged
	first.Age, second.Age = 37, 38
	if _, err := emp.Update(ctx, first, tablekit.Merge, first.ETag); err != nil {
		return err
	}
	_, err = emp.Update(ctx, second, tablekit.Merge, second.ETag)
	if !errors.Is(err, tablekit.ErrPreconditionFailed) {
		return fmt.Errorf("second writer: want ErrPreconditionFailed, got %v", err)
	}
	env.Say("optimistic concurrency: the second writer's stale ETag was refused (ErrPreconditionFailed), nothing lost")

	if _, err := emp.Upsert(ctx, Employee{Department: "Sales", ID: "000223", FirstName: "Ada", Email: "ada@contoso.com"}, tablekit.Replace); err != nil {
		return err
	}
	replaced, _ := emp.Get(ctx, "Sales", "000223", nil)
	env.Say("Replace stored exactly the new properties: LastName now %q, Age %d", replaced.LastName, replaced.Age)

	// Projection: read only the properties you need.
	proj, err := emp.Get(ctx, "Sales", "000223", &tablekit.GetOptions{Select: []string{"Email"}})
	if err != nil {
		return err
	}
	env.Say("projection ($select Email): Email %q, FirstName %q (not read)", proj.Email, proj.FirstName)

	// An entity group transaction: all or nothing, in one partition.
	n, err = cost(env, func() error {
		_, err := emp.Transaction(ctx,
			tablekit.InsertAction(Employee{Department: "Sales", ID: "000224", FirstName: "Grace", LastName: "Hopper"}),
			tablekit.InsertAction(Employee{Department: "Sales", ID: "000225", FirstName: "Alan", LastName: "Turing"}),
			tablekit.DeleteAction(Employee{Department: "Sales", ID: "000223"}, azcore.ETagAny),
		)
		return err
	})
	if err != nil {
		return err
	}
	env.Say("transaction of 2 inserts and a delete: %d transaction", n)
	_, err = emp.Transaction(ctx,
		tablekit.InsertAction(Employee{Department: "Sales", ID: "000226"}),
		tablekit.InsertAction(Employee{Department: "Sales", ID: "000224"}),
	)
	var te *tablekit.TransactionError
	if !errors.As(err, &te) || te.Index != 1 {
		return fmt.Errorf("conflicting transaction: want a TransactionError at action 1, got %v", err)
	}
	env.Say("a conflicting transaction failed as a whole: action %d, %s", te.Index, te.Code)
	return nil
}

// Queries shows range and prefix queries, continuation tokens and bulk
// writes.
func Queries() demo.Section {
	return demo.Section{
		Name:        "queries",
		Description: "bulk writes, range and prefix queries, continuation tokens across processes",
		Run:         runQueries,
	}
}

func runQueries(ctx context.Context, env *demo.Env) error {
	emp, err := openTable[Employee](ctx, env, "TourQueries")
	if err != nil {
		return err
	}
	var staff []Employee
	for i := range 300 {
		dept := []string{"Sales", "Marketing", "Engineering"}[i%3]
		id, err := keys.UintN(uint64(i), 6)
		if err != nil {
			return err
		}
		staff = append(staff, Employee{Department: dept, ID: id, LastName: fmt.Sprintf("Name%03d", i)})
	}
	var res tablekit.BulkResult
	n, err := cost(env, func() error { res, err = emp.BulkWriter(nil).Upsert(ctx, staff); return err })
	if err != nil {
		return err
	}
	env.Say("BulkWriter wrote %d employees in 3 departments: %d transactions (one entity group transaction per partition)", res.Succeeded, n)

	var ids []string
	n, err = cost(env, func() error {
		for e, err := range emp.Query(ctx, tablekit.RowKeyRange("Sales", "000100", "000200"), nil) {
			if err != nil {
				return err
			}
			ids = append(ids, e.ID)
		}
		return nil
	})
	if err != nil {
		return err
	}
	env.Say("range query Sales 000100–000199: %d employees (%s … %s), %d transaction", len(ids), ids[0], ids[len(ids)-1], n)

	prefix, err := emp.Top(ctx, tablekit.RowKeyPrefix("Engineering", "0002"), 5, nil)
	if err != nil {
		return err
	}
	env.Say("prefix query Engineering 0002*: first %d are %s…%s", len(prefix), prefix[0].ID, prefix[len(prefix)-1].ID)

	// Continuation tokens: a page now, the rest later, even in another process.
	page, err := emp.QueryPage(ctx, tablekit.PartitionEq("Marketing"), &tablekit.QueryOptions{PageSize: 40})
	if err != nil {
		return err
	}
	env.Say("first page of Marketing: %d employees; continuation token %.24s… (opaque, safe to hand to a client)", len(page.Items), page.Continuation)
	pages, total := 1, len(page.Items)
	for page.Continuation != "" {
		page, err = emp.QueryPage(ctx, tablekit.PartitionEq("Marketing"), &tablekit.QueryOptions{PageSize: 40, Continuation: page.Continuation})
		if err != nil {
			return err
		}
		pages++
		total += len(page.Items)
	}
	env.Say("resumed with the token: %d employees in %d pages", total, pages)
	if total != 100 {
		return fmt.Errorf("paged through %d Marketing employees, want 100", total)
	}
	return nil
}
