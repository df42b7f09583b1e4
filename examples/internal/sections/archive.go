package sections

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/examples/internal/demo"
)

// Archive shows the eventually consistent transactions pattern with the
// design guide's own scenario: when an employee leaves, a queue message
// asks for the employee to be moved from the Current table to the Archive
// table, and a worker applies the move with idempotent steps.
func Archive() demo.Section {
	return demo.Section{
		Name:        "archive",
		Description: "eventually consistent transactions: a queue worker moves employees Current -> Archive, retries, poison queue",
		Run:         runArchive,
	}
}

// arEmployee is the guide's employee entity.
type arEmployee struct {
	Department string      `table:",pk"`
	ID         string      `table:",rk"`
	Name       string      `table:"Name"`
	Email      string      `table:"Email"`
	ETag       azcore.ETag `table:",etag"`
}

func runArchive(ctx context.Context, env *demo.Env) error {
	acct := env.Account
	current, err := arTable(ctx, env, "Current")
	if err != nil {
		return err
	}
	arch, err := arTable(ctx, env, "Archive")
	if err != nil {
		return err
	}
	queueName := env.QueueName("archive")
	queue := acct.Queue(queueName)
	if _, err := queue.Create(ctx, nil); err != nil {
		return tablekit.WrapError("CreateQueue", err)
	}
	poison := acct.Queue(archive.PoisonQueueName(queueName))
	claims := acct.Container(archive.ClaimContainerName(queueName))
	env.Defer(func(ctx context.Context) error {
		var errs []error
		for _, q := range []*azqueue.QueueClient{queue, poison} {
			if _, err := q.Delete(ctx, nil); err != nil && !errors.Is(tablekit.WrapError("DeleteQueue", err), tablekit.ErrNotFound) {
				errs = append(errs, tablekit.WrapError("DeleteQueue", err))
			}
		}
		if _, err := claims.Delete(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerNotFound) {
			errs = append(errs, tablekit.WrapError("DeleteContainer", err))
		}
		return errors.Join(errs...)
	})

	staff := []arEmployee{
		{Department: "Sales", ID: "000123", Name: "Ann Jones", Email: "ann@contoso.com"},
		{Department: "Sales", ID: "000124", Name: "Bo Chen", Email: "bo@contoso.com"},
		{Department: "Marketing", ID: "000223", Name: "Cy Diaz", Email: "cy@contoso.com"},
		{Department: "Marketing", ID: "000224", Name: "Di Evans", Email: "di@contoso.com"},
		{Department: "Engineering", ID: "000301", Name: "Ed Fox", Email: "ed@contoso.com"},
	}
	if _, err := current.BulkWriter(nil).Upsert(ctx, staff); err != nil {
		return err
	}
	env.Say("table %s holds %d employees; %s is empty. An entity group transaction cannot span two tables,", current.Name(), len(staff), arch.Name())
	env.Say("so moving an employee is made eventually consistent: a queue message asks for the move, a worker applies it")

	// The worker: a Mux routes messages by kind to typed handlers; the
	// Mover does read Current -> upsert (replace) Archive -> delete Current.
	mover := &archive.Mover[arEmployee]{Current: current, Archive: arch}
	const crashID = "000223"
	mux := archive.NewMux()
	if err := archive.HandleFunc(mux, archive.MoveKind, func(ctx context.Context, req archive.MoveRequest) error {
		msg := archive.MessageFromContext(ctx)
		if req.RowKey == crashID && msg.DequeueCount == 1 {
			// Simulate a worker failing half-way: the Archive write
			// happens, the Current delete does not.
			e, err := current.Get(ctx, req.PartitionKey, req.RowKey, nil)
			if err != nil {
				return err
			}
			if _, err := arch.Upsert(ctx, e, tablekit.Replace); err != nil {
				return err
			}
			return errors.New("simulated crash after the Archive write")
		}
		return mover.Handle(ctx, req)
	}); err != nil {
		return err
	}
	worker, err := archive.OpenWorker(acct, queueName, mux, &archive.WorkerOptions{
		Concurrency:       4,
		VisibilityTimeout: 2 * time.Second,
		// 3 attempts; a failed message waits 1 s before its retry.
		Retry:           tablekit.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Second},
		MinPollInterval: 20 * time.Millisecond,
		MaxPollInterval: 200 * time.Millisecond,
		DrainTimeout:    5 * time.Second,
	})
	if err != nil {
		return err
	}
	client, err := archive.OpenClient(acct, queueName, nil)
	if err != nil {
		return err
	}

	// Two employees leave.
	before := acct.Meter().Snapshot()
	for _, e := range staff[:2] {
		if _, err := archive.RequestMove(ctx, client, "", e.Department, e.ID); err != nil {
			return err
		}
	}
	env.Say("employees %s and %s leave: the HR app enqueues one message each (%d PutMessage) and is done", staff[0].ID, staff[1].ID, acct.Meter().Snapshot().Sub(before).Count("queue", "PutMessage"))
	peek, err := queue.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: arPtr32(1)})
	if err != nil {
		return tablekit.WrapError("PeekMessages", err)
	}
	if len(peek.Messages) == 1 {
		body, _ := base64.StdEncoding.DecodeString(*peek.Messages[0].MessageText)
		env.Say("a message is base64 JSON, as Azure Functions expects: %s", body)
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(runCtx) }()
	stopped := false
	stopWorker := func() error {
		if stopped {
			return nil
		}
		stopped = true
		stop()
		return <-done
	}
	defer stopWorker()

	before = acct.Meter().Snapshot()
	if err := arWait(ctx, "the two moves", func() bool { return worker.Stats().Succeeded == 2 }); err != nil {
		return err
	}
	cost := acct.Meter().Snapshot().Sub(before)
	env.Say("the worker dequeued them, moved each employee, then deleted each message: %s", arCounts(ctx, current, arch))
	env.Say("a move costs GetEntity + UpdateEntity (upsert into Archive) + DeleteEntity + DeleteMessage; here %d table and %d queue transactions in all (the queue ones include the polls of an idle worker)",
		cost.Service("table"), cost.Service("queue"))

	// A move that fails half-way.
	if _, err := archive.RequestMove(ctx, client, "", "Marketing", crashID); err != nil {
		return err
	}
	if err := arWait(ctx, "the failed attempt", func() bool { return worker.Stats().Failed == 1 }); err != nil {
		return err
	}
	env.Say("employee %s: the first attempt wrote Archive and then failed before deleting from Current; for a moment %s", crashID, arWhere(ctx, current, arch, "Marketing", crashID))
	env.Say("the message was not deleted, so the queue delivers it again (the error is recorded in the message)")
	if err := arWait(ctx, "the retry", func() bool { return worker.Stats().Succeeded == 3 }); err != nil {
		return err
	}
	env.Say("the retry repeated every step (an upsert that replaces and a delete are idempotent) and finished the move: %s", arWhere(ctx, current, arch, "Marketing", crashID))

	// A message no handler can process ends in the poison queue.
	if _, err := client.Enqueue(ctx, "archive.purge", archive.MoveRequest{PartitionKey: "Sales", RowKey: "000999"}, nil); err != nil {
		return err
	}
	if err := arWait(ctx, "the poison message", func() bool { return worker.Stats().Poisoned == 1 }); err != nil {
		return err
	}
	if err := stopWorker(); err != nil {
		return err
	}
	resp, err := poison.DequeueMessages(ctx, nil)
	if err != nil {
		return tablekit.WrapError("DequeueMessages", err)
	}
	for _, m := range resp.Messages {
		p, err := archive.ParsePoison(*m.MessageText)
		if err != nil {
			return err
		}
		env.Say("a message of unknown kind %q failed permanently and went to %s after %d attempt(s), with its error: %q",
			p.Kind, archive.PoisonQueueName("<queue>"), p.Record.DequeueCount, arShortErr(p.Record.Error))
	}
	s := worker.Stats()
	env.Say("worker stopped (it drains handlers in flight first): %d received, %d handled, %d failed attempts, %d poisoned; %s",
		s.Received, s.Succeeded, s.Failed, s.Poisoned, arCounts(ctx, current, arch))
	env.Say("its Stats also tell how many handlers it runs at once (%d; fewer while the service throttles them) and how long messages waited in the queue (at most %v here, whole seconds)",
		s.Concurrency, s.MaxQueueAge.Truncate(time.Second))
	return nil
}

