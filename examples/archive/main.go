// Command archive shows the eventually consistent transactions pattern: a
// queue worker moves each employee who leaves from the Current table to the
// Archive table, with idempotent steps retried after a failure, a
// claim-check blob for a large payload, and a poison queue.
//
// It is the design guide's own scenario: an entity group transaction cannot
// span two tables, so the HR app enqueues a message asking for the move,
// and the worker applies it, deleting the message only once every step
// succeeded.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/archive
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/azurite"
)

// Employee is the guide's employee entity: the department is the
// PartitionKey, the employee id the RowKey. With an etag field, the move's
// delete from Current is conditional on the version it read, so an update
// made meanwhile is not lost.
type Employee struct {
	Department string      `table:",pk"`
	ID         string      `table:",rk"`
	ETag       azcore.ETag `table:",etag"`
	Name       string
	Email      string
}

// LeaveRequest is a move that carries the employee's handover notes: a
// payload larger than a queue message (64 KiB) may hold.
type LeaveRequest struct {
	archive.MoveRequest
	Handover string `json:"handover"`
}

// LeaveKind is the kind of the messages that carry a LeaveRequest.
const LeaveKind = "hr.leave"

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
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "archive:", err)
		os.Exit(1)
	}
}

// run is the example: it creates two tables, a work queue and its
// claim-check container, uses them, and deletes them (and the poison queue
// the worker creates).
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	suffix := rand.Text()[:8]
	current, err := tablekit.OpenTable[Employee](acct, "Current"+suffix, nil)
	if err != nil {
		return err
	}
	arch, err := tablekit.OpenTable[Employee](acct, "Archive"+suffix, nil)
	if err != nil {
		return err
	}
	for _, t := range []*tablekit.Table[Employee]{current, arch} {
		if err := t.CreateIfNotExists(ctx); err != nil {
			return err
		}
		defer t.DeleteTable(context.WithoutCancel(ctx))
	}
	queueName := "archive-" + strings.ToLower(suffix)
	queue := acct.Queues().NewQueueClient(queueName)
	if _, err := queue.Create(ctx, nil); err != nil {
		return fmt.Errorf("CreateQueue: %w", err)
	}
	defer queue.Delete(context.WithoutCancel(ctx), nil)
	// The worker creates its poison queue on first use.
	poison := acct.Queues().NewQueueClient(archive.PoisonQueueName(queueName))
	defer poison.Delete(context.WithoutCancel(ctx), nil)
	// The claim-check container: the Client would create it on its first
	// large payload, at the cost of a refused PutBlob.
	claims := acct.Blobs().ServiceClient().NewContainerClient(archive.ClaimContainerName(queueName))
	if _, err := claims.Create(ctx, nil); err != nil {
		return fmt.Errorf("CreateContainer: %w", err)
	}
	defer claims.Delete(context.WithoutCancel(ctx), nil)
	meter := acct.Meter()

	staff := []Employee{
		{Department: "Sales", ID: "000123", Name: "Ann Jones", Email: "ann@contoso.com"},
		{Department: "Sales", ID: "000124", Name: "Bo Chen", Email: "bo@contoso.com"},
		{Department: "Marketing", ID: "000223", Name: "Cy Diaz", Email: "cy@contoso.com"},
		{Department: "Marketing", ID: "000224", Name: "Di Evans", Email: "di@contoso.com"},
		{Department: "Engineering", ID: "000301", Name: "Ed Fox", Email: "ed@contoso.com"},
	}
	if _, err := current.BulkWriter(nil).Insert(ctx, staff); err != nil {
		return err
	}
	fmt.Fprintf(out, "Current holds %d employees, Archive none. An entity group transaction cannot span two tables,\n", len(staff))
	fmt.Fprintln(out, "so the move is eventually consistent: a queue message asks for it, a worker applies it")

	// The HR app's side: a Client sends typed messages to the work queue.
	client, err := archive.OpenClient(acct, queueName, nil)
	if err != nil {
		return err
	}
	before := meter.Snapshot()
	for _, e := range staff[:2] {
		if _, err := archive.RequestMove(ctx, client, "", e.Department, e.ID); err != nil {
			return err
		}
	}
	enqueued := meter.Snapshot().Sub(before)
	fmt.Fprintf(out, "employees 000123 and 000124 leave: the HR app enqueues one message each (%d transactions: PutMessage=%d) and is done\n",
		enqueued.Total(), enqueued.Count("queue", "PutMessage"))
	one := int32(1)
	peek, err := queue.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: &one})
	if err != nil {
		return fmt.Errorf("PeekMessages: %w", err)
	}
	if len(peek.Messages) != 1 {
		return fmt.Errorf("peek: %d messages, want 1", len(peek.Messages))
	}
	body, err := base64.StdEncoding.DecodeString(*peek.Messages[0].MessageText)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "a message is base64 JSON, as Azure Functions expects: %s\n", body)

	// The worker's side: a Mux routes messages by kind to typed handlers.
	// The Mover does the move in idempotent steps: read Current, upsert
	// (replace) into Archive, delete from Current.
	mover := &archive.Mover[Employee]{Current: current, Archive: arch}
	mux := archive.NewMux()
	const crashID = "000223"
	var (
		mu        sync.Mutex
		lastError string // what the retry of crashID found in its message
		claimBlob string // the claim-check blob the leave request came in
		handover  int    // the size of the handover notes the handler got
	)
	err = archive.HandleFunc(mux, archive.MoveKind, func(ctx context.Context, req archive.MoveRequest) error {
		msg := archive.MessageFromContext(ctx)
		if req.RowKey == crashID {
			if msg.DequeueCount == 1 {
				// A worker failing half-way: the Archive write
				// happens, the Current delete does not.
				e, err := current.Get(ctx, req.PartitionKey, req.RowKey)
				if err != nil {
					return err
				}
				if _, err := arch.Upsert(ctx, e); err != nil {
					return err
				}
				return errors.New("simulated crash after the Archive write")
			}
			mu.Lock()
			lastError = msg.LastError
			mu.Unlock()
		}
		return mover.Handle(ctx, req)
	})
	if err != nil {
		return err
	}
	err = archive.HandleFunc(mux, LeaveKind, func(ctx context.Context, req LeaveRequest) error {
		mu.Lock()
		claimBlob, handover = archive.MessageFromContext(ctx).Blob, len(req.Handover)
		mu.Unlock()
		return mover.Handle(ctx, req.MoveRequest)
	})
	if err != nil {
		return err
	}
	worker, err := archive.OpenWorker(acct, queueName, mux, &archive.WorkerOptions{
		Concurrency:       4,
		VisibilityTimeout: 2 * time.Second,
		// 3 attempts; a failed message is visible again after 1 s.
		Retry:           tablekit.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Second},
		MinPollInterval: 20 * time.Millisecond,
		MaxPollInterval: 200 * time.Millisecond,
		DrainTimeout:    5 * time.Second,
	})
	if err != nil {
		return err
	}

	before = meter.Snapshot()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(runCtx) }()
	stopped := false
	stopWorker := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	defer stopWorker()

	if err := waitFor(ctx, "the two moves", func() bool { return worker.Stats().Succeeded == 2 }); err != nil {
		return err
	}
	cost := meter.Snapshot().Sub(before)
	where, err := contents(ctx, current, arch)
	if err != nil {
		return err
	}
	if want := "Current: [000223 000224 000301], Archive: [000123 000124]"; where != want {
		return fmt.Errorf("after the two moves: %s, want %s", where, want)
	}
	fmt.Fprintf(out, "the worker dequeued both messages, moved each employee, then deleted each message: %s\n", where)
	if got := cost.Service("table"); got != 6 {
		return fmt.Errorf("two moves cost %d table transactions, want 6", got)
	}
	fmt.Fprintf(out, "a move costs 3 table transactions (GetEntity, UpdateEntity for the upsert into Archive, DeleteEntity): here GetEntity=%d UpdateEntity=%d DeleteEntity=%d,\n",
		cost.Count("table", "GetEntity"), cost.Count("table", "UpdateEntity"), cost.Count("table", "DeleteEntity"))
	fmt.Fprintf(out, "and 1 queue transaction to delete its message (DeleteMessage=%d), besides the worker's polls (GetMessages=%d so far)\n",
		cost.Count("queue", "DeleteMessage"), cost.Count("queue", "GetMessages"))

	// A move that fails half-way.
	if _, err := archive.RequestMove(ctx, client, "", "Marketing", crashID); err != nil {
		return err
	}
	if err := waitFor(ctx, "the failed attempt", func() bool { return worker.Stats().Failed == 1 }); err != nil {
		return err
	}
	in, err := tablesHolding(ctx, current, arch, "Marketing", crashID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "employee %s: the first attempt wrote Archive, then failed before the delete from Current: for now it is in %s\n", crashID, in)
	if err := waitFor(ctx, "the retry", func() bool { return worker.Stats().Succeeded == 3 }); err != nil {
		return err
	}
	in, err = tablesHolding(ctx, current, arch, "Marketing", crashID)
	if err != nil {
		return err
	}
	if in != "Archive" {
		return fmt.Errorf("after the retry employee %s is in %s, want Archive", crashID, in)
	}
	mu.Lock()
	seen := lastError
	mu.Unlock()
	if !strings.Contains(seen, "simulated crash") {
		return fmt.Errorf("the retry found LastError %q, want the first attempt's error", seen)
	}
	fmt.Fprintf(out, "the message was not deleted, so the queue delivered it again once its back-off (Retry.BaseDelay, 1 s) was over, with the error the first attempt wrote into it: %q\n", seen)
	fmt.Fprintf(out, "the retry repeated every step (an upsert that replaces and a delete are idempotent) and finished the move: it is in %s only\n", in)

	// A payload over the queue's limit: the Client writes it to a blob in
	// the claim-check container, and the message carries the blob's name.
	leave := LeaveRequest{
		MoveRequest: archive.MoveRequest{PartitionKey: "Marketing", RowKey: "000224"},
		Handover:    strings.Repeat("handover notes. ", 6400), // 100 KiB
	}
	before = meter.Snapshot()
	if _, err := client.Enqueue(ctx, LeaveKind, leave, nil); err != nil {
		return err
	}
	sent := meter.Snapshot().Sub(before)
	if sent.Count("blob", "PutBlob") != 1 || sent.Count("queue", "PutMessage") != 1 {
		return fmt.Errorf("enqueueing a 100 KiB payload: %v, want a PutBlob and a PutMessage", sent)
	}
	fmt.Fprintf(out, "employee 000224 leaves with 100 KiB of handover notes, over the 64 KiB a message holds: Enqueue wrote the payload to a blob (PutBlob=%d) and sent its name (PutMessage=%d)\n",
		sent.Count("blob", "PutBlob"), sent.Count("queue", "PutMessage"))
	if err := waitFor(ctx, "the claim-check move", func() bool { return worker.Stats().Succeeded == 4 }); err != nil {
		return err
	}
	mu.Lock()
	blob, size := claimBlob, handover
	mu.Unlock()
	left, err := countBlobs(ctx, claims)
	if err != nil {
		return err
	}
	if blob == "" || size != len(leave.Handover) || left != 0 {
		return fmt.Errorf("claim check: the handler got %d bytes from blob %q, %d blobs left; want %d bytes from a blob, none left", size, blob, left, len(leave.Handover))
	}
	fmt.Fprintf(out, "the worker read the blob first (the handler got all %d bytes) and deleted it after the message: %d blobs left in %s\n",
		size, left, archive.ClaimContainerName("<queue>"))

	// A message no handler can process goes to the poison queue.
	if _, err := client.Enqueue(ctx, "archive.purge", archive.MoveRequest{PartitionKey: "Sales", RowKey: "000999"}, nil); err != nil {
		return err
	}
	if err := waitFor(ctx, "the poison message", func() bool { return worker.Stats().Poisoned == 1 }); err != nil {
		return err
	}
	if err := stopWorker(); err != nil {
		return err
	}
	// Reading the poison queue, and deleting what was read, is the
	// application's part.
	resp, err := poison.DequeueMessages(ctx, nil)
	if err != nil {
		return fmt.Errorf("DequeueMessages: %w", err)
	}
	if len(resp.Messages) != 1 {
		return fmt.Errorf("the poison queue holds %d messages, want 1", len(resp.Messages))
	}
	m := resp.Messages[0]
	p, err := archive.ParsePoison(*m.MessageText)
	if err != nil {
		return err
	}
	if p.Kind != "archive.purge" || p.Record.DequeueCount != 1 || !strings.Contains(p.Record.Error, "no handler") {
		return fmt.Errorf("poison record: kind %q after %d attempts, error %q", p.Kind, p.Record.DequeueCount, p.Record.Error)
	}
	if _, err := poison.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil); err != nil {
		return fmt.Errorf("DeleteMessage: %w", err)
	}
	// The record's error names the message ID; the narration leaves it out.
	_, reason, _ := strings.Cut(p.Record.Error, p.Record.MessageID+": ")
	fmt.Fprintf(out, "a message of unknown kind %q failed permanently: it went to %s after %d attempt, with its error: %q\n",
		p.Kind, archive.PoisonQueueName("<queue>"), p.Record.DequeueCount, reason)

	s := worker.Stats()
	where, err = contents(ctx, current, arch)
	if err != nil {
		return err
	}
	if want := "Current: [000301], Archive: [000123 000124 000223 000224]"; where != want {
		return fmt.Errorf("at the end: %s, want %s", where, want)
	}
	fmt.Fprintf(out, "worker stopped (it lets the handlers in flight finish first): %d received, %d handled, %d failed attempts, %d poisoned; %s\n",
		s.Received, s.Succeeded, s.Failed, s.Poisoned, where)
	fmt.Fprintf(out, "its Stats also tell how many handlers it runs at once (%d; fewer while the service throttles them) and how long messages waited in the queue (at most about %v here: the queue stamps insertion times to the second)\n",
		s.Concurrency, s.MaxQueueAge.Round(time.Second))
	return nil
}

