package sas_test

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/tablekit/tablekit/sas"
)

// A token for one customer's partition: the range is signed and sent.
func ExampleSigner_TableURL() {
	signer, err := sas.NewSigner("UseDevelopmentStorage=true") // signing does not connect
	if err != nil {
		fmt.Println(err)
		return
	}
	sasURL, err := signer.TableURL("Orders",
		sas.Permissions{Read: true, Add: true},
		time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC),
		&sas.Options{StartPartitionKey: "alice", EndPartitionKey: "alice"})
	if err != nil {
		fmt.Println(err)
		return
	}
	u, _ := url.Parse(sasURL)
	q := u.Query()
	fmt.Println(u.Path)
	for _, k := range []string{"tn", "sp", "se", "spk", "epk", "sv"} {
		fmt.Printf("%s=%s\n", k, q.Get(k))
	}
	fmt.Println("signed:", q.Get("sig") != "")
	// Output:
	// /devstoreaccount1/Orders
	// tn=Orders
	// sp=ra
	// se=2099-01-01T00:00:00Z
	// spk=alice
	// epk=alice
	// sv=2019-02-02
	// signed: true
}

// The client side of a table SAS: a Table from the URL alone.
func ExampleOpenTable() {
	type Order struct {
		Customer string `table:",pk"`
		ID       string `table:",rk"`
		Total    float64
	}
	sasURL := receiveTokenFromServer() // made with Signer.TableURL
	orders, err := sas.OpenTable[Order](sasURL, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if _, err := orders.Insert(ctx, Order{Customer: "alice", ID: "0002", Total: 6}); err != nil {
		fmt.Println(err) // outside the token's range or permissions: HTTP 403
	}
}

func receiveTokenFromServer() string { return "" }
