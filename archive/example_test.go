package archive_test

import (
	"context"
	"log"
	"log/slog"
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
	if _, err := archive.RequestMove(ctx, client, "", "Sales", "000223"); err != nil {
		log.Fatal(err)
	}

	// The worker: typed handlers by kind; the Mover's steps are idempotent.
	mux := archive.NewMux()
	mover := &archive.Mover[Employee]{Current: current, Archive: archived}
	if err := mover.Register(mux, archive.MoveKind); err != nil {
		log.Fatal(err)
	}
	w, err := archive.OpenWorker(acct, "employee-archive", mux, &archive.WorkerOptions{
		Concurrency:       16,
		VisibilityTimeout: time.Minute,
		Logger:            slog.Default(),
	})
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
	mux := archive.NewMux()
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
