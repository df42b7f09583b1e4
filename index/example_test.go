package index_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/index"
)

// The guide's intra-partition secondary index: look employees up by id and
// by email, each index a copy of the employee in its department's
// partition, all written in one transaction.
func ExampleSamePartition() {
	ctx := context.Background()
	// AZURE_STORAGE_CONNECTION_STRING, or an Azurite started for the example.
	conn, stopAzurite, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer stopAzurite()
	acct, err := tablekit.Open(conn, nil)
	if err != nil {
		log.Fatal(err)
	}
	employees, err := tablekit.OpenTable[Employee](acct, fmt.Sprintf("Employees%d", time.Now().UnixNano()%1e9), nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := employees.CreateIfNotExists(ctx); err != nil {
		log.Fatal(err)
	}
	defer employees.DeleteTable(ctx)
	ix, err := index.NewSamePartition(employees, []index.Index[Employee]{
		{Name: "empid", Key: func(e Employee) string { return e.ID }, Unique: true},
		{Name: "email", Key: func(e Employee) string { return e.Email }, Unique: true},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	// One entity group transaction: the employee and both copies.
	_, err = ix.Insert(ctx, Employee{Department: "Sales", ID: "000223", FirstName: "Jon", LastName: "Jones", Email: "jonesj@contoso.com"})
	if err != nil {
		log.Fatal(err)
	}
	// A point query on the email copy; jon carries an ETag Update accepts.
	jon, err := ix.Find(ctx, "Sales", "email", "jonesj@contoso.com")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(jon.ID)
	for e, err := range ix.Range(ctx, "Sales", "empid", "000100", "000200") {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.ID, e.Email)
	}
	// Update with the version read: it reads the stored version, then one
	// transaction replaces the employee and deletes the copy under the old
	// email.
	jon.Email = "jon.jones@contoso.com"
	if _, err := ix.Update(ctx, jon, jon.ETag); err != nil {
		log.Fatal(err) // errors.Is(err, tablekit.ErrPreconditionFailed): changed since read
	}
	_, err = ix.Find(ctx, "Sales", "email", "jonesj@contoso.com")
	fmt.Println("old email found:", err == nil)
	// Modify: read, change, and write in one transaction, retried if
	// another writer got in between.
	jon, err = ix.Modify(ctx, "Sales", "000223", func(e *Employee) error {
		e.LastName = "Jones-Hall"
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(jon.LastName, jon.ETag != "")
	// Query reads the employees only; a plain employees.Query of the
	// partition would return the copies too.
	n := 0
	for _, err := range ix.Query(ctx, tablekit.PartitionEq("Sales"), nil) {
		if err != nil {
			log.Fatal(err)
		}
		n++
	}
	fmt.Println("employees in Sales:", n)
	// Output:
	// 000223
	// old email found: false
	// Jones-Hall true
	// employees in Sales: 1
}

// Index entities, option 2: an index entity per last name in the
// employees' partition, updated in the same transaction as the employee.
func ExampleIndex_list() {
	ctx := context.Background()
	acct, _ := tablekit.Open("UseDevelopmentStorage=true", nil)
	employees, _ := tablekit.OpenTable[Employee](acct, "Employees", nil)
	ix, err := index.NewSamePartition(employees, []index.Index[Employee]{
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: true},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := ix.Insert(ctx, Employee{Department: "Sales", ID: "000223", LastName: "Jones"}); err != nil {
		log.Fatal(err)
	}
	ids, err := ix.IDs(ctx, "Sales", "lastname", "Jones")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ids)
}

// The inter-partition secondary index and index entities in another table
// (option 3) and in blobs (option 1), maintained by a queue worker.
func ExampleCrossPartition() {
	ctx := context.Background()
	acct, _ := tablekit.Open("UseDevelopmentStorage=true", nil)
	employees, _ := tablekit.OpenTable[Employee](acct, "Employees", nil)
	listTable, _ := tablekit.OpenTable[tablekit.Entity](acct, "EmployeeLists", nil)
	byEmail, _ := tablekit.OpenTable[tablekit.Entity](acct, "EmployeesByEmail", nil)
	blobs := acct.Blobs().ServiceClient().NewContainerClient("employee-lists")
	queue, err := archive.OpenClient(acct, "employee-index", nil)
	if err != nil {
		log.Fatal(err)
	}
	ix, err := index.NewCrossPartition(employees, []index.Index[Employee]{
		{Name: "email", Key: func(e Employee) string { return e.Email }, Table: byEmail},
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: true, Table: listTable},
		{Name: "surname", Key: func(e Employee) string { return e.LastName }, List: true, Blobs: blobs, Global: true},
	}, &index.CrossPartitionOptions{Queue: queue})
	if err != nil {
		log.Fatal(err)
	}

	// The worker, usually in another process: any number may share the queue.
	worker, err := archive.OpenWorker(acct, "employee-index", ix, nil)
	if err != nil {
		log.Fatal(err)
	}
	wctx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	go worker.Run(wctx)

	// 4 transactions: read, safety-net message, entity write, message.
	if _, err := ix.Upsert(ctx, Employee{Department: "Sales", ID: "000223", LastName: "Jones", Email: "jonesj@contoso.com"}); err != nil {
		log.Fatal(err)
	}
	for {
		ok, err := ix.CaughtUp(ctx, "Sales", "000223")
		if err != nil {
			log.Fatal(err)
		}
		if ok {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	jon, _ := ix.Find(ctx, "Sales", "email", "jonesj@contoso.com")
	joneses, _ := ix.IDs(ctx, "Sales", "lastname", "Jones")
	fmt.Println(jon.ID, joneses)
}
