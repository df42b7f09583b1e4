package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results the pattern promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"the manager and the department's copy written together (same partition): 1 transaction (Transaction=1)",
		"changed in one entity group transaction, conditional on the manager's ETag: 1 transaction (Transaction=1)",
		"one point query: Sales has 12 employees (kept: the copy is merged), managed by Ann Jones <ann.jones@contoso.com>, 1 transaction (GetEntity=1)",
		`the manager's email removed: the department's ManagerEmail is "" and it kept EmployeeCount 12, 2 transactions (QueryEntities=1 Transaction=1)`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}

// TestAllOrNothing: Write returns the manager's new ETag, the stored one;
// a Write with a stale ETag is refused and changes nothing, and a Write
// naming a copy that does not exist fails as a whole, the manager's change
// included.
func TestAllOrNothing(t *testing.T) {
	ctx := context.Background()
	m, d, drop, err := setup(ctx, testenv.Account(t, nil))
	defer drop()
	if err != nil {
		t.Fatal(err)
	}
	read := func() (Employee, Department) {
		t.Helper()
		e, err := m.Get(ctx, "Sales", "000100")
		if err != nil {
			t.Fatal(err)
		}
		dept, err := m.Get(ctx, "Sales", "Sales")
		if err != nil {
			t.Fatal(err)
		}
		return e.(Employee), dept.(Department)
	}
	mgr := Employee{Department: "Sales", Key: "000100", Name: "Ann Jones", Email: "ann@contoso.com"}
	first, err := d.Write(ctx, mgr, "Sales")
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := read(); e.ETag != first {
		t.Fatalf("Write returned ETag %q; the manager reads %q", first, e.ETag)
	}
	mgr.ETag = first
	if mgr.ETag, err = d.Write(ctx, mgr, "Sales"); err != nil {
		t.Fatal(err)
	}

	stale := mgr
	stale.ETag, stale.Name = first, "Ann Smith"
	if _, err := d.Write(ctx, stale, "Sales"); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Fatalf("a Write with a stale ETag: want ErrPreconditionFailed, got %v", err)
	}
	if e, dept := read(); e.Name != "Ann Jones" || dept.ManagerName != "Ann Jones" {
		t.Fatalf("after a refused Write: manager %q, copy %q", e.Name, dept.ManagerName)
	}

	renamed := mgr
	renamed.Name = "Ann Smith"
	_, err = d.Write(ctx, renamed, "Sales", "Sales-EMEA")
	if !errors.Is(err, tablekit.ErrNotFound) || !strings.Contains(err.Error(), "ResourceNotFound") {
		t.Fatalf("a Write to a missing copy: want ErrNotFound, got %v", err)
	}
	if e, dept := read(); e.Name != "Ann Jones" || dept.ManagerName != "Ann Jones" {
		t.Fatalf("after a failed Write: manager %q, copy %q", e.Name, dept.ManagerName)
	}
}
