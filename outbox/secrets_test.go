package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keyring"
	"github.com/tablekit/tablekit/outbox"
	"github.com/tablekit/tablekit/stream"
)

// Charged is an event with a secret: its Card is what the stream tables
// of the secret tests encrypt.
type Charged struct {
	PK    string `table:",pk"`
	RK    string `table:",rk"`
	Order string `table:"Order"`
	Card  string `table:"Card"`
}

// Refunded and Noted are events without key fields (a Store keys them).
type Refunded struct {
	Order string `table:"Order"`
	Card  string `table:"Card"`
}
type Noted struct{ Note string }

// card is the plaintext secret of the tests.
const card = "4111-1111-1111-1111"

// encryptedStore returns a Store of Shipped and Charged events on a fresh
// table that encrypts Card on the client, and a Feed of it.
func encryptedStore(t *testing.T, acct *tablekit.Account) (*stream.Store, *feed.Feed) {
	t.Helper()
	ring := new(keyring.KeyRing)
	if err := ring.Add("k1", keyring.GenerateKey()); err != nil {
		t.Fatal(err)
	}
	st := testenv.OpenTable[tablekit.Entity](t, acct, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: ring, Properties: []string{"Card"}}})
	reg := &tablekit.Registry{}
	if err := tablekit.Register[Shipped](reg, "Shipped", 1); err != nil {
		t.Fatal(err)
	}
	if err := tablekit.Register[Charged](reg, "Charged", 1); err != nil {
		t.Fatal(err)
	}
	if err := tablekit.Register[Refunded](reg, "Refunded", 1); err != nil {
		t.Fatal(err)
	}
	if err := tablekit.Register[Noted](reg, "Noted", 1); err != nil {
		t.Fatal(err)
	}
	store, err := stream.NewStore(st, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := feed.New(store, testenv.OpenTable[tablekit.Entity](t, acct, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	return store, f
}

// TestSecretsNeverLeave: a stream table that encrypts Card; two
// Publishers of its outbox streams, one through a queue, the other
// through a queue and, for every message, a claim-check blob. An outbox
// event carrying a Card (a Charged, a Refunded without key fields, or a
// tablekit.Entity with one) is refused by Handle, naming the property,
// and holds its stream back; its card is in no queue message and no
// blob (before, both held it in plaintext). A Charged of another stream
// (an account's own, not an outbox) is skipped, and outbox events
// without a card (a Shipped, a Noted without key fields) are published
// as ever.
func TestSecretsNeverLeave(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	store, f := encryptedStore(t, acct)
	queue := testenv.NewQueue(t, acct)
	blobs := testenv.NewContainer(t, acct)
	client, err := archive.NewClient(queue, blobs, &archive.ClientOptions{ClaimCheckThreshold: 200}) // every message in a blob
	if err != nil {
		t.Fatal(err)
	}
	pub, err := outbox.NewPublisher(client, store, "outbox", nil)
	if err != nil {
		t.Fatal(err)
	}
	inline := testenv.NewQueue(t, acct) // and every message in the queue
	inlineClient, err := archive.NewClient(inline, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	inlinePub, err := outbox.NewPublisher(inlineClient, store, "outbox", nil)
	if err != nil {
		t.Fatal(err)
	}
	appends := []struct {
		id  stream.ID
		evs []stream.Event
	}{
		{stream.ID{PartitionKey: "c1", Prefix: "outbox"}, []stream.Event{{ID: "pay", Data: Charged{Order: "o1", Card: card}}, {ID: "ship", Data: Shipped{Order: "o1"}}}},
		{stream.ID{PartitionKey: "c2", Prefix: "outbox"}, []stream.Event{{ID: "pay", Data: tablekit.Entity{Properties: map[string]any{"Order": "o2", "Card": card}}}}},
		{stream.ID{PartitionKey: "c3", Prefix: "account"}, []stream.Event{{ID: "pay", Data: Charged{Order: "o3", Card: card}}}},
		{stream.ID{PartitionKey: "c3", Prefix: "outbox"}, []stream.Event{{ID: "ship", Data: Shipped{Order: "o3"}}}},
		{stream.ID{PartitionKey: "c4", Prefix: "outbox"}, []stream.Event{{ID: "refund", Data: Refunded{Order: "o4", Card: card}}}},
		{stream.ID{PartitionKey: "c5", Prefix: "outbox"}, []stream.Event{{ID: "note", Data: Noted{Note: "o5"}}}},
	}
	for _, a := range appends {
		if _, err := f.Append(ctx, a.id, 0, a.evs); err != nil {
			t.Fatal(err)
		}
	}
	relay, err := f.NewRelay([]feed.Subscription{{Name: "outbox", Handle: pub.Handle}, {Name: "inline", Handle: inlinePub.Handle}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 { // refused again in the next round
		_, err = relay.Round(ctx, 0)
		var ve *tablekit.ValidationError
		if !errors.As(err, &ve) || ve.Property != "Card" || !errors.Is(err, tablekit.ErrInvalidInput) ||
			!strings.Contains(err.Error(), "c1/outbox") || !strings.Contains(err.Error(), "c2/outbox") || !strings.Contains(err.Error(), "c4/outbox") ||
			strings.Contains(err.Error(), "c5/outbox") || !strings.Contains(err.Error(), "encrypts Card") {
			t.Fatalf("round %d: %v, want the refusals of c1's, c2's and c4's outbox events, naming Card", round+1, err)
		}
	}
	props, err := queue.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	texts := blobTexts(t, blobs)
	if n := props.ApproximateMessagesCount; n == nil || *n != 2 || len(texts) != 2 {
		t.Errorf("%v queue messages and %d blobs, want 2 each: c3's and c5's outbox messages alone (c1's second is held back behind its refused first)", n, len(texts))
	}
	for name, data := range texts {
		if strings.Contains(data, "4111") {
			t.Errorf("blob %s holds the card in plaintext: %s", name, data)
		}
		if !strings.Contains(data, "~c3~outbox~0000000001") && !strings.Contains(data, "~c5~outbox~0000000001") {
			t.Errorf("blob %s: %s, want c3's or c5's outbox message", name, data)
		}
	}
	var got []string
	for _, m := range peek(t, inline) {
		got = append(got, m.ID)
		if strings.Contains(string(m.Data), "4111") {
			t.Errorf("queue message %s holds the card in plaintext: %s", m.ID, m.Data)
		}
	}
	slices.Sort(got) // (the relay hands streams over concurrently)
	if len(got) != 2 || !strings.HasSuffix(got[0], "~c3~outbox~0000000001") || !strings.HasSuffix(got[1], "~c5~outbox~0000000001") {
		t.Errorf("enqueued %q in the queue, want c3's and c5's outbox messages alone", got)
	}
	// The card is encrypted at rest (the point of the table's
	// encryption): a view without the encryption reads no plaintext.
	plain, err := tablekit.OpenTable[tablekit.Entity](acct, store.Table().Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cards := 0
	for e, err := range plain.Query(ctx, tablekit.Where("PartitionKey eq 'c1'"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := e.Properties["Card"]; ok {
			cards++
			if strings.Contains(fmt.Sprint(c), "4111") {
				t.Errorf("row %s holds the card in plaintext", e.RowKey)
			}
		}
	}
	if cards != 1 {
		t.Errorf("%d rows of c1 with a Card, want 1 (the Charged event)", cards)
	}
}

// blobTexts returns every blob of c: name -> content.
func blobTexts(t *testing.T, c *container.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	got := map[string]string{}
	for pager := c.NewListBlobsFlatPager(nil); pager.More(); {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			resp, err := c.NewBlobClient(*b.Name).DownloadStream(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			got[*b.Name] = string(data)
		}
	}
	return got
}
