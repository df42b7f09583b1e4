package index_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/keys"
)

// employeeIndexes are the guide's intra-partition indexes: by employee id
// and by email (unique), plus a projected, non-unique index by last name.
func employeeIndexes() []index.Index[Employee] {
	return []index.Index[Employee]{
		{Name: "empid", Key: func(e Employee) string { return e.ID }, Unique: true},
		{Name: "email", Key: func(e Employee) string { return e.Email }, Unique: true},
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, Properties: []string{"FirstName", "LastName"}},
	}
}

type intraFixture struct {
	acct *tablekit.Account
	ix   *index.Intra[Employee]
	raw  *tablekit.Table[tablekit.Entity]
}

func newIntra(t *testing.T, indexes []index.Index[Employee], opts *index.IntraOptions) *intraFixture {
	t.Helper()
	return newIntraOn(t, testenv.Account(t, nil), indexes, opts)
}

func newIntraOn(t *testing.T, acct *tablekit.Account, indexes []index.Index[Employee], opts *index.IntraOptions) *intraFixture {
	t.Helper()
	client := testenv.NewTable(t, acct)
	tbl, err := tablekit.NewTable[Employee](client, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := index.NewIntra(tbl, indexes, opts)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tablekit.NewTable[tablekit.Entity](client, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &intraFixture{acct: acct, ix: ix, raw: raw}
}

func TestIntraLookups(t *testing.T) {
	ctx := testCtx(t)
	f := newIntra(t, employeeIndexes(), nil)
	for _, e := range staff() {
		if err := f.ix.Insert(ctx, e); err != nil {
			t.Fatalf("insert %s: %v", e.ID, err)
		}
	}

	equal(t, "by email", collect(t, f.ix.By(ctx, "Sales", "email", "jonesj@contoso.com")), []string{"000223"})
	equal(t, "by id", collect(t, f.ix.By(ctx, "Sales", "empid", "000152")), []string{"000152"})
	equal(t, "by id in the wrong department", collect(t, f.ix.By(ctx, "Marketing", "empid", "000152")), nil)
	equal(t, "email prefix a", collect(t, f.ix.Prefix(ctx, "Sales", "email", "a")),
		filterStaff("Sales", func(e Employee) bool { return strings.HasPrefix(e.Email, "a") }, func(e Employee) string { return e.Email }))
	equal(t, "id range 000100-000199", collect(t, f.ix.Range(ctx, "Sales", "empid", "000100", "000200")),
		filterStaff("Sales", func(e Employee) bool { return e.ID >= "000100" && e.ID <= "000199" }, func(e Employee) string { return e.ID }))
	equal(t, "ids from 000200", collect(t, f.ix.Range(ctx, "Sales", "empid", "000200", "")), []string{"000200", "000223", "001234"})
	equal(t, "last name Jones", collect(t, f.ix.By(ctx, "Sales", "lastname", "Jones")),
		filterStaff("Sales", func(e Employee) bool { return e.LastName == "Jones" }, func(e Employee) string { return e.LastName }))
	equal(t, "last name Jones in Marketing", collect(t, f.ix.By(ctx, "Marketing", "lastname", "Jones")), []string{"000150"})

	// Whole copies carry every property; the projected index only its own.
	got, err := f.ix.Find(ctx, "Sales", "email", "donh@contoso.com")
	if err != nil || got.FirstName != "Don" || got.LastName != "Hall" || got.Age != 34 || got.ID != "000152" || got.Department != "Sales" {
		t.Errorf("Find by email = %+v, %v", got, err)
	}
	for e, err := range f.ix.By(ctx, "Sales", "lastname", "Hall") {
		if err != nil || e.ID != "000152" || e.FirstName != "Don" || e.Email != "" || e.Age != 0 {
			t.Errorf("projected copy = %+v, %v; want id, names only", e, err)
		}
	}
	if _, err := f.ix.Find(ctx, "Sales", "email", "nobody@contoso.com"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Find of a missing value: %v, want ErrNotFound", err)
	}
	if _, err := f.ix.Find(ctx, "Sales", "phone", "1"); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("Find in an unknown index: %v, want ErrInvalidInput", err)
	}

	// The partition holds each employee once per index plus the entity.
	want := 4 * len(filterStaff("Sales", func(Employee) bool { return true }, func(e Employee) string { return e.ID }))
	if n := len(rowKeys(t, ctx, f.raw, "Sales")); n != want {
		t.Errorf("Sales holds %d rows, want %d", n, want)
	}
}

func TestIntraChangeAndDelete(t *testing.T) {
	ctx := testCtx(t)
	f := newIntra(t, employeeIndexes(), nil)
	for _, e := range staff() {
		if err := f.ix.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	oldKey, _ := keys.Compound("email", "jonesj@contoso.com")

	// Update with the version read: one transaction.
	prev, err := f.ix.Get(ctx, "Sales", "000223")
	if err != nil {
		t.Fatal(err)
	}
	next := prev
	next.Email = "jon.jones@contoso.com"
	next.LastName = "Jones-Hall"
	before := f.acct.Meter().Snapshot()
	if err := f.ix.Update(ctx, prev, next); err != nil {
		t.Fatal(err)
	}
	if cost := f.acct.Meter().Snapshot().Sub(before); cost.Total() != 1 || cost.Count("table", "Transaction") != 1 {
		t.Errorf("Update cost %v, want 1 transaction", cost)
	}
	rks := rowKeys(t, ctx, f.raw, "Sales")
	if slices.Contains(rks, oldKey) {
		t.Errorf("a row is left under the old email: %v", rks)
	}
	equal(t, "by old email", collect(t, f.ix.By(ctx, "Sales", "email", "jonesj@contoso.com")), nil)
	equal(t, "by new email", collect(t, f.ix.By(ctx, "Sales", "email", "jon.jones@contoso.com")), []string{"000223"})
	equal(t, "old last name", collect(t, f.ix.By(ctx, "Sales", "lastname", "Jones")), []string{"000123", "000200"})
	equal(t, "new last name", collect(t, f.ix.By(ctx, "Sales", "lastname", "Jones-Hall")), []string{"000223"})

	// The version read before the update is stale now.
	again := prev
	again.Email = "third@contoso.com"
	if err := f.ix.Update(ctx, prev, again); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Errorf("update with a stale version: %v, want ErrPreconditionFailed", err)
	}
	equal(t, "email after refused update", collect(t, f.ix.By(ctx, "Sales", "email", "third@contoso.com")), nil)

	// Put of an existing entity: insert refused, read, replace (3).
	next.Email = "jj@contoso.com"
	before = f.acct.Meter().Snapshot()
	if err := f.ix.Put(ctx, next); err != nil {
		t.Fatal(err)
	}
	if cost := f.acct.Meter().Snapshot().Sub(before); cost.Total() != 3 {
		t.Errorf("Put of an existing entity cost %v, want 3", cost)
	}
	equal(t, "by email after put", collect(t, f.ix.By(ctx, "Sales", "email", "jj@contoso.com")), []string{"000223"})
	equal(t, "by previous email after put", collect(t, f.ix.By(ctx, "Sales", "email", "jon.jones@contoso.com")), nil)

	// Delete removes every copy.
	if err := f.ix.Delete(ctx, "Sales", "000223"); err != nil {
		t.Fatal(err)
	}
	for e, err := range f.raw.Query(ctx, tablekit.PartitionEq("Sales"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if e.RowKey == "000223" || e.Properties[index.PrimaryRowKeyProperty] == "000223" {
			t.Errorf("row %s of the deleted employee is left", e.RowKey)
		}
	}
	if err := f.ix.Delete(ctx, "Sales", "000223"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	// DeleteVersion: one transaction.
	v, err := f.ix.Get(ctx, "Sales", "000152")
	if err != nil {
		t.Fatal(err)
	}
	before = f.acct.Meter().Snapshot()
	if err := f.ix.DeleteVersion(ctx, v); err != nil {
		t.Fatal(err)
	}
	if cost := f.acct.Meter().Snapshot().Sub(before); cost.Total() != 1 {
		t.Errorf("DeleteVersion cost %v, want 1", cost)
	}
	want := 4 * (len(filterStaff("Sales", func(Employee) bool { return true }, func(e Employee) string { return e.ID })) - 2)
	if n := len(rowKeys(t, ctx, f.raw, "Sales")); n != want {
		t.Errorf("Sales holds %d rows after two deletes, want %d", n, want)
	}
}

func TestIntraPutIsOneTransaction(t *testing.T) {
	ctx := testCtx(t)
	f := newIntra(t, employeeIndexes(), nil)
	for i, e := range staff() {
		before := f.acct.Meter().Snapshot()
		var err error
		if i%2 == 0 {
			err = f.ix.Put(ctx, e)
		} else {
			err = f.ix.Insert(ctx, e)
		}
		if err != nil {
			t.Fatal(err)
		}
		cost := f.acct.Meter().Snapshot().Sub(before)
		if cost.Total() != 1 || cost.Count(tablekit.ServiceTable, "Transaction") != 1 {
			t.Fatalf("writing a new entity with 3 indexes cost %v, want exactly 1 transaction", cost)
		}
	}
}

func TestIntraUnique(t *testing.T) {
	ctx := testCtx(t)
	f := newIntra(t, employeeIndexes(), nil)
	a := staff()[0]
	if err := f.ix.Insert(ctx, a); err != nil {
		t.Fatal(err)
	}
	b := staff()[1]
	b.Email = a.Email
	err := f.ix.Put(ctx, b)
	var ue *index.UniqueError
	if !errors.As(err, &ue) || !errors.Is(err, tablekit.ErrAlreadyExists) || ue.Index != "email" || ue.Value != a.Email {
		t.Fatalf("second entity with the same email: %v, want a *UniqueError for email", err)
	}
	if _, err := f.ix.Get(ctx, b.Department, b.ID); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("the refused entity was written: %v", err)
	}
	if err := f.ix.Insert(ctx, a); !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Errorf("insert of an existing entity: %v, want ErrAlreadyExists", err)
	}
	// A RowKey inside an index's key range is refused.
	c := staff()[2]
	c.ID = "email!x"
	if err := f.ix.Put(ctx, c); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("entity RowKey with an index prefix: %v, want ErrInvalidKey", err)
	}
}

