// Command secondaryindex shows the secondary index patterns: employees
// looked up by id, email and email prefix through an intra-partition index
// kept consistent in one entity group transaction, and through an
// inter-partition index kept eventually consistent by a queue worker.
//
// Table storage indexes only PartitionKey and RowKey. The design guide's
// answer is to store each employee again under other keys: in its own
// partition, where one transaction keeps every copy in step (package
// index's SamePartition), or in other partitions, where a queue worker brings the
// copies up to date after each write (CrossPartition).
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/secondaryindex
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/index"
)

// Employee is the guide's employee: the department is the PartitionKey,
// the employee id the RowKey. The etag field receives the version an
// entity was read at, for the conditional writes.
type Employee struct {
	Department string      `table:",pk"`
	ID         string      `table:",rk"`
	ETag       azcore.ETag `table:",etag"`
	FirstName  string
	LastName   string
	Email      string
	Age        int
}

var staff = []Employee{
	{Department: "Sales", ID: "000223", FirstName: "Jon", LastName: "Jones", Email: "jonesj@contoso.com", Age: 34},
	{Department: "Sales", ID: "000123", FirstName: "Lisa", LastName: "Jones", Email: "lisaj@contoso.com", Age: 29},
	{Department: "Sales", ID: "000152", FirstName: "Don", LastName: "Hall", Email: "donh@contoso.com", Age: 34},
	{Department: "Sales", ID: "000199", FirstName: "Ana", LastName: "Alvarez", Email: "alvareza@contoso.com", Age: 41},
	{Department: "Sales", ID: "000100", FirstName: "Adam", LastName: "Barr", Email: "adamb@contoso.com", Age: 52},
	{Department: "Sales", ID: "000200", FirstName: "Amy", LastName: "Jones", Email: "amyj@contoso.com", Age: 38},
	{Department: "Marketing", ID: "000150", FirstName: "Bea", LastName: "Jones", Email: "aj@contoso.com", Age: 33},
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "secondaryindex:", err)
		os.Exit(1)
	}
	// The application and the index worker, which would usually run in
	// another process, each with an Account (and a Meter) of its own.
	acct, err := tablekit.Open(conn, nil)
	var workerAcct *tablekit.Account
	if err == nil {
		workerAcct, err = tablekit.Open(conn, nil)
	}
	if err == nil {
		err = run(ctx, acct, workerAcct, os.Stdout)
		app, worker := acct.Meter().Snapshot(), workerAcct.Meter().Snapshot()
		fmt.Printf("cost: %d storage transactions (application: %v; worker: %v)\n", app.Total()+worker.Total(), app, worker)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "secondaryindex:", err)
		os.Exit(1)
	}
}

// run is the example: the intra-partition index, then the inter-partition
// one, whose queue worker uses workerAcct. It creates its tables and queue,
// and deletes them.
func run(ctx context.Context, acct, workerAcct *tablekit.Account, out io.Writer) error {
	suffix := rand.Text()[:8]
	if err := intraPartition(ctx, acct, out, suffix); err != nil {
		return err
	}
	return interPartition(ctx, acct, workerAcct, out, suffix)
}

