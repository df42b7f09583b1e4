package main

import (
	"bytes"
	"context"
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
	testenv.Narrates(t, out.String(),
		"(keys.ShardedKey): 0!clicks 1!clicks 2!clicks 3!clicks 4!clicks 5!clicks 6!clicks 7!clicks; RowKey = time and ID",
		"appended 2000 entries in 24 entity group transactions (one partition and at most 100 entries each), sent in parallel: 24 transactions (Transaction=24)",
		"click-00400 at 09:10:00.0 is stored as 6!clicks / 2025-03-14T09:10:00..0000000Z!click-00400",
		"entries per partition: 0!clicks=251 1!clicks=249 2!clicks=251 3!clicks=251 4!clicks=249 5!clicks=251 6!clicks=249 7!clicks=249",
		"the window 09:10-09:11, one range query per shard merged in time order: 40 entries, click-00400 (09:10:00.0) .. click-00439 (09:10:58.5), {8} transactions (QueryEntities={8})",
		"each value comes back as a Click: click-00400, /products/10, user09, keys set: true",
	)
}
