package otelkit_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/otelkit"
	"github.com/tablekit/tablekit/tablekittest"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestMain(m *testing.M) { tablekittest.Main(m) }

type item struct {
	PK string `table:",pk"`
	RK string `table:",rk"`
	N  int    `table:"N"`
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// traced opens an Account whose spans go to an in-memory exporter.
func traced(t *testing.T) (*tablekit.Account, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tablekittest.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{TracingProvider: otelkit.TracingProvider(tp)}}), exp
}

// spanTree indexes exported spans by id.
type spanTree map[trace.SpanID]tracetest.SpanStub

func treeOf(spans tracetest.SpanStubs) spanTree {
	tree := spanTree{}
	for _, s := range spans {
		tree[s.SpanContext.SpanID()] = s
	}
	return tree
}

// named returns the spans called name.
func (tr spanTree) named(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range tr {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// under reports whether s descends from the span with id root.
func (tr spanTree) under(s tracetest.SpanStub, root trace.SpanID) bool {
	for range 32 {
		p := s.Parent.SpanID()
		if !p.IsValid() {
			return false
		}
		if p == root {
			return true
		}
		var ok bool
		if s, ok = tr[p]; !ok {
			return false
		}
	}
	return false
}

// requestsUnder returns the SDK's HTTP request spans (kind client, named
// "HTTP <method>") that descend from root.
func (tr spanTree) requestsUnder(root tracetest.SpanStub) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range tr {
		if s.SpanKind == trace.SpanKindClient && strings.HasPrefix(s.Name, "HTTP ") && tr.under(s, root.SpanContext.SpanID()) {
			out = append(out, s)
		}
	}
	return out
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// tablekit's spans for a transaction and a bulk write are the parents of
// the SDK's request spans.
func TestSpansWrapTheSDKRequests(t *testing.T) {
	ctx := testCtx(t)
	acct, exp := traced(t)
	tbl, err := tablekit.OpenTable[item](acct, tablekittest.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.DeleteTable(context.Background()) })

	exp.Reset()
	if _, err := tbl.Transaction(ctx, tablekit.InsertAction(item{PK: "p", RK: "a"}), tablekit.InsertAction(item{PK: "p", RK: "b"})); err != nil {
		t.Fatal(err)
	}
	tree := treeOf(exp.GetSpans())
	txs := tree.named("Table.Transaction")
	if len(txs) != 1 {
		t.Fatalf("%d Table.Transaction spans, want 1 (spans: %v)", len(txs), names(tree))
	}
	if reqs := tree.requestsUnder(txs[0]); len(reqs) != 1 {
		t.Errorf("Table.Transaction has %d request spans under it, want 1 (spans: %v)", len(reqs), names(tree))
	}
	if v, ok := attr(txs[0], "tablekit.actions"); !ok || v.AsInt64() != 2 {
		t.Errorf("Table.Transaction tablekit.actions = %v, want 2", v.String())
	}

	exp.Reset()
	items := make([]item, 150)
	for i := range items {
		items[i] = item{PK: "q", RK: string(rune('a'+i/26)) + string(rune('a'+i%26)), N: i}
	}
	if _, err := tbl.BulkWriter(nil).Upsert(ctx, items); err != nil {
		t.Fatal(err)
	}
	tree = treeOf(exp.GetSpans())
	writes := tree.named("BulkWriter.Write")
	if len(writes) != 1 {
		t.Fatalf("%d BulkWriter.Write spans, want 1 (spans: %v)", len(writes), names(tree))
	}
	chunks := tree.named("BulkWriter.Chunk")
	if len(chunks) != 2 {
		t.Errorf("%d BulkWriter.Chunk spans for 150 entities of one partition, want 2", len(chunks))
	}
	for _, c := range chunks {
		if !tree.under(c, writes[0].SpanContext.SpanID()) {
			t.Errorf("chunk span %s is not under BulkWriter.Write", c.SpanContext.SpanID())
		}
		if reqs := tree.requestsUnder(c); len(reqs) != 1 {
			t.Errorf("BulkWriter.Chunk has %d request spans under it, want 1", len(reqs))
		}
	}
}

// A worker's message span carries the message's id and dequeue count and
// is the parent of the handler's storage requests.
func TestWorkerMessageSpan(t *testing.T) {
	ctx := testCtx(t)
	acct, exp := traced(t)
	tbl, err := tablekit.OpenTable[item](acct, tablekittest.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.DeleteTable(context.Background()) })
	queue := tablekittest.QueueName(t)
	client, err := archive.OpenClient(acct, queue, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acct.Queues().NewQueueClient(queue).Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { acct.Queues().NewQueueClient(queue).Delete(context.Background(), nil) })
	poison := acct.Queues().NewQueueClient(queue + "-poison")
	if _, err := poison.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { poison.Delete(context.Background(), nil) })

	handled := make(chan struct{}, 1)
	h := archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
		var v item
		if err := m.Decode(&v); err != nil {
			return err
		}
		_, err := tbl.Insert(ctx, v)
		handled <- struct{}{}
		return err
	})
	w, err := archive.OpenWorker(acct, queue, h, &archive.WorkerOptions{PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	id, err := client.Enqueue(ctx, "insert", item{PK: "w", RK: "1", N: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	select {
	case <-handled:
	case <-ctx.Done():
		t.Fatal("the message was never handled")
	}
	deadline := time.Now().Add(30 * time.Second)
	for w.Stats().Succeeded == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	tree := treeOf(exp.GetSpans())
	msgs := tree.named("Worker.Handle")
	if len(msgs) != 1 {
		t.Fatalf("%d Worker.Handle spans, want 1 (spans: %v)", len(msgs), names(tree))
	}
	m := msgs[0]
	if v, _ := attr(m, "messaging.message.id"); v.AsString() != id {
		t.Errorf("messaging.message.id = %q, want %q", v.AsString(), id)
	}
	if v, _ := attr(m, "tablekit.dequeue_count"); v.AsInt64() != 1 {
		t.Errorf("tablekit.dequeue_count = %v, want 1", v.String())
	}
	if v, _ := attr(m, "messaging.destination.name"); v.AsString() != queue {
		t.Errorf("messaging.destination.name = %q, want %q", v.AsString(), queue)
	}
	reqs := tree.requestsUnder(m)
	if len(reqs) != 1 {
		t.Errorf("Worker.Handle has %d request spans under it, want 1 (the handler's insert)", len(reqs))
	}
}

func names(tr spanTree) []string {
	var out []string
	for _, s := range tr {
		out = append(out, s.Name)
	}
	return out
}

// The Meter's counts and the worker's figures read through an
// OpenTelemetry reader equal what tablekit counted.
func TestMetrics(t *testing.T) {
	ctx := testCtx(t)
	acct := tablekittest.Account(t, nil)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	reg, err := otelkit.RegisterMeter(mp, acct.Meter(), attribute.String("app", "test"))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()

	tbl, err := tablekit.OpenTable[item](acct, tablekittest.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.DeleteTable(context.Background()) })
	for i := range 3 {
		if _, err := tbl.Insert(ctx, item{PK: "m", RK: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	snap := acct.Meter().Snapshot()
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				svc, _ := dp.Attributes.Value(otelkit.AttrService)
				op, _ := dp.Attributes.Value(otelkit.AttrOperation)
				app, _ := dp.Attributes.Value("app")
				if app.AsString() != "test" {
					t.Errorf("%s point without the registration's attribute: %v", m.Name, dp.Attributes)
				}
				got[m.Name+" "+svc.AsString()+" "+op.AsString()] = dp.Value
			}
		}
	}
	for _, c := range snap.Counts() {
		key := c.Service + " " + c.Operation
		if got[otelkit.MetricRequests+" "+key] != c.Requests || got[otelkit.MetricRetries+" "+key] != c.Retries || got[otelkit.MetricThrottled+" "+key] != c.Throttled {
			t.Errorf("%s: metrics %d/%d/%d, Meter %+v", key, got[otelkit.MetricRequests+" "+key], got[otelkit.MetricRetries+" "+key], got[otelkit.MetricThrottled+" "+key], c)
		}
	}
	if got[otelkit.MetricRequests+" table InsertEntity"] != 3 {
		t.Errorf("tablekit.requests for table InsertEntity = %d, want 3 (all: %v)", got[otelkit.MetricRequests+" table InsertEntity"], got)
	}
}

// An archive worker's figures read through an OpenTelemetry reader:
// messages handled, failed and poisoned, the queue age and the
// concurrency, equal to what the worker counted.
func TestWorkerMetrics(t *testing.T) {
	ctx := testCtx(t)
	acct := tablekittest.Account(t, nil)
	queue := tablekittest.QueueName(t)
	client, err := archive.OpenClient(acct, queue, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acct.Queues().NewQueueClient(queue).Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { acct.Queues().NewQueueClient(queue).Delete(context.Background(), nil) })
	t.Cleanup(func() { acct.Queues().NewQueueClient(queue+"-poison").Delete(context.Background(), nil) })

	// "ok" succeeds, "flaky" fails its first attempt, "bad" fails
	// permanently (poisoned), "hold" blocks until released.
	holding, release := make(chan struct{}), make(chan struct{})
	var flaky atomic.Int32
	h := archive.HandlerFunc(func(ctx context.Context, m *archive.Message) error {
		switch m.Kind {
		case "flaky":
			if flaky.Add(1) == 1 {
				return errors.New("first attempt fails")
			}
		case "bad":
			return archive.Permanent(errors.New("cannot be done"))
		case "hold":
			close(holding)
			<-release
		}
		return nil
	})
	// One handler at a time: while "hold" runs, the worker dequeues
	// nothing, so its queue age stays that of the "hold" message.
	w, err := archive.OpenWorker(acct, queue, h, &archive.WorkerOptions{Concurrency: 1, PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	reg, err := otelkit.RegisterWorker(mp, w, attribute.String("app", "test"))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()

	for _, kind := range []string{"ok", "ok", "ok", "flaky", "bad"} {
		if _, err := client.Enqueue(ctx, kind, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Visible only after 3 s (when the others are long settled): it has
	// waited that long when dequeued.
	if _, err := client.Enqueue(ctx, "hold", 1, &archive.EnqueueOptions{Delay: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	select {
	case <-holding:
	case <-ctx.Done():
		t.Fatal("the held message was never handled")
	}
	for s := w.Stats(); s.Succeeded < 4 || s.Poisoned < 1; s = w.Stats() {
		if ctx.Err() != nil {
			t.Fatalf("stats %+v: the other messages were not settled", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	held := collectWorker(t, ctx, reader, queue)
	heldStats := w.Stats()
	close(release)
	for w.Stats().Succeeded < 5 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	final := collectWorker(t, ctx, reader, queue)
	s := w.Stats()
	t.Logf("held: %v (stats %+v); final: %v (stats %+v)", held, heldStats, final, s)

	if age := held[otelkit.MetricWorkerQueueAge]; age < 2 || age != heldStats.QueueAge.Seconds() {
		t.Errorf("%s while the held message ran: %v s; want its queue age (Stats: %v), at least 2 s", otelkit.MetricWorkerQueueAge, age, heldStats.QueueAge)
	}
	for outcome, want := range map[string]int64{"succeeded": 5, "failed": 2, "poisoned": 1, "received": 7, "throttled": 0} {
		if got := final[otelkit.MetricWorkerMessages+" "+outcome]; got != float64(want) {
			t.Errorf("%s %s = %v, want %d", otelkit.MetricWorkerMessages, outcome, got, want)
		}
	}
	for name, want := range map[string]int64{"succeeded": s.Succeeded, "failed": s.Failed, "poisoned": s.Poisoned, "received": s.Received, "renewed": s.Renewed, "lost": s.Lost, "abandoned": s.Abandoned} {
		if got := final[otelkit.MetricWorkerMessages+" "+name]; got != float64(want) {
			t.Errorf("%s %s = %v, Stats say %d", otelkit.MetricWorkerMessages, name, got, want)
		}
	}
	if got := final[otelkit.MetricWorkerConcurrency]; got != 1 {
		t.Errorf("%s = %v, want 1", otelkit.MetricWorkerConcurrency, got)
	}
	if got := final[otelkit.MetricWorkerQueueAge]; got != s.QueueAge.Seconds() {
		t.Errorf("%s = %v at the end, Stats say %v", otelkit.MetricWorkerQueueAge, got, s.QueueAge)
	}
}

// collectWorker reads the worker metrics from reader: counters as
// "<metric> <outcome>", gauges by name. Every point must carry the queue
// and the registration's attribute.
func collectWorker(t *testing.T, ctx context.Context, reader *sdkmetric.ManualReader, queue string) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	check := func(name string, attrs attribute.Set) {
		q, _ := attrs.Value(otelkit.AttrQueue)
		app, _ := attrs.Value("app")
		if q.AsString() != queue || app.AsString() != "test" {
			t.Errorf("%s point with attributes %v, want %s=%s and app=test", name, attrs, otelkit.AttrQueue, queue)
		}
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if !d.IsMonotonic {
					t.Errorf("%s is not monotonic", m.Name)
				}
				for _, dp := range d.DataPoints {
					check(m.Name, dp.Attributes)
					outcome, _ := dp.Attributes.Value(otelkit.AttrOutcome)
					got[m.Name+" "+outcome.AsString()] = float64(dp.Value)
				}
			case metricdata.Gauge[float64]:
				for _, dp := range d.DataPoints {
					check(m.Name, dp.Attributes)
					got[m.Name] = dp.Value
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					check(m.Name, dp.Attributes)
					got[m.Name] = float64(dp.Value)
				}
			}
		}
	}
	if m := rm.ScopeMetrics; len(m) != 1 || m[0].Scope.Name != otelkit.ScopeName {
		t.Errorf("scopes %+v, want one: %s", m, otelkit.ScopeName)
	}
	return got
}

// A program that imports only the root package links no OpenTelemetry.
func TestRootLinksNoOpenTelemetry(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: cannot list the build graph")
	}
	for _, pkg := range []string{"github.com/tablekit/tablekit", "github.com/tablekit/tablekit/archive", "github.com/tablekit/tablekit/index", "github.com/tablekit/tablekit/patterns", "github.com/tablekit/tablekit/logtail", "github.com/tablekit/tablekit/feed"} {
		out, err := exec.Command(goTool, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "go.opentelemetry.io/") {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}
