// Package coord is coordination on Table storage: leases with fencing
// tokens, leader election, fenced and idempotent writes, built on
// tablekit's tables, transactions and ETags.
//
// # Leases and fencing tokens
//
// A [Lease] is one entity: a holder id, a term and the holder's
// duration. The term is a fencing token: it grows by one with every
// acquisition, so each holder's term is higher than every earlier one's.
// A contender takes the lease when it is absent or released, or when it
// has seen the same version (ETag) for longer than the holder's duration
// on its own monotonic clock; no clocks are compared between processes
// and the service's Timestamp is never used for expiry. The holder treats
// itself as holder until the send time of its last successful write plus
// the duration minus a drift margin, which must cover how far the
// processes' clock rates can differ over one duration.
//
// Timing alone cannot stop a holder that paused (a GC pause, a frozen VM)
// past its lease and then acts on it. Fencing does: a [Writer]'s fenced
// transaction carries the holder's term and a conditional write of the
// partition's fence row in the same entity group transaction, so once a
// write of a higher term was applied in a partition, every write of a
// lower term there is refused ([ErrFenced]) whatever the writer's clock
// says. A new holder calls [Writer.Fence] on the partitions it will write
// before it acts, to shut its predecessor out at once.
//
// [Lease.Lead] is leader election in the shape of client-go's: a lease
// duration, a renew deadline and a retry period (at least
// [MinRetryPeriod]), renewals jittered, and the leader's function run
// with a context that ends when leadership is lost. [NewLease] refuses
// the keys the service would (tablekit.ErrInvalidKey: a "/" in
// "relay/orders", a RowKey over 255 bytes on Azure Cosmos DB), and Lead
// ends at once on any refusal of its input by the client or the service
// (tablekit.ErrInvalidInput, ErrInvalidKey, ErrTooLarge) instead of
// campaigning again.
//
// # Idempotent writes
//
// A [Writer] transaction may carry an idempotency key ([Write.Key]): the
// key is recorded in the same partition, in the same transaction, with a
// fingerprint of the write ([Write.Fingerprint], or of its actions: verbs,
// keys and properties, not ETags). A write is recorded only when it is
// applied, so only an applied write is ever replayed: a repeat of its key
// in that partition writes nothing and returns Result{Replayed: true}
// when its fingerprint is the record's, and fails with [ErrKeyReused]
// when it is not (the key was reused for another write, which is reported
// instead of silently dropped, as AWS Powertools' payload validation
// does). A keyed write that was refused (a failed condition, [ErrFenced])
// recorded nothing, and its repeat is tried afresh. Records written by
// earlier versions carry no fingerprint and check none. One keyed write of
// a Table verb is a transaction of one action, still 1 storage
// transaction:
//
//	r, err := w.Transaction(ctx, coord.Write{Key: msgID}, tablekit.MergeAction(v, etag))
//
// A handler whose repeat recomputes its actions from state that changed
// since (a redelivered message that reads before it writes) sets
// Fingerprint to what the key stands for (the message), so that the
// repeat still replays.
//
// After a lost answer the Writer
// reads the record to settle the outcome and writes again only when
// nothing was applied, so a keyed write is applied exactly once and does
// not end in tablekit.ErrOutcomeUnknown, unless the reads that settle it
// fail for all of WriterOptions.Retry's attempts. The limitation of
// unkeyed writes, "a retried insert may take effect twice around a
// concurrent delete", does not apply to it. Records expire
// after WriterOptions.KeyTTL; a repeat after [Sweep] deleted its record
// is a new write.
//
// The pattern writes that are one transaction take a key the same way,
// with the same records (24 h, swept by [Sweep]):
// index.SamePartition.WithKey(key), patterns.Wide.WithKey(key) and
// patterns.Mixed.WithKey(key) return
// a copy whose writes carry it; a repeat returns a nil error and an empty
// ETag instead of Result.Replayed. Their records keep the fingerprint of
// the value the caller wrote (Mixed: of its actions; a delete or Modify:
// of the keys), not of the actions derived from it, so a repeat planned
// from a stored state that changed since still replays; a repeat with
// another value fails with ErrKeyReused.
//
// coord's rows in a user's partition (fence row, idempotency records)
// have RowKeys starting with [ReservedPrefix] ("~coord~"). tablekit's
// plain reads (Table.Query, QueryPage, Top, Count) leave them out, on
// the client, so that a partition reads and counts as the user's rows
// alone; tablekit.QueryOptions.Reserved reads them, and package
// transfer's export, copy, purge and count always do (a backup holds
// everything). Never write RowKeys starting with it: the Writer refuses
// them.
//
// # Expiry
//
// A row opts in to expiry by carrying [ExpiresProperty], "_expires" (a
// struct field `table:"_expires"` of type time.Time, written through a
// Table, a Writer or a pattern). [Live] leaves expired rows out of reads,
// and [Sweep] deletes them, with coord's idempotency records. Nothing
// else is swept: a domain property named "Expires" (a coupon's end, a
// token's) is data, and a sweep never deletes a stream's event, a view
// row or an outbox's state for carrying it. The name starts with "_" so
// that no domain name collides with it, and package stream refuses events
// that carry it (a swept event would leave a gap in its stream). Records
// written by earlier versions, whose expiry was "Expires", are still
// swept: a RowKey range of coord's own.
//
// # Costs, in storage transactions
//
//	Lease.Acquire           1 read + 1 write when free (1 read when held)
//	Lease.Renew, Release    1 write
//	Lease.Lead              1 read per campaign try, 1 write per renewal
//	Writer.Transaction      1 (keyed, fenced or both); +1 read the first time a
//	                        partition is fenced from this Writer or after another
//	                        term wrote there; +1 read after a lost answer;
//	                        a repeat of a key (replay or ErrKeyReused):
//	                        1 refused transaction + 1 read of the record
//	Sweep                   transfer.Purge's: 1 keys-only query per 1,000
//	                        expired rows + 1 transaction per 100 expired rows
//	                        of a partition (the query scans the scope: the
//	                        whole table with nil opts)
//	Writer.Fence            1 write (+1 read when not cached)
//
// A record is one row per applied keyed write, kept until swept: about
// 400 bytes as Azure measures entities (for a 20-character PartitionKey
// and a 36-character key: the keys, a 26-character stamp, a 64-character
// fingerprint, the expiry). At 100 keyed writes a second and a 24 h
// KeyTTL that is 8.6 million rows, 3.5 GB, between sweeps. tablekit's
// plain reads drop coord's rows on the client: a Count or Query over a
// partition still reads its records (they count in the query's pages and
// transactions) and skips them.
//
// Lease.Lead renews every 75-100% of its RetryPeriod (jitter) plus a
// round trip: at the default 2 s, about 2,050 renewals, so 2,050
// transactions, an hour per lease (3,600 s / 1.75 s).
//
// Lost answers are settled by reading back: an acquisition or renewal is
// mine if the lease names this holder with this term; a keyed write by
// its record; an unkeyed fenced write by the fence row's per-call stamp
// (if another write changed the fence row since, that write is reported
// as tablekit.ErrOutcomeUnknown: give it a Key).
package coord
