package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results the pattern promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	testenv.Narrates(t, out.String(),
		"  Employee v1 000100: Ann Jones\n  Employee v2 000101: Bob Smith\n  unregistered kind Goal.v1 at Q3-goals, kept as a tablekit.Entity (Target 1.5e+06)\n  Department Sales: manager Ann, 2 employees",
		"one query decoded the mixed partition, in RowKey order, each row into its own type: {1} transaction (QueryEntities={1})",
		"a new employee and the department's count in one entity group transaction: 1 transaction (Transaction=1)",
	)
}

// TestQueryKindAndETags: QueryKind reads the rows of one kind and version
// only; a Transaction returns each action's new ETag, from which the
// department is written again without a read, and the ETag read before it
// is refused.
func TestQueryKindAndETags(t *testing.T) {
	ctx := context.Background()
	m, drop, err := open(ctx, testenv.Account(t, nil), "Staff", false)
	defer drop()
	if err != nil {
		t.Fatal(err)
	}
	dept := Department{Name: "Sales", Key: "Sales", Manager: "Ann", EmployeeCount: 1}
	read, err := m.Insert(ctx, dept)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Insert(ctx, Employee{Department: "Sales", Key: "000100", Name: "Ann Jones"}); err != nil {
		t.Fatal(err)
	}
	dept.EmployeeCount++
	etags, err := m.Transaction(ctx,
		tablekit.InsertAction[any](EmployeeV2{Department: "Sales", Key: "000101", First: "Bob", Last: "Smith"}),
		tablekit.MergeAction[any](dept, read))
	if err != nil {
		t.Fatal(err)
	}
	var v2 []string
	for e, err := range patterns.QueryKind[EmployeeV2](ctx, m, "Sales", nil) {
		if err != nil {
			t.Fatal(err)
		}
		v2 = append(v2, e.First)
	}
	if len(v2) != 1 || v2[0] != "Bob" {
		t.Fatalf("QueryKind[EmployeeV2]: %v, want [Bob]", v2)
	}
	dept.Manager = "Bob"
	if _, err := m.Merge(ctx, dept, read); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Fatalf("a Merge with the ETag read before the transaction: want ErrPreconditionFailed, got %v", err)
	}
	if _, err := m.Merge(ctx, dept, etags[1]); err != nil {
		t.Fatal(err)
	}
	if v, err := m.Get(ctx, "Sales", "Sales"); err != nil || v.(Department).Manager != "Bob" || v.(Department).EmployeeCount != 2 {
		t.Fatalf("the department reads %+v, %v; want manager Bob, 2 employees", v, err)
	}
}

// TestKindInRowKey: with the kind in the RowKey, the guide's other option
// (RowKey "Employee!000100"), the employees of a department are one prefix
// range query.
func TestKindInRowKey(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	m, drop, err := open(ctx, acct, "StaffRK", true)
	defer drop()
	if err != nil {
		t.Fatal(err)
	}
	deptKey, _ := keys.Compound("Department", "Sales")
	if _, err := m.Insert(ctx, Department{Name: "Sales", Key: deptKey, Manager: "Ann", EmployeeCount: 3}); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"Ann Jones", "Bob Smith", "Cy Young"} {
		k, _ := keys.Compound("Employee", fmt.Sprintf("%06d", 100+i))
		if _, err := m.Insert(ctx, Employee{Department: "Sales", Key: k, Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	// A value whose RowKey does not start with its kind is refused.
	if _, err := m.Insert(ctx, Employee{Department: "Sales", Key: "000200"}); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Fatalf("an Employee with RowKey 000200: %v", err)
	}
	before := acct.Meter().Snapshot()
	var names []string
	for e, err := range patterns.QueryKind[Employee](ctx, m, "Sales", &tablekit.QueryOptions{KeyOrder: true}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, e.Key+"="+e.Name)
	}
	c := acct.Meter().Snapshot().Sub(before)
	// One query (Azure may cut it into more pages).
	if got := fmt.Sprint(names); got != "[Employee!000100=Ann Jones Employee!000101=Bob Smith Employee!000102=Cy Young]" || c.Total() < 1 || (c.Total() != 1 && !testenv.PagesAsAzure()) || deptKey != "Department!Sales" {
		t.Fatalf("read %s in %d transactions (department key %s), want 3 employees in one query", got, c.Total(), deptKey)
	}
}
