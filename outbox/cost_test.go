package outbox_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/outbox"
	"github.com/tablekit/tablekit/stream"
)

// TestCosts: the package doc's costs, with the Meter: a Publisher's
// message is 1 queue request; the handler's message 1 keyed transaction
// (+ apply's read), a copy of it 1 refused transaction and 1 read of the
// record, its fingerprint (+ apply's read).
func TestCosts(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	m := r.acct.Meter()
	cost := func(f func()) tablekit.MeterSnapshot {
		before := m.Snapshot()
		f()
		return m.Snapshot().Sub(before)
	}
	id := stream.ID{PartitionKey: "a", Prefix: "outbox"}
	c := feed.Change{Stream: id, Version: 1, EventID: "a1", Data: Shipped{Order: "a1"}}
	if got := cost(func() {
		if err := r.pub.Handle(ctx, c); err != nil {
			t.Fatal(err)
		}
	}); got.Total() != 1 || got.Service("queue") != 1 {
		t.Errorf("Publisher.Handle: %v, want 1 queue request", got)
	}
	h, err := outbox.NewHandler(r.et, byStream, r.apply, nil)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(outbox.Message{ID: outbox.MessageID(r.source(), id, 1), Source: r.source(), Stream: id, Version: 1, Data: json.RawMessage(`{"Order":"a1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	msg := &archive.Message{ID: "q1", Kind: outbox.Kind, Payload: payload}
	if got := cost(func() {
		if err := h.Handle(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}); got.Total() != 2 || got.Count("table", "Transaction") != 1 || got.Count("table", "GetEntity") != 1 {
		t.Errorf("handler, first delivery: %v, want apply's read + 1 transaction", got)
	}
	if got := cost(func() {
		if err := h.Handle(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}); got.Total() != 3 || got.Count("table", "Transaction") != 1 || got.Count("table", "GetEntity") != 2 {
		t.Errorf("handler, a copy: %v, want apply's read + 1 refused transaction + 1 read of the record (its fingerprint)", got)
	}
	if n, _ := r.count(t, "a"); n != 1 {
		t.Errorf("applied %d times, want 1", n)
	}
	// A payload that is not an outbox message fails permanently, sending
	// nothing.
	if got := cost(func() {
		bad := &archive.Message{ID: "q2", Kind: outbox.Kind, Payload: []byte(`{"id":"x","stream":{"PartitionKey":"a"},"version":1}`)}
		if err := h.Handle(ctx, bad); err == nil || !isPermanent(err) {
			t.Errorf("a message whose id is not its stream's and version's: %v, want a permanent error", err)
		}
	}); got.Total() != 0 {
		t.Errorf("refused message sent %v", got)
	}
}
