// Package otelkit connects tablekit to OpenTelemetry: traces of tablekit's
// operations and of the Azure SDK's requests under them, and the Meter's and
// the archive worker's counts as metrics.
//
// It is the only tablekit package that imports OpenTelemetry: a program
// that does not import otelkit links none of it (the root package's build
// graph holds no go.opentelemetry.io package; a test checks it).
//
// Tracing:
//
//	tp := sdktrace.NewTracerProvider(...)                    // the application's
//	acct, err := tablekit.Open(conn, &tablekit.Options{
//		TracingProvider: otelkit.TracingProvider(tp),
//	})
//
// The Account then emits a span per Table service REST call
// ("Tables.GetEntity", "Tables.Transaction", ...; aztables' own for table
// administration) and azcore's span per HTTP try, and tablekit's own spans
// ("Table.Transaction", "BulkWriter.Write", "BulkWriter.Chunk",
// "Worker.Handle", ...) are their parents. (azqueue v1.0.1 and azblob
// v1.8.0 emit no spans, so queue and blob requests appear only inside
// tablekit's spans, e.g. Large.Spill.) Span
// names follow the Azure SDK's "<Type>.<Method>" convention,
// with the az.namespace attribute; tablekit's attributes are prefixed
// "tablekit.", the worker's message attributes follow OpenTelemetry's
// messaging conventions (messaging.message.id, messaging.destination.name).
//
// Metrics: [RegisterMeter] reports a [tablekit.Meter]'s counts (requests,
// retries and throttled answers by service and operation) and
// [RegisterWorker] an archive Worker's figures (messages handled, failed,
// throttled, poisoned, ...; the queue age, how long messages waited in the
// queue; its current concurrency), as asynchronous OpenTelemetry counters
// and gauges read at each collection. [RegisterRelay] reports a feed
// Relay's lag by subscription (MetricFeedLag): how long ago a round last
// caught the subscription up, an upper bound on how far its view is
// behind that keeps growing while the relay is stalled, reported by the
// leading relay only (the feed package doc, "Lag", says why).
//
// This package adapts OpenTelemetry to azcore's tracing abstraction itself,
// as the Azure SDK's azotel module does, so that it adds no Azure module
// beyond azcore.
package otelkit
