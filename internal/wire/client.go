package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
)

// APIVersion is the x-ms-version every request is sent with: the version
// aztables, Microsoft's JavaScript and Python clients send; nothing in the
// Table service's data plane has changed since.
const APIVersion = "2019-02-02"

// Operation names a request as the Table service REST API names its
// operation, and as tablekit's Meter counts it.
type Operation string

// The operations a Client sends.
const (
	GetEntity     Operation = "GetEntity"     // GET one entity
	QueryEntities Operation = "QueryEntities" // GET a page of a query
	InsertEntity  Operation = "InsertEntity"  // POST one entity
	UpdateEntity  Operation = "UpdateEntity"  // PUT: replace (If-Match) or insert-or-replace
	MergeEntity   Operation = "MergeEntity"   // PATCH (or tunnelled MERGE): merge (If-Match) or insert-or-merge
	DeleteEntity  Operation = "DeleteEntity"  // DELETE one entity (If-Match)
	Transaction   Operation = "Transaction"   // POST $batch: one entity group transaction
)

// spanName is the name of the span a Client starts for each request of op:
// "Tables." and the operation, after the Azure SDK's "<Type>.<Method>"
// convention (tablekit's own spans, such as "Table.Transaction", are
// their parents).
func spanName(op Operation) string {
	switch op {
	case GetEntity:
		return "Tables.GetEntity"
	case QueryEntities:
		return "Tables.QueryEntities"
	case InsertEntity:
		return "Tables.InsertEntity"
	case UpdateEntity:
		return "Tables.UpdateEntity"
	case MergeEntity:
		return "Tables.MergeEntity"
	case DeleteEntity:
		return "Tables.DeleteEntity"
	case Transaction:
		return "Tables.Transaction"
	}
	return "Tables." + string(op)
}

// Span attributes of a Client's spans, after OpenTelemetry's semantic
// conventions for database client spans (v1.43.0): the spans are the
// call-level spans of the Table service, a database.
const (
	attrDBSystem    = "db.system.name"
	attrDBOperation = "db.operation.name"
	attrDBTable     = "db.collection.name"
	attrDBBatchSize = "db.operation.batch.size"
	attrServerAddr  = "server.address"
	attrServerPort  = "server.port"
)

// System names of db.system.name: Cosmos DB's is the conventions'
// well-known value; Table storage has none, so it is named as the
// conventions ask of a custom value (the product, in lower case).
const (
	systemTables = "azure.tables"
	systemCosmos = "azure.cosmosdb"
)

// cosmosOperation is db.operation.name on Azure Cosmos DB for Table: the
// conventions' well-known value for the operation where one applies
// (the Cosmos DB conventions require it), else the operation in
// snake_case. ifMatch says whether a write is conditional: an update
// with one replaces (replace_item), without one inserts or replaces
// (upsert_item); a merge with one patches, without one inserts or merges.
func cosmosOperation(op Operation, ifMatch bool) string {
	switch op {
	case GetEntity:
		return "read_item"
	case QueryEntities:
		return "query_items"
	case InsertEntity:
		return "create_item"
	case UpdateEntity:
		if ifMatch {
			return "replace_item"
		}
		return "upsert_item"
	case MergeEntity:
		if ifMatch {
			return "patch_item"
		}
		return "insert_or_merge_item"
	case DeleteEntity:
		return "delete_item"
	case Transaction:
		return "execute_batch"
	}
	return string(op)
}

// startSpan starts the span of a request of op on table (actions: a
// transaction's), with the database attributes known before it is sent.
func (c *Client) startSpan(ctx context.Context, op Operation, table string, ifMatch bool, actions int) (context.Context, func(error)) {
	if !c.tracer.Enabled() {
		return ctx, func(error) {}
	}
	system, name := systemTables, string(op)
	if c.cosmos != nil && c.cosmos() {
		system, name = systemCosmos, cosmosOperation(op, ifMatch)
	}
	attrs := make([]tracing.Attribute, 0, 6)
	attrs = append(attrs,
		tracing.Attribute{Key: attrDBSystem, Value: system},
		tracing.Attribute{Key: attrDBOperation, Value: name},
		tracing.Attribute{Key: attrDBTable, Value: table},
		tracing.Attribute{Key: attrServerAddr, Value: c.host})
	if c.port != 0 {
		attrs = append(attrs, tracing.Attribute{Key: attrServerPort, Value: c.port})
	}
	if actions > 1 {
		attrs = append(attrs, tracing.Attribute{Key: attrDBBatchSize, Value: actions})
	}
	return runtime.StartSpan(ctx, spanName(op), c.tracer, &runtime.StartSpanOptions{Kind: tracing.SpanKindClient, Attributes: attrs})
}

