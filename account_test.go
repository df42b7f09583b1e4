package tablekit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/internal/wire"
)

// TestMain runs the root package's tests with a shared Azurite (or the
// account in AZURE_STORAGE_CONNECTION_STRING) and stops it afterwards.
func TestMain(m *testing.M) { testenv.Main(m, stopExampleAzurite) }

const (
	testKey = "c2VjcmV0LWtleS1kby1ub3Qtc2hvdy1tZS1hbnl3aGVyZQ=="
	testSig = "c2lnbmF0dXJlLWRvLW5vdC1zaG93"
)

func TestOpenBadConnectionStrings(t *testing.T) {
	cases := []struct {
		name, connStr, want string
	}{
		{"empty", "", "it is empty"},
		{"blank", "  ; ", "it has no settings"},
		{"no equals", "AccountName=a;" + testSig, "part 2 is not of the form Name=value"},
		{"missing key", "AccountName=myacct", `missing AccountKey (or SharedAccessSignature) for account "myacct"`},
		{"missing name", "AccountKey=" + testKey, "missing AccountName (required with AccountKey)"},
		{"nothing useful", "DefaultEndpointsProtocol=https;EndpointSuffix=core.windows.net", "missing AccountName and AccountKey"},
		{"empty key", "AccountName=a;AccountKey=", "AccountKey is empty"},
		{"bad base64 key", "AccountName=a;AccountKey=" + testKey[:len(testKey)-3] + "!", "AccountKey is not valid base64"},
		{"unknown setting", "AccountName=a;AccountKey=" + testKey + ";AcountKey=x", `unknown setting "AcountKey"`},
		{"unknown secret-looking setting", "AccountName=a;AccountKey=" + testKey + ";" + testSig + "==", "part 3 has an unknown setting name"},
		{"duplicate", "AccountName=a;AccountName=b;AccountKey=" + testKey, "AccountName is set twice"},
		{"bad protocol", "DefaultEndpointsProtocol=ftp;AccountName=a;AccountKey=" + testKey, `DefaultEndpointsProtocol must be http or https, not "ftp"`},
		{"bad suffix", "AccountName=a;AccountKey=" + testKey + ";EndpointSuffix=https://x", "EndpointSuffix"},
		{"bad account name", "AccountName=my_acct;AccountKey=" + testKey, `account name "my_acct" may have only letters and digits`},
		{"relative endpoint", "AccountName=a;AccountKey=" + testKey + ";TableEndpoint=127.0.0.1:10002/a", "TableEndpoint"},
		{"ftp endpoint", "AccountName=a;AccountKey=" + testKey + ";BlobEndpoint=ftp://host/a", `BlobEndpoint "ftp://host/a" is not an absolute http:// or https:// URL`},
		{"endpoint with SAS", "AccountName=a;AccountKey=" + testKey + ";QueueEndpoint=https://h/q?sv=1&sig=" + testSig, `QueueEndpoint "https://h/q" must not have a query`},
		{"SAS without sig", "TableEndpoint=https://h;QueueEndpoint=https://h;BlobEndpoint=https://h;SharedAccessSignature=sv=2020", "SharedAccessSignature has no sig parameter"},
		{"SAS missing endpoint", "TableEndpoint=https://h;SharedAccessSignature=sv=1&sig=" + testSig, "missing QueueEndpoint (needed when there is no AccountName"},
		{"dev storage false", "UseDevelopmentStorage=false", `UseDevelopmentStorage must be "true"`},
		{"dev storage mixed", "UseDevelopmentStorage=true;AccountName=a", "UseDevelopmentStorage=true cannot be combined with AccountName"},
		{"dev storage proxy", "UseDevelopmentStorage=true;DevelopmentStorageProxyUri=http://p", "cannot be combined with DevelopmentStorageProxyUri"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			acct, err := tablekit.Open(c.connStr, nil)
			if err == nil {
				t.Fatalf("Open(%q) succeeded with endpoints %+v", c.connStr, endpointsOf(acct))
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) {
				t.Errorf("error %q does not contain %q", msg, c.want)
			}
			if !errors.Is(err, tablekit.ErrInvalidInput) {
				t.Errorf("error %q does not match ErrInvalidInput", msg)
			}
			for _, secret := range []string{testKey, testKey[:20], testSig} {
				if strings.Contains(msg, secret) {
					t.Errorf("error %q shows a secret", msg)
				}
			}
		})
	}
}

