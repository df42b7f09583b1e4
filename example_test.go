package tablekit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testenv"
)

// The typed core end to end: a struct with table tags, a point query, an
// optimistic-concurrency conflict, a range query and a transaction. (The
// example runs against the tests' Azurite; in an application,
// tablekit.Open(connectionString, nil) gives the Account.)
func Example() {
	type Employee struct {
		Department string      `table:",pk"`
		ID         string      `table:",rk"`
		ETag       azcore.ETag `table:",etag"`
		Email      string
		Age        int       `table:"Age,omitempty"` // Edm.Int64
		Hired      time.Time // Edm.DateTime, 100 ns precision
	}
	ctx := context.Background()
	acct := testenv.ExampleAccount()
	emp, err := tablekit.OpenTable[Employee](acct, fmt.Sprintf("ExampleEmployees%d", time.Now().UnixNano()%1e9), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := emp.CreateIfNotExists(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer emp.DeleteTable(ctx)

	for i, id := range []string{"000100", "000150", "000223"} {
		e := Employee{Department: "Sales", ID: id, Email: fmt.Sprintf("e%d@contoso.com", i), Age: 30 + i}
		if _, err := emp.Insert(ctx, e); err != nil {
			fmt.Println(err)
			return
		}
	}

	before := acct.Meter().Snapshot()
	e, err := emp.Get(ctx, "Sales", "000223")
	fmt.Println(e.Email, e.Age, err, "- cost:", acct.Meter().Snapshot().Sub(before).Total())

	stale := e
	e.Age++
	if _, err := emp.Merge(ctx, e, e.ETag); err != nil {
		fmt.Println(err)
		return
	}
	_, err = emp.Merge(ctx, stale, stale.ETag)
	fmt.Println("stale update:", errors.Is(err, tablekit.ErrPreconditionFailed))

	for e, err := range emp.Query(ctx, tablekit.RowKeyRange("Sales", "000100", "000200"), nil) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("in range:", e.ID)
	}

	_, err = emp.Transaction(ctx,
		tablekit.InsertAction(Employee{Department: "Sales", ID: "000300"}),
		tablekit.InsertAction(Employee{Department: "Sales", ID: "000100"}), // exists
	)
	var te *tablekit.TransactionError
	if errors.As(err, &te) {
		fmt.Println("transaction failed at action", te.Index, te.Code)
	}
	// Output:
	// e2@contoso.com 32 <nil> - cost: 1
	// stale update: true
	// in range: 000100
	// in range: 000150
	// transaction failed at action 1 EntityAlreadyExists
}
