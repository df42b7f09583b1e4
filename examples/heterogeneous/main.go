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

// Department is the department's own entity, in the partition of its
// employees so that one transaction can change both.
type Department struct {
	Name          string      `table:",pk"`
	Key           string      `table:",rk"`
	ETag          azcore.ETag `table:",etag"`
	Manager       string      `table:"Manager"`
	EmployeeCount int         `table:"EmployeeCount"`
}

// Employee is version 1 of the Employee kind.
type Employee struct {
	Department string `table:",pk"`
	Key        string `table:",rk"`
	Name       string `table:"Name"`
	Email      string `table:"Email"`
}

// EmployeeV2 is version 2 of the Employee kind: the name split in two.
// Rows of both versions live side by side; each decodes to its own type.
type EmployeeV2 struct {
	Department string `table:",pk"`
	Key        string `table:",rk"`
	First      string `table:"First"`
	Last       string `table:"Last"`
	Email      string `table:"Email"`
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "heterogeneous:", err)
		os.Exit(1)
	}
	acct, err := tablekit.Open(conn, nil)
	if err == nil {
		err = run(ctx, acct, os.Stdout)
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "heterogeneous:", err)
		os.Exit(1)
	}
}

// run is the example: it creates two tables of its own, uses them, and
// deletes them.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	if err := byProperty(ctx, acct, out); err != nil {
		return err
	}
	return byRowKeyPrefix(ctx, acct, out)
}

// registry maps the kinds and versions stored in the table to Go types.
func registry(by patterns.Discriminator) (*patterns.Registry, error) {
	r := patterns.NewRegistry(&patterns.RegistryOptions{Discriminator: by})
	for _, err := range []error{
		patterns.Register[Department](r, "Department", 1),
		patterns.Register[Employee](r, "Employee", 1),
		patterns.Register[EmployeeV2](r, "Employee", 2),
	} {
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// openTable creates a table of property bags: it holds several kinds, so
// no one struct is its type.
func openTable(ctx context.Context, acct *tablekit.Account, base string) (*tablekit.Table[tablekit.Entity], error) {
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, base+rand.Text()[:8], nil)
	if err != nil {
		return nil, err
	}
	return tbl, tbl.CreateIfNotExists(ctx)
}

// byProperty tells the kinds apart by the EntityType property, the design
// guide's first option: RowKeys stay free ("Sales", "000100", ...).
func byProperty(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	tbl, err := openTable(ctx, acct, "Staff")
	if err != nil {
		return err
	}
	defer tbl.DeleteTable(context.WithoutCancel(ctx))
	meter := acct.Meter()
	reg, err := registry(patterns.ByProperty)
	if err != nil {
		return err
	}
	m, err := patterns.NewMixed(tbl, reg)
	if err != nil {
		return err
	}

	// Each write sets EntityType to the value's kind and version
	// ("Employee.v2"). A row of a kind the registry does not know (another
	// program's) is written and read as a plain tablekit.Entity.
	for _, v := range []any{
		Department{Name: "Sales", Key: "Sales", Manager: "Ann", EmployeeCount: 2},
		Employee{Department: "Sales", Key: "000100", Name: "Ann Jones", Email: "ann@contoso.com"},
		EmployeeV2{Department: "Sales", Key: "000101", First: "Bob", Last: "Smith", Email: "bob@contoso.com"},
		tablekit.Entity{PartitionKey: "Sales", RowKey: "Q3-goals", Properties: map[string]any{"EntityType": "Goal.v1", "Target": 1.5e6}},
	} {
		if _, err := m.Insert(ctx, v); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "the Sales partition holds a department, an Employee.v1, an Employee.v2 and a Goal.v1 of another program, each with its %s\n", reg.TypeProperty())

	// One query reads the whole partition; a type switch takes each row as
	// its own type.
	before := meter.Snapshot()
	var kinds []string
	for v, err := range m.Query(ctx, tablekit.PartitionEq("Sales"), nil) {
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
		kinds = append(kinds, fmt.Sprintf("%T", v))
	}
	if got := strings.Join(kinds, " "); got != "main.Employee main.EmployeeV2 tablekit.Entity main.Department" {
		return fmt.Errorf("the partition decoded as %s", got)
	}
	fmt.Fprintf(out, "one query decoded the mixed partition, in RowKey order, each row into its own type: %s\n", cost(meter.Snapshot().Sub(before)))

	// QueryKind reads one kind and version; with ByProperty it is a filter
	// on EntityType, which the service applies while reading the partition.
	var v2 []string
	for e, err := range patterns.QueryKind[EmployeeV2](ctx, m, "Sales", nil) {
		if err != nil {
			return err
		}
		v2 = append(v2, e.First)
	}
	if len(v2) != 1 || v2[0] != "Bob" {
		return fmt.Errorf("QueryKind[EmployeeV2]: %v, want [Bob]", v2)
	}
	fmt.Fprintf(out, "QueryKind[EmployeeV2] read the Employee.v2 rows only: %v\n", v2)

	// A new employee and the department's count change together: both are
	// in the partition, so one entity group transaction does it.
	v, err := m.Get(ctx, "Sales", "Sales")
	if err != nil {
		return err
	}
	dept, ok := v.(Department)
	if !ok {
		return fmt.Errorf("Sales/Sales decoded as %T, want Department", v)
	}
	read := dept.ETag
	dept.EmployeeCount++
	before = meter.Snapshot()
	etags, err := m.Transaction(ctx,
		tablekit.InsertAction[any](EmployeeV2{Department: "Sales", Key: "000102", First: "Cy", Last: "Young", Email: "cy@contoso.com"}),
		tablekit.MergeAction[any](dept, dept.ETag))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "a new employee and the department's count in one entity group transaction: %s\n", cost(meter.Snapshot().Sub(before)))

	// The transaction returned each action's new ETag: the department can
	// be updated again conditionally without reading it first, and the
	// version read before the transaction no longer passes.
	dept.Manager = "Bob"
	if _, err := m.Merge(ctx, dept, read); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		return fmt.Errorf("update with the ETag read before the transaction: want ErrPreconditionFailed, got %v", err)
	}
	if _, err := m.Merge(ctx, dept, etags[1]); err != nil {
		return err
	}
	v, err = m.Get(ctx, "Sales", "Sales")
	if err != nil {
		return err
	}
	if got, _ := v.(Department); got.Manager != "Bob" || got.EmployeeCount != 3 {
		return fmt.Errorf("the department reads manager %s, %d employees; want Bob, 3", got.Manager, got.EmployeeCount)
	}
	fmt.Fprintln(out, "with the ETag the transaction returned, the department was updated again without a read (manager Bob, 3 employees); the ETag read before it was refused (ErrPreconditionFailed)")
	return nil
}

