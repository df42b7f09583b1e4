package index_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// Both index types are stores: code written over a tablekit.Store works
// with them.
var (
	_ tablekit.Store[Employee] = (*index.SamePartition[Employee])(nil)
	_ tablekit.Store[Employee] = (*index.CrossPartition[Employee])(nil)
)

// The newcomer's trap of issue 25: a plain Table.Query of a partition with
// a same-partition index returns the index copies too, decoded as
// employees (15 rows for 5 employees with two copy indexes). The index's
// Query returns the 5 employees, with their fields and ETags.
func TestSamePartitionQueryYieldsEntitiesOnly(t *testing.T) {
	ctx := testCtx(t)
	acct := testenv.Account(t, nil)
	name := newTable(t, acct)
	tbl := mustNewTable[Employee](t, acct, name)
	ix, err := index.NewSamePartition(tbl, []index.Index[Employee]{
		{Name: "email", Key: func(e Employee) string { return e.Email }, Unique: true},
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }},
		{Name: "surname", Key: func(e Employee) string { return e.LastName }, List: true},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range staff()[:5] {
		if _, err := ix.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
		want = append(want, e.ID)
	}
	plain := 0
	for _, err := range tbl.Query(ctx, tablekit.PartitionEq("Sales"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		plain++
	}
	// 5 employees, 5 email copies, 5 lastname copies, 4 surname lists
	// (Jones, Hall, Alvarez, Barr).
	if plain != 19 {
		t.Errorf("Table.Query of Sales = %d rows, want the 19 the trap returns", plain)
	}
	var got []string
	for e, err := range ix.Query(ctx, tablekit.PartitionEq("Sales"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if e.FirstName == "" || e.Email == "" || e.ETag == "" {
			t.Errorf("Query gave %+v, want the whole entity with its ETag", e)
		}
		got = append(got, e.ID)
	}
	equalInQueryOrder(t, "SamePartition.Query(Sales)", got, sorted(want))
	var limited []string
	for e, err := range ix.Query(ctx, tablekit.PartitionEq("Sales"), &tablekit.QueryOptions{Limit: 2, PageSize: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		limited = append(limited, e.ID)
	}
	if onCosmos() {
		// Any 2 of them, in the service's order.
		if len(limited) != 2 || limited[0] == limited[1] || !slices.Contains(want, limited[0]) || !slices.Contains(want, limited[1]) {
			t.Errorf("SamePartition.Query(Sales, Limit 2) = %v, want 2 of %v", limited, want)
		}
	} else {
		equal(t, "SamePartition.Query(Sales, Limit 2)", limited, sorted(want)[:2])
	}
}

// A CrossPartition that keeps its copies, index entities and sync records
// in the entities' own table: its Query returns the entities only.
func TestCrossPartitionQueryYieldsEntitiesOnly(t *testing.T) {
	ctx := testCtx(t)
	acct := testenv.Account(t, nil)
	name := newTable(t, acct)
	tbl := mustNewTable[Employee](t, acct, name)
	ix, err := index.NewCrossPartition(tbl, []index.Index[Employee]{
		{Name: "email", Key: func(e Employee) string { return e.Email }},
		{Name: "anyemail", Key: func(e Employee) string { return e.Email }, Global: true},
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: true},
	}, nil) // direct mode
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range staff() {
		if _, err := ix.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
		want = append(want, e.Department+"/"+e.ID)
	}
	plain := 0
	for _, err := range tbl.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		plain++
	}
	if plain <= len(want) {
		t.Fatalf("Table.Query of the whole table = %d rows, want the index rows too", plain)
	}
	var got []string
	for e, err := range ix.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Email == "" || e.ETag == "" {
			t.Errorf("Query gave %+v, want the whole entity with its ETag", e)
		}
		got = append(got, e.Department+"/"+e.ID)
	}
	equalInQueryOrder(t, "CrossPartition.Query(all)", got, sorted(want))
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// A unique-index violation names the operation and the table, as every
// other error does, and says which value is taken.
func TestUniqueErrorNamesOperationAndTable(t *testing.T) {
	ctx := testCtx(t)
	acct := testenv.Account(t, nil)
	name := newTable(t, acct)
	ix, err := index.NewSamePartition(mustNewTable[Employee](t, acct, name), employeeIndexes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := staff()[0]
	if _, err := ix.Insert(ctx, e); err != nil {
		t.Fatal(err)
	}
	dup := Employee{Department: e.Department, ID: "000777", Email: e.Email}
	for _, c := range []struct {
		op    string
		write func() error
	}{
		{"SamePartition.Insert", func() error { _, err := ix.Insert(ctx, dup); return err }},
		{"SamePartition.Upsert", func() error { _, err := ix.Upsert(ctx, dup); return err }},
	} {
		err := c.write()
		var ue *index.UniqueError
		if !errors.As(err, &ue) || !errors.Is(err, tablekit.ErrAlreadyExists) {
			t.Fatalf("%s of a taken email: %v, want a *UniqueError", c.op, err)
		}
		if ue.Op != "index."+c.op || ue.Table != name || ue.Index != "email" || ue.Value != e.Email {
			t.Errorf("%s: UniqueError %+v", c.op, ue)
		}
		want := "index: " + c.op + ": table " + name + ": entity Sales/000777: "
		if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), `"jonesj@contoso.com" of unique index "email"`) {
			t.Errorf("%s: message %q, want it to start with %q and name the value", c.op, err, want)
		}
	}
}

