package tablekit

import (
	"net/http"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit/internal/wire"
)

// tablekit reads and writes entities with its own Table service client
// (internal/wire) on an azcore pipeline its Account builds once:
//
//	per call:  the caller's PerCallPolicies, meterCallPolicy
//	retry:     azcore's (two pipelines, see internal/wire.NewPipelineClient)
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
		case wire.ThrottledAnswer(resp):
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

// newTableWire returns the Account's table data-plane client
// (wire.NewPipelineClient) with auth, the credential's policy, and
// writePolicy as its first per-try policies.
func newTableWire(endpoint string, o azcore.ClientOptions, auth policy.Policy, tracer tracing.Tracer, cosmos func() bool) (*wire.Client, error) {
	perTry := []policy.Policy{writePolicy{}}
	if auth != nil {
		perTry = []policy.Policy{auth, writePolicy{}}
	}
	return wire.NewPipelineClient(endpoint, o, perTry, tracer, cosmos)
}
