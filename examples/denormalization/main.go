// Command denormalization shows the denormalization pattern: a department
// keeps a copy of its manager's name and email, written with the manager
// in one entity group transaction. One point query then answers for both,
// and no reader sees them disagree. (Copies in other partitions cannot
// share a transaction: keep those eventually consistent, examples/archive.)
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/denormalization
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/patterns"
)

// Department holds copies of its manager's name and email, in the partition
// of its employees: a copy and its source change in one transaction.
type Department struct {
	Name          string `table:",pk"`
	Key           string `table:",rk"`
	ManagerName   string `table:"ManagerName"`
	ManagerEmail  string `table:"ManagerEmail"`
	EmployeeCount int    `table:"EmployeeCount"`
}

// Employee is the source of the copies; it may have no Email.
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
	if err == nil {
		var acct *tablekit.Account
		if acct, err = tablekit.Open(conn, nil); err == nil {
			err = run(ctx, acct, os.Stdout)
			fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
		}
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "denormalization:", err)
		os.Exit(1)
	}
}

// setup creates a table of its own (drop deletes it) holding departments
// and employees: a Mixed reads its rows, each as its type (see
// examples/heterogeneous), and a Denormalizer writes an Employee and
// copies its Name and Email, renamed, into the entities it is given.
func setup(ctx context.Context, acct *tablekit.Account) (m *patterns.Mixed, d *patterns.Denormalizer[Employee], drop func(), err error) {
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, "Staff"+rand.Text()[:8], nil)
	if err == nil {
		err = tbl.CreateIfNotExists(ctx)
	}
	drop = func() { _ = tbl.DeleteTable(context.WithoutCancel(ctx)) }
	if err != nil {
		return nil, nil, drop, err
	}
	reg := &tablekit.Registry{}
	if err = tablekit.Register[Department](reg, "Department", 1); err == nil {
		err = tablekit.Register[Employee](reg, "Employee", 1)
	}
	if err == nil {
		m, err = patterns.NewMixed(tbl, reg)
	}
	if err == nil {
		d, err = patterns.NewDenormalizer[Employee](tbl, map[string]string{"Name": "ManagerName", "Email": "ManagerEmail"},
			&patterns.DenormalizeOptions{Registry: reg})
	}
	if err == nil {
		_, err = m.Insert(ctx, Department{Name: "Sales", Key: "Sales", EmployeeCount: 12})
	}
	return m, d, drop, err
}

// run is the example.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	m, d, drop, err := setup(ctx, acct)
	defer drop()
	if err != nil {
		return err
	}
	meter := acct.Meter()
	mgr := Employee{Department: "Sales", Key: "000100", Name: "Ann Jones", Email: "ann@contoso.com"}
	before := meter.Snapshot()
	if mgr.ETag, err = d.Write(ctx, mgr, "Sales"); err != nil {
		return err
	}
	fmt.Fprintf(out, "the manager and the department's copy written together (same partition): %s\n", cost(meter.Snapshot().Sub(before)))

	// Write returns the manager's new ETag (the transaction's answer): the
	// next Write is conditional on it, and a stale one changes nothing.
	mgr.Email = "ann.jones@contoso.com"
	before = meter.Snapshot()
	if mgr.ETag, err = d.Write(ctx, mgr, "Sales"); err != nil {
		return err
	}
	fmt.Fprintf(out, "the manager's new email and its copy changed in one entity group transaction, conditional on the manager's ETag: %s\n", cost(meter.Snapshot().Sub(before)))

	before = meter.Snapshot()
	v, err := m.Get(ctx, "Sales", "Sales")
	if err != nil {
		return err
	}
	dept, _ := v.(Department)
	fmt.Fprintf(out, "one point query: Sales has %d employees (kept: the copy is merged), managed by %s <%s>, %s\n",
		dept.EmployeeCount, dept.ManagerName, dept.ManagerEmail, cost(meter.Snapshot().Sub(before)))

	// A source without a mapped property (Email, omitted when empty) must
	// remove it from the copies, which a merge cannot do: Write reads the
	// copies and replaces them, conditional on their ETags.
	mgr.Email = ""
	before = meter.Snapshot()
	if mgr.ETag, err = d.Write(ctx, mgr, "Sales"); err != nil {
		return err
	}
	c := meter.Snapshot().Sub(before)
	if v, err = m.Get(ctx, "Sales", "Sales"); err != nil {
		return err
	}
	dept, _ = v.(Department)
	fmt.Fprintf(out, "the manager's email removed: the department's ManagerEmail is %q and it kept EmployeeCount %d, %s\n", dept.ManagerEmail, dept.EmployeeCount, cost(c))
	return nil
}

// cost states a meter's counts as storage transactions, by operation.
func cost(s tablekit.MeterSnapshot) string {
	var ops []string
	for _, c := range s.Counts() {
		ops = append(ops, fmt.Sprintf("%s=%d", c.Operation, c.Requests))
	}
	return fmt.Sprintf("%d transaction%s (%s)", s.Total(), map[bool]string{true: "s"}[s.Total() != 1], strings.Join(ops, " "))
}