// The zero value and the nil pointer of each index type refuse every call
// with an error matching tablekit.ErrInvalidInput that names the call;
// none panics.
func TestZeroValues(t *testing.T) {
	ctx := context.Background()
	e := staff()[0]
	first := func(seq func(func(Employee, error) bool)) error {
		for _, err := range seq {
			return err
		}
		return errors.New("no result")
	}
	for _, same := range []*index.SamePartition[Employee]{{}, nil} {
		for op, err := range map[string]error{
			"Get":            func() error { _, err := same.Get(ctx, "a", "b"); return err }(),
			"Insert":         func() error { _, err := same.Insert(ctx, e); return err }(),
			"Upsert":         func() error { _, err := same.Upsert(ctx, e); return err }(),
			"Update":         func() error { _, err := same.Update(ctx, e, "*"); return err }(),
			"Modify":         func() error { _, err := same.Modify(ctx, "a", "b", func(*Employee) error { return nil }); return err }(),
			"Delete":         same.Delete(ctx, "a", "b", "*"),
			"DeleteIfExists": func() error { _, err := same.DeleteIfExists(ctx, "a", "b"); return err }(),
			"Query":          first(same.Query(ctx, tablekit.Filter{}, nil)),
			"Find":           func() error { _, err := same.Find(ctx, "a", "email", "x"); return err }(),
			"By":             first(same.By(ctx, "a", "email", "x")),
			"Range":          first(same.Range(ctx, "a", "email", "x", "y")),
			"Prefix":         first(same.Prefix(ctx, "a", "email", "x")),
			"IDs":            func() error { _, err := same.IDs(ctx, "a", "email", "x"); return err }(),
		} {
			checkZero(t, "SamePartition."+op, err)
		}
	}
	for _, cross := range []*index.CrossPartition[Employee]{{}, nil} {
		for op, err := range map[string]error{
			"Get":            func() error { _, err := cross.Get(ctx, "a", "b"); return err }(),
			"Insert":         func() error { _, err := cross.Insert(ctx, e); return err }(),
			"Upsert":         func() error { _, err := cross.Upsert(ctx, e); return err }(),
			"Update":         func() error { _, err := cross.Update(ctx, e, "*"); return err }(),
			"Modify":         func() error { _, err := cross.Modify(ctx, "a", "b", func(*Employee) error { return nil }); return err }(),
			"Delete":         cross.Delete(ctx, "a", "b", "*"),
			"DeleteIfExists": func() error { _, err := cross.DeleteIfExists(ctx, "a", "b"); return err }(),
			"Query":          first(cross.Query(ctx, tablekit.Filter{}, nil)),
			"Find":           func() error { _, err := cross.Find(ctx, "a", "email", "x"); return err }(),
			"By":             first(cross.By(ctx, "a", "email", "x")),
			"Range":          first(cross.Range(ctx, "a", "email", "x", "y")),
			"Prefix":         first(cross.Prefix(ctx, "a", "email", "x")),
			"IDs":            func() error { _, err := cross.IDs(ctx, "a", "email", "x"); return err }(),
			"Sync":           cross.Sync(ctx, "a", "b"),
			"CaughtUp":       func() error { _, err := cross.CaughtUp(ctx, "a", "b"); return err }(),
			"Handle":         cross.Handle(ctx, nil),
			"Register":       cross.Register(nil),
		} {
			checkZero(t, "CrossPartition."+op, err)
		}
	}
	var ue index.UniqueError
	if !errors.Is(&ue, tablekit.ErrAlreadyExists) || ue.Error() == "" {
		t.Errorf("zero UniqueError: %q", ue.Error())
	}
	if (index.ID{}).String() != "/" {
		t.Errorf("zero ID = %q", index.ID{}.String())
	}
}

func checkZero(t *testing.T, op string, err error) {
	t.Helper()
	var ve *tablekit.ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, tablekit.ErrInvalidInput) || ve.Op != "index."+op || !strings.Contains(err.Error(), "use index.New") {
		t.Errorf("%s on a zero value: %v, want a ValidationError of index.%s saying to use the constructor", op, err, op)
	}
}
