package tablekit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
)

// exampleEnv is the account of this package's Examples: the one in
// AZURE_STORAGE_CONNECTION_STRING, or one Azurite started for all of them
// by azurite.EnvOrStart on first use and stopped by TestMain
// (stopExampleAzurite).
var exampleEnv struct {
	once sync.Once
	conn string
	stop func() error
	err  error
}

// exampleAccount opens an Account (with a Meter of its own) for an Example,
// as an application does with tablekit.Open(connectionString, opts).
func exampleAccount(opts *tablekit.Options) *tablekit.Account {
	exampleEnv.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		exampleEnv.conn, exampleEnv.stop, exampleEnv.err = azurite.EnvOrStart(ctx, nil)
	})
	if exampleEnv.err != nil {
		panic(exampleEnv.err)
	}
	acct, err := tablekit.Open(exampleEnv.conn, opts)
	if err != nil {
		panic(err)
	}
	return acct
}

// stopExampleAzurite stops the Examples' Azurite, if they started one.
func stopExampleAzurite() error {
	if exampleEnv.stop == nil {
		return nil
	}
	return exampleEnv.stop()
}

// The typed core end to end: a struct with table tags, a point query, an
// optimistic-concurrency conflict, a range query and a transaction. (The
// example opens its Account with exampleAccount, on an Azurite it starts;
// in an application, tablekit.Open(connectionString, nil) gives it.)
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
	acct := exampleAccount(nil)
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