func arTable(ctx context.Context, env *demo.Env, base string) (*tablekit.Table[arEmployee], error) {
	t, err := tablekit.OpenTable[arEmployee](env.Account, env.TableName(base), nil)
	if err != nil {
		return nil, err
	}
	if err := t.CreateIfNotExists(ctx); err != nil {
		return nil, err
	}
	env.Defer(func(ctx context.Context) error { return t.DeleteTable(ctx) })
	return t, nil
}

// arWait polls cond every 20 ms for up to 30 s.
func arWait(ctx context.Context, what string, cond func() bool) error {
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

func arIDs(ctx context.Context, t *tablekit.Table[arEmployee]) []string {
	var ids []string
	for e, err := range t.Query(ctx, tablekit.Filter{}, nil) {
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		ids = append(ids, e.ID)
	}
	sort.Strings(ids)
	return ids
}

func arCounts(ctx context.Context, current, arch *tablekit.Table[arEmployee]) string {
	return fmt.Sprintf("Current: %v, Archive: %v", arIDs(ctx, current), arIDs(ctx, arch))
}

func arWhere(ctx context.Context, current, arch *tablekit.Table[arEmployee], pk, rk string) string {
	var in []string
	if _, err := current.Get(ctx, pk, rk, nil); err == nil {
		in = append(in, "Current")
	}
	if _, err := arch.Get(ctx, pk, rk, nil); err == nil {
		in = append(in, "Archive")
	}
	if len(in) == 0 {
		return "it is in neither table"
	}
	return "it is in " + strings.Join(in, " and ")
}

// arShortErr drops the message ID from an error for stable narration.
func arShortErr(s string) string {
	if i := strings.Index(s, ": no handler"); i >= 0 {
		return s[i+2:]
	}
	return s
}

func arPtr32(v int32) *int32 { return &v }
