package outbox_test

import (
	"context"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/stream"
)

// TestDispatchedTrimmed: a relay wired as the package doc shows, with
// RelayOptions.Trim choosing the outbox streams, drops each outbox
// stream's events once it enqueued them: after its rounds, an outbox
// stream keeps no event row but the tombstone of version 1 (its start
// past the last message), while the partition's other stream (an order's
// history) keeps all of its events; appends go on at the next version,
// and every message is applied once, in order.
func TestDispatchedTrimmed(t *testing.T) {
	r := newRig(t)
	r.ordered = true
	ctx := context.Background()
	relay, err := r.f.NewRelay([]feed.Subscription{{Name: "outbox", Handle: r.pub.Handle}},
		&feed.RelayOptions{Trim: func(id stream.ID) bool { return id.Prefix == "outbox" }})
	if err != nil {
		t.Fatal(err)
	}
	history := stream.ID{PartitionKey: "a", Prefix: "order"}
	if _, err := r.f.Append(ctx, history, 0, []stream.Event{{ID: "h1", Data: Shipped{Order: "placed"}}, {ID: "h2", Data: Shipped{Order: "paid"}}}); err != nil {
		t.Fatal(err)
	}
	for i, msgs := range [][]string{{"a1", "a2"}, {"a3"}, {"a4", "a5"}} {
		if _, err := r.write(ctx, "a", int64([]int{0, 2, 3}[i]), status("a", msgs[0]), msgs...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.write(ctx, "b", 0, status("b", "b1"), "b1"); err != nil {
		t.Fatal(err)
	}
	if _, err := relay.Round(ctx, 0); err != nil {
		t.Fatal(err)
	}
	outA, outB := stream.ID{PartitionKey: "a", Prefix: "outbox"}, stream.ID{PartitionKey: "b", Prefix: "outbox"}
	r.checkTrimmed(t, outA, 6, 1)
	r.checkTrimmed(t, outB, 2, 1)
	r.checkTrimmed(t, history, 1, 2)
	// The outbox goes on after its trim: the next message, its version 6.
	if res, err := r.write(ctx, "a", 5, status("a", "a6"), "a6"); err != nil || res.First != 6 {
		t.Fatalf("append after the trim: %+v, %v; want version 6", res, err)
	}
	if _, err := relay.Round(ctx, 0); err != nil {
		t.Fatal(err)
	}
	r.checkTrimmed(t, outA, 7, 1)
	st := r.work(t, 7)
	if st.Succeeded != 7 || st.Failed != 0 || st.Poisoned != 0 {
		t.Errorf("worker stats %+v, want the 7 messages handled", st)
	}
	if n, last := r.count(t, "a"); n != 6 || last != 6 {
		t.Errorf("partition a: %d applied, last version %d; want 6, 6", n, last)
	}
	if n, last := r.count(t, "b"); n != 1 || last != 1 {
		t.Errorf("partition b: %d applied, last version %d; want 1, 1", n, last)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, c := range r.calls {
		if c != 1 {
			t.Errorf("message %s: apply called %d times, want 1", id, c)
		}
	}
}

// checkTrimmed checks that stream id starts at version start and keeps
// rows event rows (the tombstone of a trimmed stream included).
func (r *rig) checkTrimmed(t *testing.T, id stream.ID, start int64, rows int) {
	t.Helper()
	ctx := context.Background()
	got, err := r.store.Start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	n, err := r.st.Count(ctx, tablekit.RowKeyRange(id.PartitionKey, id.Prefix+"~ev~", id.Prefix+"~ev~~"))
	if err != nil {
		t.Fatal(err)
	}
	if got != start || n != rows {
		t.Errorf("stream %s/%s: start %d, %d event rows; want %d, %d", id.PartitionKey, id.Prefix, got, n, start, rows)
	}
}
