package sections

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/index"
)

// SecondaryIndex shows the guide's intra-partition secondary index pattern
// (a copy of each employee per index in the department's partition, kept
// consistent in one entity group transaction) and the inter-partition
// secondary index pattern (copies in another table, kept eventually
// consistent by a queue worker).
func SecondaryIndex() demo.Section {
	return demo.Section{
		Name:        "secondaryindex",
		Description: "secondary indexes: employees by id, email and email prefix; intra-partition (one EGT) and inter-partition (queue worker)",
		Run:         runSecondaryIndex,
	}
}

// siEmployee is the guide's employee: PartitionKey department, RowKey id.
type siEmployee struct {
	Department string      `table:",pk"`
	ID         string      `table:",rk"`
	FirstName  string      `table:"FirstName"`
	LastName   string      `table:"LastName"`
	Email      string      `table:"Email"`
	Age        int         `table:"Age"`
	ETag       azcore.ETag `table:",etag"`
}

func siStaff() []siEmployee {
	return []siEmployee{
		{Department: "Sales", ID: "000223", FirstName: "Jon", LastName: "Jones", Email: "jonesj@contoso.com", Age: 34},
		{Department: "Sales", ID: "000123", FirstName: "Lisa", LastName: "Jones", Email: "lisaj@contoso.com", Age: 29},
		{Department: "Sales", ID: "000152", FirstName: "Don", LastName: "Hall", Email: "donh@contoso.com", Age: 34},
		{Department: "Sales", ID: "000199", FirstName: "Ana", LastName: "Alvarez", Email: "alvareza@contoso.com", Age: 41},
		{Department: "Sales", ID: "000100", FirstName: "Adam", LastName: "Barr", Email: "adamb@contoso.com", Age: 52},
		{Department: "Sales", ID: "000200", FirstName: "Amy", LastName: "Jones", Email: "amyj@contoso.com", Age: 38},
		{Department: "Marketing", ID: "000150", FirstName: "Bea", LastName: "Jones", Email: "aj@contoso.com", Age: 33},
	}
}

