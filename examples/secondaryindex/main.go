// Command secondaryindex shows the secondary index patterns: employees
// found by email and last name through a same-partition index, kept
// consistent in one entity group transaction, and a cross-partition index,
// kept eventually consistent by a queue worker. It runs against
// AZURE_STORAGE_CONNECTION_STRING, or an Azurite it starts:
//
//	go run ./examples/secondaryindex
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/index"
)

// Employee is the guide's employee, keyed by department and id.
type Employee struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	FirstName  string
	LastName   string
	Email      string
}

var staff = []Employee{
	{"Sales", "000223", "Jon", "Jones", "jonesj@contoso.com"}, {"Sales", "000123", "Lisa", "Jones", "lisaj@contoso.com"},
	{"Sales", "000199", "Ana", "Alvarez", "alvareza@contoso.com"}, {"Sales", "000100", "Adam", "Barr", "adamb@contoso.com"},
	{"Sales", "000200", "Amy", "Jones", "amyj@contoso.com"}, {"Marketing", "000150", "Bea", "Jones", "aj@contoso.com"},
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err == nil {
		var acct *tablekit.Account
		suffix := rand.Text()[:8]
		if acct, err = tablekit.Open(conn, nil); err == nil {
			if err = samePartition(ctx, acct, os.Stdout, "Employees"+suffix); err == nil {
				err = crossPartition(ctx, acct, os.Stdout, "Staff"+suffix)
			}
			fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
		}
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "secondaryindex:", err)
		os.Exit(1)
	}
}

func samePartition(ctx context.Context, acct *tablekit.Account, out io.Writer, name string) error {
	employees, err := tablekit.OpenTable[Employee](acct, name, nil)
	if err != nil {
		return err
	}
	if err := employees.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer employees.DeleteTable(context.WithoutCancel(ctx))
	// Copies in the employee's partition: RowKeys email!jonesj@contoso..com, lastname!Jones!000223.
	ix, err := index.NewSamePartition(employees, []index.Index[Employee]{
		{Name: "email", Key: func(e Employee) string { return e.Email }, Unique: true},
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, Properties: []string{"FirstName", "LastName"}},
	}, nil)
	if err != nil {
		return err
	}
	before := acct.Meter().Snapshot()
	for _, e := range staff {
		if _, err := ix.Insert(ctx, e); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "same partition: %d employees inserted, each with its 2 copies in one transaction: %v\n", len(staff), acct.Meter().Snapshot().Sub(before))
	fmt.Fprintf(out, "by email jonesj@contoso.com (one point query): %s\n", describe(ix.By(ctx, "Sales", "email", "jonesj@contoso.com")))
	fmt.Fprintf(out, "Joneses in Sales (copies hold the names only): %s\n", describe(ix.By(ctx, "Sales", "lastname", "Jones")))
	before = acct.Meter().Snapshot()
	if _, err := ix.Modify(ctx, "Sales", "000223", func(e *Employee) error { e.Email = "jon.jones@contoso.com"; return nil }); err != nil {
		return err
	}
	fmt.Fprintf(out, "Jon's new email (Modify: a read, then entity and copies in one transaction on the version read): %v; by the old email: %s\n", acct.Meter().Snapshot().Sub(before), describe(ix.By(ctx, "Sales", "email", "jonesj@contoso.com")))
	fmt.Fprintf(out, "the employees of Sales (Query skips the copies Table.Query returns too): %s\n", describe(ix.Query(ctx, tablekit.PartitionEq("Sales"), &tablekit.QueryOptions{KeyOrder: true})))
	return nil
}

// crossPartition keeps copies in partitions email!Sales and anyemail, synced by a queue worker.
func crossPartition(ctx context.Context, acct *tablekit.Account, out io.Writer, name string) error {
	employees, err := tablekit.OpenTable[Employee](acct, name, nil)
	if err != nil {
		return err
	}
	if err := employees.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer employees.DeleteTable(context.WithoutCancel(ctx))
	queue, err := archive.OpenClient(acct, "q"+strings.ToLower(name), nil)
	if err != nil {
		return err
	}
	if _, err := acct.Queues().NewQueueClient(queue.Name()).Create(ctx, nil); err != nil {
		return err
	}
	defer acct.Queues().NewQueueClient(queue.Name()).Delete(context.WithoutCancel(ctx), nil)
	ix, err := index.NewCrossPartition(employees, []index.Index[Employee]{
		{Name: "email", Key: func(e Employee) string { return e.Email }},
		{Name: "anyemail", Key: func(e Employee) string { return e.Email }, Global: true},
	}, &index.CrossPartitionOptions{Queue: queue, Delay: 10 * time.Second})
	if err != nil {
		return err
	}
	for _, e := range staff {
		if _, err := ix.Insert(ctx, e); err != nil {
			return err
		}
	}
	caught, err := ix.CaughtUp(ctx, "Sales", "000223")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "cross partition: %d employees inserted; before a worker runs, CaughtUp(Sales, 000223) = %v\n", len(staff), caught)
	worker, err := archive.OpenWorker(acct, queue.Name(), ix, &archive.WorkerOptions{PollInterval: 250 * time.Millisecond})
	if err != nil {
		return err
	}
	wctx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	go worker.Run(wctx)
	for _, e := range staff { // the worker syncs each employee's copies
		for ok := false; !ok; time.Sleep(20 * time.Millisecond) {
			if ok, err = ix.CaughtUp(ctx, e.Department, e.ID); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(out, "once synced, by email in partition email!Sales: %s\n", describe(ix.By(ctx, "Sales", "email", "jonesj@contoso.com")))
	fmt.Fprintf(out, "emails starting with \"a\" in all departments: %s\n", describe(ix.Prefix(ctx, "", "anyemail", "a")))
	fmt.Fprintf(out, "the employees (Query skips copies and sync records): %s\n", describe(ix.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true, KeyOrder: true})))
	return nil
}

// describe formats entities as "[id name <email>, ...]".
func describe(seq iter.Seq2[Employee, error]) string {
	var parts []string
	for e, err := range seq {
		if err != nil {
			return "error: " + err.Error()
		}
		parts = append(parts, strings.TrimSuffix(fmt.Sprintf("%s %s %s <%s>", e.ID, e.FirstName, e.LastName, e.Email), " <>"))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
