package tablekittest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/tablekittest"
)

// Order is an entity of the application under test.
type Order struct {
	Customer string `table:",pk"`
	ID       string `table:",rk"`
	Total    float64
}

// testOrders is a test of your own, in a _test.go file of your package
// whose TestMain calls tablekittest.Main:
//
//	func TestMain(m *testing.M) { tablekittest.Main(m) }
//	func TestOrders(t *testing.T) { ... }
func testOrders(t *testing.T) {
	ctx := context.Background()
	acct := tablekittest.Account(t, nil)                  // Azurite, or AZURE_STORAGE_CONNECTION_STRING
	orders := tablekittest.OpenTable[Order](t, acct, nil) // a new table, deleted when t ends
	if _, err := orders.Insert(ctx, Order{Customer: "c1", ID: "o1", Total: 9.5}); err != nil {
		t.Fatal(err)
	}
	if _, err := orders.Insert(ctx, Order{Customer: "c1", ID: "o1"}); !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Errorf("a second insert: %v, want ErrAlreadyExists", err)
	}
}

// A test opens an Account on the shared Azurite and a table of its own.
func Example() {
	_ = testOrders
}