// siList formats lookup results as "id name <email>".
func siList(seq iter.Seq2[siEmployee, error]) (string, error) {
	var parts []string
	for e, err := range seq {
		if err != nil {
			return "", err
		}
		s := e.ID + " " + e.FirstName + " " + e.LastName
		if e.Email != "" {
			s += " <" + e.Email + ">"
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, ", ") + "]", nil
}

func runSecondaryIndex(ctx context.Context, env *demo.Env) error {
	if err := runIntraIndex(ctx, env); err != nil {
		return err
	}
	return runInterIndex(ctx, env)
}

func runIntraIndex(ctx context.Context, env *demo.Env) error {
	name := env.TableName("SecIdxEmployees")
	tbl, err := tablekit.OpenTable[siEmployee](env.Account, name, nil)
	if err != nil {
		return err
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		return err
	}
	env.Defer(func(ctx context.Context) error { return tbl.DeleteTable(ctx) })

	ix, err := index.NewIntra(tbl, []index.Index[siEmployee]{
		{Name: "empid", Key: func(e siEmployee) string { return e.ID }, Unique: true},
		{Name: "email", Key: func(e siEmployee) string { return e.Email }, Unique: true},
		{Name: "lastname", Key: func(e siEmployee) string { return e.LastName }, Properties: []string{"FirstName", "LastName"}},
	}, nil)
	if err != nil {
		return err
	}
	env.Say("Intra-partition secondary index: table %s keeps each employee in its department's partition once as itself (RowKey = id) and once per index:", name)
	env.Say("RowKeys empid!000223 and email!jonesj@contoso.com (unique), lastname!Jones!000223 (several Joneses; a projection holding only the names)")

	before := env.Account.Meter().Snapshot()
	for _, e := range siStaff() {
		if _, err := ix.Insert(ctx, e); err != nil {
			return err
		}
	}
	cost := env.Account.Meter().Snapshot().Sub(before)
	env.Say("inserted %d employees, each with its 3 index copies in ONE entity group transaction: %v", len(siStaff()), cost)

	before = env.Account.Meter().Snapshot()
	jon, err := ix.Find(ctx, "Sales", "email", "jonesj@contoso.com")
	if err != nil {
		return err
	}
	env.Say("by email jonesj@contoso.com: %s %s, id %s, age %d (a point query: %d transaction)", jon.FirstName, jon.LastName, jon.ID, jon.Age, env.Account.Meter().Snapshot().Sub(before).Total())
	s, err := siList(ix.Prefix(ctx, "Sales", "email", "a"))
	if err != nil {
		return err
	}
	env.Say("emails starting with \"a\" in Sales, in email order: %s", s)
	s, err = siList(ix.Range(ctx, "Sales", "empid", "000100", "000200"))
	if err != nil {
		return err
	}
	env.Say("ids 000100 to 000199 in Sales, one range query: %s", s)
	s, err = siList(ix.By(ctx, "Sales", "lastname", "Jones"))
	if err != nil {
		return err
	}
	env.Say("Joneses in Sales, from the projected index (names only): %s", s)

	prev, err := ix.Get(ctx, "Sales", "000223")
	if err != nil {
		return err
	}
	next := prev
	next.Email = "jon.jones@contoso.com"
	before = env.Account.Meter().Snapshot()
	if _, err := ix.Update(ctx, next, prev.ETag); err != nil {
		return err
	}
	env.Say("Jon changes his email: Update with the version read replaces the entity and all copies and deletes email!jonesj@contoso.com, in one transaction (%d), guarded by the ETag", env.Account.Meter().Snapshot().Sub(before).Count(tablekit.ServiceTable, "Transaction"))
	s, err = siList(ix.By(ctx, "Sales", "email", "jonesj@contoso.com"))
	if err != nil {
		return err
	}
	env.Say("by the old email now: %s", s)
	if _, err := ix.Update(ctx, next, prev.ETag); errors.Is(err, tablekit.ErrPreconditionFailed) {
		env.Say("the same update again with the now stale version is refused: ErrPreconditionFailed")
	} else {
		return fmt.Errorf("update with a stale version: %v, want ErrPreconditionFailed", err)
	}
	dup := siEmployee{Department: "Sales", ID: "000777", FirstName: "Jo", LastName: "Jonas", Email: "donh@contoso.com"}
	var ue *index.UniqueError
	if _, err := ix.Insert(ctx, dup); errors.As(err, &ue) {
		env.Say("hiring someone with Don's email fails atomically: %v", err)
	} else {
		return fmt.Errorf("duplicate email: %v, want a UniqueError", err)
	}
	before = env.Account.Meter().Snapshot()
	if _, err := ix.DeleteIfExists(ctx, "Sales", "000152"); err != nil {
		return err
	}
	env.Say("Don leaves: Delete reads his entity, then removes it and its 3 copies in one transaction (%v)", env.Account.Meter().Snapshot().Sub(before))
	return nil
}

func runInterIndex(ctx context.Context, env *demo.Env) error {
	empName, idxName := env.TableName("SecIdxStaff"), env.TableName("SecIdxByEmail")
	emp, err := tablekit.OpenTable[siEmployee](env.Account, empName, nil)
	if err != nil {
		return err
	}
	copies, err := tablekit.OpenTable[tablekit.Entity](env.Account, idxName, nil)
	if err != nil {
		return err
	}
	for _, t := range []interface{ CreateIfNotExists(context.Context) error }{emp, copies} {
		if err := t.CreateIfNotExists(ctx); err != nil {
			return err
		}
	}
	env.Defer(func(ctx context.Context) error { return errors.Join(emp.DeleteTable(ctx), copies.DeleteTable(ctx)) })
	queue := env.QueueName("secidx")
	client, err := archive.OpenClient(env.Account, queue, nil)
	if err != nil {
		return err
	}
	if _, err := client.Queue().Create(ctx, nil); err != nil {
		return tablekit.WrapError("CreateQueue", err)
	}
	poison := env.Account.Queue(queue + "-p")
	env.Defer(func(ctx context.Context) error {
		_, err := client.Queue().Delete(ctx, nil)
		poison.Delete(ctx, nil) // created only if a message failed for good
		return tablekit.WrapError("DeleteQueue", err)
	})

	ix, err := index.NewInter(emp, []index.InterIndex[siEmployee]{
		{Name: "email", Key: func(e siEmployee) string { return e.Email }, Table: copies},
		{Name: "anyemail", Key: func(e siEmployee) string { return e.Email }, Table: copies, Global: true, Properties: []string{"FirstName", "LastName", "Email"}},
	}, &index.InterOptions{Queue: client, Delay: 10 * time.Second})
	if err != nil {
		return err
	}
	env.Say("Inter-partition secondary index: employees in %s, copies in %s under PartitionKeys email!Sales (per department) and anyemail (all departments)", empName, idxName)
	env.Say("no transaction spans partitions, so a write enqueues the index maintenance in queue %s and a worker applies it (the eventually consistent transactions pattern)", queue)

	worker, err := archive.NewWorker(client.Queue(), ix, &archive.WorkerOptions{Concurrency: 8, PoisonQueue: poison, MinPollInterval: 50 * time.Millisecond, MaxPollInterval: 250 * time.Millisecond, DrainTimeout: 5 * time.Second})
	if err != nil {
		return err
	}

	before := env.Account.Meter().Snapshot()
	for _, e := range siStaff() {
		if _, err := ix.Upsert(ctx, e); err != nil {
			return err
		}
	}
	cost := env.Account.Meter().Snapshot().Sub(before)
	env.Say("wrote %d employees; each Put sends a hidden safety-net message, writes the entity, then sends a visible message (PutMessage=%d, UpdateEntity=%d)",
		len(siStaff()), cost.Count(tablekit.ServiceQueue, "PutMessage"), cost.Count(tablekit.ServiceTable, "UpdateEntity"))
	if ok, err := ix.CaughtUp(ctx, "Sales", "000223"); err != nil || ok {
		return fmt.Errorf("CaughtUp before the worker ran = %v, %v", ok, err)
	}
	env.Say("no worker is running yet: CaughtUp(Sales, 000223) = false, the index does not know Jon yet")
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(wctx) }()
	defer func() { stop(); <-done }()
	if err := siWaitCaughtUp(ctx, ix, siStaff()); err != nil {
		return err
	}
	env.Say("CaughtUp(Sales, 000223) compares the entity's ETag with the sync record the worker wrote: every employee is indexed now")
	jon, err := ix.Find(ctx, "Sales", "email", "jonesj@contoso.com")
	if err != nil {
		return err
	}
	env.Say("by email in partition email!Sales: %s %s (id %s)", jon.FirstName, jon.LastName, jon.ID)
	s, err := siList(ix.Prefix(ctx, "", "anyemail", "a"))
	if err != nil {
		return err
	}
	env.Say("emails starting with \"a\" across all departments, from the global index: %s", s)

	jon.Email = "jon.jones@contoso.com"
	if _, err := ix.Upsert(ctx, jon); err != nil {
		return err
	}
	if err := siWaitCaughtUp(ctx, ix, []siEmployee{jon}); err != nil {
		return err
	}
	s, err = siList(ix.By(ctx, "Sales", "email", "jonesj@contoso.com"))
	if err != nil {
		return err
	}
	env.Say("Jon's new email is indexed once the worker caught up; the old one gives %s", s)
	env.Say("a writer that dies after its entity write leaves the safety-net message, which re-syncs the entity after InterOptions.Delay; direct mode (no queue) syncs inline, best effort")
	return nil
}

// siWaitCaughtUp waits until the worker has indexed every employee.
func siWaitCaughtUp(ctx context.Context, ix *index.Inter[siEmployee], staff []siEmployee) error {
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
