// Command heterogeneous shows heterogeneous entity types: departments and
// their employees in one partition, told apart by an EntityType property
// or a RowKey prefix, and each row decoded into its own Go type.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/heterogeneous
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

// Department is in the partition of its employees: one transaction can
// change both.
type Department struct {
	Name          string      `table:",pk"`
	Key           string      `table:",rk"`
	ETag          azcore.ETag `table:",etag"`
	Manager       string
	EmployeeCount int
}

// Employee is version 1 of the Employee kind.
type Employee struct {
	Department  string `table:",pk"`
	Key         string `table:",rk"`
	Name, Email string
}

// EmployeeV2 is version 2 of the Employee kind, the name split in two: rows
// of both versions live side by side, each decoded to its own type.
type EmployeeV2 struct {
	Department         string `table:",pk"`
	Key                string `table:",rk"`
	First, Last, Email string
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
		fmt.Fprintln(os.Stderr, "heterogeneous:", err)
		os.Exit(1)
	}
}

// open creates a table of property bags and a Mixed over it, whose Registry
// maps the kinds and versions stored to Go types; drop deletes the table.
func open(ctx context.Context, acct *tablekit.Account, base string, kindInRowKey bool) (m *patterns.Mixed, drop func(), err error) {
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, base+rand.Text()[:8], nil)
	if err == nil {
		err = tbl.CreateIfNotExists(ctx)
	}
	drop = func() { _ = tbl.DeleteTable(context.WithoutCancel(ctx)) }
	reg := &tablekit.Registry{KindInRowKey: kindInRowKey}
	for _, e := range []error{err,
		tablekit.Register[Department](reg, "Department", 1),
		tablekit.Register[Employee](reg, "Employee", 1),
		tablekit.Register[EmployeeV2](reg, "Employee", 2),
	} {
		if e != nil {
			return nil, drop, e
		}
	}
	m, err = patterns.NewMixed(tbl, reg)
	return m, drop, err
}

// run is the example: kinds told apart by an EntityType property (the
// guide's first option: RowKeys stay free). The test shows the other, a
// RowKey prefix, and patterns.QueryKind (one kind and version, typed).
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	m, drop, err := open(ctx, acct, "Staff", false)
	defer drop()
	if err != nil {
		return err
	}
	// Each write sets EntityType to the kind and version ("Employee.v2"); a
	// kind the registry does not know (another program's) stays an Entity.
	dept := Department{Name: "Sales", Key: "Sales", Manager: "Ann", EmployeeCount: 2}
	if dept.ETag, err = m.Insert(ctx, dept); err != nil {
		return err
	}
	for _, v := range []any{
		Employee{Department: "Sales", Key: "000100", Name: "Ann Jones", Email: "ann@contoso.com"},
		EmployeeV2{Department: "Sales", Key: "000101", First: "Bob", Last: "Smith", Email: "bob@contoso.com"},
		tablekit.Entity{PartitionKey: "Sales", RowKey: "Q3-goals", Properties: map[string]any{"EntityType": "Goal.v1", "Target": 1.5e6}},
	} {
		if _, err := m.Insert(ctx, v); err != nil {
			return err
		}
	}
	// One query reads the partition, each row decoded into its own type.
	before := acct.Meter().Snapshot()
	for v, err := range m.Query(ctx, tablekit.PartitionEq("Sales"), &tablekit.QueryOptions{KeyOrder: true}) {
		if err != nil {
			return err
		}
		switch x := v.(type) {
		case Department:
			fmt.Fprintf(out, "  Department %s: manager %s, %d employees\n", x.Key, x.Manager, x.EmployeeCount)
		case Employee:
			fmt.Fprintf(out, "  Employee v1 %s: %s\n", x.Key, x.Name)
		case EmployeeV2:
			fmt.Fprintf(out, "  Employee v2 %s: %s %s\n", x.Key, x.First, x.Last)
		case tablekit.Entity:
			fmt.Fprintf(out, "  unregistered kind %v at %s, kept as a tablekit.Entity (Target %v)\n", x.Properties["EntityType"], x.RowKey, x.Properties["Target"])
		}
	}
	fmt.Fprintf(out, "one query decoded the mixed partition, in RowKey order, each row into its own type: %s\n", cost(acct.Meter().Snapshot().Sub(before)))

	// A new employee and the department's count change together, in one
	// entity group transaction (it returns each action's new ETag).
	dept.EmployeeCount++
	before = acct.Meter().Snapshot()
	_, err = m.Transaction(ctx,
		tablekit.InsertAction[any](EmployeeV2{Department: "Sales", Key: "000102", First: "Cy", Last: "Young", Email: "cy@contoso.com"}),
		tablekit.MergeAction[any](dept, dept.ETag))
	fmt.Fprintf(out, "a new employee and the department's count in one entity group transaction: %s\n", cost(acct.Meter().Snapshot().Sub(before)))
	return err
}

// cost states a meter's counts as storage transactions, by operation.
func cost(s tablekit.MeterSnapshot) string {
	var ops []string
	for _, c := range s.Counts() {
		ops = append(ops, fmt.Sprintf("%s=%d", c.Operation, c.Requests))
	}
	return fmt.Sprintf("%d transaction%s (%s)", s.Total(), map[bool]string{true: "s"}[s.Total() != 1], strings.Join(ops, " "))
}
