package wire

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
)

// recorded is one request as the transport received it.
type recorded struct {
	method, url string
	header      http.Header
	body        string
}

// fake is a transport that records requests and answers each with the
// next of its answers (the last one again when they run out).
type fake struct {
	reqs    []recorded
	answers []func(*http.Request) *http.Response
}

func (f *fake) Do(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
	}
	f.reqs = append(f.reqs, recorded{req.Method, req.URL.String(), req.Header.Clone(), string(body)})
	a := f.answers[min(len(f.reqs), len(f.answers))-1]
	return a(req), nil
}

func answer(status int, body string, header ...string) func(*http.Request) *http.Response {
	return func(req *http.Request) *http.Response {
		h := http.Header{}
		for i := 0; i+1 < len(header); i += 2 {
			h.Set(header[i], header[i+1])
		}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}
	}
}

const endpoint = "http://127.0.0.1:10002/devstoreaccount1"

// newTestClient returns a Client on f whose pipeline has the given
// per-try policies and retries quickly.
func newTestClient(t *testing.T, f *fake, opts *Options, perTry ...policy.Policy) *Client {
	t.Helper()
	pl := runtime.NewPipeline("test", "v0", runtime.PipelineOptions{PerRetry: perTry}, &policy.ClientOptions{
		Transport: f,
		Retry:     policy.RetryOptions{MaxRetries: 2, RetryDelay: time.Millisecond, MaxRetryDelay: time.Millisecond},
	})
	c, err := NewClient(endpoint+"/", pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRequests(t *testing.T) {
	ctx := context.Background()
	ok := answer(http.StatusNoContent, "", "ETag", `W/"2"`)
	for _, tc := range []struct {
		name    string
		send    func(c *Client) error
		answers []func(*http.Request) *http.Response
		want    recorded // header: the headers that must be there (nil value: absent)
	}{
		{"point read with $select", func(c *Client) error {
			e, err := c.GetEntity(ctx, "Orders", "o'k", "", "A,B", Call{})
			if err == nil && (string(e.Body) != `{"A":1}` || e.ETag != `W/"1"`) {
				err = errors.New("answer not returned: " + string(e.Body) + " " + string(e.ETag))
			}
			return err
		}, []func(*http.Request) *http.Response{answer(http.StatusOK, `{"A":1}`, "ETag", `W/"1"`)},
			recorded{http.MethodGet, endpoint + "/Orders(PartitionKey='o%27%27k',RowKey='')?$select=A%2CB",
				http.Header{"X-Ms-Version": {"2019-02-02"}, "Dataserviceversion": {"3.0"}, "Accept": {"application/json;odata=minimalmetadata"}}, ""}},
		{"query page", func(c *Client) error {
			p, err := c.QueryEntities(ctx, "Orders", &Query{Filter: "PartitionKey eq 'a b' and X eq '+%'", Select: "PartitionKey,RowKey", Top: 5,
				NextPartitionKey: `{"token":"hr8W+/=","range":{"min":"","max":"FF"}}`, NextRowKey: "NA"}, Call{})
			if err == nil && (string(p.Body) != `{"value":[]}` || p.NextPartitionKey != "1!8!YQ--" || p.NextRowKey != "") {
				err = errors.New("page not returned as it came")
			}
			return err
		}, []func(*http.Request) *http.Response{answer(http.StatusOK, `{"value":[]}`, "x-ms-continuation-NextPartitionKey", "1!8!YQ--")},
			recorded{http.MethodGet, endpoint + "/Orders()?$filter=PartitionKey+eq+%27a+b%27+and+X+eq+%27%2B%25%27&$select=PartitionKey%2CRowKey&$top=5" +
				"&NextPartitionKey=%7B%22token%22%3A%22hr8W%2B%2F%3D%22%2C%22range%22%3A%7B%22min%22%3A%22%22%2C%22max%22%3A%22FF%22%7D%7D&NextRowKey=NA",
				http.Header{"Accept": {"application/json;odata=minimalmetadata"}}, ""}},
		{"insert", func(c *Client) error {
			etag, err := c.InsertEntity(ctx, "Orders", []byte(`{"PartitionKey":"p","RowKey":"r"}`), Call{})
			if err == nil && etag != `W/"2"` {
				err = errors.New("no ETag")
			}
			return err
		}, []func(*http.Request) *http.Response{ok},
			recorded{http.MethodPost, endpoint + "/Orders", http.Header{"Prefer": {"return-no-content"}, "Content-Type": {"application/json"}, "If-Match": nil},
				`{"PartitionKey":"p","RowKey":"r"}`}},
		{"update (replace, If-Match)", func(c *Client) error {
			_, err := c.UpdateEntity(ctx, "Orders", "p", "r", []byte(`{}`), false, `W/"1"`, Call{})
			return err
		}, []func(*http.Request) *http.Response{ok},
			recorded{http.MethodPut, endpoint + "/Orders(PartitionKey='p',RowKey='r')", http.Header{"If-Match": {`W/"1"`}, "Content-Type": {"application/json"}}, `{}`}},
		{"insert-or-merge", func(c *Client) error {
			_, err := c.UpdateEntity(ctx, "Orders", "p", "r", []byte(`{}`), true, "", Call{})
			return err
		}, []func(*http.Request) *http.Response{ok},
			recorded{http.MethodPatch, endpoint + "/Orders(PartitionKey='p',RowKey='r')", http.Header{"If-Match": nil, "X-Http-Method": nil}, `{}`}},
		{"delete", func(c *Client) error {
			return c.DeleteEntity(ctx, "Orders", "", "", azcore.ETagAny, Call{})
		}, []func(*http.Request) *http.Response{ok},
			recorded{http.MethodDelete, endpoint + "/Orders(PartitionKey='',RowKey='')", http.Header{"If-Match": {"*"}}, ""}},
		{"transaction", func(c *Client) error {
			resp, body, err := c.Transaction(ctx, "t", 2, []byte("--batch_x\r\n..."), "batch_x", Call{})
			if err == nil && (resp.StatusCode != http.StatusAccepted || string(body) != "--batchresponse_y--") {
				err = errors.New("answer not returned")
			}
			return err
		}, []func(*http.Request) *http.Response{answer(http.StatusAccepted, "--batchresponse_y--")},
			recorded{http.MethodPost, endpoint + "/$batch", http.Header{"Content-Type": {"multipart/mixed; boundary=batch_x"}}, "--batch_x\r\n..."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{answers: tc.answers}
			if err := tc.send(newTestClient(t, f, nil)); err != nil {
				t.Fatal(err)
			}
			if len(f.reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(f.reqs))
			}
			got := f.reqs[0]
			if got.method != tc.want.method || got.url != tc.want.url || got.body != tc.want.body {
				t.Errorf("sent %s %s %q\nwant %s %s %q", got.method, got.url, got.body, tc.want.method, tc.want.url, tc.want.body)
			}
			for k, v := range tc.want.header {
				if (v == nil) != (got.header.Get(k) == "") || (v != nil && got.header.Get(k) != v[0]) {
					t.Errorf("header %s: %q, want %q", k, got.header.Get(k), v)
				}
			}
		})
	}
}

func TestMergeTunnel(t *testing.T) {
	f := &fake{answers: []func(*http.Request) *http.Response{answer(http.StatusNoContent, "")}}
	c := newTestClient(t, f, &Options{MergeTunnel: func() bool { return true }})
	if _, err := c.UpdateEntity(context.Background(), "T", "p", "r", []byte(`{}`), true, `W/"1"`, Call{}); err != nil {
		t.Fatal(err)
	}
	if r := f.reqs[0]; r.method != http.MethodPost || r.header.Get("X-HTTP-Method") != "MERGE" || r.header.Get("If-Match") != `W/"1"` {
		t.Errorf("sent %s with X-HTTP-Method %q, If-Match %q", r.method, r.header.Get("X-HTTP-Method"), r.header.Get("If-Match"))
	}
}

// TestServiceErrors: a failure the service reports is an
// *azcore.ResponseError with the code from the OData error body (table
// errors carry no x-ms-error-code header).
func TestServiceErrors(t *testing.T) {
	f := &fake{answers: []func(*http.Request) *http.Response{answer(http.StatusConflict,
		`{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":"The specified entity already exists."}}}`)}}
	_, err := newTestClient(t, f, nil).InsertEntity(context.Background(), "T", []byte(`{}`), Call{})
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusConflict || re.ErrorCode != "EntityAlreadyExists" {
		t.Fatalf("got %v", err)
	}
}

// TestCallTravelsWithTheRequest: the operation and the caller's value
// reach every try of a request (the retry policy clones it), as the same
// value; OwnThrottling picks the other pipeline.
func TestCallTravelsWithTheRequest(t *testing.T) {
	type state struct{ tries int }
	st := &state{}
	var ops []Operation
	see := policyFunc(func(req *policy.Request) (*http.Response, error) {
		op, ok := OperationOf(req)
		var got *state
		if !ok || !req.OperationValue(&got) || got != st {
			t.Errorf("try without the call's values: %q %v %p", op, ok, got)
		} else {
			got.tries++
			ops = append(ops, op)
		}
		return req.Next()
	})
	busy := answer(http.StatusServiceUnavailable, `{"odata.error":{"code":"ServerBusy"}}`)
	f := &fake{answers: []func(*http.Request) *http.Response{busy, busy, answer(http.StatusNoContent, "")}}
	c := newTestClient(t, f, nil, see)
	if err := c.DeleteEntity(context.Background(), "T", "p", "r", "*", Call{Value: st}); err != nil {
		t.Fatal(err)
	}
	if st.tries != 3 || len(ops) != 3 || ops[2] != DeleteEntity {
		t.Errorf("%d tries seen, operations %q", st.tries, ops)
	}

	// A call that handles throttling itself goes on the pipeline without
	// throttle retries.
	noRetry := runtime.NewPipeline("test", "v0", runtime.PipelineOptions{}, &policy.ClientOptions{Transport: f, Retry: policy.RetryOptions{MaxRetries: -1}})
	f2 := &fake{answers: []func(*http.Request) *http.Response{busy}}
	c2 := newTestClient(t, f2, &Options{OwnThrottling: &noRetry})
	f.reqs, f.answers = nil, []func(*http.Request) *http.Response{busy}
	err := c2.DeleteEntity(context.Background(), "T", "p", "r", "*", Call{OwnThrottling: true})
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusServiceUnavailable || len(f.reqs) != 1 || len(f2.reqs) != 0 {
		t.Errorf("OwnThrottling: %v, %d tries on its pipeline, %d on the default one", err, len(f.reqs), len(f2.reqs))
	}
}

// TestUnreadableAnswer: an answer whose body breaks off is an error
// matching ErrUnreadableAnswer (the request reached the service).
func TestUnreadableAnswer(t *testing.T) {
	broken := func(req *http.Request) *http.Response {
		return &http.Response{StatusCode: http.StatusAccepted, Header: http.Header{},
			Body: io.NopCloser(io.MultiReader(strings.NewReader("--batchresp"), iotest.ErrReader(io.ErrUnexpectedEOF))), Request: req}
	}
	f := &fake{answers: []func(*http.Request) *http.Response{broken}}
	_, _, err := newTestClient(t, f, nil).Transaction(context.Background(), "t", 2, []byte("x"), "b", Call{})
	if !errors.Is(err, ErrUnreadableAnswer) || !errors.Is(err, io.ErrUnexpectedEOF) || len(f.reqs) != 1 {
		t.Fatalf("got %v after %d tries", err, len(f.reqs))
	}
}

// TestAnsweredSuccessOutlivesItsContext: azcore's retry policy reports
// the context's error when the context ends after a try, even an answered
// one; an answered success is what happened, and the Client returns it.
func TestAnsweredSuccessOutlivesItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fake{answers: []func(*http.Request) *http.Response{func(req *http.Request) *http.Response {
		cancel()
		return answer(http.StatusNoContent, "", "ETag", `W/"9"`)(req)
	}}}
	etag, err := newTestClient(t, f, nil).InsertEntity(ctx, "T", []byte(`{}`), Call{})
	if err != nil || etag != `W/"9"` {
		t.Fatalf("got %q, %v; want the answered ETag", etag, err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	f.reqs, f.answers = nil, []func(*http.Request) *http.Response{func(req *http.Request) *http.Response {
		cancel()
		return answer(http.StatusConflict, `{"odata.error":{"code":"EntityAlreadyExists"}}`)(req)
	}}
	if _, err := newTestClient(t, f, nil).InsertEntity(ctx, "T", []byte(`{}`), Call{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a failure after the context ended: %v, want context.Canceled", err)
	}
}

// TestSpans: each request has a span named after its operation, the
// parent of azcore's HTTP span.
func TestSpans(t *testing.T) {
	var names []string
	tracer := tracing.NewTracer(func(ctx context.Context, name string, _ *tracing.SpanOptions) (context.Context, tracing.Span) {
		parent, _ := ctx.Value(spanKey{}).(string)
		names = append(names, strings.TrimPrefix(parent+" > "+name, " > "))
		return context.WithValue(ctx, spanKey{}, strings.TrimPrefix(parent+" > "+name, " > ")), tracing.Span{}
	}, nil)
	f := &fake{answers: []func(*http.Request) *http.Response{answer(http.StatusOK, `{"value":[]}`)}}
	c := newTestClient(t, f, &Options{Tracer: tracer})
	if _, err := c.QueryEntities(context.Background(), "T", &Query{}, Call{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names, "; "); got != "Tables.QueryEntities; Tables.QueryEntities > HTTP GET" {
		t.Errorf("spans: %s", got)
	}
}

type spanKey struct{}

func TestNewClientChecksTheEndpoint(t *testing.T) {
	for _, ep := range []string{"", "ftp://x", "https://a.table.core.windows.net/?sv=1&sig=secret", "no scheme", "http://[::1", "%zz?sig=secret"} {
		_, err := NewClient(ep, runtime.Pipeline{}, nil)
		if err == nil || strings.Contains(err.Error(), "secret") {
			t.Errorf("NewClient(%q): %v", ep, err)
		}
	}
}

type policyFunc func(*policy.Request) (*http.Response, error)

func (f policyFunc) Do(req *policy.Request) (*http.Response, error) { return f(req) }
