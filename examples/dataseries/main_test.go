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
		"4 writers added 1 to hour 9, 25 times each: ",
		"the whole day in one point query: H09=100, H17=42, 24 values (1 transaction (GetEntity=1))",
		"Modify moved 10 messages from hour 9 to hour 10 in one conditional merge: H09=90, H10=10 (2 transactions (GetEntity=1 MergeEntity=1))",
		"the application's Table[Day] reads the days of emp000223 as structs: 2025-03-14: 142 (H09=90 H10=10 H17=42), 2025-03-15: 7 (H09=7 H10=0 H17=0); 149 messages in all (1 transaction (QueryEntities=1))",
		"a series of every minute of a day does not fit one entity, refused with ErrTooLarge",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}