// waitFor polls cond every 20 ms for up to 30 s.
func waitFor(ctx context.Context, what string, cond func() bool) error {
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up waiting for %s", what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// contents lists the employee ids in each table.
func contents(ctx context.Context, current, arch *tablekit.Table[Employee]) (string, error) {
	var ids [2][]string
	for i, t := range []*tablekit.Table[Employee]{current, arch} {
		// Both tables are small: reading all of each is meant.
		for e, err := range t.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true}) {
			if err != nil {
				return "", err
			}
			ids[i] = append(ids[i], e.ID)
		}
		slices.Sort(ids[i])
	}
	return fmt.Sprintf("Current: %v, Archive: %v", ids[0], ids[1]), nil
}

// tablesHolding says which of the tables hold the entity pk/rk.
func tablesHolding(ctx context.Context, current, arch *tablekit.Table[Employee], pk, rk string) (string, error) {
	var in []string
	for _, t := range []struct {
		name  string
		table *tablekit.Table[Employee]
	}{{"Current", current}, {"Archive", arch}} {
		_, err := t.table.Get(ctx, pk, rk)
		switch {
		case err == nil:
			in = append(in, t.name)
		case !errors.Is(err, tablekit.ErrNotFound):
			return "", err
		}
	}
	if len(in) == 0 {
		return "neither table", nil
	}
	return strings.Join(in, " and "), nil
}

// countBlobs counts the blobs in c; a container never created has none.
func countBlobs(ctx context.Context, c *container.Client) (int, error) {
	n := 0
	pager := c.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if bloberror.HasCode(err, bloberror.ContainerNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("ListBlobs: %w", err)
		}
		n += len(page.Segment.BlobItems)
	}
	return n, nil
}
