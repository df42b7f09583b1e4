// Command indexentities shows the index entities pattern: every employee
// named Jones found through a list of ids kept per last name, with the
// design guide's three options for where the list lives.
//
// A value shared by many entities (a last name) makes a poor RowKey for a
// copy of each entity; the guide keeps one "index entity" per value that
// lists the ids instead:
//
//   - option 2: in the employees' partition, updated in the same entity
//     group transaction as the employee (package index's SamePartition with a List
//     index);
//   - option 3: in another table, kept eventually consistent by a queue
//     worker (CrossPartition with an EntityList);
//   - option 1: a blob per value, for lists too long for an entity (CrossPartition
//     with a BlobList).
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/indexentities
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/keys"
)

// Employee is the guide's employee: the department is the PartitionKey,
// the employee id the RowKey.
type Employee struct {
	Department string      `table:",pk"`
	ID         string      `table:",rk"`
	ETag       azcore.ETag `table:",etag"`
	FirstName  string
	LastName   string
}

var staff = []Employee{
	{Department: "Sales", ID: "000223", FirstName: "Jon", LastName: "Jones"},
	{Department: "Sales", ID: "000123", FirstName: "Lisa", LastName: "Jones"},
	{Department: "Sales", ID: "000152", FirstName: "Don", LastName: "Hall"},
	{Department: "Sales", ID: "000199", FirstName: "Ana", LastName: "Alvarez"},
	{Department: "Sales", ID: "000200", FirstName: "Amy", LastName: "Jones"},
	{Department: "Marketing", ID: "000150", FirstName: "Bea", LastName: "Jones"},
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "indexentities:", err)
		os.Exit(1)
	}
	acct, err := tablekit.Open(conn, nil)
	if err == nil {
		err = run(ctx, acct, os.Stdout)
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "indexentities:", err)
		os.Exit(1)
	}
}

// run is the example: option 2, then options 3 and 1. It creates its
// tables, container and queue, and deletes them.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	suffix := rand.Text()[:8]
	if err := samePartition(ctx, acct, out, suffix); err != nil {
		return err
	}
	return elsewhere(ctx, acct, out, suffix)
}

// samePartition is option 2: an index entity per last name in the
// employees' partition, changed in the same transaction as the employee.
func samePartition(ctx context.Context, acct *tablekit.Account, out io.Writer, suffix string) error {
	name := "Employees" + suffix
	employees, err := tablekit.OpenTable[Employee](acct, name, nil)
	if err != nil {
		return err
	}
	if err := employees.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer employees.DeleteTable(context.WithoutCancel(ctx))
	meter := acct.Meter()

	ix, err := index.NewSamePartition(employees, []index.Index[Employee]{
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: true},
	}, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Option 2: table %s holds the employees and, in the same department partition, one index entity per last name (RowKey lastname!Jones) listing their ids\n", name)
	before := meter.Snapshot()
	for _, e := range staff {
		if _, err := ix.Insert(ctx, e); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "hired %d employees: each read its index entity, then inserted the employee and updated the index entity in one transaction, conditional on the index entity's ETag: %v\n", len(staff), meter.Snapshot().Sub(before))

	ids, err := ix.IDs(ctx, "Sales", "lastname", "Jones")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the Joneses of Sales: one point query for the index entity gives %s\n", rowKeys(ids))
	if got := rowKeys(ids); got != "[000123 000200 000223]" {
		return fmt.Errorf("the Jones index entity lists %s", got)
	}
	rk, err := keys.Compound("lastname", "Jones")
	if err != nil {
		return err
	}
	ent, err := employees.AsEntities().Get(ctx, "Sales", rk)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the index entity Sales/%s stores %s=%q and %s=%d (long lists continue in IDs2, IDs3, ... up to 1 MiB)\n", rk, index.IDsProperty, ent.Properties[index.IDsProperty], index.CountProperty, ent.Properties[index.CountProperty])

	// By reads the index entity, then the employees it lists, several at
	// once, in the list's order.
	before = meter.Snapshot()
	names, err := firstNames(ix.By(ctx, "Sales", "lastname", "Jones"))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "By(lastname, Jones) reads the index entity, then the %d employees (up to 16 at once): %v, %d requests\n", len(names), names, meter.Snapshot().Sub(before).Total())

	// Lisa Jones marries Don Hall: Modify reads her, reads the Jones and
	// Hall index entities, and writes all three in one transaction.
	before = meter.Snapshot()
	if _, err := ix.Modify(ctx, "Sales", "000123", func(e *Employee) error {
		e.LastName = "Hall"
		return nil
	}); err != nil {
		return err
	}
	cost := meter.Snapshot().Sub(before)
	jones, err := ix.IDs(ctx, "Sales", "lastname", "Jones")
	if err != nil {
		return err
	}
	halls, err := ix.IDs(ctx, "Sales", "lastname", "Hall")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Lisa Jones marries Don Hall: one transaction (%d) updates her entity and moves her id: Jones %s, Hall %s; with the reads before it: %v\n", cost.Count("table", "Transaction"), rowKeys(jones), rowKeys(halls), cost)
	if rowKeys(jones) != "[000200 000223]" || rowKeys(halls) != "[000123 000152]" {
		return fmt.Errorf("after the move: Jones %s, Hall %s", rowKeys(jones), rowKeys(halls))
	}
	fmt.Fprintln(out, "concurrent hirings conflict on the index entity's ETag; the loser re-reads it and retries (SamePartitionOptions.Retry)")
	return nil
}