func TestOpenConnectionStringForms(t *testing.T) {
	cases := []struct {
		name, connStr, account string
		want                   endpoints
	}{
		{
			"development storage", "UseDevelopmentStorage=true", "devstoreaccount1",
			endpoints{
				Table: "http://127.0.0.1:10002/devstoreaccount1",
				Queue: "http://127.0.0.1:10001/devstoreaccount1",
				Blob:  "http://127.0.0.1:10000/devstoreaccount1",
			},
		},
		{
			"portal form", "DefaultEndpointsProtocol=https;AccountName=myacct;AccountKey=" + testKey + ";EndpointSuffix=core.windows.net", "myacct",
			endpoints{
				Table: "https://myacct.table.core.windows.net",
				Queue: "https://myacct.queue.core.windows.net",
				Blob:  "https://myacct.blob.core.windows.net",
			},
		},
		{
			"defaults and sovereign suffix", " accountname=myacct ; accountkey=" + testKey + ";EndpointSuffix=core.chinacloudapi.cn;", "myacct",
			endpoints{
				Table: "https://myacct.table.core.chinacloudapi.cn",
				Queue: "https://myacct.queue.core.chinacloudapi.cn",
				Blob:  "https://myacct.blob.core.chinacloudapi.cn",
			},
		},
		{
			"azurite explicit endpoints", "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + testKey +
				";BlobEndpoint=http://127.0.0.1:41000/devstoreaccount1;QueueEndpoint=http://127.0.0.1:41001/devstoreaccount1/;TableEndpoint=http://127.0.0.1:41002/devstoreaccount1;", "devstoreaccount1",
			endpoints{
				Table: "http://127.0.0.1:41002/devstoreaccount1",
				Queue: "http://127.0.0.1:41001/devstoreaccount1",
				Blob:  "http://127.0.0.1:41000/devstoreaccount1",
			},
		},
		{
			"one explicit endpoint", "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=" + testKey + ";TableEndpoint=http://localhost:9000/acct", "acct",
			endpoints{
				Table: "http://localhost:9000/acct",
				Queue: "http://acct.queue.core.windows.net",
				Blob:  "http://acct.blob.core.windows.net",
			},
		},
		{
			"SAS", "BlobEndpoint=https://myacct.blob.core.windows.net/;QueueEndpoint=https://myacct.queue.core.windows.net/;TableEndpoint=https://myacct.table.core.windows.net/;SharedAccessSignature=?sv=2022-11-02&ss=bqt&srt=sco&sp=rwdlacu&se=2030-01-01T00:00:00Z&sig=" + testSig, "myacct",
			endpoints{
				Table: "https://myacct.table.core.windows.net",
				Queue: "https://myacct.queue.core.windows.net",
				Blob:  "https://myacct.blob.core.windows.net",
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			acct, err := tablekit.Open(c.connStr, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := endpointsOf(acct); got != c.want {
				t.Errorf("endpoints %+v, want %+v", got, c.want)
			}
			if acct.Name() != c.account {
				t.Errorf("Name() = %q, want %q", acct.Name(), c.account)
			}
			if got := strings.Split(acct.Queues().URL(), "?")[0]; strings.TrimSuffix(got, "/") != c.want.Queue {
				t.Errorf("queue service URL %s, want %s", got, c.want.Queue)
			}
			if got := strings.Split(acct.Blobs().URL(), "?")[0]; strings.TrimSuffix(got, "/") != c.want.Blob {
				t.Errorf("blob service URL %s, want %s", got, c.want.Blob)
			}
			if got := strings.Split(acct.Queues().NewQueueClient("jobs").URL(), "?")[0]; got != c.want.Queue+"/jobs" {
				t.Errorf("queue URL %s, want %s/jobs", got, c.want.Queue)
			}
			if got := strings.Split(acct.Blobs().ServiceClient().NewContainerClient("logs").URL(), "?")[0]; got != c.want.Blob+"/logs" {
				t.Errorf("container URL %s, want %s/logs", got, c.want.Blob)
			}
			if acct.Tables().NewClient("Orders") == nil || acct.Tables() == nil || acct.Meter() == nil {
				t.Error("nil client")
			}
		})
	}
}

// noCredential is a TokenCredential that is never asked for a token here.
type noCredential struct{}

func (noCredential) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{}, errors.New("no token in this test")
}

