package otelkit

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TracingProvider returns an azcore tracing.Provider that creates its spans
// with tp. Give it to tablekit.Options' ClientOptions.TracingProvider (or
// to an SDK client's options). A nil tp gives the zero Provider, which traces
// nothing.
func TracingProvider(tp trace.TracerProvider) tracing.Provider {
	if tp == nil {
		return tracing.Provider{}
	}
	return tracing.NewProvider(func(name, version string) tracing.Tracer {
		tr := tp.Tracer(name, trace.WithInstrumentationVersion(version))
		return tracing.NewTracer(func(ctx context.Context, spanName string, opts *tracing.SpanOptions) (context.Context, tracing.Span) {
			var so []trace.SpanStartOption
			if opts != nil {
				so = append(so, trace.WithSpanKind(spanKind(opts.Kind)), trace.WithAttributes(attributes(opts.Attributes)...))
			}
			ctx, span := tr.Start(ctx, spanName, so...)
			return ctx, wrap(span)
		}, &tracing.TracerOptions{SpanFromContext: func(ctx context.Context) tracing.Span {
			return wrap(trace.SpanFromContext(ctx))
		}})
	}, nil)
}

// wrap gives an OpenTelemetry span azcore's Span shape.
func wrap(span trace.Span) tracing.Span {
	return tracing.NewSpan(tracing.SpanImpl{
		End:           func() { span.End() },
		SetAttributes: func(a ...tracing.Attribute) { span.SetAttributes(attributes(a)...) },
		AddEvent: func(name string, a ...tracing.Attribute) {
			span.AddEvent(name, trace.WithAttributes(attributes(a)...))
		},
		SetStatus: func(code tracing.SpanStatus, desc string) {
			switch code {
			case tracing.SpanStatusError:
				span.SetStatus(codes.Error, desc)
			case tracing.SpanStatusOK:
				span.SetStatus(codes.Ok, desc)
			}
		},
	})
}

func spanKind(k tracing.SpanKind) trace.SpanKind {
	switch k {
	case tracing.SpanKindServer:
		return trace.SpanKindServer
	case tracing.SpanKindClient:
		return trace.SpanKindClient
	case tracing.SpanKindProducer:
		return trace.SpanKindProducer
	case tracing.SpanKindConsumer:
		return trace.SpanKindConsumer
	}
	return trace.SpanKindInternal
}

// renamed maps the attribute names azcore (v1.24) still gives the Azure
// SDK's spans, deprecated in OpenTelemetry's semantic conventions, to
// the names that replace them in v1.43.0 (the version this package
// follows): the resource provider namespace and service request id, and
// the HTTP client span attributes of the conventions before v1.21.
var renamed = map[string]string{
	"az.namespace":          "azure.resource_provider.namespace",
	"az.service_request_id": "azure.service.request.id",
	"http.method":           "http.request.method",
	"http.url":              "url.full",
	"http.status_code":      "http.response.status_code",
	"http.user_agent":       "user_agent.original",
	"net.peer.name":         "server.address",
}

// attributes converts azcore attributes, keeping their Go types where
// OpenTelemetry has them, under their current names (renamed).
func attributes(in []tracing.Attribute) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(in))
	for _, a := range in {
		key := a.Key
		if now, ok := renamed[key]; ok {
			key = now
		}
		switch v := a.Value.(type) {
		case string:
			out = append(out, attribute.String(key, v))
		case int:
			out = append(out, attribute.Int(key, v))
		case int32:
			out = append(out, attribute.Int(key, int(v)))
		case int64:
			out = append(out, attribute.Int64(key, v))
		case float64:
			out = append(out, attribute.Float64(key, v))
		case bool:
			out = append(out, attribute.Bool(key, v))
		default:
			out = append(out, attribute.String(key, fmt.Sprint(v)))
		}
	}
	return out
}