// elsewhere is options 3 and 1: the lists in another table and in blobs,
// kept up to date by a queue worker.
func elsewhere(ctx context.Context, acct *tablekit.Account, out io.Writer, suffix string) error {
	staffName, listName := "Staff"+suffix, "LastNames"+suffix
	employees, err := tablekit.OpenTable[Employee](acct, staffName, nil)
	if err != nil {
		return err
	}
	listTable, err := tablekit.OpenTable[tablekit.Entity](acct, listName, nil)
	if err != nil {
		return err
	}
	for _, t := range []interface {
		CreateIfNotExists(context.Context) error
		DeleteTable(context.Context) error
	}{employees, listTable} {
		if err := t.CreateIfNotExists(ctx); err != nil {
			return err
		}
		defer t.DeleteTable(context.WithoutCancel(ctx))
	}
	containerName := "lastnames-" + strings.ToLower(suffix)
	// The BlobList creates the container on its first write.
	defer acct.Blobs().ServiceClient().NewContainerClient(containerName).Delete(context.WithoutCancel(ctx), nil)
	queueName := "idxent-" + strings.ToLower(suffix)
	queue := acct.Queues().NewQueueClient(queueName)
	if _, err := queue.Create(ctx, nil); err != nil {
		return fmt.Errorf("CreateQueue: %w", err)
	}
	defer queue.Delete(context.WithoutCancel(ctx), nil)
	// The worker creates its poison queue if a message fails for good.
	defer acct.Queues().NewQueueClient(archive.PoisonQueueName(queueName)).Delete(context.WithoutCancel(ctx), nil)
	meter := acct.Meter()

	entityList, err := index.NewEntityList(listTable, nil)
	if err != nil {
		return err
	}
	blobList, err := index.NewBlobList(acct.Blobs().ServiceClient().NewContainerClient(containerName), nil)
	if err != nil {
		return err
	}
	client, err := archive.OpenClient(acct, queueName, nil)
	if err != nil {
		return err
	}
	ix, err := index.NewCrossPartition(employees, []index.InterIndex[Employee]{
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: entityList},
		{Name: "surname", Key: func(e Employee) string { return e.LastName }, List: blobList, Global: true},
	}, &index.CrossPartitionOptions{Queue: client, Delay: 10 * time.Second})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Option 3: employees in %s, index entities in %s (PartitionKey lastname!Sales, RowKey Jones), maintained by a worker on queue %s\n", staffName, entityList.TableName(), queueName)
	fmt.Fprintf(out, "Option 1: the same lists as blobs in container %s, one per last name for all departments (surname/Jones), updated with ETag conditions\n", blobList.ContainerName())

	before := meter.Snapshot()
	for _, e := range staff {
		if _, err := ix.Insert(ctx, e); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "hired %d employees, 3 requests each (a hidden safety-net message, the insert, a visible message): %v; the worker will add each id to its lists\n", len(staff), meter.Snapshot().Sub(before))
	if ok, err := ix.CaughtUp(ctx, "Sales", "000223"); err != nil || ok {
		return fmt.Errorf("CaughtUp before the worker ran = %v, %v", ok, err)
	}
	fmt.Fprintln(out, "no worker is running yet: CaughtUp(Sales, 000223) = false, the lists do not know Jon yet")

	// The worker, usually in another process: any number may share the
	// queue. It runs CrossPartition.Sync for each message.
	worker, err := archive.OpenWorker(acct, queueName, ix, &archive.WorkerOptions{Concurrency: 8, MinPollInterval: 50 * time.Millisecond, MaxPollInterval: 250 * time.Millisecond, DrainTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	wctx, stopWorker := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(wctx) }()
	defer func() { stopWorker(); <-done }()
	if err := waitCaughtUp(ctx, ix, staff); err != nil {
		return err
	}
	ids, err := ix.IDs(ctx, "Sales", "lastname", "Jones")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "once caught up, the Jones index entity of Sales lists %s\n", rowKeys(ids))
	ids, err = ix.IDs(ctx, "", "surname", "Jones")
	if err != nil {
		return err
	}
	var all []string
	for _, id := range ids {
		all = append(all, id.String())
	}
	fmt.Fprintf(out, "the blob %s lists every Jones: %v\n", blobList.BlobName(index.ListKey{Index: "surname", Value: "Jones"}), all)
	if want := []string{"Marketing/000150", "Sales/000123", "Sales/000200", "Sales/000223"}; !slices.Equal(all, want) {
		return fmt.Errorf("the surname blob lists %v, want %v", all, want)
	}
	names, err := firstNames(ix.By(ctx, "", "surname", "Jones"))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "By(surname, Jones) reads the blob, then the employees (up to 16 at once): %v\n", names)

	// Lisa's marriage again: Modify reads her and updates her entity on
	// the ETag read; the worker moves her id between the lists.
	if _, err := ix.Modify(ctx, "Sales", "000123", func(e *Employee) error {
		e.LastName = "Hall"
		return nil
	}); err != nil {
		return err
	}
	lisa, err := ix.Get(ctx, "Sales", "000123")
	if err != nil {
		return err
	}
	if err := waitCaughtUp(ctx, ix, []Employee{lisa}); err != nil {
		return err
	}
	jones, err := ix.IDs(ctx, "Sales", "lastname", "Jones")
	if err != nil {
		return err
	}
	halls, err := ix.IDs(ctx, "Sales", "lastname", "Hall")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Lisa's marriage again: after the worker ran, Jones %s and Hall %s\n", rowKeys(jones), rowKeys(halls))
	if rowKeys(jones) != "[000200 000223]" || rowKeys(halls) != "[000123 000152]" {
		return fmt.Errorf("after the move: Jones %s, Hall %s", rowKeys(jones), rowKeys(halls))
	}
	fmt.Fprintln(out, "an index entity is limited to 1 MiB (64 KiB per property): growing one further fails with ErrTooLarge and points to the blob option, which has no such limit")
	return nil
}

// rowKeys formats ids as "[rk rk ...]".
func rowKeys(ids []index.ID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id.RowKey
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// firstNames collects the first names of a lookup's employees.
func firstNames(seq func(func(Employee, error) bool)) ([]string, error) {
	var names []string
	for e, err := range seq {
		if err != nil {
			return nil, err
		}
		names = append(names, e.FirstName)
	}
	return names, nil
}

// waitCaughtUp waits until the worker has indexed the current version of
// each employee.
func waitCaughtUp(ctx context.Context, ix *index.CrossPartition[Employee], staff []Employee) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, e := range staff {
		for {
			ok, err := ix.CaughtUp(ctx, e.Department, e.ID)
			if err != nil {
				return err
			}
			if ok {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("the worker did not index %s/%s: %w", e.Department, e.ID, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}