// OperationOf returns the Operation of a request a Client sent, for the
// policies of its pipeline; ok is false for a request of another client
// (for example an aztables client sharing the policies).
func OperationOf(req *policy.Request) (op Operation, ok bool) {
	ok = req.OperationValue(&op)
	return op, ok
}

// ErrUnreadableAnswer is matched by the error of a request whose answer
// came but could not be read (the connection broke in its body, or the body
// is not what the service sends): the request reached the service, which
// may have applied it.
var ErrUnreadableAnswer = errors.New("tablewire: the service's answer could not be read")

// Client sends Table service data-plane requests to one account's table
// endpoint. It is safe for concurrent use.
type Client struct {
	endpoint    string
	host        string // server.address of the spans
	port        int    // server.port of the spans: 0 for 443
	pipeline    runtime.Pipeline
	throttling  runtime.Pipeline // for calls that handle throttling themselves
	tracer      tracing.Tracer
	mergeTunnel func() bool
	cosmos      func() bool
}

// Options configures a [Client]. A nil *Options means defaults.
type Options struct {
	// OwnThrottling is the pipeline of calls made with Call.OwnThrottling:
	// the same policies as the Client's pipeline, with a retry policy that
	// does not retry throttled answers (429, 503), because the caller
	// paces and repeats such calls itself. nil: the Client's pipeline.
	OwnThrottling *runtime.Pipeline
	// Tracer starts a span per request (see the Operation constants),
	// a database client span with the db.* attributes of OpenTelemetry's
	// semantic conventions, whose child is azcore's HTTP span; the zero
	// Tracer starts none.
	Tracer tracing.Tracer
	// MergeTunnel, when it returns true, sends merges as POST with
	// "X-HTTP-Method: MERGE", as Azure Cosmos DB for Table requires; else
	// (or nil) they go as PATCH. It is asked at every merge: an Account
	// learns it is on Cosmos DB from its answers.
	MergeTunnel func() bool
	// Cosmos, when it returns true, says that the endpoint is Azure
	// Cosmos DB for Table, for the spans' db.system.name and
	// db.operation.name; asked at every request, as MergeTunnel is.
	Cosmos func() bool
}

// NewClient returns a Client of the table endpoint (for example
// "https://myaccount.table.core.windows.net" or, for Azurite,
// "http://127.0.0.1:10002/devstoreaccount1") that sends on pl.
func NewClient(endpoint string, pl runtime.Pipeline, opts *Options) (*Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, errors.New("tablewire: the table endpoint is not a valid URL")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("tablewire: %q is not a table endpoint URL (http or https, no query)", (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String())
	}
	c := &Client{endpoint: strings.TrimRight(endpoint, "/"), host: u.Hostname(), pipeline: pl, throttling: pl}
	if p, err := strconv.Atoi(u.Port()); err == nil && p != 443 {
		c.port = p
	}
	if opts != nil {
		if opts.OwnThrottling != nil {
			c.throttling = *opts.OwnThrottling
		}
		c.tracer = opts.Tracer
		c.mergeTunnel = opts.MergeTunnel
		c.cosmos = opts.Cosmos
	}
	return c, nil
}

// Endpoint returns the table endpoint, without a trailing slash: the base
// of the entity URLs in a transaction's body.
func (c *Client) Endpoint() string { return c.endpoint }

// MergeTunnel reports whether the Client sends merges as POST with
// "X-HTTP-Method: MERGE" now (Options.MergeTunnel): a transaction's merge
// actions must go the same way.
func (c *Client) MergeTunnel() bool { return c.mergeTunnel != nil && c.mergeTunnel() }

// Call is what a caller attaches to one request besides its parameters.
type Call struct {
	// Value, when not nil, travels with the request to the pipeline's
	// policies (policy.Request.SetOperationValue; read it with
	// OperationValue), through every retry of the request.
	Value any
	// OwnThrottling sends the request on the Options.OwnThrottling
	// pipeline: the caller handles throttled answers itself.
	OwnThrottling bool
}

// Entity is the answer to a point read.
type Entity struct {
	// Body is the entity's JSON as the service sent it (minimal metadata).
	Body []byte
	// ETag is the entity's version, from the ETag header.
	ETag azcore.ETag
}

// GetEntity reads the entity with keys pk and rk of table; sel, when not
// "", is its $select (comma-separated property names). A missing entity
// or table is an *azcore.ResponseError with status 404, like every other
// failure the service reports.
func (c *Client) GetEntity(ctx context.Context, table, pk, rk, sel string, call Call) (_ Entity, err error) {
	ctx, end := c.startSpan(ctx, GetEntity, table, false, 0)
	defer func() { end(err) }()
	u := c.entityURL(table, pk, rk)
	if sel != "" {
		u += "?$select=" + url.QueryEscape(sel)
	}
	req, err := c.newRequest(ctx, http.MethodGet, u)
	if err != nil {
		return Entity{}, err
	}
	resp, body, err := c.send(req, GetEntity, call, http.StatusOK)
	if err != nil {
		return Entity{}, err
	}
	return Entity{Body: body, ETag: azcore.ETag(resp.Header.Get("ETag"))}, nil
}

