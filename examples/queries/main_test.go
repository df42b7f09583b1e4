package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results the pattern promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// Pages in RowKey order on Table storage; Cosmos DB's are in its own
	// order, and a page may be cut short as Azure may cut it.
	inOrder := testenv.Service() != tablekit.ServiceCosmosDB
	testenv.Narrates(t, out.String(),
		"BulkWriter wrote 300 employees in 3 departments (0 failed): 3 transactions (one entity group transaction of 100 per partition)",
		"range query Sales 000100–000199: 33 employees (000102 … 000198, in RowKey order: true), {1} transaction",
		"prefix query Engineering 0002*, the first 5: [000200 000203 000206 000209 000212], {1} transaction",
		"then the continuation token tk1.",
		fmt.Sprintf("resumed with the token: 100 employees in {3} pages, none twice: true, in RowKey order: %t", inOrder),
		"the same token with another filter (Sales) is refused (ErrInvalidInput: true), 0 transactions",
	)
	if !testenv.PagesAsAzure() && !strings.Contains(out.String(), "first page of Marketing: 40 employees") {
		t.Errorf("narration lacks the first page of 40:\n%s", out.String())
	}
}
