// Command denormalization shows the denormalization pattern: a department
// keeps a copy of its manager's name and email, written with the manager
// in one entity group transaction. One point query then answers for both,
// and no reader sees them disagree.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/denormalization
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/patterns"
)

// Department holds copies of its manager's name and email. It is in the
// partition of its employees (PartitionKey = department), so a copy and
// its source can change in one transaction.
type Department struct {
	Name          string `table:",pk"`
	Key           string `table:",rk"`
	ManagerName   string `table:"ManagerName"`
	ManagerEmail  string `table:"ManagerEmail"`
	EmployeeCount int    `table:"EmployeeCount"`
}

// Employee is the source of the copies. Email is omitted when empty: an
// employee may have none.
type Employee struct {
	Department string      `table:",pk"`
	Key        string      `table:",rk"`
	ETag       azcore.ETag `table:",etag"`
	Name       string      `table:"Name"`
	Email      string      `table:"Email,omitempty"`
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "denormalization:", err)
		os.Exit(1)
	}
	acct, err := tablekit.Open(conn, nil)
	if err == nil {
		err = run(ctx, acct, os.Stdout)
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "denormalization:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a table of its own, uses it, and deletes it.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	// The table holds departments and employees, so its rows are property
	// bags; a Registry decodes each into its type (see examples/heterogeneous).
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, "Staff"+rand.Text()[:8], nil)
	if err != nil {
		return err
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer tbl.DeleteTable(context.WithoutCancel(ctx))
	meter := acct.Meter()

	reg := patterns.NewRegistry(nil)
	if err := patterns.Register[Department](reg, "Department", 1); err != nil {
		return err
	}
	if err := patterns.Register[Employee](reg, "Employee", 1); err != nil {
		return err
	}
	m, err := patterns.NewMixed(tbl, reg)
	if err != nil {
		return err
	}
	// The Denormalizer writes an Employee and copies Name and Email, renamed,
	// into the entities it is given.
	d, err := patterns.NewDenormalizer[Employee](tbl, map[string]string{"Name": "ManagerName", "Email": "ManagerEmail"},
		&patterns.DenormalizeOptions{Registry: reg})
	if err != nil {
		return err
	}
	department := func() (Department, error) {
		v, err := m.Get(ctx, "Sales", "Sales")
		if err != nil {
			return Department{}, err
		}
		dept, ok := v.(Department)
		if !ok {
			return Department{}, fmt.Errorf("Sales/Sales decoded as %T, want Department", v)
		}
		return dept, nil
	}

	if _, err := m.Insert(ctx, Department{Name: "Sales", Key: "Sales", EmployeeCount: 12}); err != nil {
		return err
	}
	mgr := Employee{Department: "Sales", Key: "000100", Name: "Ann Jones", Email: "ann@contoso.com"}
	before := meter.Snapshot()
	first, err := d.Write(ctx, mgr, "Sales")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the manager and the department's copy written together (same partition): %s\n", cost(meter.Snapshot().Sub(before)))

	// Write returns the manager's new ETag, from the transaction's answer;
	// with it set, the next Write is conditional on it.
	mgr.ETag = first
	mgr.Email = "ann.jones@contoso.com"
	before = meter.Snapshot()
	second, err := d.Write(ctx, mgr, "Sales")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the manager's new email and its copy changed in one entity group transaction, conditional on the manager's ETag: %s\n", cost(meter.Snapshot().Sub(before)))
	mgr.ETag = second

	before = meter.Snapshot()
	dept, err := department()
	if err != nil {
		return err
	}
	if dept.ManagerName != "Ann Jones" || dept.ManagerEmail != mgr.Email || dept.EmployeeCount != 12 {
		return fmt.Errorf("the department reads %+v, want Ann Jones <%s> and its 12 employees", dept, mgr.Email)
	}
	fmt.Fprintf(out, "one point query: Sales has %d employees (kept: the copy is merged), managed by %s <%s>, %s\n",
		dept.EmployeeCount, dept.ManagerName, dept.ManagerEmail, cost(meter.Snapshot().Sub(before)))

	v, err := m.Get(ctx, "Sales", "000100")
	if err != nil {
		return err
	}
	if back, _ := v.(Employee); back.ETag != second {
		return fmt.Errorf("the Write returned ETag %q; the manager reads %q", second, back.ETag)
	}
	fmt.Fprintln(out, "Write returned the manager's new ETag from the transaction's answer (no read): the stored one")

	// A writer still holding the first version is refused, copies and all.
	stale := mgr
	stale.ETag, stale.Name = first, "Ann Smith"
	if _, err := d.Write(ctx, stale, "Sales"); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		return fmt.Errorf("a Write with a stale ETag: want ErrPreconditionFailed, got %v", err)
	}
	if dept, err = department(); err != nil {
		return err
	}
	if dept.ManagerName != "Ann Jones" {
		return fmt.Errorf("after a refused Write the copy reads %q, want Ann Jones", dept.ManagerName)
	}
	fmt.Fprintln(out, "a Write with the first ETag, now stale, was refused (ErrPreconditionFailed) and changed nothing")

	// The copies must exist: one that does not fails the whole transaction,
	// the manager's change included.
	renamed := mgr
	renamed.Name = "Ann Smith"
	_, err = d.Write(ctx, renamed, "Sales", "Sales-EMEA")
	if !errors.Is(err, tablekit.ErrNotFound) {
		return fmt.Errorf("a Write to a missing copy: want ErrNotFound, got %v", err)
	}
	fmt.Fprintf(out, "a Write that also names a copy that does not exist (Sales-EMEA) failed as a whole: %v\n", err)
	if v, err = m.Get(ctx, "Sales", "000100"); err != nil {
		return err
	}
	if dept, err = department(); err != nil {
		return err
	}
	if back, _ := v.(Employee); back.Name != "Ann Jones" || dept.ManagerName != "Ann Jones" {
		return fmt.Errorf("after the failed Write the manager reads %q and the copy %q, want Ann Jones", back.Name, dept.ManagerName)
	}
	fmt.Fprintln(out, "neither the manager nor the Sales copy was renamed: both still read Ann Jones")

	// A source without a mapped property (Email, omitted when empty) must
	// remove it from the copies, which a merge cannot do: Write reads the
	// copies and replaces them, conditional on their ETags.
	mgr.Email = ""
	before = meter.Snapshot()
	if mgr.ETag, err = d.Write(ctx, mgr, "Sales"); err != nil {
		return err
	}
	c := meter.Snapshot().Sub(before)
	bag, err := tbl.Get(ctx, "Sales", "Sales")
	if err != nil {
		return err
	}
	email, has := bag.Properties["ManagerEmail"]
	if has || bag.Properties["EmployeeCount"] != int64(12) {
		return fmt.Errorf("the department after the manager lost her email: ManagerEmail %v (present %t), EmployeeCount %v", email, has, bag.Properties["EmployeeCount"])
	}
	fmt.Fprintf(out, "the manager's email removed: the department lost ManagerEmail too and kept EmployeeCount %v, %s\n", bag.Properties["EmployeeCount"], cost(c))

	fmt.Fprintln(out, "copies in other partitions cannot share a transaction: keep those eventually consistent with a queue (see examples/archive)")
	return nil
}

// cost states a meter's counts as storage transactions, by operation.
func cost(s tablekit.MeterSnapshot) string {
	var ops []string
	for _, c := range s.Counts() {
		ops = append(ops, fmt.Sprintf("%s=%d", c.Operation, c.Requests))
	}
	unit := "transactions"
	if s.Total() == 1 {
		unit = "transaction"
	}
	return fmt.Sprintf("%d %s (%s)", s.Total(), unit, strings.Join(ops, " "))
}
