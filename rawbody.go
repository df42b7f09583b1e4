package tablekit

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// The SDK decodes table responses through map[string]any and encodes them
// again, which turns a stored Double 1.0 into the JSON number 1. Tables
// opened through an Account read the response body as the service sent it
// instead: Table's read methods put a rawBody in the request context and the
// rawBodyPolicy (installed on the Account's table clients) fills it.

type rawBodyKey struct{}

type rawBody struct {
	data []byte
	ok   bool
}

func withRawBody(ctx context.Context) (context.Context, *rawBody) {
	rb := &rawBody{}
	return context.WithValue(ctx, rawBodyKey{}, rb), rb
}

// rawBodyPolicy copies successful response bodies into the rawBody found
// in the request's context, if any.
type rawBodyPolicy struct{}

func (rawBodyPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err != nil || resp == nil || resp.StatusCode >= 300 || resp.Body == nil {
		return resp, err
	}
	rb, _ := req.Raw().Context().Value(rawBodyKey{}).(*rawBody)
	if rb == nil {
		return resp, err
	}
	data, readErr := io.ReadAll(resp.Body)
	resp.Body.Close()
	if readErr != nil {
		return nil, readErr
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	rb.data, rb.ok = data, true
	return resp, nil
}
