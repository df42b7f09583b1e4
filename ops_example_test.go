package tablekit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tablekit/tablekit"
)

// opsEmployee is the entity of the operations' examples.
type opsEmployee struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	Name       string
	Email      string
	Age        int
}

// opsTable opens a fresh table of a few employees for an example, and
// returns it with the function that removes it. (An application opens its
// Account with tablekit.Open(connectionString, nil).)
func opsTable(ctx context.Context) (*tablekit.Account, *tablekit.Table[opsEmployee], func()) {
	acct := exampleAccount(nil)
	emp, err := tablekit.OpenTable[opsEmployee](acct, fmt.Sprintf("ExampleOps%d", time.Now().UnixNano()%1e9), nil)
	if err != nil {
		panic(err)
	}
	if err := emp.CreateIfNotExists(ctx); err != nil {
		panic(err)
	}
	var items []opsEmployee
	for i := range 5 {
		items = append(items, opsEmployee{Department: "Sales", ID: fmt.Sprintf("%06d", 100+i), Name: fmt.Sprintf("Employee %d", i), Email: fmt.Sprintf("e%d@contoso.com", i), Age: 30 + i})
	}
	if _, err := emp.BulkWriter(nil).Insert(ctx, items); err != nil {
		panic(err)
	}
	return acct, emp, func() { emp.DeleteTable(ctx) }
}

// Exists asks whether an entity is there without reading its properties;
// Count counts a filter's matches reading only their keys. The Meter says
// what each cost.
func ExampleTable_Count() {
	ctx := context.Background()
	acct, emp, done := opsTable(ctx)
	defer done()

	before := acct.Meter().Snapshot()
	n, err := emp.Count(ctx, tablekit.PointQuery("Sales", "000102"))
	fmt.Println("exists:", n == 1, err)
	n, err = emp.Count(ctx, tablekit.PointQuery("Sales", "999999"))
	fmt.Println("exists:", n == 1, err)
	fmt.Println("transactions:", acct.Meter().Snapshot().Sub(before).Total()) // a point query each
	// Count reads keys only, a transaction per page of up to 1,000 (the
	// service may answer more pages: see Table.QueryPage).
	n, err = emp.Count(ctx, tablekit.RowKeyRange("Sales", "000101", "000104"))
	fmt.Println("in range:", n, err)
	// Output:
	// exists: true <nil>
	// exists: false <nil>
	// transactions: 2
	// in range: 3 <nil>
}

// Collect gathers a query into a slice, with a cap: a result larger than
// expected is an error, not an exhausted heap.
func ExampleCollect() {
	ctx := context.Background()
	_, emp, done := opsTable(ctx)
	defer done()

	all, err := tablekit.Collect(emp.Query(ctx, tablekit.PartitionEq("Sales"), nil), 100)
	fmt.Println(len(all), err)
	some, err := tablekit.Collect(emp.Query(ctx, tablekit.PartitionEq("Sales"), nil), 3)
	fmt.Println(len(some), err)
	// Output:
	// 5 <nil>
	// 3 tablekit: Collect: invalid input: the query has more results than the limit; limit: <= 3 values
}

// QueryAs reads a projection into another struct type: only the
// properties P names are sent back ($select is derived from P).
func ExampleQueryAs() {
	ctx := context.Background()
	_, emp, done := opsTable(ctx)
	defer done()

	type contact struct {
		ID    string `table:",rk"`
		Email string
	}
	for c, err := range tablekit.QueryAs[contact](ctx, emp, tablekit.RowKeyRange("Sales", "000100", "000102"), nil) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(c.ID, c.Email)
	}
	// Output:
	// 000100 e0@contoso.com
	// 000101 e1@contoso.com
}

// A Cursor resumes a loop broken off early after the last entity it saw,
// in this process or another: its Token is a string to keep.
func ExampleCursor() {
	ctx := context.Background()
	_, emp, done := opsTable(ctx)
	defer done()

	var cur tablekit.Cursor
	for e, err := range emp.Query(ctx, tablekit.PartitionEq("Sales"), &tablekit.QueryOptions{Cursor: &cur}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("first loop:", e.ID)
		if e.ID == "000101" {
			break
		}
	}
	token := cur.Token() // store it anywhere

	for e, err := range emp.Query(ctx, tablekit.PartitionEq("Sales"), &tablekit.QueryOptions{Continuation: token}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("resumed:", e.ID)
	}
	// Output:
	// first loop: 000100
	// first loop: 000101
	// resumed: 000102
	// resumed: 000103
	// resumed: 000104
}
