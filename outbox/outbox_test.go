package outbox_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
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

// Shipped is the message of the tests.
type Shipped struct {
	PK    string `table:",pk"`
	RK    string `table:",rk"`
	Order string `table:"Order"`
}

// rig is an outbox on fresh tables and a fresh queue of one Account: the
// state and outbox streams in st, the feed's rows in ft, the handler's
// effects (and idempotency records) in et.
type rig struct {
	acct   *tablekit.Account
	st, et *tablekit.Table[tablekit.Entity]
	store  *stream.Store
	f      *feed.Feed
	queue  *azqueue.QueueClient
	pub    *outbox.Publisher
	relay  *feed.Relay

	// ordered makes apply check the order by version (the package doc's
	// way); without it apply counts whatever it is given, so only the
	// handler's key can keep a copy from counting twice.
	ordered bool

	mu    sync.Mutex
	calls map[string]int        // apply calls per message id
	order map[stream.ID][]int64 // versions applied per stream, in order
}

func newRig(t *testing.T) *rig {
	t.Helper()
	acct := testenv.Account(t, nil)
	r := &rig{acct: acct, calls: map[string]int{}, order: map[stream.ID][]int64{}}
	r.st = testenv.OpenTable[tablekit.Entity](t, acct, nil)
	ft := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	r.et = testenv.OpenTable[tablekit.Entity](t, acct, nil)
	reg := &tablekit.Registry{}
	if err := tablekit.Register[Shipped](reg, "Shipped", 1); err != nil {
		t.Fatal(err)
	}
	var err error
	if r.store, err = stream.NewStore(r.st, reg, nil); err != nil {
		t.Fatal(err)
	}
	if r.f, err = feed.New(r.store, ft, nil); err != nil {
		t.Fatal(err)
	}
	r.queue = testenv.NewQueue(t, acct)
	client, err := archive.NewClient(r.queue, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.pub, err = outbox.NewPublisher(client, r.store, "outbox", nil); err != nil {
		t.Fatal(err)
	}
	if r.relay, err = r.f.NewRelay([]feed.Subscription{{Name: "outbox", Handle: r.pub.Handle}}, nil); err != nil {
		t.Fatal(err)
	}
	return r
}

// apply is the user's handler: the effect of a message is +1 on the
// count of its partition's row in et (read, then merged on the ETag read)
// and the version it applied of its stream. Applied twice, a message
// would count twice.
func (r *rig) apply(ctx context.Context, m outbox.Message) ([]tablekit.Action[tablekit.Entity], error) {
	var s Shipped
	if err := m.Decode(&s); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.calls[m.ID]++
	r.mu.Unlock()
	row, err := r.et.Get(ctx, m.Stream.PartitionKey, "count")
	switch {
	case errors.Is(err, tablekit.ErrNotFound):
		return []tablekit.Action[tablekit.Entity]{tablekit.InsertAction(tablekit.Entity{PartitionKey: m.Stream.PartitionKey, RowKey: "count",
			Properties: map[string]any{"N": int64(1), "Last": m.Version}})}, nil
	case err != nil:
		return nil, err
	}
	n, _ := row.Properties["N"].(int64)
	last, _ := row.Properties["Last"].(int64)
	if r.ordered { // the order check the package doc describes
		if m.Version <= last {
			return nil, nil // applied already
		}
		if m.Version != last+1 {
			return nil, fmt.Errorf("message %s: version %d after %d", m.ID, m.Version, last)
		}
	}
	row.Properties = map[string]any{"N": n + 1, "Last": m.Version}
	r.mu.Lock()
	r.order[m.Stream] = append(r.order[m.Stream], m.Version)
	r.mu.Unlock()
	return []tablekit.Action[tablekit.Entity]{tablekit.MergeAction(row, row.ETag)}, nil
}

// byStream is the partition of the tests' effects: the message's stream's.
func byStream(m outbox.Message) string { return m.Stream.PartitionKey }

// work runs a worker with NewHandler(et, byStream, apply) until it has
// deleted n messages (or a minute passes), and returns its stats.
func (r *rig) work(t *testing.T, n int64) archive.Stats {
	t.Helper()
	h, err := outbox.NewHandler(r.et, byStream, r.apply, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mux archive.Mux
	if err := mux.Register(outbox.Kind, h); err != nil {
		t.Fatal(err)
	}
	w, err := archive.OpenWorker(r.acct, path.Base(r.queue.URL()), &mux, &archive.WorkerOptions{
		Concurrency: 1, PollInterval: 100 * time.Millisecond, PoisonQueue: testenv.QueueName(t), Container: testenv.ContainerName(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	for ctx.Err() == nil && w.Stats().Succeeded+w.Stats().Poisoned < n {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return w.Stats()
}

// count returns the effect row of partition pk: count, last version.
func (r *rig) count(t *testing.T, pk string) (int64, int64) {
	t.Helper()
	row, err := r.et.Get(context.Background(), pk, "count")
	if errors.Is(err, tablekit.ErrNotFound) {
		return 0, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n, _ := row.Properties["N"].(int64)
	last, _ := row.Properties["Last"].(int64)
	return n, last
}

// write appends msgs to the outbox stream of pk at expected, with the
// state change: the order row's Status, in the same EGT.
func (r *rig) write(ctx context.Context, pk string, expected int64, state tablekit.Action[tablekit.Entity], msgs ...string) (stream.Result, error) {
	evs := make([]stream.Event, len(msgs))
	for i, m := range msgs {
		evs[i] = stream.Event{ID: m, Data: Shipped{Order: m}}
	}
	return r.f.Append(ctx, stream.ID{PartitionKey: pk, Prefix: "outbox"}, expected, evs, state)
}

func status(pk, s string) tablekit.Action[tablekit.Entity] {
	return tablekit.UpsertAction(tablekit.Entity{PartitionKey: pk, RowKey: "order", Properties: map[string]any{"Status": s}})
}

// publishTwice writes two messages (a1, a2) to the outbox stream of pk
// with a state change, and publishes each twice: by a round of the
// rig's relay, then by a second subscription's Replay (a relay that died
// before its checkpoint).
func (r *rig) publishTwice(t *testing.T, pk string) {
	t.Helper()
	ctx := context.Background()
	if _, err := r.write(ctx, pk, 0, status(pk, "placed"), "a1", "a2"); err != nil {
		t.Fatal(err)
	}
	r.round(t)
	again, err := r.f.NewRelay([]feed.Subscription{{Name: "again", Handle: r.pub.Handle}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.Round(ctx, 0); err != nil { // (a replay runs in a round's term: 0, no lease)
		t.Fatal(err)
	}
	if _, err := again.Replay(ctx, "again"); err != nil {
		t.Fatal(err)
	}
}

// source is the rig's stream table as feed.Change.Source names it.
func (r *rig) source() string { return r.st.Account().Name() + "/" + r.st.Name() }

func (r *rig) round(t *testing.T) {
	t.Helper()
	if _, err := r.relay.Round(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
}

// TestCommittedReachHandlerOnce: the messages of committed transactions
// reach the queue and the handler once each, in version order per
// partition; a failed transaction's messages (a refused state change)
// never do, and neither does its state change.
func TestCommittedReachHandlerOnce(t *testing.T) {
	r := newRig(t)
	r.ordered = true
	ctx := context.Background()
	if _, err := r.write(ctx, "a", 0, status("a", "placed"), "a1", "a2"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.write(ctx, "b", 0, status("b", "placed"), "b1"); err != nil {
		t.Fatal(err)
	}
	// A state change the service refuses (the order row exists): the
	// whole EGT fails, messages included.
	insert := tablekit.InsertAction(tablekit.Entity{PartitionKey: "a", RowKey: "order", Properties: map[string]any{"Status": "dup"}})
	var te *tablekit.TransactionError
	if _, err := r.write(ctx, "a", 2, insert, "lost1"); !errors.As(err, &te) {
		t.Fatalf("refused state change: %v, want a TransactionError", err)
	}
	if _, err := r.write(ctx, "a", 2, status("a", "shipped"), "a3"); err != nil {
		t.Fatal(err)
	}
	r.round(t)
	st := r.work(t, 4)
	if st.Succeeded != 4 || st.Poisoned != 0 || st.Failed != 0 {
		t.Errorf("worker stats %+v, want 4 handled, none failed", st)
	}
	if n, last := r.count(t, "a"); n != 3 || last != 3 {
		t.Errorf("partition a: %d applied, last version %d; want 3, 3", n, last)
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
	if len(r.calls) != 4 {
		t.Errorf("apply saw %d messages (%v), want 4", len(r.calls), r.calls)
	}
	if got := fmt.Sprint(r.order[stream.ID{PartitionKey: "a", Prefix: "outbox"}]); got != "[2 3]" { // 1 inserted the row
		t.Errorf("partition a applied versions %s after the first, want [2 3]", got)
	}
	row, err := r.st.Get(ctx, "a", "order")
	if err != nil || row.Properties["Status"] != "shipped" {
		t.Errorf("state of a: %v %v, want shipped", row.Properties, err)
	}
}

// TestRedeliveredOnce: the relay handing the same messages again (a relay
// that died before its checkpoint: here a replay from version 1 under a
// new subscription name) enqueues copies with the same ids, and the
// handler applies each id once: the copies are deleted without effect,
// although their apply computed other actions (it read the count the
// first copy changed): the record's fingerprint is the message's, not
// the actions' (without it, coord's ErrKeyReused poisoned the copies).
func TestRedeliveredOnce(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.publishTwice(t, "a")
	props, err := r.queue.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if props.ApproximateMessagesCount == nil || *props.ApproximateMessagesCount != 4 {
		t.Fatalf("queue holds %v messages, want 4 (2 messages, each twice)", props.ApproximateMessagesCount)
	}
	st := r.work(t, 4)
	if st.Succeeded != 4 || st.Failed != 0 {
		t.Errorf("worker stats %+v, want the 4 copies deleted", st)
	}
	if n, last := r.count(t, "a"); n != 2 || last != 2 {
		t.Errorf("partition a: %d applied, last version %d; want 2, 2 (each id once)", n, last)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, c := range r.calls {
		if c != 2 {
			t.Errorf("message %s: apply called %d times, want 2 (once per copy; the copy's transaction replayed)", id, c)
		}
	}
}

// TestLongStreamPartition: a stream partition of 500 characters (keys
// hold 512 UTF-16 code units; the feed's directory row of the stream,
// "s~" + partition + "~outbox", still fits) makes ids too long for a
// record's RowKey as they are ("~coord~key~" + id, 529): the handler
// records them by their hash, so each message, delivered twice, is
// applied once (before, each was refused as input and poisoned). On
// Cosmos DB, whose RowKeys hold 255 bytes, a partition of 240 does so
// (the directory row's RowKey, 249 bytes, fits).
func TestLongStreamPartition(t *testing.T) {
	r := newRig(t)
	pk := strings.Repeat("p", 500)
	if testenv.Service() == tablekit.ServiceCosmosDB {
		pk = strings.Repeat("p", 240)
	}
	r.publishTwice(t, pk)
	st := r.work(t, 4)
	if st.Succeeded != 4 || st.Failed != 0 || st.Poisoned != 0 {
		t.Errorf("worker stats %+v, want the 4 copies handled and deleted", st)
	}
	if n, last := r.count(t, pk); n != 2 || last != 2 {
		t.Errorf("%d applied, last version %d; want 2, 2 (each id once)", n, last)
	}
}

// TestEnqueuedInOrder: a stream's messages are enqueued in version order
// (the queue's own order, peeked, is the insertion order on Azurite).
func TestEnqueuedInOrder(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	var want []string
	for i := range 5 {
		m := fmt.Sprintf("m%d", i+1)
		if _, err := r.write(ctx, "a", int64(i), status("a", m), m); err != nil {
			t.Fatal(err)
		}
		want = append(want, outbox.MessageID(r.source(), stream.ID{PartitionKey: "a", Prefix: "outbox"}, int64(i+1)))
	}
	r.round(t)
	var got []string
	for _, m := range peek(t, r.queue) {
		got = append(got, m.ID)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("enqueued %v, want %v", got, want)
	}
}

// decode reads an outbox message from a queue message's text: the archive
// envelope, base64 JSON, whose payload is the Message.
func decode(text string) (outbox.Message, error) {
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return outbox.Message{}, err
	}
	var env struct {
		Kind    string         `json:"kind"`
		Payload outbox.Message `json:"payload"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return outbox.Message{}, err
	}
	if env.Kind != outbox.Kind {
		return outbox.Message{}, fmt.Errorf("kind %q, want %q", env.Kind, outbox.Kind)
	}
	return env.Payload, nil
}
