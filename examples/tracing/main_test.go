package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/otelkit"
	"github.com/tablekit/tablekit/tablekittest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestMain(m *testing.M) { tablekittest.Main(m) }

// TestRun runs the example against the test account, opened with a tracing
// provider as main opens it, and checks that its narration shows the trace
// the pattern promises.
func TestRun(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	acct := tablekittest.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{TracingProvider: otelkit.TracingProvider(tp)}})
	var out bytes.Buffer
	if err := run(context.Background(), acct, spans, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// On Cosmos DB the operation names are Cosmos DB's (otelkit's doc).
	get, update, del := "GetEntity", "UpdateEntity", "DeleteEntity"
	if front, _ := tablekittest.FrontOptions(); front != nil && front.Cosmos {
		get, update, del = "read_item", "upsert_item", "delete_item"
	}
	for _, want := range []string{
		"\nWorker.Handle (internal) tablekit.message_kind=archive.move tablekit.dequeue_count=1\n",
		"\n    Mover.Move (internal) tablekit.partition_key=Sales tablekit.row_key=000123\n",
		"\n        Mover.Read (internal) tablekit.partition_key=Sales tablekit.row_key=000123\n",
		"\n            Tables.GetEntity (client) db.operation.name=" + get + " db.collection.name=TracedCurrent",
		"\n                HTTP GET (client) http.response.status_code=200\n",
		"\n        Mover.WriteArchive (internal) tablekit.partition_key=Sales tablekit.row_key=000123\n",
		"\n            Tables.UpdateEntity (client) db.operation.name=" + update + " db.collection.name=TracedArchive",
		"\n                HTTP PUT (client) http.response.status_code=204\n",
		"\n        Mover.DeleteCurrent (internal) tablekit.partition_key=Sales tablekit.row_key=000123\n",
		"\n            Tables.DeleteEntity (client) db.operation.name=" + del + " db.collection.name=TracedCurrent",
		"\n                HTTP DELETE (client) http.response.status_code=204\n",
		"the exporter received 11 spans in all, the 11 above",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}

	// The whole tree, in order: the worker's span, the move, its three
	// steps, and under each step the span of its REST call and of its
	// request (the narration's "11 spans in all, the 11 above" says that
	// no span was outside it).
	tree := spanTree(spans.GetSpans(), "Worker.Handle")
	var shape []string
	for _, line := range tree {
		name, _, _ := strings.Cut(line, " (")
		shape = append(shape, name)
	}
	want := []string{
		"Worker.Handle",
		"    Mover.Move",
		"        Mover.Read", "            Tables.GetEntity", "                HTTP GET",
		"        Mover.WriteArchive", "            Tables.UpdateEntity", "                HTTP PUT",
		"        Mover.DeleteCurrent", "            Tables.DeleteEntity", "                HTTP DELETE",
	}
	if !slices.Equal(shape, want) {
		t.Errorf("the span tree is\n%s\nwant\n%s", strings.Join(shape, "\n"), strings.Join(want, "\n"))
	}
}
