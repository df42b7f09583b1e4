// Package spans starts tablekit's own spans, the parents of the REST calls
// and HTTP requests of one logical operation (a transaction, a bulk write
// and its chunks, a worker's message, an archive move, ...). Span names
// follow the Azure SDK's "<Type>.<Method>" convention. It imports nothing
// of tablekit's, so the root and every sibling package use it.
package spans

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
)

// TracerName is the module name tablekit's tracers are made with.
const TracerName = "github.com/tablekit/tablekit"

// Version is the version tablekit's tracers report.
const Version = "v0"

// NamespaceKey is the span attribute that names the Azure resource
// provider of a span's service, in OpenTelemetry's semantic conventions
// (v1.43.0; it replaces the deprecated az.namespace, which azcore still
// sets on the Azure SDK's own spans).
const NamespaceKey = "azure.resource_provider.namespace"

// NewTracer returns tablekit's tracer from provider (a disabled tracer
// from the zero Provider), setting NamespaceKey to namespace when it is
// not "" (for example "Microsoft.Tables").
func NewTracer(provider tracing.Provider, namespace string) tracing.Tracer {
	tr := provider.NewTracer(TracerName, Version)
	if namespace != "" {
		tr.SetAttributes(tracing.Attribute{Key: NamespaceKey, Value: namespace})
	}
	return tr
}

// TableNamespace is the NamespaceKey of an Account's table spans: Azure
// Cosmos DB's, which its conventions require of a Cosmos DB client, or the
// one the Azure SDK's aztables gives Table storage.
func TableNamespace(cosmos bool) string {
	if cosmos {
		return "Microsoft.DocumentDB"
	}
	return "Microsoft.Tables"
}

// Start starts a span of tablekit's named name, with attributes, as the
// child of ctx's span; call the function it returns with the operation's
// error when the operation ends. With a disabled tracer it costs nothing.
//
// Unlike the SDK's own nesting rule (an SDK method called by another shows
// no span of its own), tablekit's spans nest: a bulk write's chunks are
// children of the write, and the REST call and request spans children of
// the tablekit span that made them.
func Start(ctx context.Context, tracer tracing.Tracer, name string, attrs ...tracing.Attribute) (context.Context, func(error)) {
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