// Query is the query of one page.
type Query struct {
	// Filter is the $filter expression; "" matches every entity.
	Filter string
	// Select is the $select list; "" reads every property.
	Select string
	// Top is the most entities the page may hold (1–1000); 0 means the
	// service's maximum.
	Top int
	// NextPartitionKey and NextRowKey are the continuation of the page to
	// read, from the previous Page ("" for the first page).
	NextPartitionKey, NextRowKey string
}

// Page is one page of a query's answer. The service may answer a page with
// no entities that still has a continuation: the query is complete only
// when both continuation keys are "".
type Page struct {
	// Body is the answer as the service sent it: {"value":[...], ...}.
	Body []byte
	// NextPartitionKey and NextRowKey continue the query (the
	// x-ms-continuation-* headers); opaque, "" when absent.
	NextPartitionKey, NextRowKey string
}

// QueryEntities reads one page of a query of table.
func (c *Client) QueryEntities(ctx context.Context, table string, q *Query, call Call) (_ Page, err error) {
	ctx, end := c.startSpan(ctx, QueryEntities, table, false, 0)
	defer func() { end(err) }()
	var b strings.Builder
	b.Grow(len(c.endpoint) + len(table) + 3 + len(q.Filter)*3/2 + len(q.Select) + len(q.NextPartitionKey) + len(q.NextRowKey) + 64)
	b.WriteString(c.endpoint)
	b.WriteByte('/')
	b.WriteString(table)
	b.WriteString("()")
	sep := byte('?')
	param := func(name, value string) {
		if value == "" {
			return
		}
		b.WriteByte(sep)
		sep = '&'
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(value))
	}
	param("$filter", q.Filter)
	param("$select", q.Select)
	if q.Top > 0 {
		param("$top", strconv.Itoa(q.Top))
	}
	if q.NextPartitionKey != "" || q.NextRowKey != "" {
		// A continuation is sent whole: NextPartitionKey is empty when the
		// query stopped inside the partition whose key is "" (Azurite
		// answers so), and a NextRowKey sent alone restarts nothing.
		b.WriteByte(sep)
		sep = '&'
		b.WriteString("NextPartitionKey=" + url.QueryEscape(q.NextPartitionKey))
		param("NextRowKey", q.NextRowKey)
	}
	req, err := c.newRequest(ctx, http.MethodGet, b.String())
	if err != nil {
		return Page{}, err
	}
	resp, body, err := c.send(req, QueryEntities, call, http.StatusOK)
	if err != nil {
		return Page{}, err
	}
	return Page{
		Body:             body,
		NextPartitionKey: resp.Header.Get("x-ms-continuation-NextPartitionKey"),
		NextRowKey:       resp.Header.Get("x-ms-continuation-NextRowKey"),
	}, nil
}

// InsertEntity inserts the entity body (its OData JSON, keys included)
// into table and returns its ETag. The service is asked not to echo the
// entity (Prefer: return-no-content). An existing entity is a 409
// EntityAlreadyExists *azcore.ResponseError.
func (c *Client) InsertEntity(ctx context.Context, table string, body []byte, call Call) (_ azcore.ETag, err error) {
	ctx, end := c.startSpan(ctx, InsertEntity, table, false, 0)
	defer func() { end(err) }()
	req, err := c.newRequest(ctx, http.MethodPost, c.endpoint+"/"+table)
	if err != nil {
		return "", err
	}
	req.Raw().Header["Prefer"] = []string{"return-no-content"}
	if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), "application/json"); err != nil {
		return "", err
	}
	resp, _, err := c.send(req, InsertEntity, call, http.StatusNoContent, http.StatusCreated)
	if err != nil {
		return "", err
	}
	return azcore.ETag(resp.Header.Get("ETag")), nil
}

