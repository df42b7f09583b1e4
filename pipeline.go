package tablekit

import (
	"errors"
	"net/http"
	"slices"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit/internal/spans"
	"github.com/tablekit/tablekit/internal/wire"
)

// tablekit reads and writes entities with its own Table service client
// (internal/wire) on an azcore pipeline its Account builds once:
//
//	per call:  the caller's PerCallPolicies, meterCallPolicy
//	retry:     azcore's (two pipelines, see newTableWire)
//	per try:   the credential (Shared Key, SAS or bearer token), writePolicy,
//	           connstr.RedactPolicy, the caller's PerRetryPolicies (a fault
//	           injector), the Meter's policy, then azcore's HTTP tracing,
//	           logging and body download
//
// What these policies need to know about one request travels with it as
// an operation value (policy.Request.SetOperationValue), which azcore
// keeps through every policy and every retry: the REST operation
// (wire.Operation) for the Meter, and for writes a *writeState.

// writeState is what tablekit attaches to each write request for the
// policies of its Account's table pipeline.
type writeState struct {
	// table and pk are the partition the request writes, entities how
	// many entities (a transaction's actions), for the Governor.
	table, pk string
	entities  int
	// att records what the call's tries left open (see attempts).
	att *attempts
	// gov, when not nil, is told of every throttled try at once, also of
	// those azcore's retry policy then retries, and of every write that
	// got through (see writePolicy).
	gov *Governor
}

// stateOf returns the writeState attached to req, or nil.
func stateOf(req *policy.Request) *writeState {
	var ws *writeState
	req.OperationValue(&ws)
	return ws
}

// attempts records, for one write, what its tries left open. A caller
// that sends the same request again after a failure (BulkWriter, after
// throttling or a lost answer) gives it the same record, so that a
// conflict its earlier tries caused is recognised as such.
type attempts struct {
	// maybeApplied is set when a try ended in a way that leaves open
	// whether the service applied it: a transport error after the request
	// may have been written, a 408, 500, 502 or 504 answer, or an answer
	// that could not be read.
	maybeApplied atomic.Bool
}

// writePolicy is the per-try policy of tablekit's writes: it fills the
// request's attempts record and tells the request's Governor of every
// throttled try. It runs before the caller's per-try policies, so it sees
// what a fault-injecting policy returns.
type writePolicy struct{}

func (writePolicy) Do(req *policy.Request) (*http.Response, error) {
	ws := stateOf(req)
	resp, err := req.Next()
	if ws == nil {
		return resp, err
	}
	if ws.gov != nil && err == nil {
		switch {
		case throttledResponse(resp):
			ws.gov.throttled(ws.table, ws.pk, ws.entities, wrapError(req.Raw().Method+" request", "", "", "", runtime.NewResponseError(resp)))
		case resp.StatusCode < 300:
			ws.gov.wrote(ws.table, ws.pk, ws.entities)
		}
	}
	if ws.att == nil {
		return resp, err
	}
	switch {
	case err != nil:
		if !wire.NotSent(err) {
			ws.att.maybeApplied.Store(true)
		}
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusInternalServerError,
		resp.StatusCode == http.StatusBadGateway, resp.StatusCode == http.StatusGatewayTimeout:
		ws.att.maybeApplied.Store(true)
	}
	return resp, err
}

// throttledResponse reports whether the service answered "too busy": 503,
// 429, or 500 OperationTimedOut (the code is in the body: table errors
// carry no x-ms-error-code header).
func throttledResponse(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return true
	case http.StatusInternalServerError:
		if resp.Header.Get("x-ms-error-code") == "OperationTimedOut" {
			return true
		}
		var re *azcore.ResponseError
		return errors.As(runtime.NewResponseError(resp), &re) && re.ErrorCode == "OperationTimedOut"
	}
	return false
}

// defaultRetryStatusCodes are azcore's: the statuses it retries when
// RetryOptions.StatusCodes is nil.
var defaultRetryStatusCodes = []int{
	http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
	http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
}

// governedRetry returns retry without the throttling statuses.
func governedRetry(retry policy.RetryOptions) policy.RetryOptions {
	codes := retry.StatusCodes
	if codes == nil {
		codes = defaultRetryStatusCodes
	}
	retry.StatusCodes = slices.DeleteFunc(slices.Clone(codes), func(c int) bool {
		return c == http.StatusTooManyRequests || c == http.StatusServiceUnavailable
	})
	return retry
}

// newTableWire returns the Account's table data-plane client: its
// pipeline has the table client options o (retry, transport, logging,
// the caller's and the Meter's policies) and auth, the credential's
// policy, as the first per-try policy.
//
// Writes whose throttling a Governor handles (BulkWriter's) go on a
// second pipeline, built here once with the same policies and a retry
// policy that leaves 429 and 503 to the caller: azcore's own retry would
// hold the writer for seconds after a throttled try while the Governor,
// told of it at once by writePolicy, already paces the partition's
// writes at a lower rate. azcore also offers a per-call override
// (policy.WithRetryOptions), but it travels in the request's context,
// which tablekit keeps free of wire state, and it would copy the retry
// options into a new context on every governed call.
func newTableWire(endpoint string, o azcore.ClientOptions, auth policy.Policy, tracer tracing.Tracer, cosmos func() bool) (*wire.Client, error) {
	plOpts := runtime.PipelineOptions{PerRetry: []policy.Policy{writePolicy{}}}
	if auth != nil {
		plOpts.PerRetry = []policy.Policy{auth, writePolicy{}}
	}
	pl := runtime.NewPipeline("tablekit", spans.Version, plOpts, &o)
	governed := o
	governed.Retry = governedRetry(o.Retry)
	gpl := runtime.NewPipeline("tablekit", spans.Version, plOpts, &governed)
	return wire.NewClient(endpoint, pl, &wire.Options{OwnThrottling: &gpl, Tracer: tracer, MergeTunnel: cosmos, Cosmos: cosmos})
}
