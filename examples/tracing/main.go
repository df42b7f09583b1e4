// Command tracing shows tablekit's OpenTelemetry traces: the span tree of
// one archive move, with tablekit's spans as the parents of the Azure SDK's
// HTTP spans.
//
// The tree is what an exporter receives: the worker's span for the message,
// the move and its steps, and under each step the span of its Table
// service REST call (named as the Meter counts it, e.g. Tables.GetEntity)
// and azcore's span of its HTTP request.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed): go run ./examples/tracing
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/otelkit"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Employee is the entity the worker moves from Current to Archive.
type Employee struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	Name       string
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracing:", err)
		os.Exit(1)
	}
	// The application's OpenTelemetry SDK. Its exporter would send the
	// spans to a tracing backend; this one keeps them in memory, so the
	// example can print what an exporter receives.
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	// An Account opened with a TracingProvider traces its clients' calls
	// and tablekit's own operations.
	acct, err := tablekit.Open(conn, &tablekit.Options{ClientOptions: azcore.ClientOptions{TracingProvider: otelkit.TracingProvider(tp)}})
	if err == nil {
		err = run(ctx, acct, spans, os.Stdout)
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	tp.Shutdown(ctx)
	if stop(); err != nil {
		fmt.Fprintln(os.Stderr, "tracing:", err)
		os.Exit(1)
	}
}

// run is the example: it creates two tables and a work queue, has a worker
// move one employee, prints the trace the exporter received, and deletes
// what it created.
func run(ctx context.Context, acct *tablekit.Account, spans *tracetest.InMemoryExporter, out io.Writer) error {
	suffix := rand.Text()[:8]
	current, err := tablekit.OpenTable[Employee](acct, "TracedCurrent"+suffix, nil)
	if err != nil {
		return err
	}
	arch, err := tablekit.OpenTable[Employee](acct, "TracedArchive"+suffix, nil)
	if err != nil {
		return err
	}
	for _, t := range []*tablekit.Table[Employee]{current, arch} {
		if err := t.CreateIfNotExists(ctx); err != nil {
			return err
		}
		defer t.DeleteTable(context.WithoutCancel(ctx))
	}
	queueName := "traced-" + strings.ToLower(suffix)
	for _, name := range []string{queueName, queueName + "-poison"} {
		q := acct.Queues().NewQueueClient(name)
		if _, err := q.Create(ctx, nil); err != nil {
			return fmt.Errorf("CreateQueue: %w", err)
		}
		defer q.Delete(context.WithoutCancel(ctx), nil)
	}
	if _, err := current.Insert(ctx, Employee{Department: "Sales", ID: "000123", Name: "Ann Jones"}); err != nil {
		return err
	}

	// From here on, every span the exporter receives is printed below.
	spans.Reset()
	client, err := archive.OpenClient(acct, queueName, nil)
	if err != nil {
		return err
	}
	if _, err := client.Enqueue(ctx, archive.MoveKind, archive.MoveRequest{PartitionKey: "Sales", RowKey: "000123"}, nil); err != nil {
		return err
	}
	mover := &archive.Mover[Employee]{Current: current, Archive: arch}
	mux := new(archive.Mux)
	if err := archive.HandleFunc(mux, archive.MoveKind, mover.Handle); err != nil {
		return err
	}
	worker, err := archive.OpenWorker(acct, queueName, mux, &archive.WorkerOptions{PollInterval: 20 * time.Millisecond})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(wctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for worker.Stats().Succeeded == 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		return err
	}
	if s := worker.Stats(); s.Succeeded != 1 {
		return fmt.Errorf("the worker handled %d messages, want 1 (%d failed)", s.Succeeded, s.Failed)
	}

	got := spans.GetSpans()
	tree := spanTree(got, "Worker.Handle")
	fmt.Fprintln(out, "the Account was opened with Options.ClientOptions.TracingProvider = otelkit.TracingProvider(tp): the spans of REST calls and HTTP requests have")
	fmt.Fprintln(out, "tablekit's operation spans as parents. The worker handled one move; the trace of its message, as the exporter received it:")
	for _, line := range tree {
		fmt.Fprintln(out, line)
	}
	fmt.Fprintf(out, "the exporter received %d spans in all, the %d above. The queue requests (the HR app's PutMessage, the worker's GetMessages and DeleteMessage)\n",
		len(got), len(tree))
	fmt.Fprintln(out, "made none: the azqueue SDK does not trace its requests (and the worker deletes a message after its Worker.Handle span, which covers the handler)")
	return nil
}
