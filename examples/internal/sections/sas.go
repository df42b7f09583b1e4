package sections

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/examples/internal/demo"
)

// SAS shows scoped shared access signatures: a trusted service signs a
// token limited to one customer's partition, and the customer's client
// works with it without the account key; the same for blob uploads and
// downloads.
func SAS() demo.Section {
	return demo.Section{
		Name:        "sas",
		Description: "scoped SAS tokens: a table token limited to one partition, blob upload/download tokens",
		Run:         runSAS,
	}
}

// sasOrder is one customer's order; the customer is the partition.
type sasOrder struct {
	Customer string `table:",pk"`
	ID       string `table:",rk"`
	Item     string
	Total    float64
}

func runSAS(ctx context.Context, env *demo.Env) error {
	name := env.TableName("Orders")
	orders, err := tablekit.OpenTable[sasOrder](env.Account, name, nil)
	if err != nil {
		return err
	}
	if err := orders.CreateIfNotExists(ctx); err != nil {
		return err
	}
	env.Defer(func(ctx context.Context) error { return orders.DeleteTable(ctx) })
	for _, o := range []sasOrder{{"alice", "0001", "tea", 4.5}, {"bob", "0001", "coffee", 3}} {
		if _, err := orders.Insert(ctx, o); err != nil {
			return err
		}
	}
	env.Say("server side (holds the account key): table %s with orders of alice and bob", name)

	// The server signs a token for alice's partition only.
	token, err := env.Account.TableSASURL(name,
		tablekit.TablePermissions{Read: true, Add: true, Update: true},
		time.Now().Add(15*time.Minute),
		&tablekit.TableSASOptions{
			Start:             time.Now().Add(-5 * time.Minute), // clock skew
			StartPartitionKey: "alice", EndPartitionKey: "alice",
		})
	if err != nil {
		return err
	}
	env.Say("signed a token for alice: %s", sasDescribeToken(token))

	// The client side: only the URL, no key.
	alice, err := tablekit.OpenTableSAS[sasOrder](token, nil)
	if err != nil {
		return err
	}
	if _, err := alice.Insert(ctx, sasOrder{Customer: "alice", ID: "0002", Item: "scones", Total: 6}); err != nil {
		return err
	}
	mine, err := alice.Top(ctx, tablekit.PartitionEq("alice"), 10, nil)
	if err != nil {
		return err
	}
	env.Say("client with the token added an order and listed her partition: %d orders", len(mine))

	_, err = alice.Get(ctx, "bob", "0001", nil)
	switch {
	case sasStatusCode(err) == http.StatusForbidden:
		env.Say("reading bob's order with alice's token: refused by the service (403)")
	case err == nil:
		env.Say("reading bob's order with alice's token succeeded: Azurite checks the token's signature, which covers the range, but does not enforce ranges; Azure answers 403 AuthorizationFailure")
	default:
		return err
	}
	_, err = alice.Update(ctx, sasOrder{Customer: "alice", ID: "0001", Item: "tea", Total: 0}, tablekit.Replace, azcore.ETagAny)
	if err != nil {
		return err
	}
	err = alice.Delete(ctx, "alice", "0001", azcore.ETagAny)
	if sasStatusCode(err) != http.StatusForbidden {
		return fmt.Errorf("delete without the Delete permission: %v", err)
	}
	env.Say("the token allows update (done) but not delete: %v", err)

	// A token with its range removed from the query no longer matches its
	// signature: this is what aztables' own SAS helper produces.
	u, _ := url.Parse(token)
	q := u.Query()
	q.Del("spk")
	q.Del("epk")
	u.RawQuery = q.Encode()
	stripped, err := tablekit.OpenTableSAS[sasOrder](u.String(), nil)
	if err != nil {
		return err
	}
	_, err = stripped.Top(ctx, tablekit.PartitionEq("alice"), 1, nil)
	if sasStatusCode(err) != http.StatusForbidden {
		return fmt.Errorf("a token without its signed range was accepted: %v", err)
	}
	env.Say("the same token without spk/epk in its query (as aztables sends range tokens) is refused: %v", err)

	// Blobs: an upload-only token for a container, a read-only link to one blob.
	cname := env.ContainerName("uploads")
	if _, err := env.Account.Container(cname).Create(ctx, nil); err != nil {
		return tablekit.WrapError("CreateContainer", err)
	}
	env.Defer(func(ctx context.Context) error {
		_, err := env.Account.Container(cname).Delete(ctx, nil)
		return tablekit.WrapError("DeleteContainer", err)
	})
	upload, err := env.Account.ContainerSASURL(cname, tablekit.BlobPermissions{Create: true, Write: true}, time.Now().Add(15*time.Minute), nil)
	if err != nil {
		return err
	}
	cc, err := tablekit.OpenContainerSAS(upload, nil)
	if err != nil {
		return err
	}
	if _, err := cc.NewBlockBlobClient("alice/receipt-0002.txt").UploadBuffer(ctx, []byte("scones 6.00\n"), nil); err != nil {
		return err
	}
	_, err = cc.NewBlobClient("alice/receipt-0002.txt").DownloadStream(ctx, nil)
	env.Say("client uploaded a receipt with an upload-only container token (%s); reading with it is refused (%d)", sasDescribeToken(upload), sasStatusCode(err))
	link, err := env.Account.BlobSASURL(cname, "alice/receipt-0002.txt", tablekit.BlobPermissions{Read: true}, time.Now().Add(5*time.Minute), nil)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return errors.New("downloading with the blob SAS failed") // the error would show the URL
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("download link: HTTP %d", resp.StatusCode)
	}
	env.Say("a read-only link to that one blob, fetched with plain net/http: %q", strings.TrimSpace(string(body)))

	// Queues: azqueue signs queue tokens for HTTPS only.
	qname := env.QueueName("orders")
	if _, err := env.Account.QueueSASURL(qname, tablekit.QueuePermissions{Add: true}, time.Now().Add(15*time.Minute), nil); err != nil {
		env.Say("queue tokens (e.g. add-only, for producers): %v", err)
	} else {
		env.Say("queue tokens (e.g. add-only, for producers) work the same way with QueueSASURL and OpenQueueSAS")
	}
	return nil
}

// sasDescribeToken lists a SAS URL's fields without its signature.
func sasDescribeToken(sasURL string) string {
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

// sasStatusCode is the HTTP status of a service error, or 0.
func sasStatusCode(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}
