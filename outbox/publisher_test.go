package outbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/outbox"
	"github.com/tablekit/tablekit/stream"
)

// TestPublishesOnlyItsStreams: a feed with an outbox stream and an
// ordinary event stream (an order's own history) in one partition; the
// Publisher, wired as the package doc shows, enqueues the outbox's
// message alone (before, both). A change of another Store's table is
// refused, naming both tables.
func TestPublishesOnlyItsStreams(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	if _, err := r.write(ctx, "a", 0, status("a", "placed"), "a1"); err != nil {
		t.Fatal(err)
	}
	history := stream.ID{PartitionKey: "a", Prefix: "order"}
	if _, err := r.f.Append(ctx, history, 0, []stream.Event{{ID: "h1", Data: Shipped{Order: "history"}}}); err != nil {
		t.Fatal(err)
	}
	res, err := r.relay.Round(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Delivered != 2 {
		t.Errorf("round delivered %d changes, want 2 (one skipped)", res.Delivered)
	}
	var got []string
	for _, m := range peek(t, r.queue) {
		got = append(got, m.ID)
	}
	if want := outbox.MessageID(r.source(), stream.ID{PartitionKey: "a", Prefix: "outbox"}, 1); len(got) != 1 || got[0] != want {
		t.Errorf("enqueued %v, want [%s] (the outbox's message alone)", got, want)
	}
	before := r.acct.Meter().Snapshot()
	other := feed.Change{Source: "devstoreaccount1/Other", Stream: stream.ID{PartitionKey: "a", Prefix: "outbox"}, Version: 2, Data: Shipped{Order: "x"}}
	if err := r.pub.Handle(ctx, other); !errors.Is(err, tablekit.ErrInvalidInput) || !strings.Contains(err.Error(), "Other") || !strings.Contains(err.Error(), r.st.Name()) {
		t.Errorf("a change of another table: %v, want a refusal naming both tables", err)
	}
	if got := r.acct.Meter().Snapshot().Sub(before); got.Total() != 0 {
		t.Errorf("the refusal sent %v", got)
	}
}

// TestNewPublisherRefuses: NewPublisher refuses what would not publish
// an outbox: no client, no Store, a prefix no stream has, messages that
// never expire.
func TestNewPublisherRefuses(t *testing.T) {
	acct := testenv.Account(t, nil)
	client, err := archive.OpenClient(acct, "q-refuses", nil)
	if err != nil {
		t.Fatal(err)
	}
	store, err := stream.NewStore(testenv.OpenTable[tablekit.Entity](t, acct, nil), &tablekit.Registry{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		client   *archive.Client
		store    *stream.Store
		prefix   string
		opts     *outbox.PublisherOptions
		property string
	}{
		{"nil client", nil, store, "outbox", nil, "client"},
		{"nil store", client, nil, "outbox", nil, "store"},
		{"zero store", client, &stream.Store{}, "outbox", nil, "store"},
		{"prefix with ~", client, store, "out~box", nil, "prefix"},
		{"prefix with /", client, store, "out/box", nil, "prefix"},
		{"never expire", client, store, "outbox", &outbox.PublisherOptions{Enqueue: &archive.EnqueueOptions{TimeToLive: -1}}, "Enqueue.TimeToLive"},
	} {
		_, err := outbox.NewPublisher(c.client, c.store, c.prefix, c.opts)
		var ve *tablekit.ValidationError
		if !errors.As(err, &ve) || ve.Property != c.property || !errors.Is(err, tablekit.ErrInvalidInput) || ve.Op != "outbox.NewPublisher" {
			t.Errorf("%s: %v, want outbox.NewPublisher's refusal of %s", c.name, err, c.property)
		}
	}
	for _, prefix := range []string{"", "outbox"} { // "" is a prefix too
		if _, err := outbox.NewPublisher(client, store, prefix, nil); err != nil {
			t.Errorf("prefix %q: %v", prefix, err)
		}
	}
}
