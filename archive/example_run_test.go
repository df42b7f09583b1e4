package archive_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/azurite"
)

// The archive move end to end against the tests' Azurite: a request is
// queued, a worker moves the employee from Current to Archive, and the
// message is deleted once every idempotent step succeeded.
func ExampleMover() {
	ctx := context.Background()
	// The account in AZURE_STORAGE_CONNECTION_STRING, or a local Azurite.
	conn, stopAzurite, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stopAzurite()
	acct, err := tablekit.Open(conn, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	suffix := fmt.Sprint(time.Now().UnixNano() % 1e9)
	current, _ := tablekit.OpenTable[Employee](acct, "Current"+suffix, nil)
	archived, _ := tablekit.OpenTable[Employee](acct, "Archive"+suffix, nil)
	for _, t := range []*tablekit.Table[Employee]{current, archived} {
		if err := t.CreateIfNotExists(ctx); err != nil {
			fmt.Println(err)
			return
		}
		defer t.DeleteTable(ctx)
	}
	queue := "example-archive-" + suffix
	if _, err := acct.Queues().NewQueueClient(queue).Create(ctx, nil); err != nil {
		fmt.Println(err)
		return
	}
	defer acct.Queues().NewQueueClient(queue).Delete(ctx, nil)
	if _, err := current.Insert(ctx, Employee{Department: "Sales", ID: "000223", Name: "Jon Jones"}); err != nil {
		fmt.Println(err)
		return
	}

	client, err := archive.OpenClient(acct, queue, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := client.Enqueue(ctx, archive.MoveKind, archive.MoveRequest{PartitionKey: "Sales", RowKey: "000223"}, nil); err != nil {
		fmt.Println(err)
		return
	}

	mux := new(archive.Mux)
	mover := &archive.Mover[Employee]{Current: current, Archive: archived}
	if err := archive.HandleFunc(mux, archive.MoveKind, mover.Handle); err != nil {
		fmt.Println(err)
		return
	}
	w, err := archive.OpenWorker(acct, queue, mux, &archive.WorkerOptions{VisibilityTimeout: 5 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	runCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	for runCtx.Err() == nil && w.Stats().Succeeded == 0 {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	<-done

	_, err = current.Get(ctx, "Sales", "000223")
	fmt.Println("in Current:", !errors.Is(err, tablekit.ErrNotFound))
	e, err := archived.Get(ctx, "Sales", "000223")
	fmt.Println("in Archive:", e.Name, err)
	// Output:
	// in Current: false
	// in Archive: Jon Jones <nil>
}
