package archive_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
)

// The guide's scenario: when an employee leaves, the HR application asks
// for the employee to be archived; a worker moves the entity from Current
// to Archive.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	acct, err := tablekit.Open(os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), nil)
	if err != nil {
		log.Fatal(err)
	}
	current, err := tablekit.OpenTable[Employee](acct, "Current", nil)
	if err != nil {
		log.Fatal(err)
	}
	archived, err := tablekit.OpenTable[Employee](acct, "Archive", nil)
	if err != nil {
		log.Fatal(err)
	}

	// The sender: one message per change.
	client, err := archive.OpenClient(acct, "employee-archive", nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.Enqueue(ctx, archive.MoveKind, archive.MoveRequest{PartitionKey: "Sales", RowKey: "000223"}, nil); err != nil {
		log.Fatal(err)
	}

	// The worker: typed handlers by kind; the Mover's steps are idempotent.
	mux := new(archive.Mux)
	mover := &archive.Mover[Employee]{Current: current, Archive: archived}
	if err := archive.HandleFunc(mux, archive.MoveKind, mover.Handle); err != nil {
		log.Fatal(err)
	}
	w, err := archive.OpenWorker(acct, "employee-archive", mux, &archive.WorkerOptions{
		Concurrency:       16,
		VisibilityTimeout: time.Minute,
	}) // it logs to the Account's Options.Logger (nil: slog.Default())
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Run(ctx); err != nil { // until Ctrl-C, then drains
		log.Fatal(err)
	}
}

// A typed handler for a kind of message of your own.
func ExampleHandleFunc() {
	type Rename struct {
		Department, ID, NewName string
	}
	var employees *tablekit.Table[Employee] // opened elsewhere
	mux := new(archive.Mux)
	err := archive.HandleFunc(mux, "employee.rename", func(ctx context.Context, r Rename) error {
		e, err := employees.Get(ctx, r.Department, r.ID)
		if err != nil {
			return err // retried; after Retry.MaxAttempts attempts: poison queue
		}
		e.Name = r.NewName
		_, err = employees.Upsert(ctx, e) // idempotent
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
}
