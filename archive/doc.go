// Package archive is the queue worker of the design guide's Eventually
// consistent transactions pattern: a change that spans partitions, tables
// or services, which no entity group transaction can make atomic, is
// described by a queue message, and a [Worker] applies it with idempotent
// steps, deleting the message only when every step succeeded. Delivery is
// at least once, failures are retried, and a message that keeps failing
// moves to a poison queue. Moving an entity from a Current table to an
// Archive table ([Mover]), the guide's own example and the package's name,
// is one use of it; package index's cross-partition index is another.
//
// # Pieces
//
//   - [Client] sends typed messages: an envelope {"kind", "payload"} as
//     base64 JSON (Azure Functions' default queue encoding). A payload that
//     would make the message larger than the queue's 64 KiB limit is
//     written to a blob and the message carries its name (claim check).
//   - [Worker] dequeues messages and hands them to a [Handler]; a [Mux]
//     routes them by kind to typed handlers registered with [HandleFunc].
//   - Handlers are made of idempotent steps: the Table's own
//     [tablekit.Table.Upsert] (insert or replace) and
//     [tablekit.Table.DeleteIfExists], and for blobs [UpsertBlob] and
//     [DeleteBlobIfExists].
//   - [Mover] is the archive move, Current -> Archive (-> blob), for any
//     entity type, registered for [MoveKind] messages carrying a
//     [MoveRequest].
//
// A sender and a worker of the archive move:
//
//	client, err := archive.OpenClient(acct, "employee-archive", nil)
//	_, err = client.Enqueue(ctx, archive.MoveKind, archive.MoveRequest{PartitionKey: "Sales", RowKey: "000123"}, nil)
//
//	var mux archive.Mux
//	err = archive.HandleFunc(&mux, archive.MoveKind, (&archive.Mover[Employee]{Current: current, Archive: arch}).Handle)
//	w, err := archive.OpenWorker(acct, "employee-archive", &mux, nil)
//	err = w.Run(ctx) // until ctx ends
//
// The Worker takes its Logger and tracing from its Account, a Mover its
// Governor and tracing from its Current table's Account: each is set once,
// in tablekit.Options. The Worker logs its lifecycle (started, stopping,
// stopped) and each message handled at Debug, below slog's default level,
// so that a program's output shows none of it; a handler failure (to be
// retried), throttling and a message moved to the poison queue at Warn;
// what needs an operator (a handler that panicked, a poison record that
// could not be written) at Error. The default poison queue and claim-check container
// of a queue are "<queue>-poison" and "<queue>-claims" ([Worker.Name],
// [Worker.PoisonQueueName], [Worker.ContainerName] and [Client.Name],
// [Client.ContainerName] tell the names); [OpenWorker] and [OpenClient]
// refuse a queue name over 56 characters, which the suffix would make
// longer than the 63 characters the service allows, unless the options
// name both. Every error starts "archive: <Op>:", and every refusal of
// input is a *tablekit.ValidationError whose Op names the operation
// ("archive.OpenWorker", "archive.Client.Enqueue", ...).
//
// # Costs
//
// In storage transactions: [Client.Enqueue] 1 (2 with a claim-check blob);
// per message the worker handles, its share of a dequeue (one request
// takes up to min(Concurrency, 32) messages, and an idle worker polls an empty queue
// with a doubling wait), the handler's steps, and 1 delete (plus 2 for a
// claim-check blob: its read before the handler and its delete after);
// a failed attempt 1 more (its error is written into the message), a
// poisoned message 3 (confirm, poison record, delete), a long handler 1
// per visibility renewal. The [Mover] costs 3 per move (read, upsert,
// delete), 4 with a blob copy.
//
// # Guarantees of the Worker
//
// Delivery is at least once: a message is deleted only after its handler
// returned nil, with the pop receipt of the worker that owns it, so a
// crash, a lost response, a failed delete or a cancelled handler leaves the
// message in the queue, and it is handled again once its visibility
// timeout lapses. Handlers must therefore be idempotent. A message is never
// deleted without a successful handler run or a written poison record.
//
// While a handler runs, the worker renews the message's visibility every
// half VisibilityTimeout and keeps the newest pop receipt. If a renewal
// finds that the message was taken by another worker (its receipt is
// stale), the handler's context is cancelled and this worker does not
// delete the message.
//
// A handler failure on attempt Retry.MaxAttempts (see
// [WorkerOptions].Retry), a failure marked [Permanent], or a message
// dequeued more than Retry.MaxAttempts times (its last worker died, or
// answers to dequeues were lost) moves the message to the poison queue with the last error and the dequeue count
// ([Poisoned]). Each failed attempt also writes its error into the
// message, so a worker meeting the message after a crash still knows why
// it failed. Poisoning first confirms ownership by updating the message
// with the current pop receipt (which also hides it for a full visibility
// timeout), then writes the poison record, then deletes the message with
// the new receipt. Two workers racing for one message therefore never
// both write a record: the one whose receipt is stale stops at the first
// step. A duplicate poison record (same
// [Poisoned].MessageID) can only appear when the worker dies, or the
// delete fails, after the record was written, or when the poison queue
// stored a record whose answer was lost and the SDK sent it again;
// readers of the poison queue that need exactly once should drop records
// whose MessageID they have seen. The work queue side is exactly once:
// only the owner's delete succeeds.
//
// On shutdown (Run's context ends) the worker stops dequeuing, waits up
// to DrainTimeout for handlers in flight, lets finished ones delete their
// message, then cancels the rest and returns; their messages reappear
// after their visibility timeout.
//
// The worker never busy-loops: an empty queue (or a failing dequeue) is
// polled with a doubling wait up to PollInterval, and it never holds
// more messages than it has free handlers. Every storage request the
// worker makes itself is bounded by OperationTimeout, so a connection that
// never answers delays a message, it does not strand it.
//
// [Worker.Run] ends only when its context ends (it returns nil) or when
// its first check of the queue meets a permanent configuration error,
// returned at once as a *tablekit.ServiceError: the service refused the
// request itself with a 4xx other than 408 and 429 (the queue does not
// exist, 404, matching tablekit.ErrNotFound; the credential is wrong or
// lacks rights, 401, 403; the request is malformed for this account,
// 400). Repeating such a request unchanged gets the same answer until
// someone changes the deployment, and a worker that waited silently would
// hide that it does nothing. Everything else is transient and logged, then
// retried with the poll back-off, never ending Run: a request that failed
// or timed out (OperationTimeout) in the network, an answer lost after the
// service handled the request, 408, 429 and 5xx. Once the worker has
// started, every failed request (dequeue, renewal, delete, poison) is
// logged and retried, whatever its cause, and the message it concerned
// is redelivered if need be.
//
// The worker adapts to throttling: a handler that fails with a throttling
// error (tablekit.ErrThrottled: 503 ServerBusy, 429, 500
// OperationTimedOut, after the SDK's own retries) halves the number of
// handlers it runs at once (not below 1; one cut per round of messages,
// those started before a cut do not cut again), and every run of as many
// successful handlers as that number raises it by one, back up to
// [WorkerOptions].Concurrency: additive increase, multiplicative decrease.
// [Stats].Concurrency is the number now. The message itself is retried
// like any failed one. The worker asks for more messages once at least
// half a batch of handlers is free (and no further handler finished in
// the last 2 ms), for as many messages as handlers are free.
//
// # Figures
//
// [Worker.Stats] counts messages received, handled, failed (and among
// them throttled), poisoned, renewed, lost and abandoned, and tells the
// current concurrency and the queue age: how long the messages of the
// latest dequeue had waited in the queue (0 once the queue was found
// empty: the worker's lag), and the longest such wait. Package otelkit
// reports them as OpenTelemetry metrics.
//
// # Poison queue
//
// Poison records never expire (time-to-live -1). Read them with
// [ParsePoison]; after fixing the cause, [Client.Requeue] sends one back to
// the work queue, or [Client.DiscardPoisoned] deletes its claim-check blob
// when it is given up. Deleting the poison message itself is the reader's
// part.
//
// # Claim-check blobs
//
// A claim-check blob is deleted after its message was handled and
// deleted. It is kept when the message is poisoned: the poison record
// refers to it and it is the only copy of the payload (see
// [Client.DiscardPoisoned]). Each message [Client.Enqueue] stores names a
// blob of its own, also when a lost answer made it send the payload twice
// (see Enqueue), so handling one message never takes the payload of
// another.
//
// Orphan blobs (never a lost message) are left in three cases: a worker
// dies between the message delete and the blob delete; a message delete
// is applied but its answer lost (the retry's 404 does not prove the
// message gone, as another worker may own it now, so the blob is kept);
// a claim-check enqueue's queue request fails without a definite answer
// and was in fact not stored (Enqueue cannot tell, so it keeps the blob
// and sends the payload again in a new one). A lifecycle rule on the
// container's "claims/" prefix, longer than the messages' time-to-live,
// can remove them.
package archive
