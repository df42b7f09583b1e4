package tablekit

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
)

// Tracing. An Account opened with Options.ClientOptions.TracingProvider traces every
// request: a span per Table service REST call (internal/tablewire's,
// "Tables.<Operation>"; aztables' own for table administration) with
// azcore's span per HTTP try below it; and tablekit starts spans of its own
// for its logical operations (a transaction, a bulk write and each of its
// chunks; the pattern packages add theirs) as their parents. Span names
// follow the Azure SDK's "<Type>.<Method>" convention, with az.namespace
// set.

// TracerName is the module name tablekit's tracers are made with.
const TracerName = "github.com/tablekit/tablekit"

// tracerVersion is the version tablekit's tracers report.
const tracerVersion = "v0"

// newTracer returns tablekit's tracer from provider (a no-op tracer from
// the zero Provider).
func newTracer(provider tracing.Provider, namespace string) tracing.Tracer {
	tr := provider.NewTracer(TracerName, tracerVersion)
	if namespace != "" {
		tr.SetAttributes(tracing.Attribute{Key: "az.namespace", Value: namespace})
	}
	return tr
}

// StartSpan starts a span of tablekit's named name, with attributes, as the
// child of ctx's span; call the function it returns with the operation's
// error when the operation ends. With a disabled tracer it costs nothing.
// The pattern packages use it to trace their own operations.
//
// Unlike the SDK's own nesting rule (an SDK method called by another shows
// no span of its own), tablekit's spans nest: a bulk write's chunks are
// children of the write, and the REST call and request spans children
// of the tablekit span that made them.
func StartSpan(ctx context.Context, tracer tracing.Tracer, name string, attrs ...tracing.Attribute) (context.Context, func(error)) {
	if !tracer.Enabled() {
		return ctx, func(error) {}
	}
	ctx, span := tracer.Start(ctx, name, &tracing.SpanOptions{Kind: tracing.SpanKindInternal, Attributes: attrs})
	return ctx, func(err error) {
		if err != nil {
			span.SetStatus(tracing.SpanStatusError, err.Error())
		}
		span.End()
	}
}

// Tracer returns the tracer of the table's spans: from
// the Account's Options.ClientOptions.TracingProvider; a disabled
// tracer when there is none.
func (t *Table[T]) Tracer() tracing.Tracer { return t.tracer }

// TracingProvider returns the provider the Account was opened with (the
// zero Provider, which traces nothing, by default), so that code built on
// the Account can trace its own operations.
func (a *Account) TracingProvider() tracing.Provider { return a.tracing }

// Span attribute keys of tablekit's spans.
const (
	attrTable     = "tablekit.table"
	attrPartition = "tablekit.partition_key"
	attrActions   = "tablekit.actions"
)
