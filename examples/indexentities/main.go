// Command indexentities shows the index entities pattern: employees named
// Jones found through a list of ids per last name, in the guide's three
// places: option 2, an index entity in the employees' partition, changed
// in one transaction with the employee; options 3 and 1, an index entity
// in another partition and a blob per value, kept up to date by a queue
// worker. Against AZURE_STORAGE_CONNECTION_STRING or an Azurite it starts:
//
//	go run ./examples/indexentities
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
}

var staff = []Employee{
	{"Sales", "000223", "Jon", "Jones"}, {"Sales", "000123", "Lisa", "Jones"}, {"Sales", "000152", "Don", "Hall"},
	{"Sales", "000199", "Ana", "Alvarez"}, {"Sales", "000200", "Amy", "Jones"}, {"Marketing", "000150", "Bea", "Jones"},
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err == nil {
		var acct *tablekit.Account
		suffix := strings.ToLower(rand.Text()[:8])
		if acct, err = tablekit.Open(conn, nil); err == nil {
			if err = samePartition(ctx, acct, os.Stdout, "Employees"+suffix); err == nil {
				err = elsewhere(ctx, acct, os.Stdout, "staff"+suffix)
			}
			fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
		}
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "indexentities:", err)
		os.Exit(1)
	}
}

// samePartition is option 2: the index entity Sales/lastname!Jones lists the Joneses' ids.
func samePartition(ctx context.Context, acct *tablekit.Account, out io.Writer, name string) error {
	employees, err := tablekit.OpenTable[Employee](acct, name, nil)
	if err != nil {
		return err
	}
	if err := employees.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer employees.DeleteTable(context.WithoutCancel(ctx))
	ix, err := index.NewSamePartition(employees, []index.Index[Employee]{{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: true}}, nil)
	if err != nil {
		return err
	}
	before := acct.Meter().Snapshot()
	for _, e := range staff {
		if _, err := ix.Insert(ctx, e); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "option 2: %d employees hired, each with a read of its index entity and one transaction: %v\n", len(staff), acct.Meter().Snapshot().Sub(before))
	fmt.Fprintf(out, "the Joneses of Sales, one point query for the index entity: %s\n", show(ix.IDs(ctx, "Sales", "lastname", "Jones")))
	if _, err := ix.Modify(ctx, "Sales", "000123", func(e *Employee) error { e.LastName = "Hall"; return nil }); err != nil {
		return err
	}
	fmt.Fprintf(out, "Lisa Jones marries Don Hall (her entity and both index entities in one transaction); By(lastname, Hall) reads the index entity, then the employees: %s\n", show(firstNames(ix.By(ctx, "Sales", "lastname", "Hall"))))
	return nil
}

// elsewhere is options 3 (lastname!Sales/Jones) and 1 (blob surname/Jones), synced by a worker.
func elsewhere(ctx context.Context, acct *tablekit.Account, out io.Writer, name string) error {
	employees, err := tablekit.OpenTable[Employee](acct, name, nil)
	if err != nil {
		return err
	}
	if err := employees.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer employees.DeleteTable(context.WithoutCancel(ctx))
	blobs := acct.Blobs().ServiceClient().NewContainerClient(name) // created on first write
	defer blobs.Delete(context.WithoutCancel(ctx), nil)
	queue, err := archive.OpenClient(acct, name, nil)
	if err != nil {
		return err
	}
	if _, err := acct.Queues().NewQueueClient(queue.Name()).Create(ctx, nil); err != nil {
		return err
	}
	defer acct.Queues().NewQueueClient(queue.Name()).Delete(context.WithoutCancel(ctx), nil)
	ix, err := index.NewCrossPartition(employees, []index.Index[Employee]{
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: true}, // in the employees' table; Table: another
		{Name: "surname", Key: func(e Employee) string { return e.LastName }, List: true, Blobs: blobs, Global: true},
	}, &index.CrossPartitionOptions{Queue: queue, Delay: 10 * time.Second})
	if err != nil {
		return err
	}
	for _, e := range staff { // 3 requests each: a hidden safety-net message, the insert, a visible message
		if _, err := ix.Insert(ctx, e); err != nil {
			return err
		}
	}
	worker, err := archive.OpenWorker(acct, queue.Name(), ix, &archive.WorkerOptions{PollInterval: 250 * time.Millisecond})
	if err != nil {
		return err
	}
	wctx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	go worker.Run(wctx) // usually in another process
	for _, e := range staff {
		for ok := false; !ok; time.Sleep(20 * time.Millisecond) {
			if ok, err = ix.CaughtUp(ctx, e.Department, e.ID); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(out, "options 3 and 1: once the worker caught up, the index entity lastname!Sales/Jones lists %s\n", show(ix.IDs(ctx, "Sales", "lastname", "Jones")))
	fmt.Fprintf(out, "the blob surname/Jones lists every Jones: %s\n", show(ix.IDs(ctx, "", "surname", "Jones")))
	fmt.Fprintf(out, "By(surname, Jones): the blob, then the employees: %s\n", show(firstNames(ix.By(ctx, "", "surname", "Jones"))))
	return nil
}

// firstNames collects the first names of a lookup's employees.
func firstNames(seq iter.Seq2[Employee, error]) (names []string, err error) {
	for e, err := range seq {
		if err != nil {
			return nil, err
		}
		names = append(names, e.FirstName)
	}
	return names, nil
}

// show formats v, or the error that prevented reading it.
func show(v any, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprint(v)
}
