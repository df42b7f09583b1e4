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
		"appended 60 readings, the last three in the same tick: 60 transactions (one insert each)",
		"Latest(5) = [reading 59, reading 58, reading 57, reading 56, reading 55], queries: 1",
		"with pages of 2 (LatestOptions.PageSize) Latest(5) still returns the same 5, in 3 queries",
		"Window(15:10, 15:14) = [reading 13, reading 12, reading 11, reading 10], newest first, queries: 1",
		"Latest(5) = [reading 59, reading 58, reading 57, written by .NET, reading 56]",
		"61 entries in 3 pages",
		"with Shards: 4 the 40 entries of busy-sensor went to 4 partitions: 0!busy-sensor=",
		"Latest(3) = [busy 39, busy 38, busy 37], 4 queries (one per bucket)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}
