package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/outbox"
	"github.com/tablekit/tablekit/stream"
)

// TestTwoStoresOneQueue: two event-sourced tables (orders, invoices), an
// outbox stream per customer in each, one queue, one handler. Customer
// c1's order message and invoice message have the same stream id and
// version, but not the same id (it names their table), so both are
// applied, once each, however often each is delivered. (Before, both
// were "c1~outbox~0000000001": the invoice was taken for a copy of the
// order, and never applied.)
func TestTwoStoresOneQueue(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	queue := testenv.NewQueue(t, acct)
	client, err := archive.NewClient(queue, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := stream.ID{PartitionKey: "c1", Prefix: "outbox"}
	var sources []string
	for _, name := range []string{"order", "invoice"} {
		st := testenv.OpenTable[tablekit.Entity](t, acct, nil)
		ft := testenv.OpenTable[tablekit.Entity](t, acct, nil)
		reg := &tablekit.Registry{}
		if err := tablekit.Register[Shipped](reg, "Shipped", 1); err != nil {
			t.Fatal(err)
		}
		store, err := stream.NewStore(st, reg, nil)
		if err != nil {
			t.Fatal(err)
		}
		f, err := feed.New(store, ft, nil)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := outbox.NewPublisher(client, store, "outbox", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Append(ctx, id, 0, []stream.Event{{ID: name + "-1", Data: Shipped{Order: name}}}); err != nil {
			t.Fatal(err)
		}
		// Each message twice: a round, then a replay under a new name (a
		// relay that died before its checkpoint).
		relay, err := f.NewRelay([]feed.Subscription{{Name: "outbox", Handle: pub.Handle}, {Name: "again", Handle: pub.Handle}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := relay.Round(ctx, 0); err != nil {
			t.Fatal(err)
		}
		sources = append(sources, st.Account().Name()+"/"+st.Name())
	}

	peeked := peek(t, queue)
	ids := map[string]int{}
	for _, m := range peeked {
		ids[m.ID]++
		if !strings.HasSuffix(m.ID, "~c1~outbox~0000000001") || strings.ContainsAny(m.ID, `/\#?`) {
			t.Errorf("message id %q: want <account>~<table>~c1~outbox~0000000001, no '/', '\\', '#' or '?'", m.ID)
		}
	}
	for _, src := range sources {
		if want := outbox.MessageID(src, id, 1); ids[want] != 2 {
			t.Errorf("message %s enqueued %d times, want 2 (ids: %v)", want, ids[want], ids)
		}
	}

	et := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	applied := map[string]int{}
	h, err := outbox.NewHandler(et, byStream, func(ctx context.Context, m outbox.Message) ([]tablekit.Action[tablekit.Entity], error) {
		var s Shipped
		if err := m.Decode(&s); err != nil {
			return nil, err
		}
		applied[s.Order]++
		row, err := et.Get(ctx, m.Stream.PartitionKey, "count")
		if err != nil {
			return []tablekit.Action[tablekit.Entity]{tablekit.InsertAction(tablekit.Entity{PartitionKey: m.Stream.PartitionKey, RowKey: "count", Properties: map[string]any{"N": int64(1), s.Order: true}})}, nil
		}
		row.Properties = map[string]any{"N": row.Properties["N"].(int64) + 1, s.Order: true}
		return []tablekit.Action[tablekit.Entity]{tablekit.MergeAction(row, row.ETag)}, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range peeked {
		if err := h.Handle(ctx, envelope(t, fmt.Sprint("q", i), m)); err != nil {
			t.Fatal(err)
		}
	}
	row, err := et.Get(ctx, "c1", "count")
	if err != nil {
		t.Fatal(err)
	}
	if row.Properties["N"] != int64(2) || row.Properties["order"] != true || row.Properties["invoice"] != true {
		t.Errorf("c1's effects: %v, want the order's and the invoice's, once each (N 2)", row.Properties)
	}
	if applied["order"] != 2 || applied["invoice"] != 2 {
		t.Errorf("apply calls %v, want 2 each (a message and its copy)", applied)
	}
}

// TestMessagesBeforeSource: a message enqueued before Message.Source
// existed (no source, id "<partition>~<prefix>~<version>") is applied
// once, recorded under its old id, as before; another with the same old
// id and other data (another table's) is poisoned, its id reused
// (coord.ErrKeyReused), instead of taken for a copy; a message whose
// source or id is not an outbox message's is poisoned, sending nothing.
func TestMessagesBeforeSource(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	h, err := outbox.NewHandler(r.et, byStream, r.apply, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := stream.ID{PartitionKey: "a", Prefix: "outbox"}
	old := outbox.Message{ID: "a~outbox~0000000001", Stream: id, Version: 1, Data: json.RawMessage(`{"Order":"a1"}`)}
	for i := range 2 {
		if err := h.Handle(ctx, envelope(t, fmt.Sprint("q", i), old)); err != nil {
			t.Fatalf("delivery %d of a message of the old format: %v", i+1, err)
		}
	}
	if n, _ := r.count(t, "a"); n != 1 {
		t.Errorf("a message of the old format, delivered twice: applied %d times, want 1", n)
	}
	// Another table's message of the old format, with the same id (the
	// collision of the old ids): poisoned, not taken for a copy.
	other := old
	other.Data = json.RawMessage(`{"Order":"invoice"}`)
	if err := h.Handle(ctx, envelope(t, "q2", other)); !isPermanent(err) || !errors.Is(err, coord.ErrKeyReused) {
		t.Errorf("another message with an old id already applied: %v, want a permanent coord.ErrKeyReused", err)
	}
	if n, _ := r.count(t, "a"); n != 1 {
		t.Errorf("after another message with the same old id: applied %d times, want 1", n)
	}
	before := r.acct.Meter().Snapshot()
	for _, bad := range []outbox.Message{
		{ID: "x~a~outbox~0000000001", Stream: id, Version: 1},                         // no source, not the old id
		{ID: outbox.MessageID("acct", id, 1), Source: "acct", Stream: id, Version: 1}, // not "<account>/<table>"
		{ID: outbox.MessageID("a~b/t", id, 1), Source: "a~b/t", Stream: id, Version: 1},
		{ID: outbox.MessageID(r.source(), id, 2), Source: r.source(), Stream: id, Version: 1}, // another version's id
		{ID: "a~outbox~0000000001", Source: r.source(), Stream: id, Version: 1},               // a source, the old id
	} {
		if err := h.Handle(ctx, envelope(t, "bad", bad)); !isPermanent(err) {
			t.Errorf("message %+v: %v, want a permanent error", bad, err)
		}
	}
	if got := r.acct.Meter().Snapshot().Sub(before); got.Total() != 0 {
		t.Errorf("refused messages sent %v", got)
	}
}

// envelope returns m as the worker hands it to a handler.
func envelope(t *testing.T, qid string, m outbox.Message) *archive.Message {
	t.Helper()
	payload, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return &archive.Message{ID: qid, Kind: outbox.Kind, Payload: payload}
}

// peek returns the outbox messages in queue (up to 32), in its order.
func peek(t *testing.T, queue *azqueue.QueueClient) []outbox.Message {
	t.Helper()
	res, err := queue.PeekMessages(context.Background(), &azqueue.PeekMessagesOptions{NumberOfMessages: new(int32(32))})
	if err != nil {
		t.Fatal(err)
	}
	var got []outbox.Message
	for _, pm := range res.Messages {
		m, err := decode(*pm.MessageText)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	return got
}
