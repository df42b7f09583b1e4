package sas_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/sas"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// newSigner returns a Signer for the tests' account.
func newSigner(t *testing.T) *sas.Signer {
	t.Helper()
	s, err := sas.NewSigner(testenv.ConnectionString(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type order struct {
	Customer string `table:",pk"`
	ID       string `table:",rk"`
	Total    float64
}

// newNamedTable creates a table for the test and returns its name and client.
func newNamedTable(t *testing.T, acct *tablekit.Account) (string, *aztables.Client) {
	t.Helper()
	name := testenv.TableName(t)
	client := acct.Tables().NewClient(name)
	if _, err := client.CreateTable(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Delete(context.Background(), nil) })
	return name, client
}

func statusOf(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

func TestTableSASScopedToPartition(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	name, _ := newNamedTable(t, acct)
	owner, err := tablekit.OpenTable[order](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Insert(ctx, order{Customer: "bob", ID: "1", Total: 5}); err != nil {
		t.Fatal(err)
	}

	all := sas.Permissions{Read: true, Add: true, Update: true, Delete: true}
	sasURL, err := newSigner(t).TableURL(name, all, time.Now().Add(time.Hour),
		&sas.Options{Start: time.Now().Add(-5 * time.Minute), StartPartitionKey: "alice", EndPartitionKey: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(sasURL)
	q := u.Query()
	for _, p := range []string{"spk", "epk"} {
		if q.Get(p) != "alice" {
			t.Fatalf("token lacks %s=alice: %v", p, q)
		}
	}
	if q.Get("tn") != name || q.Get("sp") != "raud" || q.Get("sig") == "" || q.Get("st") == "" {
		t.Fatalf("token: %v", q)
	}

	// The client side: no account key, only the URL.
	meter := new(tablekit.Meter)
	alice, err := sas.OpenTable[order](sasURL, &tablekit.Options{Meter: meter}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if alice.Name() != name {
		t.Fatalf("Name() = %q", alice.Name())
	}
	// In range: every operation the permissions allow works.
	if _, err := alice.Insert(ctx, order{Customer: "alice", ID: "1", Total: 1.0}); err != nil {
		t.Fatalf("in-range insert: %v", err)
	}
	if _, err := alice.Merge(ctx, order{Customer: "alice", ID: "2", Total: 2.5}, ""); err != nil {
		t.Fatalf("in-range upsert: %v", err)
	}
	got, err := alice.Get(ctx, "alice", "1")
	if err != nil || got.Total != 1.0 {
		t.Fatalf("in-range get: %+v %v", got, err)
	}
	items, err := alice.Top(ctx, tablekit.PartitionEq("alice"), 10, nil)
	if err != nil || len(items) != 2 {
		t.Fatalf("in-range query: %v %v", items, err)
	}
	if ok, err := alice.DeleteIfExists(ctx, "alice", "2"); err != nil || !ok {
		t.Fatalf("in-range delete: %v %v", ok, err)
	}
	if meter.Snapshot().Service("table") < 5 {
		t.Errorf("the client's Meter counted %v", meter.Snapshot())
	}

	t.Run("out of range", func(t *testing.T) {
		_, err := alice.Get(ctx, "bob", "1")
		if !testenv.EnforcesSASRanges() {
			t.Skipf("Azurite accepts the token's signature (range included) but does not enforce SAS PartitionKey/RowKey ranges: reading bob's partition gave err=%v; Azure answers 404 to a read and 403 to a write outside the range (run with %s=strict to test through the front that does)", err, testenv.FrontEnv)
		}
		// A read outside the range is 404, as if the entity did not exist
		// (recorded: FIDELITY.md); a write is 403.
		if statusOf(err) != http.StatusNotFound || !errors.Is(err, tablekit.ErrNotFound) {
			t.Fatalf("out-of-range read: %v", err)
		}
		if _, err := alice.Insert(ctx, order{Customer: "bob", ID: "2"}); statusOf(err) != http.StatusForbidden {
			t.Fatalf("out-of-range insert: %v", err)
		}
	})
}

// The range must be both signed and in the query: Azurite checks that, so a
// token like the one aztables' SASSignatureValues.Sign makes (range signed,
// not sent) is refused, and so is one whose range was edited.
func TestTableSASRangeIsSigned(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	name, _ := newNamedTable(t, acct)
	sasURL, err := newSigner(t).TableURL(name, sas.Permissions{Read: true}, time.Now().Add(time.Hour),
		&sas.Options{StartPartitionKey: "a", StartRowKey: "0", EndPartitionKey: "a", EndRowKey: "9"})
	if err != nil {
		t.Fatal(err)
	}
	try := func(u string) error {
		tbl, err := sas.OpenTable[order](u, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tbl.Top(ctx, tablekit.PartitionEq("a"), 1, nil)
		return err
	}
	if err := try(sasURL); err != nil {
		t.Fatalf("valid token: %v", err)
	}
	for what, edit := range map[string]func(url.Values){
		"range dropped (as aztables sends it)": func(q url.Values) { q.Del("spk"); q.Del("srk"); q.Del("epk"); q.Del("erk") },
		"range widened":                        func(q url.Values) { q.Set("epk", "z") },
		"permission added":                     func(q url.Values) { q.Set("sp", "rd") },
	} {
		u, _ := url.Parse(sasURL)
		q := u.Query()
		edit(q)
		u.RawQuery = q.Encode()
		if err := try(u.String()); statusOf(err) != http.StatusForbidden {
			t.Errorf("%s: want 403, got %v", what, err)
		}
	}
}

func TestTableSASPermissionsEnforced(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	name, _ := newNamedTable(t, acct)
	readOnly, err := newSigner(t).TableURL(name, sas.Permissions{Read: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := sas.OpenTable[order](readOnly, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Insert(ctx, order{Customer: "a", ID: "1"}); statusOf(err) != http.StatusForbidden {
		t.Fatalf("insert with a read-only token: %v", err)
	}
	if _, err := tbl.Top(ctx, tablekit.Filter{}, 1, nil); err != nil {
		t.Fatalf("read with a read-only token: %v", err)
	}
	// Expired tokens are refused before anything is sent.
	u, _ := url.Parse(readOnly)
	q := u.Query()
	q.Set("se", time.Now().Add(-time.Minute).UTC().Format("2006-01-02T15:04:05Z"))
	u.RawQuery = q.Encode()
	if _, err := sas.OpenTable[order](u.String(), nil, nil); !errors.Is(err, tablekit.ErrInvalidInput) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired: %v", err)
	}
	// A connection string without the key cannot sign.
	if _, err := sas.NewSigner("TableEndpoint=http://127.0.0.1:1/devstoreaccount1;QueueEndpoint=http://127.0.0.1:1/devstoreaccount1;BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;SharedAccessSignature=sv=2019-02-02&sig=abc"); !errors.Is(err, tablekit.ErrInvalidInput) || !strings.Contains(err.Error(), "account key") {
		t.Fatalf("signing without a key: %v", err)
	}
}

func TestBlobAndQueueSAS(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	cname := testenv.ContainerName(t)
	if _, err := acct.Blobs().ServiceClient().NewContainerClient(cname).Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { acct.Blobs().ServiceClient().NewContainerClient(cname).Delete(context.Background(), nil) })

	signer := newSigner(t)
	upload, err := signer.ContainerURL(cname, sas.Permissions{Create: true, Write: true, List: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := sas.OpenContainer(upload, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cc.NewBlockBlobClient("in/report.csv").UploadBuffer(ctx, []byte("a,b\n1,2\n"), nil); err != nil {
		t.Fatalf("upload with a container SAS: %v", err)
	}
	pager := cc.NewListBlobsFlatPager(nil)
	page, err := pager.NextPage(ctx)
	if err != nil || len(page.Segment.BlobItems) != 1 {
		t.Fatalf("list with a container SAS: %v", err)
	}
	// The upload token cannot read.
	if _, err := cc.NewBlobClient("in/report.csv").DownloadStream(ctx, nil); statusOf(err) != http.StatusForbidden {
		t.Fatalf("read with a write-only token: %v", err)
	}

	read, err := signer.BlobURL(cname, "in/report.csv", sas.Permissions{Read: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(read)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(body, []byte("a,b\n1,2\n")) {
		t.Fatalf("GET with a blob SAS: %d %q", resp.StatusCode, body)
	}
	bb, err := blockblob.NewClientWithNoCredential(read, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bb.UploadBuffer(ctx, []byte("x"), nil); statusOf(err) != http.StatusForbidden {
		t.Fatalf("write with a read-only blob token: %v", err)
	}
	if _, err := signer.BlobURL(cname, "x", sas.Permissions{List: true}, time.Now().Add(time.Hour), nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Fatalf("blob SAS with List: %v", err)
	}

	// Queues: signed without azqueue's GetSASURL, which signs for HTTPS
	// only, so a token for Azurite's http endpoint works too.
	qc := testenv.NewQueue(t, acct)
	qname := strings.TrimPrefix(qc.URL()[strings.LastIndex(qc.URL(), "/"):], "/")
	qurl, err := signer.QueueURL(qname, sas.Permissions{Add: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	if q, _ := url.Parse(qurl); q.Query().Get("spr") != map[bool]string{true: "https", false: ""}[q.Scheme == "https"] {
		t.Errorf("queue token for a %s endpoint: spr=%q", q.Scheme, q.Query().Get("spr"))
	}
	producer, err := sas.OpenQueue(qurl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := producer.EnqueueMessage(ctx, "aGk=", nil); err != nil {
		t.Fatalf("add with a queue SAS: %v", err)
	}
	if _, err := producer.DequeueMessage(ctx, nil); statusOf(err) != http.StatusForbidden {
		t.Fatalf("dequeue with an add-only queue SAS: %v", err)
	}
}

// aztables' own range SAS, for comparison: it signs the range but does not
// send it, so the service refuses it (this is why Signer.TableURL signs
// table tokens itself).
func TestAztablesRangeSASIsBroken(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	name, _ := newNamedTable(t, acct)
	cs := testenv.ConnectionString(t)
	var accountName, key string
	for _, part := range strings.Split(cs, ";") {
		if v, ok := strings.CutPrefix(part, "AccountName="); ok {
			accountName = v
		}
		if v, ok := strings.CutPrefix(part, "AccountKey="); ok {
			key = v
		}
	}
	cred, err := aztables.NewSharedKeyCredential(accountName, key)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := aztables.SASSignatureValues{Permissions: "r", ExpiryTime: time.Now().Add(time.Hour).UTC(), TableName: name,
		StartPartitionKey: "a", EndPartitionKey: "a"}.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(tok, "spk=") {
		t.Skip("aztables now sends the range; NOTES-azure.md is out of date")
	}
	sasURL, _ := newSigner(t).TableURL(name, sas.Permissions{Read: true}, time.Now().Add(time.Hour), nil)
	u, _ := url.Parse(sasURL)
	u.RawQuery = tok
	tbl, err := sas.OpenTable[order](u.String(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Top(ctx, tablekit.PartitionEq("a"), 1, nil); statusOf(err) != http.StatusForbidden {
		t.Fatalf("aztables range token: want 403, got %v", err)
	}
}

// TestSASTransportFailureInTablekitShape: a request through a SAS client
// that gets no answer comes back as a *RequestError naming the operation,
// which still unwraps to the transport's *url.Error.
func TestSASTransportFailureInTablekitShape(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()        // nothing listens there now
	var seen []string // the errors a caller's per-try policy sees
	spy := policyFunc(func(req *policy.Request) (*http.Response, error) {
		resp, err := req.Next()
		if err != nil {
			seen = append(seen, err.Error())
		}
		return resp, err
	})
	tbl, err := sas.OpenTable[tablekit.Entity]("http://"+addr+"/devstoreaccount1/Orders?sv=2019-02-02&tn=orders&sp=r&se=2099-01-01&sig=c2lnbmF0dXJl",
		&tablekit.Options{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}, PerRetryPolicies: []policy.Policy{spy}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tbl.Get(context.Background(), "p", "r")
	if len(seen) == 0 {
		t.Fatal("the caller's policy saw no error")
	}
	for _, e := range seen {
		if strings.Contains(e, "c2lnbmF0dXJl") || !strings.Contains(e, "sig=REDACTED") {
			t.Errorf("the caller's policy saw the SAS signature: %s", e)
		}
	}
	var re *tablekit.RequestError
	var ue *url.Error
	if !errors.As(err, &re) || re.Op != "Get" || !errors.As(err, &ue) {
		t.Fatalf("got %T %v, want a *RequestError for Get wrapping a *url.Error", err, err)
	}
	if strings.Contains(err.Error(), "c2lnbmF0dXJl") {
		t.Errorf("the error shows the SAS signature: %v", err)
	}
	if errors.Is(err, tablekit.ErrOutcomeUnknown) {
		t.Errorf("a read's failure claims an unknown write outcome: %v", err)
	}
}

type policyFunc func(*policy.Request) (*http.Response, error)

func (f policyFunc) Do(req *policy.Request) (*http.Response, error) { return f(req) }
