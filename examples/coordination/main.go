// Command coordination shows coordination on Table storage with package
// coord: a lease whose term is a fencing token, leader election, fenced
// writes that refuse a stale leader, idempotent (keyed) writes, and
// expiring rows swept in bounded steps.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/coordination
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/transfer"
)

// Order is what the leader writes, in the "orders" partition it fences.
type Order struct {
	Shop  string `table:",pk"`
	ID    string `table:",rk"`
	Total int    `table:"Total"`
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "coordination:", err)
		os.Exit(1)
	}
	acct, err := tablekit.Open(conn, nil)
	if err == nil {
		err = run(ctx, acct, os.Stdout)
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "coordination:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a table of its own, uses it, and deletes it.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	orders, err := tablekit.OpenTable[Order](acct, "Coord"+rand.Text()[:8], nil)
	if err != nil {
		return err
	}
	if err := orders.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer orders.DeleteTable(context.WithoutCancel(ctx))
	m := acct.Meter()
	cost := func(before tablekit.MeterSnapshot) int64 { return m.Snapshot().Sub(before).Total() }

	// Two workers contend for one lease; each writes through its own Writer.
	opts := &coord.LeaseOptions{Duration: 2 * time.Second}
	a, err := coord.NewLease(orders.AsEntities(), "leases", "billing", "worker-a", opts)
	if err != nil {
		return err
	}
	b, err := coord.NewLease(orders.AsEntities(), "leases", "billing", "worker-b", opts)
	if err != nil {
		return err
	}
	wa, err := coord.NewWriter(orders, nil)
	if err != nil {
		return err
	}
	wb, err := coord.NewWriter(orders, nil)
	if err != nil {
		return err
	}

	before := m.Snapshot()
	termA, err := a.Acquire(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "worker-a acquired the lease with term %d: %d transactions\n", termA, cost(before))
	if _, err := b.Acquire(ctx); errors.Is(err, coord.ErrHeld) {
		fmt.Fprintln(out, "worker-b: lease held by another holder")
	}
	before = m.Snapshot()
	if err := a.Renew(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "renewal: %d transaction\n", cost(before))

	// Fenced and keyed: the write is refused to older terms, and applied
	// once per key however often it is sent.
	w := coord.Write{Term: termA, Key: "order-1001"}
	before = m.Snapshot()
	if _, err := wa.Transaction(ctx, w, tablekit.InsertAction(Order{Shop: "orders", ID: "1001", Total: 40})); err != nil {
		return err
	}
	fmt.Fprintf(out, "fenced, keyed insert: %d transactions (1 read of the fence, 1 transaction)\n", cost(before))
	before = m.Snapshot()
	r, err := wa.Transaction(ctx, w, tablekit.InsertAction(Order{Shop: "orders", ID: "1001", Total: 40}))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "sent again with the same key: replayed=%v, %d transactions (the refused write, 1 read of the key's record)\n", r.Replayed, cost(before))
	// The key stands for that write: sent with other content, it is refused.
	_, err = wa.Transaction(ctx, w, tablekit.InsertAction(Order{Shop: "orders", ID: "1001", Total: 41}))
	fmt.Fprintf(out, "the key reused for another write: refused=%v\n", errors.Is(err, coord.ErrKeyReused))

	// worker-a pauses (a GC pause, a frozen VM); worker-b leads meanwhile.
	if err := a.Release(ctx); err != nil { // stands in for a lapsed lease
		return err
	}
	err = b.Lead(ctx, func(ctx context.Context, term int64) error {
		fmt.Fprintf(out, "worker-b leads with term %d\n", term)
		if err := wb.Fence(ctx, "orders", term); err != nil { // shut the old leader out first
			return err
		}
		_, err := wb.Transaction(ctx, coord.Write{Term: term, Key: "order-1002"},
			tablekit.InsertAction(Order{Shop: "orders", ID: "1002", Total: 12}))
		return err
	}, nil)
	if err != nil {
		return err
	}
	// worker-a wakes up and writes with its old term: refused.
	_, err = wa.Transaction(ctx, coord.Write{Term: termA, Key: "order-1003"},
		tablekit.InsertAction(Order{Shop: "orders", ID: "1003", Total: 99}))
	fmt.Fprintf(out, "worker-a's stale write: refused by fencing=%v\n", errors.Is(err, coord.ErrFenced))

	// Idempotency records expire (WriterOptions.KeyTTL, 24 h by default);
	// Sweep deletes the expired rows, and only rows that asked to expire
	// (records, rows with coord.ExpiresProperty): transfer.Purge over them
	// (Budget, Checkpoint). The orders stay.
	aDayLater := time.Now().Add(25 * time.Hour)
	res, err := coord.Sweep(ctx, orders.AsEntities(), aDayLater, &transfer.PurgeOptions{Options: transfer.Options{
		Scope: transfer.Scope{Filter: tablekit.PartitionEq("orders")}}})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "a day later, Sweep deleted %d expired idempotency records\n", res.Deleted)
	n, err := orders.Count(ctx, tablekit.PartitionEq("orders")) // coord's rows are not counted
	fmt.Fprintf(out, "orders stored: %d\n", n)
	return err
}
