package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results the pattern promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"the manager and the department's copy written together (same partition): 1 transaction (Transaction=1)",
		"changed in one entity group transaction, conditional on the manager's ETag: 1 transaction (Transaction=1)",
		"one point query: Sales has 12 employees (kept: the copy is merged), managed by Ann Jones <ann.jones@contoso.com>, 1 transaction (GetEntity=1)",
		"Write returned the manager's new ETag from the transaction's answer (no read): the stored one",
		"was refused (ErrPreconditionFailed) and changed nothing",
		"a Write that also names a copy that does not exist (Sales-EMEA) failed as a whole: ",
		"ResourceNotFound",
		"neither the manager nor the Sales copy was renamed: both still read Ann Jones",
		"the manager's email removed: the department lost ManagerEmail too and kept EmployeeCount 12, 2 transactions (QueryEntities=1 Transaction=1)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}
