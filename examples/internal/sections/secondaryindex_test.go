package sections_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
	"github.com/tablekit/tablekit/internal/testenv"
)

func TestSecondaryIndexSection(t *testing.T) {
	var buf bytes.Buffer
	err := demo.RunSection(context.Background(), demo.NewEnv(testenv.Account(t, nil), &buf), sections.SecondaryIndex())
	t.Log("\n" + buf.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"inserted 7 employees, each with its 3 index copies in ONE entity group transaction: 7 requests (table: Transaction=7)",
		"by email jonesj@contoso.com: Jon Jones, id 000223, age 34 (a point query: 1 transaction)",
		`emails starting with "a" in Sales, in email order: [000100 Adam Barr <adamb@contoso.com>, 000199 Ana Alvarez <alvareza@contoso.com>, 000200 Amy Jones <amyj@contoso.com>]`,
		"ids 000100 to 000199 in Sales, one range query: [000100 Adam Barr <adamb@contoso.com>, 000123 Lisa Jones <lisaj@contoso.com>, 000152 Don Hall <donh@contoso.com>, 000199 Ana Alvarez <alvareza@contoso.com>]",
		"Joneses in Sales, from the projected index (names only): [000123 Lisa Jones, 000200 Amy Jones, 000223 Jon Jones]",
		"in one transaction (1), guarded by the ETag",
		"by the old email now: []",
		"refused: ErrPreconditionFailed",
		"by email in partition email!Sales: Jon Jones (id 000223)",
		`emails starting with "a" across all departments, from the global index: [000100 Adam Barr <adamb@contoso.com>, 000150 Bea Jones <aj@contoso.com>, 000199 Ana Alvarez <alvareza@contoso.com>, 000200 Amy Jones <amyj@contoso.com>]`,
		"the old one gives []",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("narration lacks %q", want)
		}
	}
}
