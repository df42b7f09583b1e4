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
// tablekit's spans, e.g. Large.Spill.) Span names follow the Azure SDK's
// "<Type>.<Method>" convention.
//
// # Semantic conventions
//
// Attributes follow OpenTelemetry's semantic conventions v1.43.0 (the
// version of go.opentelemetry.io/otel/semconv/v1.43.0, which the tests
// check the names against):
//
//   - Every span of tablekit and of the Azure SDK has
//     azure.resource_provider.namespace (which replaced az.namespace):
//     Microsoft.Tables for tables on Table storage (the Azure SDK's value),
//     Microsoft.DocumentDB on Azure Cosmos DB for Table (which its
//     conventions require), Microsoft.Storage for the archive worker.
//   - A Table service REST call span ("Tables.<Operation>") is a database
//     client span (kind client): db.system.name ("azure.cosmosdb" on Cosmos
//     DB; "azure.tables" on Table storage, which has no well-known value),
//     db.operation.name (the REST operation as the Meter counts it,
//     "QueryEntities", "Transaction", ...; on Cosmos DB the conventions'
//     values: read_item, query_items, create_item, replace_item,
//     upsert_item, patch_item, delete_item, execute_batch, and
//     insert_or_merge_item for an unconditional merge),
//     db.collection.name (the table), db.operation.batch.size (the actions
//     of a transaction), server.address and server.port (when not 443).
//   - azcore's HTTP spans carry the attribute names of conventions before
//     v1.21 (http.method, http.url, http.status_code, http.user_agent,
//     net.peer.name, az.service_request_id): this package's adapter gives
//     them their current names (http.request.method, url.full,
//     http.response.status_code, user_agent.original, server.address,
//     azure.service.request.id), so that every span a tablekit program
//     exports uses one version of the conventions.
//   - tablekit's own attributes are prefixed "tablekit."; the worker's
//     message span follows the messaging conventions
//     (messaging.system "azure_queue", messaging.destination.name,
//     messaging.message.id).
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
