// Command cqrs shows materialized views (CQRS) on the design guide's
// employees as events: each employee's history is an event stream
// (package stream) appended under optimistic concurrency, a relay elected
// by a lease feeds a view by last name (package feed), and each hire is a
// message of a transactional outbox (package outbox), handled once.
//
// It runs against AZURE_STORAGE_CONNECTION_STRING's account, or an Azurite
// it starts (Node.js 18+): go run ./examples/cqrs
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/outbox"
	"github.com/tablekit/tablekit/stream"
)

// Hired and Moved are the employees' events: table structs, whose key
// fields reads fill with the event row's keys (kept out of the messages).
type Hired struct {
	Employee                        string `table:",pk" json:"-"`
	Row                             string `table:",rk" json:"-"`
	FirstName, LastName, Department string
}
type Moved struct {
	Employee   string `table:",pk" json:"-"`
	Row        string `table:",rk" json:"-"`
	Department string
}

// ByLastName is a row of the view by last name, as its Projector folds
// it: typed, as the table's codec reads and writes it.
type ByLastName struct {
	LastName  string `table:",pk"`
	Row       string `table:",rk"`
	Employees string
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err == nil {
		var acct *tablekit.Account
		if acct, err = tablekit.Open(conn, nil); err == nil {
			err = run(ctx, acct, os.Stdout)
			fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
		}
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cqrs:", err)
		os.Exit(1)
	}
}