// Concurrent Puts of one entity with different emails: each succeeds in
// turn, and afterwards the entity has exactly one email row, its own.
func TestIntraConcurrentWriters(t *testing.T) {
	ctx := testCtx(t)
	f := newIntra(t, employeeIndexes(), nil)
	base := staff()[0]
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 5 {
				e := base
				e.Email = fmt.Sprintf("w%d-%d@contoso.com", g, i)
				if err := f.ix.Put(ctx, e); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cur, err := f.ix.Get(ctx, base.Department, base.ID)
	if err != nil {
		t.Fatal(err)
	}
	var emails []string
	for _, rk := range rowKeys(t, ctx, f.raw, base.Department) {
		if c, _ := keys.Split(rk); len(c) == 2 && c[0] == "email" {
			emails = append(emails, c[1])
		}
	}
	equal(t, "email rows", emails, []string{cur.Email})

	// With a single attempt, a writer that loses the race gets an error
	// matching ErrPreconditionFailed.
	strict, err := index.NewIntra(mustTable[Employee](t, f.raw), employeeIndexes(), &index.IntraOptions{Retry: tablekit.NoRetries})
	if err != nil {
		t.Fatal(err)
	}
	stale, err := strict.Get(ctx, base.Department, base.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.ix.Put(ctx, stale); err != nil { // changes the ETag
		t.Fatal(err)
	}
	stale.Email = "late@contoso.com"
	if err := strict.Update(ctx, stale, stale); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Errorf("update after a concurrent write: %v, want ErrPreconditionFailed", err)
	}
}

func mustTable[T any](t *testing.T, raw *tablekit.Table[tablekit.Entity]) *tablekit.Table[T] {
	t.Helper()
	tbl, err := tablekit.NewTable[T](raw.Client(), &tablekit.TableOptions{Name: raw.Name()})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func TestIntraLimits(t *testing.T) {
	ctx := testCtx(t)
	// 60 indexes: a write that changes every value needs 1 + 2*60 actions.
	var many []index.Index[Employee]
	for i := range 60 {
		many = append(many, index.Index[Employee]{Name: fmt.Sprintf("i%02d", i), Key: func(e Employee) string { return fmt.Sprintf("%s-%d", e.Email, i) }})
	}
	f := newIntra(t, many, nil)
	e := staff()[0]
	if err := f.ix.Insert(ctx, e); err != nil {
		t.Fatalf("insert with 60 indexes (61 actions): %v", err)
	}
	prev, err := f.ix.Get(ctx, e.Department, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	next := prev
	next.Email = "changed@contoso.com"
	err = f.ix.Update(ctx, prev, next)
	var ve *tablekit.ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, tablekit.ErrTooLarge) || ve.Size != 121 || !strings.Contains(ve.Limit, "100 actions") {
		t.Fatalf("update of 60 indexed values: %v, want a 100-action ErrTooLarge", err)
	}

	// Whole copies of a large entity: 81 copies of ~60 KB exceed 4 MiB.
	big := staff()[1]
	big.FirstName = strings.Repeat("x", 30000)
	big.LastName = strings.Repeat("y", 30000)
	var copies []index.Index[Employee]
	for i := range 80 {
		copies = append(copies, index.Index[Employee]{Name: fmt.Sprintf("c%02d", i), Key: func(e Employee) string { return e.Email }})
	}
	wide := newIntra(t, copies, nil)
	before := wide.acct.Meter().Snapshot()
	err = wide.ix.Insert(ctx, big)
	if !errors.As(err, &ve) || !errors.Is(err, tablekit.ErrTooLarge) || !strings.Contains(ve.Limit, "4 MiB") || !strings.Contains(ve.Detail, "Properties") {
		t.Fatalf("insert of 81 copies of a 60 KB entity: %v, want a 4 MiB ErrTooLarge", err)
	}
	if cost := wide.acct.Meter().Snapshot().Sub(before); cost.Total() != 0 {
		t.Errorf("a refused write sent %v", cost)
	}
}

// A unique index value holding a quote (an email like ana.o'neil@...) is a
// RowKey with ' in it: inserting, updating away from it and back, and
// deleting go through entity group transactions that address that key.
func TestIntraQuotedUniqueValue(t *testing.T) {
	ctx := testCtx(t)
	f := newIntra(t, employeeIndexes(), nil)
	e := Employee{Department: "Sales", ID: "000301", FirstName: "Ana", LastName: "O'Neil", Email: "ana.o'neil@contoso.com"}
	if err := f.ix.Insert(ctx, e); err != nil {
		t.Fatal(err)
	}
	equal(t, "by quoted email", collect(t, f.ix.By(ctx, "Sales", "email", "ana.o'neil@contoso.com")), []string{"000301"})
	equal(t, "by quoted last name", collect(t, f.ix.By(ctx, "Sales", "lastname", "O'Neil")), []string{"000301"})

	prev, err := f.ix.Get(ctx, "Sales", "000301")
	if err != nil {
		t.Fatal(err)
	}
	next := prev
	next.Email = "ana.o'neil-hall@contoso.com"
	next.LastName = "O'Neil-Hall"
	if err := f.ix.Update(ctx, prev, next); err != nil {
		t.Fatalf("Update of an entity whose unique value holds ': %v", err)
	}
	equal(t, "old quoted email", collect(t, f.ix.By(ctx, "Sales", "email", "ana.o'neil@contoso.com")), nil)
	equal(t, "new quoted email", collect(t, f.ix.By(ctx, "Sales", "email", "ana.o'neil-hall@contoso.com")), []string{"000301"})
	equal(t, "new quoted last name", collect(t, f.ix.By(ctx, "Sales", "lastname", "O'Neil-Hall")), []string{"000301"})

	// Another employee cannot take the quoted value.
	other := Employee{Department: "Sales", ID: "000302", LastName: "Other", Email: "ana.o'neil-hall@contoso.com"}
	var ue *index.UniqueError
	if err := f.ix.Insert(ctx, other); !errors.As(err, &ue) || ue.Index != "email" {
		t.Errorf("second entity with the quoted email: %v, want a *UniqueError for email", err)
	}
	if err := f.ix.Delete(ctx, "Sales", "000301"); err != nil {
		t.Fatal(err)
	}
	if rks := rowKeys(t, ctx, f.raw, "Sales"); len(rks) != 0 {
		t.Errorf("rows left after delete: %q", rks)
	}
}
