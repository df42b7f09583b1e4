package otelkit_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/otelkit"
	"github.com/tablekit/tablekit/tablekittest"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// deprecated are attribute names the semantic conventions (v1.43.0)
// deprecate, with their replacements, that azcore or tablekit gave spans.
var deprecated = []string{
	"az.namespace", "az.service_request_id", "http.method", "http.url", "http.status_code",
	"http.user_agent", "net.peer.name", "db.system", "db.name", "db.operation", "db.sql.table",
}

// TestSemanticConventions: the spans of table operations follow
// OpenTelemetry's semantic conventions v1.43.0, the version the package
// documentation names: no span has a deprecated attribute (az.namespace
// was on every span), every span names its Azure resource provider with
// azure.resource_provider.namespace, each Table service REST call is a
// database client span with db.system.name, db.operation.name,
// db.collection.name and server.address, and azcore's HTTP spans have
// their current attribute names. On Cosmos DB (Options.Service) the system
// is azure.cosmosdb, with its well-known operation names.
func TestSemanticConventions(t *testing.T) {
	for _, c := range []struct {
		name      string
		service   tablekit.Service
		system    string
		namespace string
		ops       map[string]string // span name -> db.operation.name
	}{
		{"storage", tablekit.ServiceAuto, "azure.tables", "Microsoft.Tables", map[string]string{
			"Tables.InsertEntity": "InsertEntity", "Tables.GetEntity": "GetEntity", "Tables.QueryEntities": "QueryEntities",
			"Tables.UpdateEntity": "UpdateEntity", "Tables.DeleteEntity": "DeleteEntity", "Tables.Transaction": "Transaction"}},
		{"cosmos", tablekit.ServiceCosmosDB, semconv.DBSystemNameAzureCosmosDB.Value.AsString(), "Microsoft.DocumentDB", map[string]string{
			"Tables.InsertEntity": "create_item", "Tables.GetEntity": "read_item", "Tables.QueryEntities": "query_items",
			"Tables.UpdateEntity": "replace_item", "Tables.DeleteEntity": "delete_item", "Tables.Transaction": "execute_batch"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if front, _ := tablekittest.FrontOptions(); c.service == tablekit.ServiceAuto && front != nil && front.Cosmos {
				t.Skip("the test account is behind the Cosmos DB front (TABLEKIT_FRONT=cosmos): the Table storage case needs Table storage; the cosmos case covers this front")
			}
			ctx := testCtx(t)
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			t.Cleanup(func() { tp.Shutdown(context.Background()) })
			acct := tablekittest.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{TracingProvider: otelkit.TracingProvider(tp)}, Service: c.service})
			tbl, err := tablekit.OpenTable[item](acct, tablekittest.TableName(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := tbl.CreateIfNotExists(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tbl.DeleteTable(context.Background()) })
			etag, err := tbl.Insert(ctx, item{PK: "p", RK: "a", N: 1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tbl.Get(ctx, "p", "a"); err != nil {
				t.Fatal(err)
			}
			for _, err := range tbl.Query(ctx, tablekit.PartitionEq("p"), nil) {
				if err != nil {
					t.Fatal(err)
				}
			}
			if _, err := tbl.Update(ctx, item{PK: "p", RK: "a", N: 2}, etag); err != nil {
				t.Fatal(err)
			}
			if err := tbl.Delete(ctx, "p", "a", azcore.ETagAny); err != nil {
				t.Fatal(err)
			}
			if _, err := tbl.Transaction(ctx, tablekit.InsertAction(item{PK: "q", RK: "a"}), tablekit.InsertAction(item{PK: "q", RK: "b"})); err != nil {
				t.Fatal(err)
			}

			spans := exp.GetSpans()
			seen := map[string]bool{}
			for _, s := range spans {
				for _, a := range s.Attributes {
					if slices.Contains(deprecated, string(a.Key)) {
						t.Errorf("span %s has the deprecated attribute %s", s.Name, a.Key)
					}
				}
				if v, ok := attr(s, string(semconv.AzureResourceProviderNamespaceKey)); !ok || v.AsString() == "" {
					t.Errorf("span %s has no %s", s.Name, semconv.AzureResourceProviderNamespaceKey)
				}
				if strings.HasPrefix(s.Name, "HTTP ") {
					for _, k := range []attribute.Key{semconv.HTTPRequestMethodKey, semconv.URLFullKey, semconv.ServerAddressKey, semconv.HTTPResponseStatusCodeKey} {
						if _, ok := attr(s, string(k)); !ok {
							t.Errorf("HTTP span %s has no %s", s.Name, k)
						}
					}
				}
				op, ok := c.ops[s.Name]
				if !ok {
					continue
				}
				seen[s.Name] = true
				if s.SpanKind != trace.SpanKindClient {
					t.Errorf("span %s is of kind %v, want client", s.Name, s.SpanKind)
				}
				want := map[attribute.Key]string{
					semconv.DBSystemNameKey:                   c.system,
					semconv.DBOperationNameKey:                op,
					semconv.DBCollectionNameKey:               tbl.Name(),
					semconv.ServerAddressKey:                  "127.0.0.1",
					semconv.AzureResourceProviderNamespaceKey: c.namespace,
				}
				for k, w := range want {
					if v, ok := attr(s, string(k)); !ok || v.AsString() != w {
						t.Errorf("span %s: %s = %q, want %q", s.Name, k, v.String(), w)
					}
				}
				if v, ok := attr(s, string(semconv.ServerPortKey)); !ok || v.AsInt64() <= 0 {
					t.Errorf("span %s: %s = %v, want Azurite's port", s.Name, semconv.ServerPortKey, v.String())
				}
				if v, ok := attr(s, string(semconv.DBOperationBatchSizeKey)); s.Name == "Tables.Transaction" && (!ok || v.AsInt64() != 2) {
					t.Errorf("span %s: %s = %v, want 2", s.Name, semconv.DBOperationBatchSizeKey, v.String())
				}
			}
			for name := range c.ops {
				if !seen[name] {
					t.Errorf("no span %s", name)
				}
			}
		})
	}
}
