package patterns_test

import (
	"errors"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

func TestDenormalizer(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	reg := newRegistry(t, false)
	m, err := patterns.NewMixed(tbl, reg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := patterns.NewDenormalizer[Employee](tbl, map[string]string{"Name": "ManagerName", "Email": "ManagerEmail"}, &patterns.DenormalizeOptions{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Insert(ctx, Department{Name: "Sales", Key: "Sales", EmployeeCount: 7}); err != nil {
		t.Fatal(err)
	}
	mgr := Employee{Department: "Sales", Key: "000100", Name: "Ann", Email: "ann@contoso.com", Age: 40}

	// The manager and the department's copy change in one transaction.
	before := acct.Meter().Snapshot()
	if _, err := d.Write(ctx, mgr, "Sales"); err != nil {
		t.Fatal(err)
	}
	if cost := acct.Meter().Snapshot().Sub(before); cost.Total() != 1 || cost.Count("table", "Transaction") != 1 {
		t.Fatalf("Write cost %v", cost)
	}
	// One point query answers who manages Sales and how to reach them.
	before = acct.Meter().Snapshot()
	v, err := m.Get(ctx, "Sales", "Sales")
	if err != nil {
		t.Fatal(err)
	}
	dept := v.(Department)
	if dept.ManagerName != "Ann" || dept.ManagerEmail != "ann@contoso.com" || dept.EmployeeCount != 7 {
		t.Fatalf("department %+v", dept)
	}
	if acct.Meter().Snapshot().Sub(before).Total() != 1 {
		t.Fatal("more than one request")
	}
	if v, _ := m.Get(ctx, "Sales", "000100"); v.(Employee) != mgr {
		t.Fatalf("manager %+v", v)
	}

	// A missing copy fails the whole transaction: the source is unchanged.
	mgr.Email = "ann@fabrikam.com"
	if _, err := d.Write(ctx, mgr, "Sales", "Marketing"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("Write with a missing copy: %v", err)
	}
	if v, _ := m.Get(ctx, "Sales", "000100"); v.(Employee).Email != "ann@contoso.com" {
		t.Fatal("the source changed although the transaction failed")
	}

	// A source without Email removes the copy's ManagerEmail.
	mgr.Email = ""
	if _, err := d.Write(ctx, mgr, "Sales"); err != nil {
		t.Fatal(err)
	}
	e, err := tbl.Get(ctx, "Sales", "Sales")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Properties["ManagerEmail"]; ok || e.Properties["ManagerName"] != "Ann" || e.Properties["EmployeeCount"] != int64(7) {
		t.Fatalf("department after removing the email: %v", e.Properties)
	}
	if _, err := patterns.NewDenormalizer[Employee](tbl, map[string]string{"Name": "X", "Email": "X"}, nil); err == nil {
		t.Fatal("two sources copied into one property")
	}
}