func TestOpenWithCredential(t *testing.T) {
	acct, err := tablekit.OpenWithCredential("myacct", noCredential{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := endpoints{
		Table: "https://myacct.table.core.windows.net",
		Queue: "https://myacct.queue.core.windows.net",
		Blob:  "https://myacct.blob.core.windows.net",
	}
	if endpointsOf(acct) != want || acct.Name() != "myacct" {
		t.Fatalf("endpoints %+v name %q", endpointsOf(acct), acct.Name())
	}

	acct, err = tablekit.OpenWithCredential("myacct", noCredential{}, &tablekit.Options{
		EndpointSuffix: "core.usgovcloudapi.net",
		TableEndpoint:  "https://tables.example.com/",
	})
	if err != nil {
		t.Fatal(err)
	}
	want = endpoints{
		Table: "https://tables.example.com",
		Queue: "https://myacct.queue.core.usgovcloudapi.net",
		Blob:  "https://myacct.blob.core.usgovcloudapi.net",
	}
	if endpointsOf(acct) != want {
		t.Fatalf("endpoints %+v, want %+v", endpointsOf(acct), want)
	}

	for _, bad := range []struct {
		name string
		cred azcore.TokenCredential
		opts *tablekit.Options
		want string
	}{
		{"", noCredential{}, nil, "account name is empty"},
		{"my.acct", noCredential{}, nil, "may have only letters and digits"},
		{"myacct", nil, nil, "nil credential"},
		{"myacct", noCredential{}, &tablekit.Options{BlobEndpoint: "blob.example.com"}, "BlobEndpoint"},
	} {
		_, err := tablekit.OpenWithCredential(bad.name, bad.cred, bad.opts)
		if err == nil || !strings.Contains(err.Error(), bad.want) || !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("OpenWithCredential(%q): error %v, want ErrInvalidInput containing %q", bad.name, err, bad.want)
		}
	}
}

// tokenCredential hands out a fixed token and records the scopes asked.
type tokenCredential struct {
	mu     sync.Mutex
	scopes []string
}

func (c *tokenCredential) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scopes = append(c.scopes, o.Scopes...)
	return azcore.AccessToken{Token: "entra-token", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// TestOpenWithCredentialSendsBearerTokens: a Table of an Account opened
// with a token credential sends Microsoft Entra ID bearer tokens for
// Azure Storage (its entity requests and the SDK's administration
// requests alike). A recording transport answers: there is no Entra ID
// here, and Azurite takes tokens only over https with --oauth, so that
// the service accepts such a token is not tested.
func TestOpenWithCredentialSendsBearerTokens(t *testing.T) {
	cred := &tokenCredential{}
	var mu sync.Mutex
	var auths []string
	acct, err := tablekit.OpenWithCredential("myacct", cred, &tablekit.Options{ClientOptions: azcore.ClientOptions{Transport: transportFunc(func(req *http.Request) (*http.Response, error) {
		mu.Lock()
		auths = append(auths, req.Method+" "+req.Header.Get("Authorization"))
		mu.Unlock()
		status := http.StatusNoContent
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/Tables") {
			status = http.StatusCreated
		}
		return &http.Response{StatusCode: status, Header: http.Header{"Etag": {`W/"1"`}}, Body: http.NoBody, Request: req}, nil
	})}})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, "Orders", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Insert(ctx, tablekit.Entity{PartitionKey: "p", RowKey: "r"}); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Delete(ctx, "p", "r", azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	want := []string{"POST Bearer entra-token", "POST Bearer entra-token", "DELETE Bearer entra-token"}
	if !slices.Equal(auths, want) {
		t.Errorf("requests sent %q, want %q", auths, want)
	}
	for _, s := range cred.scopes {
		if s != "https://storage.azure.com/.default" {
			t.Errorf("token asked for scope %q", s)
		}
	}
}

type transportFunc func(*http.Request) (*http.Response, error)

func (f transportFunc) Do(req *http.Request) (*http.Response, error) { return f(req) }

func TestAccountServices(t *testing.T) {
	ctx := testCtx(t)
	acct := testenv.Account(t, nil)

	table := testenv.NewTable(t, acct)
	entity, _ := json.Marshal(map[string]any{"PartitionKey": "p", "RowKey": "r", "Greeting": "hello"})
	if _, err := table.AddEntity(ctx, entity, nil); err != nil {
		t.Fatalf("insert: %v", err)
	}
	got, err := table.GetEntity(ctx, "p", "r", nil)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if !bytes.Contains(got.Value, []byte(`"Greeting":"hello"`)) {
		t.Fatalf("entity %s lacks the greeting", got.Value)
	}

	queue := testenv.NewQueue(t, acct)
	if _, err := queue.EnqueueMessage(ctx, "aGVsbG8=", nil); err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	msgs, err := queue.DequeueMessage(ctx, nil)
	if err != nil || len(msgs.Messages) != 1 || *msgs.Messages[0].MessageText != "aGVsbG8=" {
		t.Fatalf("dequeue: %v %+v", err, msgs.Messages)
	}

	c := testenv.NewContainer(t, acct)
	blob := c.NewBlockBlobClient("a/b.txt")
	if _, err := blob.UploadBuffer(ctx, []byte("blob body"), nil); err != nil {
		t.Fatalf("upload: %v", err)
	}
	resp, err := blob.DownloadStream(ctx, nil)
	if err != nil {
		t.Fatalf("download: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "blob body" {
		t.Fatalf("downloaded %q", body)
	}

	s := acct.Meter().Snapshot()
	if s.Service("table") != 3 || s.Service("queue") != 3 || s.Service("blob") != 3 {
		t.Fatalf("meter: %v, want 3 requests per service", s)
	}
}

func TestAccountNotFoundMapsToSentinel(t *testing.T) {
	ctx := testCtx(t)
	acct := testenv.Account(t, nil)
	_, err := acct.Tables().NewClient(testenv.TableName(t)).GetEntity(ctx, "p", "r", nil)
	if err := wire.Wrap("Get", "", "", "", err); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("get from a missing table: %v, want ErrNotFound", err)
	}
}

// failFirst answers the first try of each operation with a 503 without
// sending it, to exercise the retry policy.
type failFirst struct{ calls atomic.Int64 }

func (f *failFirst) Do(req *policy.Request) (*http.Response, error) {
	if f.calls.Add(1)%2 == 1 {
		return &http.Response{
			StatusCode: http.StatusServiceUnavailable,
			Status:     "503 Server Busy",
			Header:     http.Header{"X-Ms-Error-Code": {"ServerBusy"}},
			Body:       io.NopCloser(strings.NewReader("")),
			Request:    req.Raw(),
		}, nil
	}
	return req.Next()
}

func TestOptionsPoliciesAndRetries(t *testing.T) {
	ctx := testCtx(t)
	fault := &failFirst{}
	var perCall atomic.Int64
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerCallPolicies: []policy.Policy{policyFunc(func(req *policy.Request) (*http.Response, error) { perCall.Add(1); return req.Next() })}, PerRetryPolicies: []policy.Policy{fault}, Retry: policy.RetryOptions{MaxRetries: 2, RetryDelay: 10 * time.Millisecond}}})
	name := testenv.TableName(t)
	if _, err := acct.Tables().CreateTable(ctx, name, nil); err != nil {
		t.Fatalf("create table through a failing first try: %v", err)
	}
	t.Cleanup(func() { acct.Tables().DeleteTable(context.Background(), name, nil) })
	if perCall.Load() != 1 || fault.calls.Load() != 2 {
		t.Fatalf("per-call policy ran %d times, per-retry %d; want 1 and 2", perCall.Load(), fault.calls.Load())
	}
	// The injected 503 never reached the service: the meter counts one request.
	if got := acct.Meter().Snapshot(); got.Count("table", "CreateTable") != 1 || got.Total() != 1 {
		t.Fatalf("meter %v, want exactly 1 CreateTable", got)
	}
}

