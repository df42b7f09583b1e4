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
		"  Employee v1 000100: Ann Jones",
		"  Employee v2 000101: Bob Smith",
		"  unregistered kind Goal.v1 at Q3-goals, kept as a tablekit.Entity (Target 1.5e+06)",
		"  Department Sales: manager Ann, 2 employees",
		"one query decoded the mixed partition, in RowKey order, each row into its own type: 1 transaction (QueryEntities=1)",
		"QueryKind[EmployeeV2] read the Employee.v2 rows only: [Bob]",
		"a new employee and the department's count in one entity group transaction: 1 transaction (Transaction=1)",
		"updated again without a read (manager Bob, 3 employees); the ETag read before it was refused (ErrPreconditionFailed)",
		"with RowKey = kind!id (the department is Department!Sales), the employees of a department are one prefix range query: [Employee!000100=Ann Jones Employee!000101=Bob Smith Employee!000102=Cy Young], 1 transaction (QueryEntities=1)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}
