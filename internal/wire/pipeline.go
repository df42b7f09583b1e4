package wire

import (
	"errors"
	"net/http"
	"slices"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit/internal/spans"
)

// The pipeline an Account's table clients send on.

// ThrottledAnswer reports whether the service answered "too busy": 503,
// 429, or 500 OperationTimedOut (the code is in the body: table errors
// carry no x-ms-error-code header).
func ThrottledAnswer(resp *http.Response) bool {
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

// NewPipelineClient returns an Account's table data-plane client: its
// pipeline has the table client options o (retry, transport, logging,
// the caller's and the Meter's policies) and perTry (the credential's
// policy and the Account's write policy) as the first per-try policies.
//
// Writes whose throttling a Governor handles (BulkWriter's) go on a
// second pipeline, built here once with the same policies and a retry
// policy that leaves 429 and 503 to the caller: azcore's own retry would
// hold the writer for seconds after a throttled try while the Governor,
// told of it at once by the write policy, already paces the partition's
// writes at a lower rate. azcore also offers a per-call override
// (policy.WithRetryOptions), but it travels in the request's context,
// which tablekit keeps free of wire state, and it would copy the retry
// options into a new context on every governed call. cosmos reports
// whether the Account is in Cosmos DB mode now.
func NewPipelineClient(endpoint string, o azcore.ClientOptions, perTry []policy.Policy, tracer tracing.Tracer, cosmos func() bool) (*Client, error) {
	plOpts := runtime.PipelineOptions{PerRetry: perTry}
	pl := runtime.NewPipeline("tablekit", spans.Version, plOpts, &o)
	governed := o
	governed.Retry = governedRetry(o.Retry)
	gpl := runtime.NewPipeline("tablekit", spans.Version, plOpts, &governed)
	return NewClient(endpoint, pl, &Options{OwnThrottling: &gpl, Tracer: tracer, MergeTunnel: cosmos, Cosmos: cosmos})
}
