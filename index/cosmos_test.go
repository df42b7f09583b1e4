package index_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/index"
)

// On Cosmos DB, whose query results are in no key order even within a
// partition (the front's Cosmos mode), index lookups still return their
// entities in index order: the index entries of range lookups are read
// whole and sorted, and list lookups keep the list's order. They do so
// too through Accounts opened with the default Options (ServiceAuto) on
// an endpoint whose address does not say Cosmos DB, each lookup on a
// fresh Account that has read nothing yet.
func TestCosmosIndexLookups(t *testing.T) {
	for _, svc := range []tablekit.Service{tablekit.ServiceCosmosDB, tablekit.ServiceAuto} {
		t.Run(svc.String(), func(t *testing.T) { cosmosIndexLookups(t, svc) })
	}
}

func cosmosIndexLookups(t *testing.T, svc tablekit.Service) {
	ctx := context.Background()
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Seed: 11}})
	// build opens the indexes on a new Account opened with svc.
	build := func() (*index.SamePartition[Employee], *index.CrossPartition[Employee]) {
		t.Helper()
		acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Service: svc})
		if err != nil {
			t.Fatal(err)
		}
		open := func(name string) *tablekit.Table[tablekit.Entity] {
			tbl, err := tablekit.OpenTable[tablekit.Entity](acct, name, nil)
			if err != nil {
				t.Fatal(err)
			}
			return tbl
		}
		tbl, err := tablekit.OpenTable[Employee](acct, "cosmosindex", nil)
		if err != nil {
			t.Fatal(err)
		}
		if (tbl.Account().Service() == tablekit.ServiceCosmosDB) != (svc == tablekit.ServiceCosmosDB) {
			t.Fatalf("the table is in Cosmos mode %v before it sent anything, with %v", tbl.Account().Service() == tablekit.ServiceCosmosDB, svc)
		}
		ix, err := index.NewSamePartition(tbl, employeeIndexes(), nil)
		if err != nil {
			t.Fatal(err)
		}
		staffTable, err := tablekit.OpenTable[Employee](acct, "cosmosstaff", nil)
		if err != nil {
			t.Fatal(err)
		}
		copies := open("cosmoscopies")
		lists := open("cosmoslists")
		inter, err := index.NewCrossPartition(staffTable, []index.Index[Employee]{
			{Name: "email", Key: func(e Employee) string { return e.Email }, Table: copies},
			{Name: "anyemail", Key: func(e Employee) string { return e.Email }, Table: copies, Global: true},
			{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: true, Table: lists},
		}, nil) // direct mode
		if err != nil {
			t.Fatal(err)
		}
		return ix, inter
	}
	setup, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Service: tablekit.ServiceCosmosDB})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cosmosindex", "cosmosstaff", "cosmoscopies", "cosmoslists"} {
		tbl, err := tablekit.OpenTable[tablekit.Entity](setup, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.CreateIfNotExists(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ix, inter := build()
	var emails, allEmails []string
	for _, e := range staff() {
		if _, err := ix.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
		if _, err := inter.Upsert(ctx, e); err != nil {
			t.Fatal(err)
		}
		if e.Department == "Sales" {
			emails = append(emails, e.Email)
		}
		allEmails = append(allEmails, e.Email)
	}
	slices.Sort(emails)
	slices.Sort(allEmails)
	if len(emails) < 5 {
		t.Fatalf("the test data has %d Sales employees; the test needs several", len(emails))
	}
	emailsOf := func(seq func(func(Employee, error) bool)) []string {
		t.Helper()
		var got []string
		for e, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.Email)
		}
		return got
	}
	startingWith := func(all []string, p string) []string {
		var out []string
		for _, e := range all {
			if strings.HasPrefix(e, p) {
				out = append(out, e)
			}
		}
		return out
	}
	jones := filterStaff("Sales", func(e Employee) bool { return e.LastName == "Jones" }, func(e Employee) string { return e.ID })
	if len(jones) < 3 {
		t.Fatalf("the test data has %d Joneses in Sales; the test needs several", len(jones))
	}
	// fresh returns the indexes on an Account that has read nothing.
	fresh := func() (*index.SamePartition[Employee], *index.CrossPartition[Employee]) {
		t.Helper()
		return build()
	}

	// SamePartition.
	ix, _ = fresh()
	equal(t, "SamePartition.Range over the email index", emailsOf(ix.Range(ctx, "Sales", "email", "", "")), emails)
	ix, _ = fresh()
	equal(t, "SamePartition.Prefix a", emailsOf(ix.Prefix(ctx, "Sales", "email", "a")), startingWith(emails, "a"))
	ix, _ = fresh()
	equal(t, "SamePartition.By Jones (projected copies)", collect(t, ix.By(ctx, "Sales", "lastname", "Jones")), jones)
	ix, _ = fresh()
	if e, err := ix.Find(ctx, "Sales", "lastname", "Jones"); err != nil || e.ID != jones[0] {
		t.Errorf("SamePartition.Find of the first Jones = %s, %v; want %s", e.ID, err, jones[0])
	}
	ix, _ = fresh()
	if e, err := ix.Find(ctx, "Sales", "email", "donh@contoso.com"); err != nil || e.ID != "000152" {
		t.Errorf("SamePartition.Find by a unique email = %s, %v", e.ID, err)
	}

	// CrossPartition.
	_, inter = fresh()
	equal(t, "CrossPartition.Range over the email index", emailsOf(inter.Range(ctx, "Sales", "email", "", "")), emails)
	_, inter = fresh()
	equal(t, "CrossPartition.Prefix a", emailsOf(inter.Prefix(ctx, "Sales", "email", "a")), startingWith(emails, "a"))
	_, inter = fresh()
	equal(t, "CrossPartition.Prefix a, all departments", emailsOf(inter.Prefix(ctx, "", "anyemail", "a")), startingWith(allEmails, "a"))
	_, inter = fresh()
	equal(t, "CrossPartition.By Jones (an index entity)", collect(t, inter.By(ctx, "Sales", "lastname", "Jones")), jones)
	_, inter = fresh()
	if e, err := inter.Find(ctx, "Sales", "lastname", "Jones"); err != nil || e.ID != jones[0] {
		t.Errorf("CrossPartition.Find of the first Jones = %s, %v; want %s", e.ID, err, jones[0])
	}
	_, inter = fresh()
	if e, err := inter.Find(ctx, "", "anyemail", "donh@contoso.com"); err != nil || e.ID != "000152" {
		t.Errorf("CrossPartition.Find by email = %s, %v", e.ID, err)
	}
}
