package tablekit

// Tracing. An Account opened with Options.ClientOptions.TracingProvider
// traces every request: a span per Table service REST call
// (internal/wire's, "Tables.<Operation>"; aztables' own for table
// administration) with azcore's span per HTTP try below it; and tablekit
// starts spans of its own for its logical operations (a transaction, a
// bulk write and each of its chunks; the pattern packages add theirs) as
// their parents (internal/spans). Span names follow the Azure SDK's
// "<Type>.<Method>" convention. Attributes follow OpenTelemetry's semantic
// conventions v1.43.0: every span has azure.resource_provider.namespace
// (internal/spans.TableNamespace), and the REST call spans, database client spans,
// have db.system.name, db.operation.name, db.collection.name and
// server.address (internal/wire).

// Span attribute keys of tablekit's spans.
const (
	attrTable     = "tablekit.table"
	attrPartition = "tablekit.partition_key"
	attrActions   = "tablekit.actions"
)
