package wire

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// The date of the examples in "Authorize with Shared Key".
const docDate = "Sun, 11 Oct 2009 21:49:13 GMT"

// TestStringToSign checks the string-to-sign against the Table service's
// Shared Key format ("Authorize with Shared Key", "Table service (Shared
// Key authorization)"): VERB, Content-MD5, Content-Type, Date (here
// x-ms-date), CanonicalizedResource, joined by "\n"; the resource is
// "/<account><path as sent>", plus "?comp=<value>" when the query has
// comp and nothing else of the query.
func TestStringToSign(t *testing.T) {
	for _, tc := range []struct {
		name, method, url string
		headers           map[string]string
		want              string
	}{
		{"point read", http.MethodGet, "https://myaccount.table.core.windows.net/mytable(PartitionKey='p',RowKey='r')", nil,
			"GET\n\n\n" + docDate + "\n/myaccount/mytable(PartitionKey='p',RowKey='r')"},
		{"insert", http.MethodPost, "https://myaccount.table.core.windows.net/mytable", map[string]string{"Content-Type": "application/json"},
			"POST\n\napplication/json\n" + docDate + "\n/myaccount/mytable"},
		{"query: the query string is not signed", http.MethodGet,
			"https://myaccount.table.core.windows.net/mytable()?$filter=PartitionKey%20eq%20'a'&$top=5&NextPartitionKey=1!8!YQ--", nil,
			"GET\n\n\n" + docDate + "\n/myaccount/mytable()"},
		{"comp is signed", http.MethodGet, "https://myaccount.table.core.windows.net/mytable?comp=acl&timeout=30", nil,
			"GET\n\n\n" + docDate + "\n/myaccount/mytable?comp=acl"},
		{"Content-MD5", http.MethodPut, "https://myaccount.table.core.windows.net/mytable(PartitionKey='p',RowKey='r')",
			map[string]string{"Content-Type": "application/json", "Content-MD5": "Q2hlY2sgSW50ZWdyaXR5IQ=="},
			"PUT\nQ2hlY2sgSW50ZWdyaXR5IQ==\napplication/json\n" + docDate + "\n/myaccount/mytable(PartitionKey='p',RowKey='r')"},
		{"escaped keys are signed as sent", http.MethodDelete,
			"https://myaccount.table.core.windows.net/mytable(PartitionKey='o%27%27k',RowKey='100%25%20%F0%9F%98%80')", nil,
			"DELETE\n\n\n" + docDate + "\n/myaccount/mytable(PartitionKey='o%27%27k',RowKey='100%25%20%F0%9F%98%80')"},
		{"batch", http.MethodPost, "https://myaccount.table.core.windows.net/$batch",
			map[string]string{"Content-Type": "multipart/mixed; boundary=batch_a1"},
			"POST\n\nmultipart/mixed; boundary=batch_a1\n" + docDate + "\n/myaccount/$batch"},
		{"path-style endpoint (Azurite): the account appears twice", http.MethodGet,
			"http://127.0.0.1:10002/myaccount/mytable(PartitionKey='p',RowKey='r')", nil,
			"GET\n\n\n" + docDate + "\n/myaccount/myaccount/mytable(PartitionKey='p',RowKey='r')"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, tc.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("x-ms-date", docDate)
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			if got := stringToSign("myaccount", req); got != tc.want {
				t.Errorf("string to sign\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestSharedKeySignature checks the Authorization header against
// signatures computed independently (openssl dgst -sha256 -mac HMAC) for
// the key "tablekit-test-key-0123456789abcdef" and the documented date.
func TestSharedKeySignature(t *testing.T) {
	key, err := NewSharedKey("myaccount", "dGFibGVraXQtdGVzdC1rZXktMDEyMzQ1Njc4OWFiY2RlZg==")
	if err != nil {
		t.Fatal(err)
	}
	date, _ := time.Parse(http.TimeFormat, docDate)
	key.now = func() time.Time { return date }
	var got []string
	pl := runtime.NewPipeline("test", "v0", runtime.PipelineOptions{PerRetry: []policy.Policy{key}}, &policy.ClientOptions{
		Transport: transportFunc(func(req *http.Request) (*http.Response, error) {
			if req.Header.Get("x-ms-date") != docDate {
				t.Errorf("x-ms-date %q", req.Header.Get("x-ms-date"))
			}
			got = append(got, req.Header.Get("Authorization"))
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		}),
	})
	for _, tc := range []struct{ method, url, contentType string }{
		{http.MethodGet, "https://myaccount.table.core.windows.net/mytable(PartitionKey='p',RowKey='r')", ""},
		{http.MethodPost, "https://myaccount.table.core.windows.net/mytable", "application/json"},
	} {
		req, err := runtime.NewRequest(context.Background(), tc.method, tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if tc.contentType != "" {
			req.Raw().Header.Set("Content-Type", tc.contentType)
		}
		if _, err := pl.Do(req); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"SharedKey myaccount:uperrYCetVdzUwDV/5N7y/QgQiqQ8PF/QkmITlbeAEI=",
		"SharedKey myaccount:xkjXoGwT4eR0MuRNuDblcSkSpk3LKj6i2jmgxXZeUaM=",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Authorization headers\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestNewSharedKeyRefusesABadKeyWithoutEchoingIt(t *testing.T) {
	for _, key := range []string{"", "not base64 at all!", "c2VjcmV0"[:5]} {
		_, err := NewSharedKey("a", key)
		if err == nil || (key != "" && strings.Contains(err.Error(), key)) {
			t.Errorf("NewSharedKey(%q): %v", key, err)
		}
	}
}

func TestSASAppendsTheToken(t *testing.T) {
	var got []string
	pl := runtime.NewPipeline("test", "v0", runtime.PipelineOptions{PerRetry: []policy.Policy{NewSAS("?sv=2019-02-02&sig=abc%2B")}}, &policy.ClientOptions{
		Retry: policy.RetryOptions{MaxRetries: 1, RetryDelay: time.Millisecond},
		Transport: transportFunc(func(req *http.Request) (*http.Response, error) {
			got = append(got, req.URL.RawQuery)
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		}),
	})
	for _, u := range []string{"https://a.table.core.windows.net/t()?$top=1", "https://a.table.core.windows.net/t"} {
		req, _ := runtime.NewRequest(context.Background(), http.MethodGet, u)
		pl.Do(req)
	}
	// Each try (the first and its retry) carries the token once.
	want := []string{"$top=1&sv=2019-02-02&sig=abc%2B", "$top=1&sv=2019-02-02&sig=abc%2B", "sv=2019-02-02&sig=abc%2B", "sv=2019-02-02&sig=abc%2B"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("queries %q, want %q", got, want)
	}
}

// TestBearerToken: a token credential goes through azcore's bearer token
// policy with the scope TokenScope gives. What this can check here: the
// scope asked for and the header sent, over https (azcore refuses to send
// a token over http). What it cannot: that Microsoft Entra ID issues such
// a token and the service accepts it; there is no Entra ID here, and
// Azurite checks tokens only over https with its --oauth option.
func TestBearerToken(t *testing.T) {
	var scopes []string
	cred := tokenFunc(func(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
		scopes = append(scopes, o.Scopes...)
		return azcore.AccessToken{Token: "tok", ExpiresOn: time.Now().Add(time.Hour)}, nil
	})
	endpoint := "https://acct.table.core.windows.net"
	var auth string
	pl := runtime.NewPipeline("test", "v0", runtime.PipelineOptions{
		PerRetry: []policy.Policy{runtime.NewBearerTokenPolicy(cred, []string{TokenScope(endpoint)}, nil)},
	}, &policy.ClientOptions{Transport: transportFunc(func(req *http.Request) (*http.Response, error) {
		auth = req.Header.Get("Authorization")
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Etag": {`W/"1"`}}, Body: http.NoBody, Request: req}, nil
	})})
	c, err := NewClient(endpoint, pl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetEntity(context.Background(), "t", "p", "r", "", Call{}); err != nil {
		t.Fatal(err)
	}
	if auth != "Bearer tok" || len(scopes) != 1 || scopes[0] != "https://storage.azure.com/.default" {
		t.Errorf("Authorization %q, scopes %q", auth, scopes)
	}
}

func TestTokenScope(t *testing.T) {
	for endpoint, want := range map[string]string{
		"https://acct.table.core.windows.net":              "https://storage.azure.com/.default",
		"https://acct.table.core.chinacloudapi.cn":         "https://storage.azure.com/.default",
		"http://127.0.0.1:10002/devstoreaccount1":          "https://storage.azure.com/.default",
		"https://acct.table.cosmos.azure.com":              "https://cosmos.azure.com/.default",
		"https://acct.table.cosmosdb.azure.com:443":        "https://cosmos.azure.com/.default",
		"https://acct.table.cosmos.azure.cn":               "https://cosmos.azure.cn/.default",
		"https://acct.table.cosmos.azure.us":               "https://cosmos.azure.us/.default",
		"https://ACCT.TABLE.COSMOS.AZURE.COM/some/proxy/x": "https://cosmos.azure.com/.default",
	} {
		if got := TokenScope(endpoint); got != want {
			t.Errorf("TokenScope(%q) = %q, want %q", endpoint, got, want)
		}
	}
}

type transportFunc func(*http.Request) (*http.Response, error)

func (f transportFunc) Do(req *http.Request) (*http.Response, error) { return f(req) }

type tokenFunc func(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error)

func (f tokenFunc) GetToken(ctx context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return f(ctx, o)
}