// UpdateEntity writes the entity body to the entity with keys pk and rk of
// table: it replaces the stored entity (PUT), or with merge merges into it,
// and returns the new ETag. With ifMatch it requires the stored entity's
// ETag to match (azcore.ETagAny: any version, but it must exist); without
// it, it inserts the entity when there is none (insert-or-replace,
// insert-or-merge).
func (c *Client) UpdateEntity(ctx context.Context, table, pk, rk string, body []byte, merge bool, ifMatch azcore.ETag, call Call) (_ azcore.ETag, err error) {
	op, method := UpdateEntity, http.MethodPut
	tunnel := merge && c.MergeTunnel()
	if merge {
		op, method = MergeEntity, http.MethodPatch
		if tunnel {
			method = http.MethodPost
		}
	}
	ctx, end := c.startSpan(ctx, op, table, ifMatch != "", 0)
	defer func() { end(err) }()
	req, err := c.newRequest(ctx, method, c.entityURL(table, pk, rk))
	if err != nil {
		return "", err
	}
	if tunnel {
		req.Raw().Header["X-Http-Method"] = []string{"MERGE"}
	}
	if ifMatch != "" {
		req.Raw().Header["If-Match"] = []string{string(ifMatch)}
	}
	if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), "application/json"); err != nil {
		return "", err
	}
	resp, _, err := c.send(req, op, call, http.StatusNoContent)
	if err != nil {
		return "", err
	}
	return azcore.ETag(resp.Header.Get("ETag")), nil
}

// DeleteEntity deletes the entity with keys pk and rk of table if its ETag
// matches ifMatch (azcore.ETagAny: any version), which the service
// requires.
func (c *Client) DeleteEntity(ctx context.Context, table, pk, rk string, ifMatch azcore.ETag, call Call) (err error) {
	ctx, end := c.startSpan(ctx, DeleteEntity, table, true, 0)
	defer func() { end(err) }()
	req, err := c.newRequest(ctx, http.MethodDelete, c.entityURL(table, pk, rk))
	if err != nil {
		return err
	}
	req.Raw().Header["If-Match"] = []string{string(ifMatch)}
	_, _, err = c.send(req, DeleteEntity, call, http.StatusNoContent)
	return err
}

// Transaction sends an entity group transaction of actions actions on
// table: body is its multipart/mixed request body with the given batch
// boundary (its entity URLs based on [Client.Endpoint]). It returns the
// service's 202 answer, whose body (also returned) holds each action's
// outcome; any other status is an *azcore.ResponseError.
func (c *Client) Transaction(ctx context.Context, table string, actions int, body []byte, boundary string, call Call) (_ *http.Response, _ []byte, err error) {
	ctx, end := c.startSpan(ctx, Transaction, table, false, actions)
	defer func() { end(err) }()
	req, err := c.newRequest(ctx, http.MethodPost, c.endpoint+"/$batch")
	if err != nil {
		return nil, nil, err
	}
	if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), "multipart/mixed; boundary="+boundary); err != nil {
		return nil, nil, err
	}
	return c.send(req, Transaction, call, http.StatusAccepted)
}

// entityURL is the URL of one entity.
func (c *Client) entityURL(table, pk, rk string) string {
	b := make([]byte, 0, len(c.endpoint)+1+len(table)+KeyPredicateLen(pk, rk))
	b = append(b, c.endpoint...)
	b = append(b, '/')
	b = append(b, table...)
	b = AppendKeyPredicate(b, pk, rk)
	return string(b)
}

// newRequest returns a request with the headers every data-plane request
// has.
func (c *Client) newRequest(ctx context.Context, method, u string) (*policy.Request, error) {
	req, err := runtime.NewRequest(ctx, method, u)
	if err != nil {
		return nil, err
	}
	h := req.Raw().Header
	h["X-Ms-Version"] = []string{APIVersion}
	h["Dataserviceversion"] = []string{"3.0"}
	h["Accept"] = []string{"application/json;odata=minimalmetadata"}
	return req, nil
}

// send sends req as op and returns the answer with its body, read in
// full, when its status is one of want; else an *azcore.ResponseError, a
// transport error, or an error matching ErrUnreadableAnswer.
func (c *Client) send(req *policy.Request, op Operation, call Call, want ...int) (*http.Response, []byte, error) {
	req.SetOperationValue(op)
	if call.Value != nil {
		req.SetOperationValue(call.Value)
	}
	pl := &c.pipeline
	if call.OwnThrottling {
		pl = &c.throttling
	}
	resp, err := pl.Do(req)
	if err != nil {
		switch {
		case resp == nil:
			return nil, nil, err
		case isContextError(err):
			// The retry policy ends a call whose context ended after a
			// try with the context's error, even when that try was
			// answered: a success answered and read settles the outcome.
			if body, perr := runtime.Payload(resp); perr == nil && runtime.HasStatusCode(resp, want...) {
				return resp, body, nil
			}
			return nil, nil, err
		}
		// An answer came, but its body could not be read.
		return nil, nil, fmt.Errorf("%w (HTTP %d): %w", ErrUnreadableAnswer, resp.StatusCode, err)
	}
	if !runtime.HasStatusCode(resp, want...) {
		return nil, nil, runtime.NewResponseError(resp)
	}
	body, err := runtime.Payload(resp)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (HTTP %d): %w", ErrUnreadableAnswer, resp.StatusCode, err)
	}
	return resp, body, nil
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