// TestOpenRefusesNilPolicies: a nil policy would panic on the Account's
// first request, so every way of opening refuses it. With a shared key,
// Open once dropped the error of building its clients (staticcheck SA4006,
// issue 30) and returned an Account with that nil policy inside.
func TestOpenRefusesNilPolicies(t *testing.T) {
	pass := policyFunc(func(req *policy.Request) (*http.Response, error) { return req.Next() })
	open := map[string]func(*tablekit.Options) (*tablekit.Account, error){
		"shared key": func(o *tablekit.Options) (*tablekit.Account, error) {
			return tablekit.Open("AccountName=myacct;AccountKey="+testKey, o)
		},
		"development storage": func(o *tablekit.Options) (*tablekit.Account, error) {
			return tablekit.Open("UseDevelopmentStorage=true", o)
		},
		"SAS": func(o *tablekit.Options) (*tablekit.Account, error) {
			return tablekit.Open("TableEndpoint=https://h/t;QueueEndpoint=https://h/q;BlobEndpoint=https://h/b;SharedAccessSignature=sv=1&sig="+testSig, o)
		},
		"token credential": func(o *tablekit.Options) (*tablekit.Account, error) {
			return tablekit.OpenWithCredential("myacct", noCredential{}, o)
		},
	}
	for _, bad := range []struct {
		opts tablekit.Options
		want string
	}{
		{tablekit.Options{ClientOptions: azcore.ClientOptions{PerCallPolicies: []policy.Policy{nil}}}, "nil policy in Options.PerCallPolicies[0]"},
		{tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{pass, nil}}}, "nil policy in Options.PerRetryPolicies[1]"},
	} {
		for how, open := range open {
			acct, err := open(&bad.opts)
			if err == nil {
				t.Errorf("%s: opened with %s: %+v", how, bad.want, endpointsOf(acct))
				continue
			}
			if !errors.Is(err, tablekit.ErrInvalidInput) || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("%s: error %q, want ErrInvalidInput saying %q", how, err, bad.want)
			}
			if msg := err.Error(); strings.Contains(msg, testKey) || strings.Contains(msg, testSig) {
				t.Errorf("%s: error %q shows a secret", how, msg)
			}
		}
	}
}

