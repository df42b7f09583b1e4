// Command archive shows the eventually consistent transactions pattern, in
// the design guide's own scenario: an entity group transaction cannot span
// two tables, so the HR app enqueues a message asking to move an employee
// who leaves from Current to Archive, and a queue worker applies it in
// idempotent steps, deleting the message once every step succeeded.
// main_test.go shows the rest: a move that fails half-way and is retried,
// a claim-check payload, the poison queue.
//
// It runs against AZURE_STORAGE_CONNECTION_STRING's account, or an Azurite
// it starts (Node.js 18+): go run ./examples/archive
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/azurite"
)

// Employee is the guide's employee entity. With an etag field, the move's
// delete from Current is on the version it read: no update is lost.
type Employee struct {
	Department string      `table:",pk"`
	ID         string      `table:",rk"`
	ETag       azcore.ETag `table:",etag"`
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "archive:", err)
		os.Exit(1)
	}
	acct, err := tablekit.Open(conn, nil)
	if err == nil {
		err = run(ctx, acct, os.Stdout)
		fmt.Printf("cost: %v\n", acct.Meter().Snapshot())
	}
	if stop(); err != nil {
		fmt.Fprintln(os.Stderr, "archive:", err)
		os.Exit(1)
	}
}

// setup creates the tables (five employees in Current) and the work queue;
// cleanup deletes them, and the worker's poison queue and container.
func setup(ctx context.Context, acct *tablekit.Account) (current, arch *tablekit.Table[Employee], queue string, cleanup func(), err error) {
	suffix := rand.Text()[:8]
	queue = "archive-" + strings.ToLower(suffix)
	bg := context.WithoutCancel(ctx)
	cleanup = func() {
		for _, q := range []string{queue, queue + "-poison"} {
			acct.Queues().NewQueueClient(q).Delete(bg, nil)
		}
		acct.Blobs().ServiceClient().NewContainerClient(queue+"-claims").Delete(bg, nil)
		acct.Tables().DeleteTable(bg, "Current"+suffix, nil)
		acct.Tables().DeleteTable(bg, "Archive"+suffix, nil)
	}
	for _, t := range []**tablekit.Table[Employee]{&current, &arch} {
		name := map[bool]string{true: "Current", false: "Archive"}[t == &current] + suffix
		if *t, err = tablekit.OpenTable[Employee](acct, name, nil); err == nil {
			err = (*t).CreateIfNotExists(ctx)
		}
		if err != nil {
			return current, arch, queue, cleanup, err
		}
	}
	if _, err = acct.Queues().NewQueueClient(queue).Create(ctx, nil); err == nil {
		_, err = current.BulkWriter(nil).Insert(ctx, []Employee{{Department: "Sales", ID: "000123"}, {Department: "Sales", ID: "000124"},
			{Department: "Marketing", ID: "000223"}, {Department: "Marketing", ID: "000224"}, {Department: "Engineering", ID: "000301"}})
	}
	return current, arch, queue, cleanup, err
}

// run is the example: two employees leave, and a worker archives them.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	current, arch, queue, cleanup, err := setup(ctx, acct)
	defer cleanup()
	if err != nil {
		return err
	}

	// The HR app's side: a Client sends typed messages to the work queue.
	client, err := archive.OpenClient(acct, queue, nil)
	if err != nil {
		return err
	}
	for _, id := range []string{"000123", "000124"} {
		if _, err := client.Enqueue(ctx, archive.MoveKind, archive.MoveRequest{PartitionKey: "Sales", RowKey: id}, nil); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "Current holds 5 employees; 000123 and 000124 leave: the HR app enqueues a message for each and is done")
	// The worker's side: a Mux routes messages by kind; the Mover moves in
	// idempotent steps (read Current, upsert into Archive, delete from Current).
	var mux archive.Mux
	mover := &archive.Mover[Employee]{Current: current, Archive: arch}
	if err := archive.HandleFunc(&mux, archive.MoveKind, mover.Handle); err != nil {
		return err
	}
	worker, err := archive.OpenWorker(acct, queue, &mux, &archive.WorkerOptions{PollInterval: 200 * time.Millisecond})
	if err != nil {
		return err
	}
	before := acct.Meter().Snapshot()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(runCtx) }()
	for deadline := time.Now().Add(30 * time.Second); worker.Stats().Succeeded < 2 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil { // Run lets the handlers in flight finish first
		return err
	}
	cost := acct.Meter().Snapshot().Sub(before)
	fmt.Fprintf(out, "the worker moved each employee, then deleted its message: %s\n", contents(ctx, current, arch))
	fmt.Fprintf(out, "a move costs 3 table transactions: GetEntity=%d UpdateEntity=%d (the upsert) DeleteEntity=%d, and its message's DeleteMessage=%d\n",
		cost.Count("table", "GetEntity"), cost.Count("table", "UpdateEntity"), cost.Count("table", "DeleteEntity"), cost.Count("queue", "DeleteMessage"))
	return nil
}

// contents lists the employee ids in each table (small tables: reading all
// of each is meant).
func contents(ctx context.Context, current, arch *tablekit.Table[Employee]) string {
	var ids [2][]string
	for i, t := range []*tablekit.Table[Employee]{current, arch} {
		for e, err := range t.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true}) {
			if err != nil {
				return err.Error()
			}
			ids[i] = append(ids[i], e.ID)
		}
		slices.Sort(ids[i])
	}
	return fmt.Sprintf("Current: %v, Archive: %v", ids[0], ids[1])
}
