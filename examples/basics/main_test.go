package main

import (
	"bytes"
	"context"
	"strings"
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
	for _, want := range []string{
		"inserted Sales/000223 from a Go struct (Age as Edm.Int64, Hired as Edm.DateTime): 1 transaction",
		"point query by PartitionKey+RowKey, the cheapest read: Ada Lovelace <ada@contoso.com>, 1 transaction",
		`Merge of a new Email (ada.l@contoso.com) kept FirstName "Ada" and Age 36`,
		"the second writer's stale ETag was refused (ErrPreconditionFailed)",
		`Replace stored exactly the new properties: LastName now "", Age 0`,
		`projection ($select Email): Email "ada@contoso.com", FirstName "" (not read)`,
		"transaction of 2 inserts and a delete: 1 transaction, new ETags for the inserts: true",
		"a conflicting transaction failed as a whole: action 1, EntityAlreadyExists",
		"Sales/000226 is not there",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}
