package main

import (
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// spanTree renders the trace rooted at the first span named root: one line
// per span, indented by depth, children in start order, with the span's
// kind, the attributes that say what it did, and its error if it failed.
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
		return nil
	}
	var lines []string
	var walk func(s tracetest.SpanStub, depth int)
	walk = func(s tracetest.SpanStub, depth int) {
		line := strings.Repeat("    ", depth) + s.Name + " (" + s.SpanKind.String() + ")"
		for _, a := range s.Attributes {
			switch a.Key {
			case "tablekit.message_kind", "tablekit.dequeue_count", "tablekit.partition_key", "tablekit.row_key",
				"db.operation.name", "db.collection.name", "http.response.status_code":
				line += fmt.Sprintf(" %s=%s", a.Key, a.Value.String())
			}
		}
		if s.Status.Code == codes.Error {
			line += " error: " + s.Status.Description
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
