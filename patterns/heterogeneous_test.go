package patterns_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// Department and Employee share a partition, as in the design guide.
type Department struct {
	Name          string      `table:",pk"`
	Key           string      `table:",rk"`
	ManagerName   string      `table:"ManagerName,omitempty"`
	ManagerEmail  string      `table:"ManagerEmail,omitempty"`
	EmployeeCount int         `table:"EmployeeCount"`
	ETag          azcore.ETag `table:",etag"`
}

type Employee struct {
	Department string `table:",pk"`
	Key        string `table:",rk"`
	Name       string `table:"Name"`
	Email      string `table:"Email,omitempty"`
	Age        int    `table:"Age"`
}

// EmployeeV2 is the second version of the Employee kind.
type EmployeeV2 struct {
	Department string `table:",pk"`
	Key        string `table:",rk"`
	First      string `table:"First"`
	Last       string `table:"Last"`
}

func newRegistry(t *testing.T, kindInRowKey bool) *tablekit.Registry {
	r := &tablekit.Registry{KindInRowKey: kindInRowKey}
	for _, err := range []error{
		tablekit.Register[Department](r, "Department", 1),
		tablekit.Register[Employee](r, "Employee", 1),
		tablekit.Register[EmployeeV2](r, "Employee", 2),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := tablekit.Register[Employee](r, "Other", 1); err == nil {
		t.Fatal("a type registered twice")
	}
	return r
}

func TestMixedByProperty(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	m, err := patterns.NewMixed(tbl, newRegistry(t, false))
	if err != nil {
		t.Fatal(err)
	}
	rows := []any{
		Department{Name: "Sales", Key: "Sales", ManagerName: "Ann", EmployeeCount: 3},
		Employee{Department: "Sales", Key: "000100", Name: "Ann", Email: "ann@contoso.com", Age: 40},
		Employee{Department: "Sales", Key: "000101", Name: "Bob", Age: 31},
		EmployeeV2{Department: "Sales", Key: "000102", First: "Cy", Last: "Dee"},
		tablekit.Entity{PartitionKey: "Sales", RowKey: "P1", Properties: map[string]any{"EntityType": "Project.v1", "Budget": 10.5}},
		tablekit.Entity{PartitionKey: "Sales", RowKey: "Z", Properties: map[string]any{"Note": "no type"}},
	}
	for _, r := range rows {
		if _, err := m.Insert(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	stored, _ := tbl.Get(ctx, "Sales", "000102")
	if stored.Properties["EntityType"] != "Employee.v2" {
		t.Fatalf("type value %v", stored.Properties["EntityType"])
	}

	before := acct.Meter().Snapshot()
	var kinds []string
	for v, err := range m.Query(ctx, tablekit.PartitionEq("Sales"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		switch x := v.(type) {
		case Department:
			kinds = append(kinds, "D:"+x.ManagerName)
			if x.ETag == "" {
				t.Error("no ETag")
			}
		case Employee:
			kinds = append(kinds, "E:"+x.Name)
		case EmployeeV2:
			kinds = append(kinds, "E2:"+x.First)
		case tablekit.Entity:
			kinds = append(kinds, "?:"+x.RowKey)
		default:
			t.Fatalf("unexpected %T", v)
		}
	}
	if cost := acct.Meter().Snapshot().Sub(before); cost.Total() != 1 {
		t.Fatalf("mixed query cost %v; want one query", cost)
	}
	want := []string{"E:Ann", "E:Bob", "E2:Cy", "?:P1", "D:Ann", "?:Z"}
	if onCosmos() {
		// In the service's order, which is not key order there.
		slices.Sort(kinds)
		slices.Sort(want)
	}
	if len(kinds) != len(want) {
		t.Fatalf("decoded %v", kinds)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("decoded %v, want %v", kinds, want)
		}
	}

	// Only version 1 employees.
	n := 0
	for e, err := range patterns.QueryKind[Employee](ctx, m, "Sales", nil) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Name != "Ann" && e.Name != "Bob" {
			t.Fatalf("QueryKind: %+v", e)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("QueryKind[Employee]: %d", n)
	}

	// A new employee and the department's count change in one transaction.
	v, err := m.Get(ctx, "Sales", "Sales")
	if err != nil {
		t.Fatal(err)
	}
	dept := v.(Department)
	dept.EmployeeCount++
	before = acct.Meter().Snapshot()
	etags, err := m.Transaction(ctx,
		tablekit.InsertAction[any](Employee{Department: "Sales", Key: "000103", Name: "Di", Age: 29}),
		tablekit.MergeAction[any](dept, dept.ETag))
	if err != nil {
		t.Fatal(err)
	}
	if cost := acct.Meter().Snapshot().Sub(before); cost.Count("table", "Transaction") != 1 || cost.Total() != 1 {
		t.Fatalf("transaction cost %v", cost)
	}
	if v, err := m.Get(ctx, "Sales", "Sales"); err != nil || len(etags) != 2 || v.(Department).ETag != etags[1] {
		t.Fatalf("the transaction returned ETags %v; the department reads %v, %v", etags, v, err)
	}
	// The stale department ETag now fails the whole transaction.
	_, err = m.Transaction(ctx,
		tablekit.InsertAction[any](Employee{Department: "Sales", Key: "000104", Name: "Ed"}),
		tablekit.MergeAction[any](dept, dept.ETag))
	var te *tablekit.TransactionError
	if !errors.As(err, &te) || te.Index != 1 || !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Fatalf("stale transaction: %v", err)
	}
	if _, err := m.Get(ctx, "Sales", "000104"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("half a transaction applied: %v", err)
	}
	if _, err := m.Insert(ctx, struct{ A string }{"x"}); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Fatalf("unregistered type: %v", err)
	}
}

func TestMixedByRowKeyPrefix(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	reg := newRegistry(t, true)
	m, err := patterns.NewMixed(tbl, reg)
	if err != nil {
		t.Fatal(err)
	}
	key := func(kind, id string) string {
		k, err := keys.Compound(kind, id)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	for _, r := range []any{
		Department{Name: "Sales", Key: key("Department", "Sales"), EmployeeCount: 2},
		Employee{Department: "Sales", Key: key("Employee", "000100"), Name: "Ann"},
		Employee{Department: "Sales", Key: key("Employee", "000101"), Name: "Bob"},
		EmployeeV2{Department: "Sales", Key: key("Employee", "000102"), First: "Cy"},
		tablekit.Entity{PartitionKey: "Sales", RowKey: key("Project", "p1")},
	} {
		if _, err := m.Upsert(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Insert(ctx, Employee{Department: "Sales", Key: "000105", Name: "No prefix"}); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Fatalf("an employee without the kind prefix: %v", err)
	}
	counts := map[string]int{}
	for v, err := range m.Query(ctx, tablekit.PartitionEq("Sales"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		switch v.(type) {
		case Department:
			counts["D"]++
		case Employee:
			counts["E"]++
		case EmployeeV2:
			counts["E2"]++
		case tablekit.Entity:
			counts["?"]++
		}
	}
	if counts["D"] != 1 || counts["E"] != 2 || counts["E2"] != 1 || counts["?"] != 1 {
		t.Fatalf("decoded %v", counts)
	}
	before := acct.Meter().Snapshot()
	n := 0
	for v, err := range patterns.QueryKind[EmployeeV2](ctx, m, "Sales", nil) {
		if err != nil || v.First != "Cy" {
			t.Fatalf("%+v %v", v, err)
		}
		n++
	}
	// One query, of one page from Azurite (Azure may answer an empty page
	// first).
	if cost := acct.Meter().Snapshot().Sub(before).Total(); n != 1 || cost < 1 || (cost != 1 && !testenv.PagesAsAzure()) {
		t.Fatalf("QueryKind[EmployeeV2]: %d values, %d transactions", n, cost)
	}
}

func TestTypeValues(t *testing.T) {
	for _, c := range []struct {
		in      string
		kind    string
		version int
		ok      bool
	}{
		{"Employee.v2", "Employee", 2, true},
		{"Employee", "Employee", 1, true},
		{"Employee.v0", "", 0, false},
		{"Employee.v+3", "", 0, false},
		{"", "", 0, false},
	} {
		var reg tablekit.Registry // the zero Registry reads type values
		k, v, ok := reg.Kind(tablekit.Entity{Properties: map[string]any{"EntityType": c.in}})
		if k != c.kind || v != c.version || ok != c.ok {
			t.Errorf("Kind of type value %q = %q, %d, %v", c.in, k, v, ok)
		}
	}
	reg := &tablekit.Registry{TypeProperty: "Type"}
	if err := tablekit.Register[EmployeeV2](reg, "Employee", 3); err != nil {
		t.Fatal(err)
	}
	e, err := reg.Encode(EmployeeV2{Department: "d", Key: "k"})
	if err != nil || e.Properties["Type"] != "Employee.v3" {
		t.Errorf("Encode wrote type value %v, %v", e.Properties["Type"], err)
	}
}

// Moved is an event type: a struct without key fields, whose rows' keys
// are set by what stores it (package stream).
type Moved struct {
	To   string `table:"To"`
	Step int    `table:"Step"`
}

// TestKeylessTypes: a struct without key fields registers (as an event
// type), encodes to an Entity with empty keys and its type value, and
// decodes from a row (Get, Query, QueryKind); every write of it as a row
// with its keys (Mixed's verbs, Transaction, a Denormalizer through the
// Registry) is refused before anything is sent.
func TestKeylessTypes(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	reg := newRegistry(t, false)
	if err := tablekit.Register[Moved](reg, "Moved", 1); err != nil {
		t.Fatalf("Register of a struct without key fields: %v", err)
	}
	e, err := reg.Encode(Moved{To: "Oslo", Step: 2})
	if err != nil || e.PartitionKey != "" || e.RowKey != "" || e.Properties["EntityType"] != "Moved.v1" || e.Properties["To"] != "Oslo" || e.Properties["Step"] != int64(2) {
		t.Fatalf("Encode: %+v, %v", e, err)
	}
	// A row of the kind, keyed by whoever stores it, reads back as Moved.
	e.PartitionKey, e.RowKey = "p", "m1"
	if _, err := tbl.Insert(ctx, e); err != nil {
		t.Fatal(err)
	}
	m, err := patterns.NewMixed(tbl, reg)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := m.Get(ctx, "p", "m1"); err != nil || v != (Moved{To: "Oslo", Step: 2}) {
		t.Fatalf("Mixed.Get: %#v, %v", v, err)
	}
	if v, err := reg.Decode(e); err != nil || v != (Moved{To: "Oslo", Step: 2}) {
		t.Fatalf("Registry.Decode: %#v, %v", v, err)
	}
	got, err := tablekit.Collect(patterns.QueryKind[Moved](ctx, m, "p", nil), 0)
	if err != nil || len(got) != 1 || got[0] != (Moved{To: "Oslo", Step: 2}) {
		t.Fatalf("QueryKind: %v, %v", got, err)
	}
	// Written as a row with its keys: refused, nothing sent.
	before := acct.Meter().Snapshot()
	mv := Moved{To: "Rome"}
	for name, write := range map[string]func() error{
		"Insert": func() error { _, err := m.Insert(ctx, mv); return err },
		"Upsert": func() error { _, err := m.Upsert(ctx, mv); return err },
		"Update": func() error { _, err := m.Update(ctx, mv, azcore.ETagAny); return err },
		"Merge":  func() error { _, err := m.Merge(ctx, mv, ""); return err },
		"Transaction": func() error {
			_, err := m.Transaction(ctx, tablekit.InsertAction[any](Employee{Department: "p", Key: "e"}), tablekit.UpsertAction[any](mv))
			return err
		},
		"keyed Insert": func() error { _, err := m.WithKey("k1").Insert(ctx, mv); return err },
	} {
		if err := write(); !errors.Is(err, tablekit.ErrInvalidInput) || !strings.Contains(err.Error(), "no key fields") {
			t.Errorf("%s of a struct without key fields: %v, want ErrInvalidInput saying it has no key fields", name, err)
		}
	}
	if _, err := patterns.NewDenormalizer[Moved](tbl, map[string]string{"To": "LastTo"}, &patterns.DenormalizeOptions{Registry: reg}); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("NewDenormalizer of a struct without key fields: %v", err)
	}
	if c := acct.Meter().Snapshot().Sub(before); c.Total() != 0 {
		t.Errorf("refused writes sent %v", c)
	}
}
