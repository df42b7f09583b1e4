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
		"conditional on the index entity's ETag: 12 requests (table: GetEntity=6 Transaction=6)",
		"the Joneses of Sales: one point query for the index entity gives [000123 000200 000223]",
		`stores IDs="000123\n000200\n000223" and Count=3`,
		"then the 3 employees (up to 16 at once): [Lisa Amy Jon], 4 requests",
		"one transaction (1) updates her entity and moves her id: Jones [000200 000223], Hall [000123 000152]; with the reads before it: 4 requests (table: GetEntity=3 Transaction=1)",
		"3 requests each (a hidden safety-net message, the insert, a visible message): 18 requests (table: InsertEntity=6; queue: PutMessage=12)",
		"CaughtUp(Sales, 000223) = false",
		"once caught up, the Jones index entity of Sales lists [000123 000200 000223]",
		"the blob surname/Jones lists every Jones: [Marketing/000150 Sales/000123 Sales/000200 Sales/000223]",
		"By(surname, Jones) reads the blob, then the employees (up to 16 at once): [Bea Lisa Amy Jon]",
		"after the worker ran, Jones [000200 000223] and Hall [000123 000152]",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}
