package index_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Employee is the guide's employee entity: PartitionKey is the department,
// RowKey the employee id.
type Employee struct {
	Department string      `table:",pk"`
	ID         string      `table:",rk"`
	FirstName  string      `table:"FirstName"`
	LastName   string      `table:"LastName"`
	Email      string      `table:"Email"`
	Age        int         `table:"Age,omitempty"`
	ETag       azcore.ETag `table:",etag"`
}

// staff is the employee data of the tests: the guide's departments, ids,
// emails and last names.
func staff() []Employee {
	return []Employee{
		{"Sales", "000223", "Jon", "Jones", "jonesj@contoso.com", 34, ""},
		{"Sales", "000123", "Lisa", "Jones", "lisaj@contoso.com", 29, ""},
		{"Sales", "000152", "Don", "Hall", "donh@contoso.com", 34, ""},
		{"Sales", "000199", "Ana", "Alvarez", "alvareza@contoso.com", 41, ""},
		{"Sales", "000100", "Adam", "Barr", "adamb@contoso.com", 52, ""},
		{"Sales", "000200", "Amy", "Jones", "amyj@contoso.com", 38, ""},
		{"Sales", "000099", "Ken", "Myer", "kenm@contoso.com", 45, ""},
		{"Sales", "001234", "Pat", "Smith", "smithp@contoso.com", 27, ""},
		{"Marketing", "000150", "Bea", "Jones", "aj@contoso.com", 33, ""},
		{"Marketing", "000151", "Carl", "Hall", "hallc@contoso.com", 36, ""},
	}
}

// filterStaff returns the ids of the employees of dept that keep holds,
// sorted by the given key.
func filterStaff(dept string, keep func(Employee) bool, by func(Employee) string) []string {
	var out []Employee
	for _, e := range staff() {
		if e.Department == dept && keep(e) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Employee) int {
		if c := compare(by(a), by(b)); c != 0 {
			return c
		}
		return compare(a.ID, b.ID)
	})
	ids := make([]string, len(out))
	for i, e := range out {
		ids[i] = e.ID
	}
	return ids
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// collect drains a lookup into the ids it yields.
func collect(t *testing.T, seq func(yield func(Employee, error) bool)) []string {
	t.Helper()
	var ids []string
	for e, err := range seq {
		if err != nil {
			t.Fatalf("lookup: %v", err)
		}
		ids = append(ids, e.ID)
	}
	return ids
}

// rowKeys lists the RowKeys stored in partition pk.
func rowKeys(t *testing.T, ctx context.Context, tbl *tablekit.Table[tablekit.Entity], pk string) []string {
	t.Helper()
	var rks []string
	for e, err := range tbl.Query(ctx, tablekit.PartitionEq(pk), nil) {
		if err != nil {
			t.Fatalf("scan %s: %v", pk, err)
		}
		rks = append(rks, e.RowKey)
	}
	return rks
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// onCosmos reports whether the test account is Cosmos DB's (the tests run
// behind the front in Cosmos DB mode): query results in no key order,
// Cosmos DB's limits.
func onCosmos() bool { return testenv.Service() == tablekit.ServiceCosmosDB }

// equalInQueryOrder checks that got is want in the order a query returns
// them: want's (key order) on Table storage, any on Cosmos DB.
func equalInQueryOrder(t *testing.T, what string, got, want []string) {
	t.Helper()
	if onCosmos() {
		got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	}
	equal(t, what, got, want)
}

func fmtIDs(n int, f func(int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}
