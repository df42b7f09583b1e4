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
// narration states the results the patterns promise.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"inserted 7 employees, each with its 3 index copies in ONE entity group transaction: 7 requests (table: Transaction=7)",
		"by email jonesj@contoso.com: Jon Jones, id 000223, age 34 (a point query: 1 transaction)",
		`emails starting with "a" in Sales, in email order: [000100 Adam Barr <adamb@contoso.com>, 000199 Ana Alvarez <alvareza@contoso.com>, 000200 Amy Jones <amyj@contoso.com>]`,
		"ids 000100 to 000199 in Sales, one range query: [000100 Adam Barr <adamb@contoso.com>, 000123 Lisa Jones <lisaj@contoso.com>, 000152 Don Hall <donh@contoso.com>, 000199 Ana Alvarez <alvareza@contoso.com>]",
		"Joneses in Sales, from the projected index (names only): [000123 Lisa Jones, 000200 Amy Jones, 000223 Jon Jones]",
		"in one transaction (1), guarded by the ETag it read: 2 requests (table: GetEntity=1 Transaction=1)",
		"by the old email now: []",
		"an Update with the ETag Find gave before the change is refused: ErrPreconditionFailed",
		"with the ETag of a fresh Find it succeeds, in one transaction (1) after a read of the entity",
		`hiring someone with Don's email fails as a whole: unique index "email" already has "donh@contoso.com"`,
		"removes it and its 3 copies in one transaction: 2 requests (table: GetEntity=1 Transaction=1)",
		"the Sales partition holds 20 rows",
		"each Insert sends a hidden safety-net message, inserts the entity, then sends a visible message: 21 requests (table: InsertEntity=7; queue: PutMessage=14)",
		"CaughtUp(Sales, 000223) = false",
		"by email in partition email!Sales: Jon Jones (id 000223)",
		`emails starting with "a" across all departments, from the global index: [000100 Adam Barr <adamb@contoso.com>, 000150 Bea Jones <aj@contoso.com>, 000199 Ana Alvarez <alvareza@contoso.com>, 000200 Amy Jones <amyj@contoso.com>]`,
		"Update with the ETag the copy carries (the version it was copied from): 3 requests (table: UpdateEntity=1; queue: PutMessage=2)",
		"the old one gives []",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}
