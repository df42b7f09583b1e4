package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/sas"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results the pattern promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	acct := testenv.Account(t, nil)
	signer, err := sas.NewSigner(testenv.ConnectionString(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), acct, signer, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, w := range []string{
		"signed a token for alice: ", "epk=alice", "sp=rau", "spk=alice", "&sig=…",
		"the client added an order with the token and listed her partition: 2 orders",
		"upload-only container token (", "sp=cw",
		"a producer with an add-only queue token (", "sp=a&",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("narration lacks %q:\n%s", w, out.String())
		}
	}
	if regexp.MustCompile(`sig=[^…]`).MatchString(out.String()) {
		t.Errorf("narration shows a signature:\n%s", out.String())
	}
}

// statusCode is the HTTP status of a service error, or 0.
func statusCode(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

// TestRefusals: what each of the example's tokens does not allow, the
// service refuses: another partition, a delete, a token stripped of its
// signed range, a read with an upload-only token, a receive with an
// add-only token. And the read-only blob link works with plain net/http.
func TestRefusals(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	signer, err := sas.NewSigner(testenv.ConnectionString(t))
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.TableName(t)
	orders, err := tablekit.OpenTable[Order](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := orders.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { orders.DeleteTable(context.Background()) })
	for _, o := range []Order{{"alice", "0001", "tea", 4.5}, {"bob", "0001", "coffee", 3}} {
		if _, err := orders.Insert(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	token, err := signer.TableURL(name, sas.Permissions{Read: true, Add: true, Update: true}, time.Now().Add(15*time.Minute),
		&sas.Options{Start: time.Now().Add(-5 * time.Minute), StartPartitionKey: "alice", EndPartitionKey: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	alice, err := sas.OpenTable[Order](token, nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	// Outside the token's range: Azure refuses (a point read answers 404);
	// Azurite checks the signature, range included, but does not enforce
	// the range, so there the read goes through.
	_, err = alice.Get(ctx, "bob", "0001")
	if testenv.EnforcesSASRanges() {
		if err == nil {
			t.Error("reading bob's order with alice's token succeeded on an account that enforces SAS ranges")
		}
	} else if err != nil {
		t.Errorf("reading bob's order with alice's token on Azurite: %v", err)
	}

	// Within the range, the permissions decide: update yes, delete no.
	if _, err := alice.Update(ctx, Order{Customer: "alice", ID: "0001", Item: "tea"}, azcore.ETagAny); err != nil {
		t.Errorf("update with the Update permission: %v", err)
	}
	if err := alice.Delete(ctx, "alice", "0001", azcore.ETagAny); statusCode(err) != http.StatusForbidden {
		t.Errorf("delete without the Delete permission: want 403, got %v", err)
	}

	// The range is part of what is signed: without spk/epk in its query (as
	// aztables' own SAS helper sends range tokens) it matches no signature.
	u, _ := url.Parse(token)
	q := u.Query()
	q.Del("spk")
	q.Del("epk")
	u.RawQuery = q.Encode()
	stripped, err := sas.OpenTable[Order](u.String(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tablekit.Collect(stripped.Query(ctx, tablekit.PartitionEq("alice"), nil), 0); statusCode(err) != http.StatusForbidden {
		t.Errorf("a token without its signed range: want 403, got %v", err)
	}

	// Blobs: an upload-only token cannot read; a read-only link can.
	cname := strings.ToLower(testenv.TableName(t))
	container := acct.Blobs().ServiceClient().NewContainerClient(cname)
	if _, err := container.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { container.Delete(context.Background(), nil) })
	upload, err := signer.ContainerURL(cname, sas.Permissions{Create: true, Write: true}, time.Now().Add(15*time.Minute), nil)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := sas.OpenContainer(upload, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cc.NewBlockBlobClient("alice/receipt.txt").UploadBuffer(ctx, []byte("scones 6.00\n"), nil); err != nil {
		t.Fatal(err)
	}
	if resp, err := cc.NewBlobClient("alice/receipt.txt").DownloadStream(ctx, nil); statusCode(err) != http.StatusForbidden {
		if err == nil {
			resp.Body.Close()
		}
		t.Errorf("reading with an upload-only token: want 403, got %v", err)
	}
	link, err := signer.BlobURL(cname, "alice/receipt.txt", sas.Permissions{Read: true}, time.Now().Add(5*time.Minute), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal("downloading with the blob SAS failed") // err holds the signature
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || string(body) != "scones 6.00\n" {
		t.Errorf("the read-only link: HTTP %d %q %v", resp.StatusCode, body, err)
	}

	// Queues: an add-only token cannot receive.
	qname := strings.ToLower(testenv.TableName(t))
	if _, err := acct.Queues().NewQueueClient(qname).Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { acct.Queues().NewQueueClient(qname).Delete(context.Background(), nil) })
	qurl, err := signer.QueueURL(qname, sas.Permissions{Add: true}, time.Now().Add(15*time.Minute), nil)
	if err != nil {
		t.Fatal(err)
	}
	producer, err := sas.OpenQueue(qurl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := producer.EnqueueMessage(ctx, "b3JkZXIgMDAwMg==", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := producer.DequeueMessage(ctx, nil); statusCode(err) != http.StatusForbidden {
		t.Errorf("receiving with an add-only queue token: want 403, got %v", err)
	}
}