// intraPartition keeps the indexes in each employee's own partition.
func intraPartition(ctx context.Context, acct *tablekit.Account, out io.Writer, suffix string) error {
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
		{Name: "empid", Key: func(e Employee) string { return e.ID }, Unique: true},
		{Name: "email", Key: func(e Employee) string { return e.Email }, Unique: true},
		// Several Joneses: the RowKey is lastname!Jones!<id>; the copies
		// hold only the names.
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, Properties: []string{"FirstName", "LastName"}},
	}, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Intra-partition secondary index: table %s keeps each employee in its department's partition once as itself (RowKey = id) and once per index:\n", name)
	fmt.Fprintln(out, "RowKeys empid!000223 and email!jonesj@contoso.com (unique), lastname!Jones!000223 (several Joneses; a projection holding only the names)")

	before := meter.Snapshot()
	for _, e := range staff {
		if _, err := ix.Insert(ctx, e); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "inserted %d employees, each with its 3 index copies in ONE entity group transaction: %v\n", len(staff), meter.Snapshot().Sub(before))

	before = meter.Snapshot()
	jon, err := ix.Find(ctx, "Sales", "email", "jonesj@contoso.com")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "by email jonesj@contoso.com: %s %s, id %s, age %d (a point query: %d transaction)\n", jon.FirstName, jon.LastName, jon.ID, jon.Age, meter.Snapshot().Sub(before).Total())

	// Range lookups are one range query over the index's RowKeys, in
	// index order.
	for _, lookup := range []struct {
		what string
		seq  iter.Seq2[Employee, error]
		want []string
	}{
		{`emails starting with "a" in Sales, in email order`, ix.Prefix(ctx, "Sales", "email", "a"), []string{"000100", "000199", "000200"}},
		{"ids 000100 to 000199 in Sales, one range query", ix.Range(ctx, "Sales", "empid", "000100", "000200"), []string{"000100", "000123", "000152", "000199"}},
		{"Joneses in Sales, from the projected index (names only)", ix.By(ctx, "Sales", "lastname", "Jones"), []string{"000123", "000200", "000223"}},
	} {
		list, ids, err := describe(lookup.seq)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: %s\n", lookup.what, list)
		if !slices.Equal(ids, lookup.want) {
			return fmt.Errorf("%s: ids %v, want %v", lookup.what, ids, lookup.want)
		}
	}

	// Jon changes his email. Modify reads him and writes him back with
	// every copy in one transaction, conditional on the version it read;
	// the copy under the old email is deleted in the same transaction.
	stale := jon // as Find read him
	before = meter.Snapshot()
	jon, err = ix.Modify(ctx, "Sales", "000223", func(e *Employee) error {
		e.Email = "jon.jones@contoso.com"
		return nil
	})
	if err != nil {
		return err
	}
	cost := meter.Snapshot().Sub(before)
	fmt.Fprintf(out, "Jon changes his email: Modify reads him, then replaces the entity and all copies and deletes email!jonesj@contoso.com in one transaction (%d), guarded by the ETag it read: %v\n", cost.Count("table", "Transaction"), cost)
	s, _, err := describe(ix.By(ctx, "Sales", "email", "jonesj@contoso.com"))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "by the old email now: %s\n", s)
	if s != "[]" {
		return fmt.Errorf("the old email still finds %s", s)
	}

	// An entity read through a copy carries the copy's ETag, which changes
	// whenever the entity does: Update accepts it as the entity's version.
	stale.Age = 35
	if _, err := ix.Update(ctx, stale, stale.ETag); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		return fmt.Errorf("update with a stale version: %v, want ErrPreconditionFailed", err)
	}
	fmt.Fprintln(out, "an Update with the ETag Find gave before the change is refused: ErrPreconditionFailed")
	current, err := ix.Find(ctx, "Sales", "email", "jon.jones@contoso.com")
	if err != nil {
		return err
	}
	current.Age = 35
	before = meter.Snapshot()
	if _, err := ix.Update(ctx, current, current.ETag); err != nil {
		return err
	}
	cost = meter.Snapshot().Sub(before)
	fmt.Fprintf(out, "with the ETag of a fresh Find it succeeds, in one transaction (%d) after a read of the entity and, when the copy's ETag is not the entity's own, a query that finds the copy: %v\n", cost.Count("table", "Transaction"), cost)

	dup := Employee{Department: "Sales", ID: "000777", FirstName: "Jo", LastName: "Jonas", Email: "donh@contoso.com"}
	var ue *index.UniqueError
	if _, err := ix.Insert(ctx, dup); !errors.As(err, &ue) {
		return fmt.Errorf("duplicate email: %v, want a UniqueError", err)
	}
	fmt.Fprintf(out, "hiring someone with Don's email fails as a whole: unique index %q already has %q\n", ue.Index, ue.Value)
	if _, err := ix.Get(ctx, "Sales", "000777"); !errors.Is(err, tablekit.ErrNotFound) {
		return fmt.Errorf("the refused employee was stored: %v", err)
	}

	before = meter.Snapshot()
	existed, err := ix.DeleteIfExists(ctx, "Sales", "000152")
	if err != nil || !existed {
		return fmt.Errorf("deleting Don: %v, %v", existed, err)
	}
	fmt.Fprintf(out, "Don leaves: DeleteIfExists reads his entity, then removes it and its 3 copies in one transaction: %v\n", meter.Snapshot().Sub(before))
	rows := 0
	for _, err := range employees.AsEntities().Query(ctx, tablekit.PartitionEq("Sales"), nil) {
		if err != nil {
			return err
		}
		rows++
	}
	fmt.Fprintf(out, "the Sales partition holds %d rows: 5 employees, 4 rows each\n", rows)
	if rows != 20 {
		return fmt.Errorf("%d rows in Sales, want 20", rows)
	}
	return nil
}

