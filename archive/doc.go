// Package archive implements the eventually consistent transactions pattern
// of the Azure Table storage design guide: a queue message describes a change
// that spans partitions, tables or services, and a worker applies it with
// idempotent steps, deleting the message only when every step succeeded. It
// ships the guide's own example, archiving an employee from a Current table
// to an Archive table, with claim-check payloads and a poison queue.
//
// # Pieces
//
//   - [Client] sends typed messages: an envelope {"kind", "payload"} as
//     base64 JSON (Azure Functions' default queue encoding). A payload that
//     would make the message larger than the queue's 64 KiB limit is
//     written to a blob and the message carries its name (claim check).
//   - [Worker] dequeues messages and hands them to a [Handler]; [Mux] routes
//     them by kind to typed handlers registered with [HandleFunc].
//   - Handlers are made of idempotent steps: the Table's own
//     [tablekit.Table.Upsert] (insert or replace) and
//     [tablekit.Table.DeleteIfExists], and for blobs [UpsertBlob],
//     [DeleteBlobIfExists] and [GetBlob].
//   - [Mover] is the archive move, Current -> Archive (-> blob), for any
//     entity type; its table writes are paced by a [tablekit.Governor].
//
// Every wrapper names what it holds: [Worker.Name] (the work queue),
// [Worker.PoisonQueueName], [Worker.ContainerName], [Client.Name],
// [Client.ContainerName], [Mover.ContainerName]. The default poison queue
// and claim-check container are "<queue>-poison" and "<queue>-claims"
// ([PoisonQueueName], [ClaimContainerName]); [OpenWorker] and
// [OpenClient] refuse a queue name over 56 characters, which the suffix
// would make longer than the 63 characters the service allows. Every
// refusal of input is a *tablekit.ValidationError whose Op names the
// operation ("archive.NewWorker", "archive.OpenWorker",
// "archive.NewClient", "Client.Enqueue", ...).
//
// # Costs
//
// In storage transactions: [Client.Enqueue] 1 (2 with a claim-check blob);
// per message the worker handles, its share of a dequeue (one request
// takes up to BatchSize messages, and an idle worker polls an empty queue
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
// ([PoisonRecord]). Each failed attempt also writes its error into the
// message, so a worker meeting the message after a crash still knows why
// it failed. Poisoning first confirms ownership by updating the message
// with the current pop receipt (which also hides it for a full visibility
// timeout), then writes the poison record, then deletes the message with
// the new receipt. Two workers racing for one message therefore never
// both write a record: the one whose receipt is stale stops at the first
// step. A duplicate poison record (same
// [PoisonRecord].MessageID) can only appear when the worker dies, or the
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
// polled with a doubling wait up to MaxPollInterval, and it never holds
// more messages than it has free handlers. Every storage request the
// worker makes itself is bounded by OperationTimeout, so a connection that
// never answers delays a message, it does not strand it.
//
// The worker adapts to throttling: a handler that fails with a throttling
// error (tablekit.ErrThrottled) halves the number of handlers it runs at
// once, and runs of successes raise it again by one, up to Concurrency
// (see [WorkerOptions].Concurrency). The message itself is retried like
// any failed one.
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
