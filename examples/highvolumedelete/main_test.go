package main

import (
	"bytes"
	"context"
	"testing"

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
	testenv.Narrates(t, out.String(),
		"wrote 300 logins of ",
		": 11 transactions (CreateTable=1 Transaction=10)",
		"DropBefore(2 days ago) dropped the tables of the 2 oldest days, [Logins",
		": 3 transactions (DeleteTable=2 QueryTables=1)",
		"3 tables are left, oldest first: [Logins",
		"a query across the retained days read 900 logins (102 failed), the dropped days are gone: {4} transactions (QueryEntities={3} QueryTables=1)",
		"a query for yesterday's failed logins read yesterday's table alone: 34 logins, {2} transactions (QueryEntities={1} QueryTables=1)",
	)
}