type policyFunc func(*policy.Request) (*http.Response, error)

func (f policyFunc) Do(req *policy.Request) (*http.Response, error) { return f(req) }

func TestOpenWithSAS(t *testing.T) {
	ctx := testCtx(t)
	keyed := testenv.Account(t, nil)
	var name, key string
	for _, part := range strings.Split(testenv.ConnectionString(t), ";") {
		k, v, _ := strings.Cut(part, "=")
		switch strings.ToLower(k) {
		case "accountname":
			name = v
		case "accountkey":
			key = v
		}
	}
	if name == "" || key == "" {
		t.Skip("the test account's connection string has no shared key to sign a SAS with")
	}
	cred, err := aztables.NewSharedKeyCredential(name, key)
	if err != nil {
		t.Fatal(err)
	}
	// An account SAS for all three services, valid over http for Azurite.
	sas, err := aztables.AccountSASSignatureValues{
		Protocol:      aztables.SASProtocolHTTPSandHTTP,
		StartTime:     time.Now().Add(-time.Minute).UTC(),
		ExpiryTime:    time.Now().Add(time.Hour).UTC(),
		Permissions:   aztables.AccountSASPermissions{Read: true, Write: true, Delete: true, List: true, Add: true, Create: true, Update: true, Process: true}.String(),
		Services:      "bqt",
		ResourceTypes: aztables.AccountSASResourceTypes{Service: true, Container: true, Object: true}.String(),
	}.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	eps := endpointsOf(keyed)
	acct, err := tablekit.Open("TableEndpoint="+eps.Table+";QueueEndpoint="+eps.Queue+";BlobEndpoint="+eps.Blob+";SharedAccessSignature="+sas.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if acct.Name() != keyed.Name() {
		t.Errorf("SAS account name %q, want %q", acct.Name(), keyed.Name())
	}

	table := testenv.NewTable(t, acct)
	entity, _ := json.Marshal(map[string]any{"PartitionKey": "p", "RowKey": "r"})
	if _, err := table.AddEntity(ctx, entity, nil); err != nil {
		t.Fatalf("insert with SAS: %v", err)
	}
	queue := testenv.NewQueue(t, acct)
	if _, err := queue.EnqueueMessage(ctx, "x", nil); err != nil {
		t.Fatalf("enqueue with SAS: %v", err)
	}
	c := testenv.NewContainer(t, acct)
	if _, err := c.NewBlockBlobClient("b").UploadBuffer(ctx, []byte("x"), nil); err != nil {
		t.Fatalf("upload with SAS: %v", err)
	}
	s := acct.Meter().Snapshot()
	if s.Service("table") != 2 || s.Service("queue") != 2 || s.Service("blob") != 2 {
		t.Fatalf("meter %v, want 2 requests per service", s)
	}
}

// endpoints are an Account's service URLs, which Open and
// OpenWithCredential derive.
type endpoints struct{ Table, Queue, Blob string }

func endpointsOf(acct *tablekit.Account) endpoints {
	t, q, b := acct.Endpoints()
	return endpoints{t, q, b}
}
