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
// duration, a renew deadline and a retry period, renewals jittered, and
// the leader's function run with a context that ends when leadership is
// lost.
//
// # Idempotent writes
//
// A [Writer] transaction may carry an idempotency key ([Write.Key]): the
// key is recorded in the same partition, in the same transaction; a repeat
// with the same key in that partition returns Result{Replayed: true}
// without writing. One keyed write of a Table verb is a transaction of one
// action, still 1 storage transaction:
//
//	r, err := w.Transaction(ctx, coord.Write{Key: msgID}, tablekit.MergeAction(v, etag))
//
// After a lost answer the Writer
// reads the record to settle the outcome and writes again only when
// nothing was applied, so a keyed write is applied exactly once and does
// not end in tablekit.ErrOutcomeUnknown, unless the reads that settle it
// fail for all of WriterOptions.Retry's attempts. The limitation of
// unkeyed writes, "a retried insert may take effect twice around a
// concurrent delete", does not apply to it. Records expire
// after WriterOptions.KeyTTL (their Expires property).
//
// The pattern writes that are one transaction take a key the same way,
// with the same records (24 h, swept by [Sweep]):
// index.SamePartition.WithKey(key), patterns.Wide.WithKey(key) and
// patterns.Mixed.WithKey(key) return
// a copy whose writes carry it; a repeat returns a nil error and an empty
// ETag instead of Result.Replayed.
//
// coord's rows in a user's partition (fence row, idempotency records)
// have RowKeys starting with [ReservedPrefix] ("~coord~"): keep queries to
// RowKeys below "~", or skip those rows (the index's and Mixed's queries
// do).
//
// # Costs, in storage transactions
//
//	Lease.Acquire           1 read + 1 write when free (1 read when held)
//	Lease.Renew, Release    1 write
//	Lease.Lead              1 read per campaign try, 1 write per renewal
//	Writer.Transaction      1 (keyed, fenced or both); +1 read the first time a
//	                        partition is fenced from this Writer or after another
//	                        term wrote there; +1 read after a lost answer;
//	                        a replay of a key: 1 (refused) transaction
//	Sweep                   transfer.Purge's: 1 keys-only query per 1,000
//	                        expired rows + 1 transaction per 100 expired rows
//	                        of a partition
//	Writer.Fence            1 write (+1 read when not cached)
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
