package outbox_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/outbox"
	"github.com/tablekit/tablekit/stream"
)

// Hired is the second event type of TestHandlerPerEventKind.
type Hired struct {
	PK       string `table:",pk"`
	RK       string `table:",rk"`
	Employee string `table:"Employee"`
}

// TestHandlerPerEventKind: a Publisher with ByEventKind enqueues each
// message under EventKind(its event's registered kind), so a worker's Mux
// hands Hired messages to the badge handler and Shipped messages to the
// shipping handler, each only its own, once; an event without a kind (a
// tablekit.Entity appended without a type property) goes under Kind.
func TestHandlerPerEventKind(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	st := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	ft := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	et := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	reg := &tablekit.Registry{}
	if err := tablekit.Register[Shipped](reg, "Shipped", 1); err != nil {
		t.Fatal(err)
	}
	if err := tablekit.Register[Hired](reg, "Hired", 1); err != nil {
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
	queue := testenv.NewQueue(t, acct)
	client, err := archive.NewClient(queue, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := outbox.NewPublisher(client, store, "outbox", &outbox.PublisherOptions{ByEventKind: true})
	if err != nil {
		t.Fatal(err)
	}
	relay, err := f.NewRelay([]feed.Subscription{{Name: "outbox", Handle: pub.Handle}}, nil)
	if err != nil {
		t.Fatal(err)
	}

	// One transaction per partition, its events of both types mixed.
	id := stream.ID{PartitionKey: "dept", Prefix: "outbox"}
	evs := []stream.Event{
		{ID: "h1", Data: Hired{Employee: "ann"}},
		{ID: "s1", Data: Shipped{Order: "o1"}},
		{ID: "h2", Data: Hired{Employee: "bob"}},
		{ID: "x1", Data: tablekit.Entity{Properties: map[string]any{"Note": "no kind"}}},
		{ID: "s2", Data: Shipped{Order: "o2"}},
	}
	if _, err := f.Append(ctx, id, 0, evs); err != nil {
		t.Fatal(err)
	}
	if _, err := relay.Round(ctx, 0); err != nil {
		t.Fatal(err)
	}
	peek, err := queue.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: new(int32(32))})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, pm := range peek.Messages {
		raw, err := base64.StdEncoding.DecodeString(*pm.MessageText)
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(raw, &env); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, env.Kind)
	}
	if want := []string{"outbox.Hired", "outbox.Shipped", "outbox.Hired", outbox.Kind, "outbox.Shipped"}; !slices.Equal(kinds, want) {
		t.Fatalf("enqueued under kinds %v, want %v", kinds, want)
	}

	// A handler per kind, each recording what it is handed and writing
	// its effect (a row per message) once by the message id.
	var mu sync.Mutex
	got := map[string][]string{} // handler -> what it applied
	handler := func(name string, decode func(m outbox.Message) (string, error)) archive.Handler {
		h, err := outbox.NewHandler(et, func(outbox.Message) string { return name }, func(ctx context.Context, m outbox.Message) ([]tablekit.Action[tablekit.Entity], error) {
			what, err := decode(m)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			got[name] = append(got[name], fmt.Sprintf("%s:%s", m.EventID, what))
			mu.Unlock()
			return []tablekit.Action[tablekit.Entity]{tablekit.InsertAction(tablekit.Entity{PartitionKey: name, RowKey: m.ID})}, nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	var mux archive.Mux
	for kind, h := range map[string]archive.Handler{
		outbox.EventKind("Hired"): handler("badges", func(m outbox.Message) (string, error) {
			var h Hired
			err := m.Decode(&h)
			return m.Kind + " " + h.Employee, err
		}),
		outbox.EventKind("Shipped"): handler("shipping", func(m outbox.Message) (string, error) {
			var s Shipped
			err := m.Decode(&s)
			return m.Kind + " " + s.Order, err
		}),
		outbox.Kind: handler("other", func(m outbox.Message) (string, error) {
			var e tablekit.Entity
			err := m.Decode(&e)
			return fmt.Sprint(m.Kind, " ", e.Properties["Note"]), err
		}),
	} {
		if err := mux.Register(kind, h); err != nil {
			t.Fatal(err)
		}
	}
	wk, err := archive.OpenWorker(acct, path.Base(queue.URL()), &mux, &archive.WorkerOptions{
		Concurrency: 1, PollInterval: 100 * time.Millisecond, PoisonQueue: testenv.QueueName(t), Container: testenv.ContainerName(t)})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	done := make(chan error, 1)
	go func() { done <- wk.Run(wctx) }()
	for wctx.Err() == nil && wk.Stats().Succeeded+wk.Stats().Poisoned < int64(len(evs)) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := wk.Stats(); s.Succeeded != int64(len(evs)) || s.Poisoned != 0 || s.Failed != 0 {
		t.Errorf("worker stats %+v, want %d handled, none failed", s, len(evs))
	}
	want := map[string][]string{
		"badges":   {"h1:Hired ann", "h2:Hired bob"},
		"shipping": {"s1:Shipped o1", "s2:Shipped o2"},
		"other":    {"x1: no kind"},
	}
	mu.Lock()
	defer mu.Unlock()
	for name, w := range want {
		if g := got[name]; !slices.Equal(g, w) {
			t.Errorf("%s handler applied %q, want %q", name, g, w)
		}
	}
}
