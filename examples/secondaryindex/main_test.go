package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results and costs the patterns promise.
func TestRun(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	var out bytes.Buffer
	if err := samePartition(ctx, acct, &out, testenv.TableName(t)); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if err := crossPartition(ctx, acct, &out, testenv.TableName(t)); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"same partition: 6 employees inserted, each with its 2 copies in one transaction: 6 requests (table: Transaction=6)",
		"by email jonesj@contoso.com (one point query): [000223 Jon Jones <jonesj@contoso.com>]",
		"Joneses in Sales (copies hold the names only): [000123 Lisa Jones, 000200 Amy Jones, 000223 Jon Jones]",
		"in one transaction on the version read): 2 requests (table: GetEntity=1 Transaction=1); by the old email: []",
		"the employees of Sales (Query skips the copies Table.Query returns too): [000100 Adam Barr <adamb@contoso.com>, 000123 Lisa Jones <lisaj@contoso.com>, 000199 Ana Alvarez <alvareza@contoso.com>, 000200 Amy Jones <amyj@contoso.com>, 000223 Jon Jones <jon.jones@contoso.com>]",
		"cross partition: 6 employees inserted; before a worker runs, CaughtUp(Sales, 000223) = false",
		"once synced, by email in partition email!Sales: [000223 Jon Jones <jonesj@contoso.com>]",
		`emails starting with "a" in all departments: [000100 Adam Barr <adamb@contoso.com>, 000150 Bea Jones <aj@contoso.com>, 000199 Ana Alvarez <alvareza@contoso.com>, 000200 Amy Jones <amyj@contoso.com>]`,
		"the employees (Query skips copies and sync records): [000150 Bea Jones <aj@contoso.com>, 000100 Adam Barr <adamb@contoso.com>, 000123 Lisa Jones <lisaj@contoso.com>, 000199 Ana Alvarez <alvareza@contoso.com>, 000200 Amy Jones <amyj@contoso.com>, 000223 Jon Jones <jonesj@contoso.com>]",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}

// What the example's happy path does not show: the guarantees of the
// same-partition index around it, and what each costs.
func TestSamePartitionGuarantees(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	employees, err := tablekit.OpenTable[Employee](acct, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := employees.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	defer employees.DeleteTable(context.WithoutCancel(ctx))
	ix, err := index.NewSamePartition(employees, []index.Index[Employee]{
		{Name: "email", Key: func(e Employee) string { return e.Email }, Unique: true},
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, Properties: []string{"FirstName", "LastName"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	etags := map[string]azcore.ETag{}
	for _, e := range staff {
		etag, err := ix.Insert(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		etags[e.ID] = etag
	}
	// The stored key of the email copy is the compound key, '.' doubled.
	raw := employees.AsEntities()
	if _, err := raw.Get(ctx, "Sales", "email!jonesj@contoso..com"); err != nil {
		t.Errorf("the email copy of Jon: %v", err)
	}
	// A plain Table.Query returns the copies too, decoded as employees.
	rows := 0
	for _, err := range employees.Query(ctx, tablekit.PartitionEq("Sales"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		rows++
	}
	if rows != 15 {
		t.Errorf("Table.Query of Sales: %d rows, want 15 (5 employees and 2 copies each)", rows)
	}
	// An Update on a version that has changed since is refused.
	jon := staff[0]
	if _, err := ix.Modify(ctx, "Sales", jon.ID, func(e *Employee) error { e.Email = "jon.jones@contoso.com"; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Update(ctx, jon, etags[jon.ID]); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Errorf("Update on a stale ETag: %v, want ErrPreconditionFailed", err)
	}
	// A taken unique value fails the whole write, naming the call and the table.
	dup := Employee{Department: "Sales", ID: "000777", FirstName: "Jo", LastName: "Jonas", Email: "lisaj@contoso.com"}
	var ue *index.UniqueError
	if _, err := ix.Insert(ctx, dup); !errors.As(err, &ue) || ue.Index != "email" || !strings.HasPrefix(err.Error(), "index: SamePartition.Insert: table "+employees.Name()) {
		t.Errorf("duplicate email: %v, want a UniqueError naming the call and the table", err)
	}
	if _, err := ix.Get(ctx, "Sales", "000777"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("the refused employee was stored: %v", err)
	}
	// DeleteIfExists: a read, then the entity and its copies in one transaction.
	before := acct.Meter().Snapshot()
	if existed, err := ix.DeleteIfExists(ctx, "Sales", "000199"); err != nil || !existed {
		t.Fatalf("deleting Ana: %v, %v", existed, err)
	}
	if cost := acct.Meter().Snapshot().Sub(before).String(); cost != "2 requests (table: GetEntity=1 Transaction=1)" {
		t.Errorf("DeleteIfExists cost %s", cost)
	}
}

// The cross-partition Insert costs 3 requests: a hidden safety-net message,
// the insert, a visible message.
func TestCrossPartitionInsertCost(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	name := testenv.TableName(t)
	employees, _ := tablekit.OpenTable[Employee](acct, name, nil)
	if err := employees.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	defer employees.DeleteTable(context.WithoutCancel(ctx))
	q := testenv.NewQueue(t, acct)
	queue, err := archive.NewClient(q, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := index.NewCrossPartition(employees, []index.Index[Employee]{{Name: "email", Key: func(e Employee) string { return e.Email }}}, &index.CrossPartitionOptions{Queue: queue})
	if err != nil {
		t.Fatal(err)
	}
	before := acct.Meter().Snapshot()
	if _, err := ix.Insert(ctx, staff[0]); err != nil {
		t.Fatal(err)
	}
	if cost := acct.Meter().Snapshot().Sub(before).String(); cost != "3 requests (table: InsertEntity=1; queue: PutMessage=2)" {
		t.Errorf("Insert cost %s", cost)
	}
}
