package sections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/otelkit"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Tracing prints the span tree of one archive move, as an OpenTelemetry
// exporter receives it: tablekit's spans (the worker's message, the move
// and its steps) are the parents of the Azure SDK's request spans.
func Tracing() demo.Section {
	return demo.Section{
		Name:        "tracing",
		Description: "OpenTelemetry: the span tree of one archive move (worker message -> move steps -> SDK requests)",
		Run:         runTracing,
	}
}

type trEmployee struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	Name       string `table:"Name"`
}

func runTracing(ctx context.Context, env *demo.Env) error {
	if env.Reopen == nil {
		return errors.New("this runner cannot open the account again with a tracing provider")
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	acct, err := env.Reopen(&tablekit.Options{TracingProvider: otelkit.TracingProvider(tp), Meter: env.Account.Meter()})
	if err != nil {
		return err
	}
	var tables []*tablekit.Table[trEmployee]
	for _, base := range []string{"TracedCurrent", "TracedArchive"} {
		t, err := tablekit.OpenTable[trEmployee](acct, env.TableName(base), nil)
		if err != nil {
			return err
		}
		if err := t.CreateIfNotExists(ctx); err != nil {
			return err
		}
		env.Defer(t.DeleteTable)
		tables = append(tables, t)
	}
	current, arch := tables[0], tables[1]
	queueName := env.QueueName("traced")
	for _, name := range []string{queueName, archive.PoisonQueueName(queueName)} {
		q := acct.Queue(name)
		if _, err := q.Create(ctx, nil); err != nil {
			return tablekit.WrapError("CreateQueue", err)
		}
		env.Defer(func(ctx context.Context) error {
			_, err := q.Delete(ctx, nil)
			return tablekit.WrapError("DeleteQueue", err)
		})
	}
	if _, err := current.Insert(ctx, trEmployee{Department: "Sales", ID: "000123", Name: "Ann Jones"}); err != nil {
		return err
	}
	client, err := archive.OpenClient(acct, queueName, nil)
	if err != nil {
		return err
	}
	if _, err := archive.RequestMove(ctx, client, "", "Sales", "000123"); err != nil {
		return err
	}
	mover := &archive.Mover[trEmployee]{Current: current, Archive: arch}
	mux := archive.NewMux()
	if err := mover.Register(mux, archive.MoveKind); err != nil {
		return err
	}
	worker, err := archive.OpenWorker(acct, queueName, mux, &archive.WorkerOptions{MinPollInterval: 20 * time.Millisecond})
	if err != nil {
		return err
	}
	exp.Reset()
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(wctx) }()
	for worker.Stats().Succeeded == 0 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		return err
	}
	env.Say("an Account opened with Options.TracingProvider = otelkit.TracingProvider(tp) traces the SDK's requests;")
	env.Say("the worker and the Mover add theirs as parents. The trace of the one message the worker handled:")
	for _, line := range spanTree(exp.GetSpans(), "Worker.Handle") {
		env.Say("%s", line)
	}
	return nil
}

// spanTree renders the trace rooted at the span named root: one line per
// span, indented by depth, children in start order, with tablekit's
// attributes that say what a span did.
func spanTree(spans tracetest.SpanStubs, root string) []string {
	children := map[trace.SpanID][]tracetest.SpanStub{}
	var top *tracetest.SpanStub
	for i, s := range spans {
		children[s.Parent.SpanID()] = append(children[s.Parent.SpanID()], s)
		if s.Name == root && top == nil {
			top = &spans[i]
		}
	}
	if top == nil {
		return []string{"(no " + root + " span was exported)"}
	}
	var lines []string
	var walk func(s tracetest.SpanStub, depth int)
	walk = func(s tracetest.SpanStub, depth int) {
		var attrs []string
		for _, a := range s.Attributes {
			switch a.Key {
			case "tablekit.message_kind", "tablekit.dequeue_count", "tablekit.row_key", "http.request.method", "http.response.status_code":
				attrs = append(attrs, fmt.Sprintf("%s=%s", a.Key, a.Value.Emit()))
			}
		}
		line := strings.Repeat("    ", depth) + s.Name + " (" + s.SpanKind.String() + ")"
		if len(attrs) > 0 {
			line += " " + strings.Join(attrs, " ")
		}
		lines = append(lines, line)
		kids := children[s.SpanContext.SpanID()]
		slices.SortFunc(kids, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	walk(*top, 0)
	return lines
}
