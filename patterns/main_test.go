package patterns_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// entityTable creates a table for t (deleted when t ends) and returns it
// as a Table[Entity].
func entityTable(t *testing.T, acct *tablekit.Account) *tablekit.Table[tablekit.Entity] {
	t.Helper()
	return openEntityTable(t, acct, testenv.CreateTable(t, acct))
}

// accounts remembers the Account each table of entityTable and
// openEntityTable was opened on, for typed.
var accounts sync.Map // *tablekit.Table[tablekit.Entity] -> *tablekit.Account

// typed returns a Table[T] over the same table as tbl (from entityTable or
// openEntityTable), on the same Account, with opts.
func typed[T any](t testing.TB, tbl *tablekit.Table[tablekit.Entity], opts ...*tablekit.TableOptions) *tablekit.Table[T] {
	t.Helper()
	acct, ok := accounts.Load(tbl)
	if !ok {
		t.Fatalf("typed: table %s was not opened by entityTable or openEntityTable", tbl.Name())
	}
	var o *tablekit.TableOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	typed, err := tablekit.OpenTable[T](acct.(*tablekit.Account), tbl.Name(), o)
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

// rawEntities reads every entity of a table, in key order (sorted on the
// client on Cosmos DB: QueryOptions.KeyOrder).
func rawEntities(t *testing.T, ctx context.Context, tbl *tablekit.Table[tablekit.Entity], f tablekit.Filter) []tablekit.Entity {
	t.Helper()
	var out []tablekit.Entity
	for e, err := range tbl.Query(ctx, f, &tablekit.QueryOptions{KeyOrder: true}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// onCosmos reports whether the test account is Cosmos DB's (the tests run
// behind the front in Cosmos DB mode): query results in no key order.
func onCosmos() bool { return testenv.Service() == tablekit.ServiceCosmosDB }
