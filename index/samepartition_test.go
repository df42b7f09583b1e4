package index_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
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
	ix   *index.SamePartition[Employee]
	raw  *tablekit.Table[tablekit.Entity]
}

func newIntra(t *testing.T, indexes []index.Index[Employee], opts *index.SamePartitionOptions) *intraFixture {
	t.Helper()
	return newIntraOn(t, testenv.Account(t, nil), indexes, opts)
}

func newIntraOn(t *testing.T, acct *tablekit.Account, indexes []index.Index[Employee], opts *index.SamePartitionOptions) *intraFixture {
	t.Helper()
	name := testenv.CreateTable(t, acct)
	tbl, err := tablekit.OpenTable[Employee](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := index.NewSamePartition(tbl, indexes, opts)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tablekit.OpenTable[tablekit.Entity](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &intraFixture{acct: acct, ix: ix, raw: raw}
}

func TestIntraLookups(t *testing.T) {
	ctx := testCtx(t)
	f := newIntra(t, employeeIndexes(), nil)
	for _, e := range staff() {
		if _, err := f.ix.Insert(ctx, e); err != nil {
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
		if _, err := f.ix.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	oldKey, _ := keys.Compound("email", "jonesj@contoso.com")

	// Update with the version read: a read of the stored version (whose
	// indexed values the transaction removes), then one transaction.
	prev, err := f.ix.Get(ctx, "Sales", "000223")
	if err != nil {
		t.Fatal(err)
	}
	next := prev
	next.Email = "jon.jones@contoso.com"
	next.LastName = "Jones-Hall"
	before := f.acct.Meter().Snapshot()
	etag, err := f.ix.Update(ctx, next, prev.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if cost := f.acct.Meter().Snapshot().Sub(before); cost.Total() != 2 || cost.Count("table", "Transaction") != 1 {
		t.Errorf("Update cost %v, want a read and 1 transaction", cost)
	}
	// The ETag returned is the entity's (from the transaction's answer).
	if cur, err := f.ix.Get(ctx, "Sales", "000223"); err != nil || cur.ETag != etag || etag == "" {
		t.Errorf("Update returned ETag %q, the entity has %q (%v)", etag, cur.ETag, err)
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
	if _, err := f.ix.Update(ctx, again, prev.ETag); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Errorf("update with a stale version: %v, want ErrPreconditionFailed", err)
	}
	if _, err := f.ix.Update(ctx, again, ""); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("update with no ETag: %v, want ErrInvalidInput", err)
	}
	equal(t, "email after refused update", collect(t, f.ix.By(ctx, "Sales", "email", "third@contoso.com")), nil)

	// Upsert of an existing entity: insert refused, read, replace (3).
	next.Email = "jj@contoso.com"
	before = f.acct.Meter().Snapshot()
	if _, err := f.ix.Upsert(ctx, next); err != nil {
		t.Fatal(err)
	}
	if cost := f.acct.Meter().Snapshot().Sub(before); cost.Total() != 3 {
		t.Errorf("Upsert of an existing entity cost %v, want 3", cost)
	}
	equal(t, "by email after upsert", collect(t, f.ix.By(ctx, "Sales", "email", "jj@contoso.com")), []string{"000223"})
	equal(t, "by previous email after upsert", collect(t, f.ix.By(ctx, "Sales", "email", "jon.jones@contoso.com")), nil)

	// Modify: a read and one transaction; the value stored comes back
	// with its new ETag.
	before = f.acct.Meter().Snapshot()
	mod, err := f.ix.Modify(ctx, "Sales", "000223", func(e *Employee) error {
		e.Email, e.Age = "jon@contoso.com", e.Age+1
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cost := f.acct.Meter().Snapshot().Sub(before); cost.Total() != 2 || cost.Count("table", "Transaction") != 1 {
		t.Errorf("Modify cost %v, want a read and 1 transaction", cost)
	}
	if cur, err := f.ix.Get(ctx, "Sales", "000223"); err != nil || cur != mod || mod.Age != 35 || mod.ETag == "" {
		t.Errorf("Modify returned %+v, stored %+v (%v)", mod, cur, err)
	}
	equal(t, "by email after modify", collect(t, f.ix.By(ctx, "Sales", "email", "jon@contoso.com")), []string{"000223"})
	equal(t, "by previous email after modify", collect(t, f.ix.By(ctx, "Sales", "email", "jj@contoso.com")), nil)
	// An error from fn stops Modify: nothing written.
	stop := errors.New("stop")
	if _, err := f.ix.Modify(ctx, "Sales", "000223", func(e *Employee) error { e.Email = "x@contoso.com"; return stop }); err != stop {
		t.Errorf("Modify whose fn failed: %v, want fn's error", err)
	}
	// Modify of a missing entity creates it, as Table.Modify does.
	created, err := f.ix.Modify(ctx, "Sales", "000400", func(e *Employee) error {
		e.FirstName, e.Email = "New", "new@contoso.com"
		return nil
	})
	if err != nil || created.ID != "000400" || created.Department != "Sales" || created.ETag == "" {
		t.Fatalf("Modify of a missing entity = %+v, %v", created, err)
	}
	equal(t, "by email after modify created", collect(t, f.ix.By(ctx, "Sales", "email", "new@contoso.com")), []string{"000400"})

	// DeleteIfExists removes every copy.
	existed, err := f.ix.DeleteIfExists(ctx, "Sales", "000223")
	if err != nil || !existed {
		t.Fatalf("DeleteIfExists = %v, %v", existed, err)
	}
	for e, err := range f.raw.Query(ctx, tablekit.PartitionEq("Sales"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if e.RowKey == "000223" || e.Properties[index.PrimaryRowKeyProperty] == "000223" {
			t.Errorf("row %s of the deleted employee is left", e.RowKey)
		}
	}
	before = f.acct.Meter().Snapshot()
	if existed, err := f.ix.DeleteIfExists(ctx, "Sales", "000223"); err != nil || existed {
		t.Errorf("second DeleteIfExists = %v, %v; want false, nil", existed, err)
	}
	if cost := f.acct.Meter().Snapshot().Sub(before); cost.Total() != 1 {
		t.Errorf("DeleteIfExists of a missing entity cost %v, want 1 read", cost)
	}
	if err := f.ix.Delete(ctx, "Sales", "000223", azcore.ETagAny); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Delete of a missing entity: %v, want ErrNotFound", err)
	}
	// Delete with the version read: a read and one transaction; a stale
	// version is refused.
	v, err := f.ix.Get(ctx, "Sales", "000152")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ix.Upsert(ctx, v); err != nil { // a new version
		t.Fatal(err)
	}
	if err := f.ix.Delete(ctx, "Sales", "000152", v.ETag); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Errorf("Delete with a stale ETag: %v, want ErrPreconditionFailed", err)
	}
	if err := f.ix.Delete(ctx, "Sales", "000152", ""); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("Delete with no ETag: %v, want ErrInvalidInput", err)
	}
	v, err = f.ix.Get(ctx, "Sales", "000152")
	if err != nil {
		t.Fatal(err)
	}
	before = f.acct.Meter().Snapshot()
	if err := f.ix.Delete(ctx, "Sales", "000152", v.ETag); err != nil {
		t.Fatal(err)
	}
	if cost := f.acct.Meter().Snapshot().Sub(before); cost.Total() != 2 {
		t.Errorf("Delete cost %v, want 2", cost)
	}
	// Two employees deleted; one created without a last name (no copy in
	// the lastname index).
	want := 4*(len(filterStaff("Sales", func(Employee) bool { return true }, func(e Employee) string { return e.ID }))-2) + 3
	if n := len(rowKeys(t, ctx, f.raw, "Sales")); n != want {
		t.Errorf("Sales holds %d rows after two deletes and a creation, want %d", n, want)
	}
}

// An entity read through a copy index carries the copy's ETag, which
// Update and Delete accept as the entity's version: every write rewrites
// all the copies, so the copy's ETag changes exactly when the entity's
// does.
func TestIntraUpdateAfterFind(t *testing.T) {
	ctx := testCtx(t)
	f := newIntra(t, employeeIndexes(), nil)
	for _, e := range staff() {
		if _, err := f.ix.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	jon, err := f.ix.Find(ctx, "Sales", "email", "jonesj@contoso.com")
	if err != nil || jon.ETag == "" {
		t.Fatalf("Find = %+v, %v; want the entity with an ETag", jon, err)
	}
	// The service may stamp the copy with the entity's own ETag (the same
	// time): then no query is needed.
	own, err := f.ix.Get(ctx, "Sales", "000223")
	if err != nil {
		t.Fatal(err)
	}
	want := int64(3)
	if own.ETag == jon.ETag {
		want = 2
	}
	jon.Age = 35
	before := f.acct.Meter().Snapshot()
	etag, err := f.ix.Update(ctx, jon, jon.ETag)
	if err != nil {
		t.Fatalf("Update with the ETag of a Find: %v", err)
	}
	if cost := f.acct.Meter().Snapshot().Sub(before); cost.Total() != want || cost.Count("table", "Transaction") != 1 {
		t.Errorf("Update with a copy's ETag cost %v, want %d: a read, a query (when the copy's ETag differs from the entity's) and 1 transaction", cost, want)
	}
	if cur, err := f.ix.Get(ctx, "Sales", "000223"); err != nil || cur.Age != 35 || cur.ETag != etag {
		t.Errorf("after Update: %+v (%v), returned ETag %q", cur, err, etag)
	}
	// The entity changed: the ETag of the earlier Find is stale.
	jon.Age = 36
	if _, err := f.ix.Update(ctx, jon, jon.ETag); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Errorf("Update with a stale copy's ETag: %v, want ErrPreconditionFailed", err)
	}
	// Through a range over a unique index, and the projected, non-unique
	// index.
	for e, err := range f.ix.Range(ctx, "Sales", "empid", "000223", "000224") {
		if err != nil {
			t.Fatal(err)
		}
		e.Age = 40
		if _, err := f.ix.Update(ctx, e, e.ETag); err != nil {
			t.Fatalf("Update with the ETag of a Range: %v", err)
		}
	}
	var hall Employee
	for e, err := range f.ix.By(ctx, "Sales", "lastname", "Hall") {
		if err != nil {
			t.Fatal(err)
		}
		hall = e
	}
	if err := f.ix.Delete(ctx, "Sales", hall.ID, hall.ETag); err != nil {
		t.Fatalf("Delete with the ETag of a projected copy: %v", err)
	}
	if _, err := f.ix.Get(ctx, "Sales", hall.ID); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("deleted entity: %v", err)
	}
	if cur, err := f.ix.Get(ctx, "Sales", "000223"); err != nil || cur.Age != 40 {
		t.Errorf("after the Range Update: %+v, %v", cur, err)
	}
}

func TestIntraPutIsOneTransaction(t *testing.T) {
	ctx := testCtx(t)
	f := newIntra(t, employeeIndexes(), nil)
	for i, e := range staff() {
		before := f.acct.Meter().Snapshot()
		var err error
		if i%2 == 0 {
			_, err = f.ix.Upsert(ctx, e)
		} else {
			_, err = f.ix.Insert(ctx, e)
		}
		if err != nil {
			t.Fatal(err)
		}
		cost := f.acct.Meter().Snapshot().Sub(before)
		if cost.Total() != 1 || cost.Count("table", "Transaction") != 1 {
			t.Fatalf("writing a new entity with 3 indexes cost %v, want exactly 1 transaction", cost)
		}
	}
}

func TestIntraUnique(t *testing.T) {
	ctx := testCtx(t)
	f := newIntra(t, employeeIndexes(), nil)
	a := staff()[0]
	if _, err := f.ix.Insert(ctx, a); err != nil {
		t.Fatal(err)
	}
	b := staff()[1]
	b.Email = a.Email
	_, err := f.ix.Upsert(ctx, b)
	var ue *index.UniqueError
	if !errors.As(err, &ue) || !errors.Is(err, tablekit.ErrAlreadyExists) || ue.Index != "email" || ue.Value != a.Email {
		t.Fatalf("second entity with the same email: %v, want a *UniqueError for email", err)
	}
	if _, err := f.ix.Get(ctx, b.Department, b.ID); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("the refused entity was written: %v", err)
	}
	if _, err := f.ix.Insert(ctx, a); !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Errorf("insert of an existing entity: %v, want ErrAlreadyExists", err)
	}
	// A RowKey inside an index's key range is refused.
	c := staff()[2]
	c.ID = "email!x"
	if _, err := f.ix.Upsert(ctx, c); !errors.Is(err, tablekit.ErrInvalidKey) {
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
				if _, err := f.ix.Upsert(ctx, e); err != nil {
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
	strict, err := index.NewSamePartition(mustTable[Employee](t, f), employeeIndexes(), &index.SamePartitionOptions{Retry: tablekit.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	stale, err := strict.Get(ctx, base.Department, base.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ix.Upsert(ctx, stale); err != nil { // changes the ETag
		t.Fatal(err)
	}
	stale.Email = "late@contoso.com"
	if _, err := strict.Update(ctx, stale, stale.ETag); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Errorf("update after a concurrent write: %v, want ErrPreconditionFailed", err)
	}
}

// mustTable returns a Table[T] over the fixture's table.
func mustTable[T any](t *testing.T, f *intraFixture) *tablekit.Table[T] {
	t.Helper()
	tbl, err := tablekit.OpenTable[T](f.acct, f.raw.Name(), nil)
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
	if _, err := f.ix.Insert(ctx, e); err != nil {
		t.Fatalf("insert with 60 indexes (61 actions): %v", err)
	}
	prev, err := f.ix.Get(ctx, e.Department, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	next := prev
	next.Email = "changed@contoso.com"
	_, err = f.ix.Update(ctx, next, prev.ETag)
	var ve *tablekit.ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, tablekit.ErrTooLarge) || ve.Size != 121 || !strings.Contains(ve.Limit, "100 actions") {
		t.Fatalf("update of 60 indexed values: %v, want a 100-action ErrTooLarge", err)
	}

	// Whole copies of a large entity: 81 copies of ~60 KB exceed 4 MiB
	// (and Cosmos DB's 2 MB).
	big := staff()[1]
	big.FirstName = strings.Repeat("x", 30000)
	big.LastName = strings.Repeat("y", 30000)
	var copies []index.Index[Employee]
	for i := range 80 {
		copies = append(copies, index.Index[Employee]{Name: fmt.Sprintf("c%02d", i), Key: func(e Employee) string { return e.Email }})
	}
	wide := newIntra(t, copies, nil)
	before := wide.acct.Meter().Snapshot()
	_, err = wide.ix.Insert(ctx, big)
	limit := "4 MiB"
	if onCosmos() {
		limit = "2 MB"
	}
	if !errors.As(err, &ve) || !errors.Is(err, tablekit.ErrTooLarge) || !strings.Contains(ve.Limit, limit) || !strings.Contains(ve.Detail, "Properties") {
		t.Fatalf("insert of 81 copies of a 60 KB entity: %v, want a %s ErrTooLarge", err, limit)
	}
	if cost := wide.acct.Meter().Snapshot().Sub(before); cost.Total() != 0 {
		t.Errorf("a refused write sent %v", cost)
	}
}

// A unique index value holding a quote (an email like ana.o'neil@...) is a
// RowKey with ' in it: inserting, updating with the value kept (another
// field changes, so the copy under that key is replaced), away from it and
// back, and deleting go through entity group transactions that address
// that key.
func TestIntraQuotedUniqueValue(t *testing.T) {
	ctx := testCtx(t)
	f := newIntra(t, employeeIndexes(), nil)
	e := Employee{Department: "Sales", ID: "000301", FirstName: "Ana", LastName: "O'Neil", Email: "ana.o'neil@contoso.com"}
	if _, err := f.ix.Insert(ctx, e); err != nil {
		t.Fatal(err)
	}
	equal(t, "by quoted email", collect(t, f.ix.By(ctx, "Sales", "email", "ana.o'neil@contoso.com")), []string{"000301"})
	equal(t, "by quoted last name", collect(t, f.ix.By(ctx, "Sales", "lastname", "O'Neil")), []string{"000301"})

	// The quoted value stays; another field changes.
	prev, err := f.ix.Get(ctx, "Sales", "000301")
	if err != nil {
		t.Fatal(err)
	}
	same := prev
	same.FirstName = "Anna"
	if _, err := f.ix.Update(ctx, same, prev.ETag); err != nil {
		t.Fatalf("Update keeping a unique value that holds ': %v", err)
	}
	got, err := f.ix.Find(ctx, "Sales", "email", "ana.o'neil@contoso.com")
	if err != nil || got.FirstName != "Anna" {
		t.Errorf("by quoted email after the update = %+v, %v; want FirstName Anna", got, err)
	}
	// With the quoted copy's ETag, and with Modify and Upsert, still
	// keeping it.
	got.Age = 30
	if _, err := f.ix.Update(ctx, got, got.ETag); err != nil {
		t.Fatalf("Update with the quoted copy's ETag: %v", err)
	}
	if _, err := f.ix.Modify(ctx, "Sales", "000301", func(e *Employee) error { e.Age++; return nil }); err != nil {
		t.Fatalf("Modify keeping a unique value that holds ': %v", err)
	}
	if _, err := f.ix.Upsert(ctx, Employee{Department: "Sales", ID: "000301", FirstName: "Anna", LastName: "O'Neil", Email: "ana.o'neil@contoso.com", Age: 32}); err != nil {
		t.Fatalf("Upsert keeping a unique value that holds ': %v", err)
	}
	if got, err := f.ix.Find(ctx, "Sales", "email", "ana.o'neil@contoso.com"); err != nil || got.Age != 32 {
		t.Errorf("by quoted email after Upsert = %+v, %v", got, err)
	}

	// Away from the quoted value...
	prev, err = f.ix.Get(ctx, "Sales", "000301")
	if err != nil {
		t.Fatal(err)
	}
	next := prev
	next.Email = "ana.o'neil-hall@contoso.com"
	next.LastName = "O'Neil-Hall"
	if _, err := f.ix.Update(ctx, next, prev.ETag); err != nil {
		t.Fatalf("Update of an entity whose unique value holds ': %v", err)
	}
	equal(t, "old quoted email", collect(t, f.ix.By(ctx, "Sales", "email", "ana.o'neil@contoso.com")), nil)
	equal(t, "new quoted email", collect(t, f.ix.By(ctx, "Sales", "email", "ana.o'neil-hall@contoso.com")), []string{"000301"})
	equal(t, "new quoted last name", collect(t, f.ix.By(ctx, "Sales", "lastname", "O'Neil-Hall")), []string{"000301"})
	// ... and back.
	back, err := f.ix.Modify(ctx, "Sales", "000301", func(e *Employee) error {
		e.Email, e.LastName = "ana.o'neil@contoso.com", "O'Neil"
		return nil
	})
	if err != nil {
		t.Fatalf("changing the unique value back to one that holds ': %v", err)
	}
	equal(t, "quoted email again", collect(t, f.ix.By(ctx, "Sales", "email", "ana.o'neil@contoso.com")), []string{"000301"})
	equal(t, "the other quoted email", collect(t, f.ix.By(ctx, "Sales", "email", "ana.o'neil-hall@contoso.com")), nil)
	equal(t, "quoted last name again", collect(t, f.ix.By(ctx, "Sales", "lastname", "O'Neil")), []string{"000301"})

	// Another employee cannot take the quoted value.
	other := Employee{Department: "Sales", ID: "000302", LastName: "Other", Email: "ana.o'neil@contoso.com"}
	var ue *index.UniqueError
	if _, err := f.ix.Insert(ctx, other); !errors.As(err, &ue) || ue.Index != "email" {
		t.Errorf("second entity with the quoted email: %v, want a *UniqueError for email", err)
	}
	if err := f.ix.Delete(ctx, "Sales", "000301", back.ETag); err != nil {
		t.Fatal(err)
	}
	if rks := rowKeys(t, ctx, f.raw, "Sales"); len(rks) != 0 {
		t.Errorf("rows left after delete: %q", rks)
	}
}
