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
		"the HR app enqueues one message each (2 transactions: PutMessage=2)",
		`a message is base64 JSON, as Azure Functions expects: {"kind":"archive.move","payload":{"pk":"Sales","rk":"000123"}}`,
		"then deleted each message: Current: [000223 000224 000301], Archive: [000123 000124]",
		"here GetEntity=2 UpdateEntity=2 DeleteEntity=2",
		"to delete its message (DeleteMessage=2)",
		"failed before the delete from Current: for now it is in Current and Archive",
		`with the error the first attempt wrote into it: "simulated crash after the Archive write"`,
		"finished the move: it is in Archive only",
		"Enqueue wrote the payload to a blob (PutBlob=1) and sent its name (PutMessage=1)",
		"(the handler got all 102400 bytes)",
		"0 blobs left in <queue>-claims",
		`a message of unknown kind "archive.purge" failed permanently: it went to <queue>-poison after 1 attempt, with its error: "no handler for kind \"archive.purge\": tablekit: invalid input"`,
		"6 received, 4 handled, 2 failed attempts, 1 poisoned; Current: [000301], Archive: [000123 000124 000223 000224]",
		"how many handlers it runs at once (4;",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}
