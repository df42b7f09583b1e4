package patterns_test

import (
	"context"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// entityTable creates a table for t (deleted when t ends) and returns it
// as a Table[Entity].
func entityTable(t *testing.T, acct *tablekit.Account) *tablekit.Table[tablekit.Entity] {
	t.Helper()
	client := testenv.NewTable(t, acct)
	tbl, err := tablekit.NewTable[tablekit.Entity](client, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// typed returns a Table[T] over the same table as tbl.
func typed[T any](t testing.TB, tbl *tablekit.Table[tablekit.Entity]) *tablekit.Table[T] {
	t.Helper()
	typed, err := tablekit.NewTable[T](tbl.Client(), &tablekit.TableOptions{Name: tbl.Name()})
	if err != nil {
		t.Fatal(err)
	}
	return typed
}

// testContext returns a context that ends with the test, bounded in time.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// rawEntities reads every entity of a table, in key order.
func rawEntities(t *testing.T, ctx context.Context, tbl *tablekit.Table[tablekit.Entity], f tablekit.Filter) []tablekit.Entity {
	t.Helper()
	var out []tablekit.Entity
	for e, err := range tbl.Query(ctx, f, nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}