// byRowKeyPrefix tells the kinds apart by the RowKey's first component,
// the guide's other option: RowKey "Employee!000100", so the employees of
// a department are one RowKey range.
func byRowKeyPrefix(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	tbl, err := openTable(ctx, acct, "StaffRK")
	if err != nil {
		return err
	}
	defer tbl.DeleteTable(context.WithoutCancel(ctx))
	meter := acct.Meter()
	reg, err := registry(patterns.ByRowKeyPrefix)
	if err != nil {
		return err
	}
	m, err := patterns.NewMixed(tbl, reg)
	if err != nil {
		return err
	}

	// Registry.RowKey builds the compound key (kind, id).
	deptKey, err := reg.RowKey("Department", "Sales")
	if err != nil {
		return err
	}
	if _, err := m.Insert(ctx, Department{Name: "Sales", Key: deptKey, Manager: "Ann", EmployeeCount: 3}); err != nil {
		return err
	}
	for i, name := range []string{"Ann Jones", "Bob Smith", "Cy Young"} {
		k, err := reg.RowKey("Employee", fmt.Sprintf("%06d", 100+i))
		if err != nil {
			return err
		}
		if _, err := m.Insert(ctx, Employee{Department: "Sales", Key: k, Name: name}); err != nil {
			return err
		}
	}

	before := meter.Snapshot()
	var names []string
	for e, err := range patterns.QueryKind[Employee](ctx, m, "Sales", nil) {
		if err != nil {
			return err
		}
		names = append(names, e.Key+"="+e.Name)
	}
	c := meter.Snapshot().Sub(before)
	if len(names) != 3 || c.Total() != 1 {
		return fmt.Errorf("read %v with %v, want 3 employees in one query", names, c)
	}
	fmt.Fprintf(out, "with RowKey = kind!id (the department is %s), the employees of a department are one prefix range query: %v, %s\n", deptKey, names, cost(c))
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
