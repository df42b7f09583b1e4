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
// narration states what package coord promises, with its costs.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"worker-a acquired the lease with term 1: 2 transactions",
		"worker-b: lease held by another holder",
		"renewal: 1 transaction",
		"fenced, keyed insert: 2 transactions (1 read of the fence, 1 transaction)",
		"sent again with the same key: replayed=true, 2 transactions (the refused write, 1 read of the key's record)",
		"the key reused for another write: refused=true",
		"worker-b leads with term 2",
		"worker-a's stale write: refused by fencing=true",
		"a day later, Sweep deleted 2 expired idempotency records",
		"orders stored: 2",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}
