package tablekit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// tablekit sends entity group transactions in its own wire format (see
// batchwire.go) through the table client's own azcore pipeline, so that
// authentication, retries, the Meter and the user's policies all apply. The
// SDK offers no way to send a request body of one's own, so tablekit calls
// SubmitTransaction with a placeholder action, and the wirePolicy, a
// per-call policy of the client, swaps the placeholder body for tablekit's
// before anything is signed or sent. A Table finds out once, when it is
// made, whether its client has the policy (probeWire); clients made by an
// [Account] always do, and [InstallPolicies] adds it to clients made
// elsewhere.
//
// The attemptPolicy, a per-retry policy, tells tablekit whether an earlier
// try of the current call may have been applied although its answer was
// lost, so that a conflict reported by a retry can be checked rather than
// believed (outcome.go).

// InstallPolicies adds tablekit's table policies to the options of an
// aztables client made outside an [Account], so that a [Table] over it
// sends transactions in tablekit's own encoding (any key in any action),
// and tells a conflict caused by its own retried request from a real one.
// Call it before aztables.NewClient...; clients from an Account have them.
//
// Without them a Table still works, through the SDK's SubmitTransaction:
// an update or upsert of a key holding ' inside a transaction is refused,
// and a lost answer followed by a conflicting retry is reported as the
// conflict.
func InstallPolicies(o *azcore.ClientOptions) {
	installPolicies(o, nil)
}

// installPolicies is InstallPolicies; retry, when known, is the client's
// retry configuration, which governed calls adjust (see governedKey).
func installPolicies(o *azcore.ClientOptions, retry *policy.RetryOptions) {
	o.PerCallPolicies = append(o.PerCallPolicies, &wirePolicy{retry: retry})
	o.PerRetryPolicies = append([]policy.Policy{attemptPolicy{}}, o.PerRetryPolicies...)
}

// governedKey marks a request whose throttling a Governor handles: the
// SDK need not retry it on 503 or 429 after a pause of its own, which
// would hold the caller's worker for seconds while the Governor already
// knows to slow down (it learns of every throttled try, see attemptPolicy).
type governedKey struct{}

func withGoverned(ctx context.Context) context.Context {
	return context.WithValue(ctx, governedKey{}, true)
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

type wireKey struct{}

// wireCall is what a Table puts in the request context for the wire
// policy: a transaction body to send in place of the placeholder's, or a
// probe.
type wireCall struct {
	probe   bool
	found   bool   // set by the policy: the client has it
	table   string // set by the policy on a probe: the table's name
	swapped bool   // set by the policy: the body was replaced
	// body returns the transaction body for the service URL base (the
	// table endpoint, e.g. "https://acct.table.core.windows.net") and the
	// boundary to use.
	body        func(base string) []byte
	contentType string
	// answer is the service's answer to a swapped transaction, as sent;
	// answered tells it was read.
	answer   []byte
	answered bool
}

// batchAcknowledged is the answer the SDK's SubmitTransaction is left to
// parse after a successful transaction: tablekit has read the real one
// (wireCall.answer), and parsing a hundred parts again is costly.
const batchAcknowledged = "--batchresponse_tk\r\nContent-Type: multipart/mixed; boundary=changesetresponse_tk\r\n\r\n" +
	"--changesetresponse_tk\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
	"HTTP/1.1 204 No Content\r\n\r\n\r\n--changesetresponse_tk--\r\n--batchresponse_tk--\r\n"

type readKey struct{}

// readCall asks the wire policy for the body of a read's answer as the
// service sent it. The SDK decodes every answer into map[string]any and
// encodes it again, which costs about half a query's client time and loses
// the type of whole-number doubles; tablekit decodes the body itself, so
// the policy leaves the SDK a trivial body (empty) to decode.
type readCall struct {
	empty string // what the SDK is given instead: "{}" or `{"value":[]}`
	body  []byte
	ok    bool
}

// wirePolicy is the per-call policy that swaps transaction bodies, answers
// probes, hands reads' bodies to tablekit, and leaves the throttling of
// governed calls to their Governor.
type wirePolicy struct {
	retry *policy.RetryOptions // the client's, when known
}

func (p *wirePolicy) Do(req *policy.Request) (*http.Response, error) {
	if p.retry != nil && req.Raw().Context().Value(governedKey{}) != nil {
		req = req.WithContext(policy.WithRetryOptions(req.Raw().Context(), governedRetry(*p.retry)))
	}
	if rc, _ := req.Raw().Context().Value(readKey{}).(*readCall); rc != nil && req.Raw().Method == http.MethodGet {
		resp, err := req.Next()
		if err != nil || resp.StatusCode != http.StatusOK {
			return resp, err
		}
		if body, err := runtime.Payload(resp); err == nil {
			rc.body, rc.ok = body, true
			resp.Body = io.NopCloser(strings.NewReader(rc.empty))
		}
		return resp, nil
	}
	wc, _ := req.Raw().Context().Value(wireKey{}).(*wireCall)
	if wc == nil {
		return req.Next()
	}
	wc.found = true
	if wc.probe {
		// The probe addresses an entity: the path ends in
		// "/<table>(PartitionKey=...)".
		path, _, _ := strings.Cut(req.Raw().URL.Path, "(")
		wc.table = path[strings.LastIndexByte(path, '/')+1:]
		// Answer without sending anything.
		return &http.Response{StatusCode: http.StatusNoContent, Header: http.Header{}, Body: http.NoBody, Request: req.Raw()}, nil
	}
	u := req.Raw().URL
	if req.Raw().Method != http.MethodPost || !strings.HasSuffix(u.Path, "/$batch") {
		return req.Next()
	}
	base := u.Scheme + "://" + u.Host + strings.TrimSuffix(u.EscapedPath(), "/$batch")
	body := wc.body(base)
	if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), wc.contentType); err != nil {
		return nil, err
	}
	wc.swapped = true
	resp, err := req.Next()
	if err != nil || resp.StatusCode != http.StatusAccepted {
		return resp, err
	}
	answer, err := runtime.Payload(resp)
	if err != nil {
		return resp, err
	}
	wc.answer, wc.answered = answer, true
	if !bytes.Contains(answer, []byte("\nHTTP/1.1 4")) && !bytes.Contains(answer, []byte("\nHTTP/1.1 5")) {
		resp.Body = io.NopCloser(strings.NewReader(batchAcknowledged))
	}
	return resp, nil
}

