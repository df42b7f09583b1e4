package archive

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// TestPoisonRaceStaleOwner plays the race the poison protocol guards
// against, step by step: worker A dequeues a message and stalls until its
// lease lapses; worker B dequeues it; then both try to poison it. Only B
// writes a poison record, and retrying A's attempt changes nothing.
func TestPoisonRaceStaleOwner(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	q := testenv.NewQueue(t, acct)
	pq := acct.Queues().NewQueueClient(testenv.QueueName(t))
	t.Cleanup(func() { pq.Delete(context.Background(), nil) })
	w, err := OpenWorker(acct, nameOf(q.URL()), HandlerFunc(func(context.Context, *Message) error { return nil }),
		&WorkerOptions{PoisonQueue: nameOf(pq.URL()), VisibilityTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(q, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, "k", MoveRequest{PartitionKey: "p", RowKey: "r"}, nil); err != nil {
		t.Fatal(err)
	}
	dequeue := func() *dequeuedMessage {
		t.Helper()
		msgs, err := w.dequeue(ctx, 1)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("dequeue: %v, %d messages", err, len(msgs))
		}
		return &msgs[0]
	}
	a := dequeue()
	// A's lease lapses (shortcut: make the message visible again now; A
	// keeps the newest receipt it knows).
	resp, err := q.UpdateMessage(ctx, a.id, a.receipt, a.text, &azqueue.UpdateMessageOptions{VisibilityTimeout: ptr(int32(0))})
	if err != nil {
		t.Fatal(err)
	}
	a.receipt = *resp.PopReceipt
	b := dequeue()
	if b.id != a.id || b.count != 2 {
		t.Fatalf("B got %s (count %d), want A's message again", b.id, b.count)
	}

	log := slog.New(slog.DiscardHandler)
	poison := func(dm *dequeuedMessage, reason string) {
		env, _ := decodeEnvelope(dm.text)
		m := &Message{ID: dm.id, DequeueCount: dm.count, Text: dm.text, env: env, Kind: env.Kind, Payload: env.Payload}
		w.poisonMessage(ctx, log, &lease{w: w, ctx: ctx, id: dm.id, receipt: dm.receipt, text: dm.text}, m, reason)
	}
	// Both poison at once.
	var wg sync.WaitGroup
	wg.Go(func() { poison(a, "A") })
	wg.Go(func() { poison(b, "B") })
	wg.Wait()
	poison(a, "A again") // a stale owner retrying: the message is gone (404)

	var records []Poisoned
	for {
		resp, err := pq.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: ptr(int32(32))})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Messages) == 0 {
			break
		}
		for _, m := range resp.Messages {
			p, err := ParsePoison(*m.MessageText)
			if err != nil {
				t.Fatal(err)
			}
			records = append(records, p)
			pq.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil)
		}
	}
	if len(records) != 1 || records[0].Error != "B" || records[0].MessageID != a.id || records[0].DequeueCount != 2 {
		t.Fatalf("poison records %+v: want exactly B's", records)
	}
	if s := w.Stats(); s.Poisoned != 1 || s.Lost != 2 {
		t.Errorf("stats %+v: want 1 poisoned and 2 lost (A twice)", s)
	}
	props, err := q.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := *props.ApproximateMessagesCount; n != 0 {
		t.Errorf("work queue holds %d messages, want 0", n)
	}
}

// TestPoisonQueueNameChecked: a poison queue with an invalid name is
// refused up front, not discovered at the first poison message.
func TestPoisonQueueNameChecked(t *testing.T) {
	acct, err := tablekit.Open("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;QueueEndpoint=http://127.0.0.1:1/devstoreaccount1;BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;TableEndpoint=http://127.0.0.1:1/devstoreaccount1;", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenWorker(acct, "work", HandlerFunc(func(context.Context, *Message) error { return nil }), &WorkerOptions{PoisonQueue: "this-name-is-far-too-long-for-a-queue-because-it-has-more-than-63-chars"}); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("long poison queue name: %v, want ErrInvalidKey", err)
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	text, err := encodeEnvelope(&envelope{Kind: "k", Payload: []byte(`{"a":"\u0000<&>"}`)})
	if err != nil {
		t.Fatal(err)
	}
	env, ok := decodeEnvelope(text)
	var p struct{ A string }
	if !ok || env.Kind != "k" || json.Unmarshal(env.Payload, &p) != nil || p.A != "\x00<&>" {
		t.Errorf("round trip: %+v %v", env, ok)
	}
	for _, s := range []string{"", "plain", "bm90IGpzb24=", "eyJhIjoxfQ=="} { // "not json", {"a":1}
		if _, ok := decodeEnvelope(s); ok {
			t.Errorf("decodeEnvelope(%q) accepted a foreign message", s)
		}
	}
	if got := string(foreignBody("bm90IGpzb24=")); got != "not json" {
		t.Errorf("foreignBody: %q", got)
	}
	if got := string(foreignBody("plain text")); got != "plain text" {
		t.Errorf("foreignBody: %q", got)
	}
}

func TestTruncate(t *testing.T) {
	if got := truncate("héllo", 2); got != "h…" {
		t.Errorf("truncate: %q", got)
	}
	if got := truncate("abc", 3); got != "abc" {
		t.Errorf("truncate: %q", got)
	}
}
