package feed_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/stream"
)

// TestMarksOfAppendsThatAppendNothing: an append that appends nothing
// leaves no mark a relay reads for ever: a repeat at stream.AnyVersion
// that comes back Replayed, an append whose expected version is ahead of
// the stream, an append whose extra action is refused. Once a round has
// handed the landed events over, rounds read no stream at all (1 query
// per shard), although none of these streams is appended to again.
func TestMarksOfAppendsThatAppendNothing(t *testing.T) {
	e := newEnv(t, &feed.Options{Shards: 2})
	ctx := context.Background()
	log := stream.ID{PartitionKey: "c", Prefix: "changes"}
	ahead := stream.ID{PartitionKey: "a"}
	refused := stream.ID{PartitionKey: "r"}
	write := func() (stream.Result, error) {
		return e.f.Append(ctx, log, stream.AnyVersion, []stream.Event{{ID: "w1", Data: Tagged{Tag: "w1"}}},
			tablekit.UpsertAction(tablekit.Entity{PartitionKey: log.PartitionKey, RowKey: "row", Properties: map[string]any{"N": int64(1)}}))
	}
	if r, err := write(); err != nil || r.Replayed {
		t.Fatalf("the write: %+v, %v", r, err)
	}
	if r, err := write(); err != nil || !r.Replayed {
		t.Fatalf("the write repeated: %+v, %v; want Replayed", r, err)
	}
	e.append(t, ahead, 0, "a1")
	var ce *stream.ConflictError
	if _, err := e.f.Append(ctx, ahead, 5, []stream.Event{{ID: "a9", Data: Tagged{Tag: "a9"}}}); !errors.As(err, &ce) {
		t.Fatalf("an append ahead of the stream: %v, want a ConflictError", err)
	}
	e.append(t, refused, 0, "r1")
	exists := tablekit.InsertAction(tablekit.Entity{PartitionKey: refused.PartitionKey, RowKey: "row"})
	if _, err := e.f.Append(ctx, refused, 1, []stream.Event{{ID: "r0", Data: Tagged{Tag: "r0"}}}, exists); err != nil {
		t.Fatal(err)
	}
	var te *tablekit.TransactionError
	if _, err := e.f.Append(ctx, refused, 2, []stream.Event{{ID: "r2", Data: Tagged{Tag: "r2"}}}, exists); !errors.As(err, &te) {
		t.Fatalf("an append whose extra action is refused: %v, want a TransactionError", err)
	}

	rec := newRecorder()
	r := relay(t, e.f, feed.Subscription{Name: "rec", Handle: rec.handle})
	if res := round(t, r, 0); res.Streams != 3 || res.Delivered != 4 {
		t.Errorf("first round: %+v, want 3 streams, 4 changes", res)
	}
	if got := rec.tags(log) + rec.tags(ahead) + rec.tags(refused); got != "[w1][a1][r1 r0]" {
		t.Errorf("handed %s", got)
	}
	m := e.acct.Meter()
	for i := range 3 {
		before := m.Snapshot()
		res := round(t, r, 0)
		if c := m.Snapshot().Sub(before); res.Streams != 0 || c.Total() != 2 {
			t.Errorf("round %d after the first: %+v, cost %v; want no stream read, 2 queries (1 per shard)", i+2, res, c)
		}
	}
}