// interPartition keeps copies in another table, maintained by a queue
// worker that runs with workerAcct, as another process would.
func interPartition(ctx context.Context, acct, workerAcct *tablekit.Account, out io.Writer, suffix string) error {
	empName, idxName := "Staff"+suffix, "StaffByEmail"+suffix
	queueName := "secidx-" + strings.ToLower(suffix)
	// The application and the worker build the same index, each over its
	// own Account.
	newInter := func(acct *tablekit.Account) (*index.CrossPartition[Employee], error) {
		employees, err := tablekit.OpenTable[Employee](acct, empName, nil)
		if err != nil {
			return nil, err
		}
		copies, err := tablekit.OpenTable[tablekit.Entity](acct, idxName, nil)
		if err != nil {
			return nil, err
		}
		client, err := archive.OpenClient(acct, queueName, nil)
		if err != nil {
			return nil, err
		}
		return index.NewCrossPartition(employees, []index.InterIndex[Employee]{
			{Name: "email", Key: func(e Employee) string { return e.Email }, Table: copies},
			{Name: "anyemail", Key: func(e Employee) string { return e.Email }, Table: copies, Global: true, Properties: []string{"FirstName", "LastName", "Email"}},
		}, &index.CrossPartitionOptions{Queue: client, Delay: 10 * time.Second})
	}
	employees, err := tablekit.OpenTable[Employee](acct, empName, nil)
	if err != nil {
		return err
	}
	copies, err := tablekit.OpenTable[tablekit.Entity](acct, idxName, nil)
	if err != nil {
		return err
	}
	for _, t := range []interface {
		CreateIfNotExists(context.Context) error
		DeleteTable(context.Context) error
	}{employees, copies} {
		if err := t.CreateIfNotExists(ctx); err != nil {
			return err
		}
		defer t.DeleteTable(context.WithoutCancel(ctx))
	}
	queue := acct.Queues().NewQueueClient(queueName)
	if _, err := queue.Create(ctx, nil); err != nil {
		return fmt.Errorf("CreateQueue: %w", err)
	}
	defer queue.Delete(context.WithoutCancel(ctx), nil)
	// The worker creates its poison queue if a message fails for good.
	defer acct.Queues().NewQueueClient(archive.PoisonQueueName(queueName)).Delete(context.WithoutCancel(ctx), nil)
	meter := acct.Meter()

	ix, err := newInter(acct)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Inter-partition secondary index: employees in %s, copies in %s under PartitionKeys email!Sales (per department) and anyemail (all departments)\n", empName, idxName)
	fmt.Fprintf(out, "no transaction spans partitions, so a write enqueues the index maintenance in queue %s and a worker applies it (the eventually consistent transactions pattern)\n", queueName)

	before := meter.Snapshot()
	for _, e := range staff {
		if _, err := ix.Insert(ctx, e); err != nil {
			return err
		}
	}
	cost := meter.Snapshot().Sub(before)
	fmt.Fprintf(out, "inserted %d employees; each Insert sends a hidden safety-net message, inserts the entity, then sends a visible message: %v\n", len(staff), cost)
	if ok, err := ix.CaughtUp(ctx, "Sales", "000223"); err != nil || ok {
		return fmt.Errorf("CaughtUp before the worker ran = %v, %v", ok, err)
	}
	fmt.Fprintln(out, "no worker is running yet: CaughtUp(Sales, 000223) = false, the index does not know Jon yet")

	// The worker, usually in another process: any number may share the
	// queue. It runs CrossPartition.Sync for each message.
	workerIx, err := newInter(workerAcct)
	if err != nil {
		return err
	}
	worker, err := archive.OpenWorker(workerAcct, queueName, workerIx, &archive.WorkerOptions{Concurrency: 8, MinPollInterval: 50 * time.Millisecond, MaxPollInterval: 250 * time.Millisecond, DrainTimeout: 5 * time.Second})
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
	fmt.Fprintln(out, "CaughtUp(Sales, 000223) compares the entity's ETag with the sync record the worker wrote: every employee is indexed now")

	jon, err := ix.Find(ctx, "Sales", "email", "jonesj@contoso.com")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "by email in partition email!Sales: %s %s (id %s)\n", jon.FirstName, jon.LastName, jon.ID)
	s, ids, err := describe(ix.Prefix(ctx, "", "anyemail", "a"))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "emails starting with \"a\" across all departments, from the global index: %s\n", s)
	if want := []string{"000100", "000150", "000199", "000200"}; !slices.Equal(ids, want) {
		return fmt.Errorf("global prefix lookup: ids %v, want %v", ids, want)
	}

	// A copy records the version it was made from, and the entity read
	// through it carries that version's ETag: Update succeeds only if the
	// copy was up to date.
	jon.Email = "jon.jones@contoso.com"
	before = meter.Snapshot()
	if _, err := ix.Update(ctx, jon, jon.ETag); err != nil {
		return err
	}
	fmt.Fprintf(out, "Jon's new email: Update with the ETag the copy carries (the version it was copied from): %v\n", meter.Snapshot().Sub(before))
	if err := waitCaughtUp(ctx, ix, []Employee{jon}); err != nil {
		return err
	}
	s, _, err = describe(ix.By(ctx, "Sales", "email", "jonesj@contoso.com"))
	if err != nil {
		return err
	}
	if _, err := ix.Find(ctx, "Sales", "email", "jon.jones@contoso.com"); err != nil {
		return fmt.Errorf("the new email: %w", err)
	}
	fmt.Fprintf(out, "Jon's new email is indexed once the worker caught up; the old one gives %s\n", s)
	if s != "[]" {
		return fmt.Errorf("the old email still finds %s", s)
	}
	fmt.Fprintln(out, "a writer that dies after its entity write leaves the safety-net message, which re-syncs the entity after CrossPartitionOptions.Delay; direct mode (no queue) syncs inline, best effort")
	return nil
}

// describe formats lookup results as "[id name <email>, ...]" and returns
// their ids.
func describe(seq iter.Seq2[Employee, error]) (string, []string, error) {
	var parts, ids []string
	for e, err := range seq {
		if err != nil {
			return "", nil, err
		}
		s := e.ID + " " + e.FirstName + " " + e.LastName
		if e.Email != "" {
			s += " <" + e.Email + ">"
		}
		parts = append(parts, s)
		ids = append(ids, e.ID)
	}
	return "[" + strings.Join(parts, ", ") + "]", ids, nil
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
