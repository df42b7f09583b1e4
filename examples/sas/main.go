// Command sas shows scoped shared access signatures: a trusted service signs
// a table token limited to one customer's partition, the customer's client
// works with it without the account key, and blob and queue tokens do the
// same for uploads, downloads and producers. It uses package sas.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/sas
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/sas"
)

// Order is one customer's order; the customer is the partition, so a token
// for one partition is a token for one customer's orders.
type Order struct {
	Customer string `table:",pk"`
	ID       string `table:",rk"`
	Item     string
	Total    float64
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sas:", err)
		os.Exit(1)
	}
	// The server side holds the account key: its Account, and a Signer
	// made from the same connection string.
	acct, err := tablekit.Open(conn, nil)
	var signer *sas.Signer
	if err == nil {
		signer, err = sas.NewSigner(conn)
	}
	if err == nil {
		err = run(ctx, acct, signer, os.Stdout)
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sas:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a table, a container and a queue of its
// own, uses them, and deletes them.
func run(ctx context.Context, acct *tablekit.Account, signer *sas.Signer, out io.Writer) error {
	// The server side holds the account key.
	name := "Orders" + rand.Text()[:8]
	orders, err := tablekit.OpenTable[Order](acct, name, nil)
	if err != nil {
		return err
	}
	if err := orders.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer orders.DeleteTable(context.WithoutCancel(ctx))
	for _, o := range []Order{{"alice", "0001", "tea", 4.5}, {"bob", "0001", "coffee", 3}} {
		if _, err := orders.Insert(ctx, o); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "server side (holds the account key): a table with an order of alice and one of bob")

	// It signs a short-lived token for alice's partition only: read, add and
	// update, no delete. Signing is local: no request.
	token, err := signer.TableURL(name,
		sas.Permissions{Read: true, Add: true, Update: true},
		time.Now().Add(15*time.Minute),
		&sas.Options{
			Start:             time.Now().Add(-5 * time.Minute), // allow for clock skew
			StartPartitionKey: "alice", EndPartitionKey: "alice",
		})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "signed a token for alice: %s\n", describe(token))

	// The client side gets only the URL, no key. (Its requests are billed
	// to the account too: sharing the Account's Meter makes the cost line
	// count them. A real client would pass its own options, or nil.)
	clientOpts := &tablekit.Options{Meter: acct.Meter()}
	alice, err := sas.OpenTable[Order](token, clientOpts, nil)
	if err != nil {
		return err
	}
	if _, err := alice.Insert(ctx, Order{Customer: "alice", ID: "0002", Item: "scones", Total: 6}); err != nil {
		return err
	}
	mine, err := alice.Top(ctx, tablekit.PartitionEq("alice"), 10, nil)
	if err != nil {
		return err
	}
	if len(mine) != 2 {
		return fmt.Errorf("alice lists %d orders, want 2", len(mine))
	}
	fmt.Fprintf(out, "the client added an order with the token and listed her partition: %d orders\n", len(mine))

	// Outside the token's range the service refuses the request (403).
	// Azurite checks the signature, range included, but does not enforce
	// the range: there the read goes through.
	_, err = alice.Get(ctx, "bob", "0001")
	switch {
	case statusCode(err) == http.StatusForbidden:
		fmt.Fprintln(out, "reading bob's order with alice's token: refused by the service (403)")
	case err == nil && strings.HasPrefix(acct.Blobs().URL(), "http:"): // Azurite's endpoints are all http
		fmt.Fprintln(out, "reading bob's order with alice's token succeeded: this account (Azurite, over http) does not enforce a token's range; Azure refuses it with 403 AuthorizationFailure")
	case err == nil:
		return errors.New("reading bob's order with alice's token succeeded: the service does not enforce the token's range")
	default:
		return err
	}

	// Within the range, the permissions decide: update yes, delete no.
	if _, err := alice.Update(ctx, Order{Customer: "alice", ID: "0001", Item: "tea", Total: 0}, azcore.ETagAny); err != nil {
		return err
	}
	err = alice.Delete(ctx, "alice", "0001", azcore.ETagAny)
	if statusCode(err) != http.StatusForbidden {
		return fmt.Errorf("delete without the Delete permission: want 403, got %v", err)
	}
	fmt.Fprintf(out, "the token allows update (done) but not delete (403): %v\n", err)

	// The range is part of what is signed: the same token with spk/epk
	// removed from its query (as aztables' own SAS helper sends range
	// tokens) no longer matches its signature.
	u, err := url.Parse(token)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Del("spk")
	q.Del("epk")
	u.RawQuery = q.Encode()
	stripped, err := sas.OpenTable[Order](u.String(), clientOpts, nil)
	if err != nil {
		return err
	}
	_, err = stripped.Top(ctx, tablekit.PartitionEq("alice"), 1, nil)
	if statusCode(err) != http.StatusForbidden {
		return fmt.Errorf("a token without its signed range: want 403, got %v", err)
	}
	fmt.Fprintf(out, "the same token without spk/epk in its query is refused (403): %v\n", err)

	// Blobs: an upload-only token for a container...
	cname := "uploads-" + strings.ToLower(rand.Text()[:8])
	if _, err := acct.Blobs().ServiceClient().NewContainerClient(cname).Create(ctx, nil); err != nil {
		return fmt.Errorf("CreateContainer: %w", err)
	}
	defer acct.Blobs().ServiceClient().NewContainerClient(cname).Delete(context.WithoutCancel(ctx), nil)
	upload, err := signer.ContainerURL(cname, sas.Permissions{Create: true, Write: true}, time.Now().Add(15*time.Minute), nil)
	if err != nil {
		return err
	}
	cc, err := sas.OpenContainer(upload, clientOpts)
	if err != nil {
		return err
	}
	if _, err := cc.NewBlockBlobClient("alice/receipt-0002.txt").UploadBuffer(ctx, []byte("scones 6.00\n"), nil); err != nil {
		return err
	}
	resp, err := cc.NewBlobClient("alice/receipt-0002.txt").DownloadStream(ctx, nil)
	if err == nil {
		resp.Body.Close()
	}
	if statusCode(err) != http.StatusForbidden {
		return fmt.Errorf("reading with an upload-only token: want 403, got %v", err)
	}
	fmt.Fprintf(out, "the client uploaded a receipt with an upload-only container token (%s); reading it with that token is refused (403)\n", describe(upload))

	// ...and a read-only link to one blob, which any HTTP client can fetch.
	link, err := signer.BlobURL(cname, "alice/receipt-0002.txt", sas.Permissions{Read: true}, time.Now().Add(5*time.Minute), nil)
	if err != nil {
		return err
	}
	body, err := fetch(ctx, link)
	if err != nil {
		return err
	}
	if body != "scones 6.00\n" {
		return fmt.Errorf("the download link gave %q", body)
	}
	fmt.Fprintf(out, "a read-only link to that one blob, fetched with plain net/http: %q\n", strings.TrimSpace(body))

	// Queues: an add-only token for a producer.
	qname := "orders-" + strings.ToLower(rand.Text()[:8])
	if _, err := acct.Queues().NewQueueClient(qname).Create(ctx, nil); err != nil {
		return fmt.Errorf("CreateQueue: %w", err)
	}
	defer acct.Queues().NewQueueClient(qname).Delete(context.WithoutCancel(ctx), nil)
	qurl, err := signer.QueueURL(qname, sas.Permissions{Add: true}, time.Now().Add(15*time.Minute), nil)
	if err != nil {
		return err
	}
	producer, err := sas.OpenQueue(qurl, clientOpts)
	if err != nil {
		return err
	}
	if _, err := producer.EnqueueMessage(ctx, "b3JkZXIgMDAwMg==", nil); err != nil {
		return err
	}
	_, err = producer.DequeueMessage(ctx, nil)
	if statusCode(err) != http.StatusForbidden {
		return fmt.Errorf("receiving with an add-only queue token: want 403, got %v", err)
	}
	fmt.Fprintf(out, "a producer with an add-only queue token (%s) added a message; receiving with it is refused (403)\n", describe(qurl))
	return nil
}

// describe lists a SAS URL's fields, leaving out its signature: a SAS is a
// bearer secret until it expires, so never log one whole.
func describe(sasURL string) string {
	u, err := url.Parse(sasURL)
	if err != nil {
		return "?"
	}
	q := u.Query()
	var parts []string
	for _, k := range []string{"sp", "spk", "srk", "epk", "erk", "st", "se", "spr", "sr"} {
		if v := q.Get(k); v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ") + " sig=…"
}

// fetch GETs a URL with plain net/http and returns the body. Its errors
// leave out the URL, which holds a signature.
func fetch(ctx context.Context, link string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return "", errors.New("bad download link")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", errors.New("downloading with the blob SAS failed")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", errors.New("reading the blob SAS download failed")
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("download link: HTTP %d", resp.StatusCode)
	}
	return string(body), nil
}

// statusCode is the HTTP status of a service error, or 0.
func statusCode(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}
