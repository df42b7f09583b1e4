// Command sas shows scoped shared access signatures: a trusted service signs
// a table token limited to one customer's partition, the customer's client
// works with it without the account key, and blob and queue tokens do the
// same for uploads, downloads and producers. It uses package sas. (What the
// tokens refuse, the service checks: main_test.go shows each refusal.)
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed): go run ./examples/sas
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

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
	if err == nil {
		// The server side holds the account key: its Account, and a
		// Signer made from the same connection string.
		var acct *tablekit.Account
		var signer *sas.Signer
		if acct, err = tablekit.Open(conn, nil); err == nil {
			if signer, err = sas.NewSigner(conn); err == nil {
				err = run(ctx, acct, signer, os.Stdout)
			}
			fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
		}
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sas:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a table, a container and a queue of its
// own, uses them, and deletes them.
func run(ctx context.Context, acct *tablekit.Account, signer *sas.Signer, out io.Writer) error {
	name := "Orders" + rand.Text()[:8]
	orders, err := tablekit.OpenTable[Order](acct, name, nil)
	if err != nil {
		return err
	}
	if err := orders.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer orders.DeleteTable(context.WithoutCancel(ctx))
	if _, err := orders.Insert(ctx, Order{"alice", "0001", "tea", 4.5}); err != nil {
		return err
	}

	// The server signs a short-lived token for alice's partition only:
	// read, add and update, no delete. Signing is local: no request.
	token, err := signer.TableURL(name, sas.Permissions{Read: true, Add: true, Update: true}, time.Now().Add(15*time.Minute),
		&sas.Options{Start: time.Now().Add(-5 * time.Minute), StartPartitionKey: "alice", EndPartitionKey: "alice"})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "signed a token for alice: %s\n", describe(token))

	// The client side gets only the URL, no key. (The shared Meter makes
	// the cost line count its requests; a real client passes nil.)
	clientOpts := &tablekit.Options{Meter: acct.Meter()}
	alice, err := sas.OpenTable[Order](token, clientOpts, nil)
	if err != nil {
		return err
	}
	if _, err := alice.Insert(ctx, Order{Customer: "alice", ID: "0002", Item: "scones", Total: 6}); err != nil {
		return err
	}
	mine, err := tablekit.Collect(alice.Query(ctx, tablekit.PartitionEq("alice"), nil), 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the client added an order with the token and listed her partition: %d orders\n", len(mine))

	// Blobs: an upload-only token for a container (Signer.BlobURL signs a
	// read-only link to one blob, which any HTTP client can fetch).
	cname := "uploads-" + strings.ToLower(rand.Text()[:8])
	container := acct.Blobs().ServiceClient().NewContainerClient(cname)
	if _, err := container.Create(ctx, nil); err != nil {
		return fmt.Errorf("CreateContainer: %w", err)
	}
	defer container.Delete(context.WithoutCancel(ctx), nil)
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
	fmt.Fprintf(out, "the client uploaded a receipt with an upload-only container token (%s)\n", describe(upload))

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
	fmt.Fprintf(out, "a producer with an add-only queue token (%s) added a message\n", describe(qurl))
	return nil
}

// describe shows a SAS URL's fields, leaving out its signature: a SAS is a
// bearer secret until it expires, so never log one whole.
func describe(sasURL string) string {
	u, err := url.Parse(sasURL)
	if err != nil {
		return "?"
	}
	q := u.Query()
	q.Del("sig")
	return strings.ReplaceAll(q.Encode(), "%3A", ":") + "&sig=…"
}
