package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results and costs the pattern promises.
func TestRun(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	var out bytes.Buffer
	if err := samePartition(ctx, acct, &out, testenv.TableName(t)); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if err := elsewhere(ctx, acct, &out, strings.ToLower(testenv.TableName(t))); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"option 2: 6 employees hired, each with a read of its index entity and one transaction: 12 requests (table: GetEntity=6 Transaction=6)",
		"the Joneses of Sales, one point query for the index entity: [Sales/000123 Sales/000200 Sales/000223]",
		"By(lastname, Hall) reads the index entity, then the employees: [Lisa Don]",
		"options 3 and 1: once the worker caught up, the index entity lastname!Sales/Jones lists [Sales/000123 Sales/000200 Sales/000223]",
		"the blob surname/Jones lists every Jones: [Marketing/000150 Sales/000123 Sales/000200 Sales/000223]",
		"By(surname, Jones): the blob, then the employees: [Bea Lisa Amy Jon]",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}

// What the example does not show: how option 2 stores its list, what a
// move between lists costs, and option 3 in a table of its own.
func TestIndexEntities(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	name := testenv.TableName(t)
	employees, _ := tablekit.OpenTable[Employee](acct, name, nil)
	if err := employees.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	defer employees.DeleteTable(context.WithoutCancel(ctx))
	ix, err := index.NewSamePartition(employees, []index.Index[Employee]{{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range staff {
		if _, err := ix.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	ent, err := employees.AsEntities().Get(ctx, "Sales", "lastname!Jones")
	if err != nil {
		t.Fatal(err)
	}
	if ids, n := ent.Properties["IDs"], ent.Properties["Count"]; ids != "000123\n000200\n000223" || n != int64(3) {
		t.Errorf("the index entity stores IDs=%q Count=%v", ids, n)
	}
	// Reading through the index entity: a point query, then the employees.
	before := acct.Meter().Snapshot()
	if names, err := firstNames(ix.By(ctx, "Sales", "lastname", "Jones")); err != nil || len(names) != 3 {
		t.Fatalf("By Jones = %v, %v", names, err)
	}
	if cost := acct.Meter().Snapshot().Sub(before).String(); cost != "4 requests (table: GetEntity=3 QueryEntities=1)" {
		t.Errorf("By Jones cost %s", cost)
	}
	// A move: read Lisa and both index entities, then one transaction.
	before = acct.Meter().Snapshot()
	if _, err := ix.Modify(ctx, "Sales", "000123", func(e *Employee) error { e.LastName = "Hall"; return nil }); err != nil {
		t.Fatal(err)
	}
	if cost := acct.Meter().Snapshot().Sub(before).String(); cost != "4 requests (table: GetEntity=3 Transaction=1)" {
		t.Errorf("Modify cost %s", cost)
	}
	if ids, err := ix.IDs(ctx, "Sales", "lastname", "Jones"); err != nil || len(ids) != 2 {
		t.Errorf("Joneses after the move: %v, %v", ids, err)
	}

	// Option 3 with the index entities in a table of their own: an Insert
	// costs 3 requests, and the list knows the employee once synced.
	staffName, listName := testenv.TableName(t), testenv.TableName(t)
	staffTable, _ := tablekit.OpenTable[Employee](acct, staffName, nil)
	lists, _ := tablekit.OpenTable[tablekit.Entity](acct, listName, nil)
	for _, tbl := range []interface {
		CreateIfNotExists(context.Context) error
		DeleteTable(context.Context) error
	}{staffTable, lists} {
		if err := tbl.CreateIfNotExists(ctx); err != nil {
			t.Fatal(err)
		}
		defer tbl.DeleteTable(context.WithoutCancel(ctx))
	}
	queue, err := archive.NewClient(testenv.NewQueue(t, acct), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cross, err := index.NewCrossPartition(staffTable, []index.Index[Employee]{{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: true, Table: lists}}, &index.CrossPartitionOptions{Queue: queue})
	if err != nil {
		t.Fatal(err)
	}
	before = acct.Meter().Snapshot()
	if _, err := cross.Insert(ctx, staff[0]); err != nil {
		t.Fatal(err)
	}
	if cost := acct.Meter().Snapshot().Sub(before).String(); cost != "3 requests (table: InsertEntity=1; queue: PutMessage=2)" {
		t.Errorf("Insert cost %s", cost)
	}
	if ok, err := cross.CaughtUp(ctx, "Sales", "000223"); err != nil || ok {
		t.Errorf("CaughtUp before any sync = %v, %v", ok, err)
	}
	if err := cross.Sync(ctx, "Sales", "000223"); err != nil { // what the worker runs
		t.Fatal(err)
	}
	if _, err := lists.Get(ctx, "lastname!Sales", "Jones"); err != nil {
		t.Errorf("the index entity in its own table: %v", err)
	}
	if ok, err := cross.CaughtUp(ctx, "Sales", "000223"); err != nil || !ok {
		t.Errorf("CaughtUp after Sync = %v, %v", ok, err)
	}
}
