package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/outbox"
	"github.com/tablekit/tablekit/stream"
)

// TestRoutedByMessageAlone: an apply that routes its effect by state it
// reads (here a variable that changes between deliveries) is refused on
// the delivery it routes away from partition(m)'s: permanently, with
// nothing written, instead of applied a second time in the other
// partition, where the message has no record (before: applied twice).
func TestRoutedByMessageAlone(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	et := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	route := "x"
	h, err := outbox.NewHandler(et, func(outbox.Message) string { return "x" }, func(ctx context.Context, m outbox.Message) ([]tablekit.Action[tablekit.Entity], error) {
		return []tablekit.Action[tablekit.Entity]{tablekit.InsertAction(tablekit.Entity{PartitionKey: route, RowKey: "effect"})}, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := "devstoreaccount1/Orders"
	id := stream.ID{PartitionKey: "a", Prefix: "outbox"}
	msg := envelope(t, "q1", outbox.Message{ID: outbox.MessageID(src, id, 1), Source: src, Stream: id, Version: 1, Data: json.RawMessage(`{}`)})
	if err := h.Handle(ctx, msg); err != nil {
		t.Fatal(err)
	}
	route = "y" // the state apply reads changed: a copy routes elsewhere
	before := acct.Meter().Snapshot()
	err = h.Handle(ctx, msg)
	var ve *tablekit.ValidationError
	if !isPermanent(err) || !errors.As(err, &ve) || ve.Property != "PartitionKey" || !strings.Contains(err.Error(), `"y"`) {
		t.Errorf("a copy routed to another partition: %v, want a permanent refusal naming it", err)
	}
	if got := acct.Meter().Snapshot().Sub(before); got.Total() != 0 {
		t.Errorf("the refusal sent %v", got)
	}
	n, err := et.Count(ctx, tablekit.RowKeyRange("x", "effect", "effect~"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := et.Count(ctx, tablekit.RowKeyRange("y", "effect", "effect~"))
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || m != 0 {
		t.Errorf("effects: %d in x, %d in y; want the message applied once, in x", n, m)
	}
}

// TestRecordOutlivesRedelivery: by default the handler's record of a
// message outlives the queue's 7 days: a copy delivered after a sweep 7
// days and an hour later changes nothing (before, the record lived 24 h:
// the copy was applied again). A KeyTTL of its own is used as given.
func TestRecordOutlivesRedelivery(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	for _, c := range []struct {
		ttl   time.Duration
		after time.Duration // the sweep's time, from now
		want  int64         // times applied
	}{
		{0, 7*24*time.Hour + time.Hour, 1},
		{time.Hour, 2 * time.Hour, 2},
	} {
		et := testenv.OpenTable[tablekit.Entity](t, acct, nil)
		applied := int64(0)
		h, err := outbox.NewHandler(et, byStream, func(ctx context.Context, m outbox.Message) ([]tablekit.Action[tablekit.Entity], error) {
			applied++
			return []tablekit.Action[tablekit.Entity]{tablekit.UpsertAction(tablekit.Entity{PartitionKey: "a", RowKey: "effect", Properties: map[string]any{"N": applied}})}, nil
		}, &coord.WriterOptions{KeyTTL: c.ttl})
		if err != nil {
			t.Fatal(err)
		}
		src := "devstoreaccount1/Orders"
		id := stream.ID{PartitionKey: "a", Prefix: "outbox"}
		msg := envelope(t, "q1", outbox.Message{ID: outbox.MessageID(src, id, 1), Source: src, Stream: id, Version: 1, Data: json.RawMessage(`{}`)})
		if err := h.Handle(ctx, msg); err != nil {
			t.Fatal(err)
		}
		if _, err := coord.Sweep(ctx, et, time.Now().Add(c.after), nil); err != nil {
			t.Fatal(err)
		}
		if err := h.Handle(ctx, msg); err != nil {
			t.Fatal(err)
		}
		e, err := et.Get(ctx, "a", "effect")
		if err != nil {
			t.Fatal(err)
		}
		if e.Properties["N"] != c.want {
			t.Errorf("KeyTTL %v, a copy after a sweep %v later: applied %v times, want %d", c.ttl, c.after, e.Properties["N"], c.want)
		}
	}
}