// probeWire reports whether client has the wire policy, and if so the name
// of its table. It sends nothing: with the policy, the policy answers the
// probe; without it, the request meets a cancelled context before any
// connection is made.
func probeWire(client *aztables.Client) (table string, ok bool) {
	wc := &wireCall{probe: true}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), wireKey{}, wc))
	cancel() // without the policy, the request must not leave
	_, _ = client.GetEntity(ctx, "tablekit-probe", "tablekit-probe", nil)
	return wc.table, wc.found
}

type attemptKey struct{}

// attempts is filled by the attemptPolicy for one call.
type attempts struct {
	tries atomic.Int32
	// maybeApplied is set when a try ended in a way that leaves open
	// whether the service applied it: a transport error after the request
	// may have been written, or a 408, 500, 502 or 504 answer.
	maybeApplied atomic.Bool
}

// withAttempts returns ctx with an attempts record for the calls made with
// it, reusing the one ctx already has: a caller that sends the same request
// again (BulkWriter after throttling) keeps what earlier tries left open.
func withAttempts(ctx context.Context) (context.Context, *attempts) {
	if a, ok := ctx.Value(attemptKey{}).(*attempts); ok {
		return ctx, a
	}
	a := &attempts{}
	return context.WithValue(ctx, attemptKey{}, a), a
}

// attemptPolicy is the per-retry policy that fills the attempts in the
// request context, if any.
type attemptPolicy struct{}

func (attemptPolicy) Do(req *policy.Request) (*http.Response, error) {
	ctx := req.Raw().Context()
	a, _ := ctx.Value(attemptKey{}).(*attempts)
	resp, err := req.Next()
	if hook, ok := ctx.Value(throttleHookKey{}).(func(error)); ok && err == nil && throttledResponse(resp) {
		hook(WrapError(req.Raw().Method+" request", runtime.NewResponseError(resp)))
	}
	if a == nil {
		return resp, err
	}
	a.tries.Add(1)
	switch {
	case err != nil:
		if !notSent(err) {
			a.maybeApplied.Store(true)
		}
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusInternalServerError,
		resp.StatusCode == http.StatusBadGateway, resp.StatusCode == http.StatusGatewayTimeout:
		a.maybeApplied.Store(true)
	}
	return resp, err
}

type throttleHookKey struct{}

// withThrottleHook returns ctx whose requests call hook with the error of
// every try the service throttles (503, 429, 500 OperationTimedOut),
// retried or not.
func withThrottleHook(ctx context.Context, hook func(error)) context.Context {
	return context.WithValue(ctx, throttleHookKey{}, hook)
}

// throttledResponse reports whether the service answered "too busy".
func throttledResponse(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return true
	case http.StatusInternalServerError:
		return resp.Header.Get("x-ms-error-code") == "OperationTimedOut"
	}
	return false
}

// notSent reports whether a transport error certainly happened before the
// request reached the service: a failed dial or DNS lookup, or a context
// that ended before the request was sent.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}