// run is the example: it creates four tables and a queue, uses them, and deletes them.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	suffix, bg := rand.Text()[:8], context.WithoutCancel(ctx)
	queue := "cqrs-" + strings.ToLower(suffix)
	defer acct.Queues().NewQueueClient(queue+"-poison").Delete(bg, nil)
	defer acct.Queues().NewQueueClient(queue).Delete(bg, nil)
	_, err := acct.Queues().NewQueueClient(queue).Create(ctx, nil)
	t := map[string]*tablekit.Table[tablekit.Entity]{}
	for _, name := range []string{"Employees", "Feed", "ByLastName", "Badges"} {
		if err != nil {
			return err
		}
		if t[name], err = tablekit.OpenTable[tablekit.Entity](acct, name+suffix, nil); err == nil {
			err = t[name].CreateIfNotExists(ctx)
			defer t[name].DeleteTable(bg)
		}
	}
	if err != nil {
		return err
	}
	cost := func(before tablekit.MeterSnapshot) int64 { return acct.Meter().Snapshot().Sub(before).Total() }

	// The write side: a stream per employee in the employee's partition
	// (employees change departments), beside their current row, which the
	// append's transaction writes too. The Feed marks each append (1 write).
	reg := &tablekit.Registry{}
	err1, err2 := tablekit.Register[Hired](reg, "Hired", 1), tablekit.Register[Moved](reg, "Moved", 1)
	store, err3 := stream.NewStore(t["Employees"], reg, nil)
	f, err4 := feed.New(store, t["Feed"], nil)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return err // the constructors fail on bad input only, before sending anything
	}
	before := acct.Meter().Snapshot()
	for _, h := range []Hired{{"000123", "", "Lisa", "Jones", "Sales"}, {"000223", "", "Jon", "Jones", "Sales"}, {"000100", "", "Adam", "Barr", "Sales"}} {
		current := tablekit.InsertAction(tablekit.Entity{PartitionKey: h.Employee, RowKey: "current",
			Properties: map[string]any{"Name": h.FirstName + " " + h.LastName, "Department": h.Department}})
		if _, err := f.Append(ctx, stream.ID{PartitionKey: h.Employee}, 0, []stream.Event{{ID: "hire", Data: h}}, current); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "a hire: its Hired event (an outbox message too) and the current row in 1 EGT, after the feed's mark (1 write): %d transactions\n", cost(before)/3)
	// Lisa moves: the expected version guards the whole EGT, her row needs no ETag.
	lisa, moved := stream.ID{PartitionKey: "000123"}, []stream.Event{{ID: "move-1", Data: Moved{Department: "Marketing"}}}
	current := tablekit.MergeAction(tablekit.Entity{PartitionKey: "000123", RowKey: "current", Properties: map[string]any{"Department": "Marketing"}}, "*")
	if _, err := f.Append(ctx, lisa, 1, moved, current); err != nil {
		return err
	}
	before = acct.Meter().Snapshot()
	_, err = f.Append(ctx, lisa, 1, []stream.Event{{ID: "move-2", Data: Moved{Department: "Legal"}}})
	var ce *stream.ConflictError
	if !errors.As(err, &ce) {
		return fmt.Errorf("a stale append: %v, want a conflict", err)
	}
	fmt.Fprintf(out, "a stale writer expecting version %d is refused: current version %d (ErrPreconditionFailed: %v), %d transactions\n",
		ce.Expected, ce.Current, errors.Is(err, tablekit.ErrPreconditionFailed), cost(before))
	before = acct.Meter().Snapshot()
	r, err := f.Append(ctx, lisa, 1, moved, current) // as after a lost answer
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Lisa's move to Marketing sent again with its event id: replayed=%v, version %d, %d transactions\n", r.Replayed, r.Last, cost(before))

	// The read side: a row per last name, each event folded into it once.
	byLastName, err := tablekit.OpenTable[ByLastName](acct, t["ByLastName"].Name(), nil)
	if err != nil {
		return err
	}
	view, err1 := feed.NewProjector(byLastName, func(c feed.Change) []feed.Row {
		if h, ok := c.Data.(Hired); ok {
			return []feed.Row{{PartitionKey: h.LastName, RowKey: "employees"}}
		}
		return nil // not a Hired event: not for this view
	}, func(v *ByLastName, c feed.Change) error {
		v.Employees = strings.TrimPrefix(v.Employees+", "+c.Data.(Hired).FirstName+" ("+c.Stream.PartitionKey+")", ", ")
		return nil
	})
	// The outbox: an employee's stream is theirs (a hire's event commits with
	// its current row); a Publisher of the Store's streams of prefix "" (the
	// employees') sends the hires to the badge office's queue.
	client, err2 := archive.OpenClient(acct, queue, nil)
	pub, err3 := outbox.NewPublisher(client, store, "", nil)
	hires := func(ctx context.Context, c feed.Change) error {
		if _, ok := c.Data.(Hired); !ok {
			return nil
		}
		return pub.Handle(ctx, c)
	}
	relay, err4 := f.NewRelay([]feed.Subscription{{Name: "bylastname", Handle: view.Handle}, {Name: "badges", Handle: hires}},
		&feed.RelayOptions{Interval: 50 * time.Millisecond})
	lease, err5 := coord.NewLease(t["Feed"], "lease", "relay", "relay-"+suffix, &coord.LeaseOptions{Duration: 2 * time.Second})
	// The badge office's worker inserts a badge per message in the partition
	// "badges", in a transaction keyed by the message's id: a copy is a
	// no-op (not a failed insert).
	handler, err6 := outbox.NewHandler(t["Badges"], func(outbox.Message) string { return "badges" }, func(ctx context.Context, msg outbox.Message) ([]tablekit.Action[tablekit.Entity], error) {
		var h Hired
		err := msg.Decode(&h)
		badge := tablekit.Entity{PartitionKey: "badges", RowKey: msg.Stream.PartitionKey, Properties: map[string]any{"Name": h.FirstName + " " + h.LastName}}
		return []tablekit.Action[tablekit.Entity]{tablekit.InsertAction(badge)}, err
	}, nil)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return err
	}
	var mux archive.Mux
	mux.Register(outbox.Kind, handler)
	worker, err := archive.OpenWorker(acct, queue, &mux, &archive.WorkerOptions{PollInterval: 100 * time.Millisecond})
	if err != nil {
		return err
	}
	running, stop := context.WithCancel(ctx)
	done := make(chan error, 2)
	defer func() { stop(); <-done; <-done }() // before the deletes
	go func() { done <- relay.Run(running, lease) }()
	go func() { done <- worker.Run(running) }()
	var jones ByLastName
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(jones.Employees, ", ") || worker.Stats().Succeeded < 3; time.Sleep(20 * time.Millisecond) {
		if jones, err = byLastName.Get(ctx, "Jones", "employees"); time.Now().After(deadline) {
			return fmt.Errorf("the view and the badges did not catch up in 30 s: %v", err)
		}
	}
	fmt.Fprintf(out, "the relay, leading by lease, caught the view up; by last name Jones: %s\n", jones.Employees)
	// A relay that died before its checkpoint would publish a message again:
	// the same change (the same id and data; a message with Lisa's id and
	// other data would be refused, not taken for a copy).
	if err := pub.Handle(ctx, feed.Change{Stream: lisa, Version: 1, EventID: "hire", Data: Hired{"000123", "", "Lisa", "Jones", "Sales"}}); err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); worker.Stats().Succeeded < 4 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	n, err := t["Badges"].Count(ctx, tablekit.RowKeyRange("badges", "", coord.ReservedPrefix)) // the badges, not the keys' records
	fmt.Fprintf(out, "outbox: %d messages handled (3 hires and a copy of Lisa's), %d failed, %d badges inserted\n", worker.Stats().Succeeded, worker.Stats().Failed, n)
	return err
}
