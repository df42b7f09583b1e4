package stream_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/stream"
)

// The example uses the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (in an application: tablekit.Open of your connection
// string).

// Example is the package doc's: an event type needs no key fields (the
// Store keys each event's row by its version), an append with an id is
// idempotent, and a stream is read forward from a version.
func Example() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = stop() }()
	acct, err := tablekit.Open(conn, nil)
	if err != nil {
		log.Fatal(err)
	}
	table, err := tablekit.OpenTable[tablekit.Entity](acct, fmt.Sprintf("Orders%d", time.Now().UnixNano()%1e9), nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := table.CreateIfNotExists(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = table.DeleteTable(context.WithoutCancel(ctx)) }()

	reg := &tablekit.Registry{}
	if err := tablekit.Register[Placed](reg, "Placed", 1); err != nil { // type Placed struct{ Item string `table:"Item"`; ... }
		log.Fatal(err)
	}
	s, err := stream.NewStore(table.AsEntities(), reg, nil)
	if err != nil {
		log.Fatal(err)
	}
	id := stream.ID{PartitionKey: "order-17"}
	cmdID := "cmd-1"
	r, err := s.Append(ctx, id, 0, []stream.Event{{ID: cmdID, Data: Placed{Item: "pen"}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("appended versions", r.First, "to", r.Last)
	// The same command again (its answer was lost, say): replayed.
	r, err = s.Append(ctx, id, 0, []stream.Event{{ID: cmdID, Data: Placed{Item: "pen"}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("sent again: replayed", r.Replayed, "at version", r.First)
	for ev, err := range s.Forward(ctx, id, 1) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ev.Version, ev.Kind, ev.Data.(Placed).Item)
	}
	// Output:
	// appended versions 1 to 1
	// sent again: replayed true at version 1
	// 1 Placed pen
}
