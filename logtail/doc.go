// Package logtail implements two time-ordered patterns of the Azure Table
// storage design guide: the log tail pattern (newest-first RowKeys, so the
// latest entries are one short range query away) and log data kept in blobs
// the way Storage Analytics does it, instead of the log data anti-pattern of
// one table entity per log record.
//
// # Log tail
//
// A [Log] stores entries of a struct type that embeds [Entry]:
//
//	type Reading struct {
//		logtail.Entry
//		Celsius float64 `table:"Celsius"`
//	}
//
//	tbl, _ := tablekit.OpenTable[Reading](acct, "Readings", nil)
//	log, _ := logtail.New(tbl, nil)
//	r, _ := log.Append(ctx, "sensor-7", Reading{Celsius: 21.5})
//	latest, _ := log.Latest(ctx, "sensor-7", 10) // newest first
//
// The Log owns both keys. The PartitionKey is the partition (sensor, user,
// device, ...) the caller names. The RowKey is keys.DescendingKey(time,
// seq): the 19 digits of the guide's .NET formula
// string.Format("{0:D19}", DateTime.MaxValue.Ticks - DateTime.UtcNow.Ticks),
// so later entries sort first, then '_' and a sequence number that keeps
// entries of the same 100 ns tick distinct (a later Append through the same
// Log sorts first). Rows a .NET program wrote with the bare formula sort
// among them by time (before, i.e. newer than, entries of the very same
// tick), and [Entry.Time] decodes both.
//
// Writes and reads, in tablekit's terms:
//
//   - [Log.Append] and [Log.AppendAt] insert (create only, like
//     tablekit.Table.Insert) a new entry under a key of its own: one
//     transaction. A Log never replaces, updates or deletes an entry, so it
//     has no Upsert, Update, Modify or Delete; remove old entries with the
//     high-volume delete pattern (a table per period), or by the Table.
//   - Reads are RowKey range queries inside one partition: [Log.Latest]
//     (the n newest, exactly n even when the service returns short pages),
//     [Log.Window] (a time range; a zero end is open), and [Log.Page]
//     (newest first, then older pages with a continuation token). Each
//     costs one query per page of results per shard bucket. The page size,
//     the most entities one request asks for, is [Options.PageSize] for the
//     Log and [PageOptions.PageSize] for one Page.
//
// Faults: an entry is inserted once, under a RowKey unique to its Append
// call, so a lost answer cannot make a duplicate by itself, and Append
// settles a lost answer by that RowKey: "already exists" after a retry, or
// the entry found by a point read, means this very append was stored (see
// [Log.AppendAt]). So an error matching tablekit.ErrOutcomeUnknown from
// Append is rare: the settling read failed too, or found nothing while a
// try whose connection broke may still be applied (a context error: ctx
// ended first); either way the entry is stored once or not at all, under
// the RowKey that call chose. Appending
// it again after such an error stores it twice if the first one was
// stored: a caller that must not have duplicates gives its entries an id
// of its own and looks for it (with Window around the time of the first
// try) before appending again. The chaos suite, TestChaosLogTail, checks
// these outcomes under injected faults.
//
// Hot partitions: a busy log written into one partition is the prepend
// anti-pattern of the guide, since every insert goes to the head of the
// same partition, served by one partition server (about 2,000 entities/s).
// [Options.Shards] spreads one logical partition over n table partitions,
// "<bucket>!<partition>", with the bucket chosen by a hash of the RowKey,
// so consecutive entries land in different partitions; reads then fan out
// over the n buckets and merge newest first. Writes scale by n; reads cost
// n queries instead of one. Shard only logs that need it. The layout is
// the one every sharded key of tablekit uses, keys.ShardedKey: see the
// Sharded keys section of package keys for the format and why the bucket
// comes first.
//
// # Log data in blobs
//
// The guide's log data anti-pattern is one table entity per log record:
// expensive to write, and slow to read by time range. Storage Analytics
// writes logs to blobs instead, and so does [Writer]: records of a source go
// to blobs named
//
//	<source>/YYYY/MM/DD/hhmm/NNNNNN.log
//
// (UTC; hhmm starts the period the blob covers, see
// [WriterOptions.Period]; NNNNNN numbers the blobs of a period), one record
// per line in a tab-delimited text format (see [AppendRecord]) that
// round-trips any message. The earliest and latest record times are kept
// in the blob's metadata ("firstrecord", "lastrecord", and "records" their
// count; the service may return the names capitalised). A [Reader] lists an
// hour's blobs by prefix, skips the blobs whose name or metadata rule them
// out, and returns the records of a time window in time order, merged
// across blobs and writers.
//
// Each flush stages one block with the buffered records and commits the
// blob's block list (the old block ids plus the new one, conditional on the
// blob's ETag), so a flush never rewrites data already written. Several
// writers for one source never overwrite each other: a new blob is created
// only if its name is free (If-None-Match: *), and a writer that finds the
// name taken moves on to the next sequence number.
//
// A flush never holds up the Writer: it runs outside its lock, bounded by
// [WriterOptions.FlushTimeout], while Stats answers and Write keeps
// buffering (a Write that has to wait for it waits only as long as its
// context allows). A failed or timed-out flush keeps its block, and the
// next flush writes it first, under the same block id: records reach
// storage once each, in the order they were accepted. A commit whose answer
// was lost is recognised by its block id in the blob's block list, never
// taken for another writer's and written again elsewhere (the chaos suite,
// TestChaosBlobLog, checks this under injected faults).
//
// Write-through or buffered: every flush is two billable requests (Put
// Block and Put Block List) and a round trip.
//
//   - Buffered (the default): [Writer.WriteRecord] returns once the record
//     is in memory; the buffer is flushed when it reaches
//     [WriterOptions.FlushBytes], when its oldest record is
//     [WriterOptions.FlushAge] old, on [Writer.Flush] and on [Writer.Close].
//     Thousands of records cost two requests, and writing is as fast as
//     memory. The price is the window of loss: records accepted but not yet
//     flushed are lost if the process dies (not if it closes the Writer),
//     and readers see them only after the flush. Size and age bound that
//     window in bytes and in time.
//   - Write-through ([WriterOptions.WriteThrough]): every record is
//     committed before the write returns. Nothing acknowledged is ever lost
//     and readers see records at once, but each record costs two requests
//     and a round trip, so throughput is that of the network, not memory,
//     and the storage bill grows with the record count.
//
// Choose write-through for audit-grade records written rarely, buffered
// for everything high-volume; the package benchmark measures the
// difference against Azurite.
//
// Cost, in storage transactions: a flush is a Put Block and a Put Block
// List (2); a commit that fails adds a Get Block List (1) to settle it; a
// new blob whose name another writer took adds 4 (the refused Put Block
// List, a Get Block List, a List Blobs, and the Put Block again under the
// next name). A [Reader] costs a List Blobs per hour of the window and a
// Get Blob per blob that may hold records of it.
//
// A Writer and a Reader are opened from a tablekit.Account, with the name
// of their container ([OpenWriter], [OpenReader]). A Writer logs with
// log/slog, to its Account's Logger (tablekit.Options.Logger; nil:
// slog.Default()), what an operator needs to know and no caller hears of:
// a failed background flush (warn), a commit whose outcome is unknown and
// is checked again (warn), a commit settled as applied after its answer
// was lost (info), a blob changed by someone else, left for a new one
// (warn), a blob name found taken by another writer (debug), with
// structured fields (container, source, blob, block, records, error).
//
// # Errors
//
// Every error of the package starts "logtail: <Op>:". Input refused
// before anything is sent is a *tablekit.ValidationError whose Op names
// the operation: "logtail.New", "logtail.OpenWriter",
// "logtail.OpenReader", "logtail.Log.Append", "logtail.Log.AppendAt",
// "logtail.Log.Latest", "logtail.Log.Page", "logtail.Log.Window",
// "logtail.Writer.Write", "logtail.Writer.WriteRecord",
// "logtail.Reader.Read", "logtail.Reader.Blobs", "logtail.AppendRecord";
// a zero Log, Writer or Reader refuses every operation the same way.
// (Input the Table refuses, such as an entry over 1 MiB, names the
// Table's operation: "tablekit: Insert".) Stored data that cannot be read, a blob line that is not a
// record, is a *tablekit.DecodeError. Service failures are tablekit's
// *tablekit.ServiceError and *tablekit.RequestError.
//
// Writers and Readers name their container ([Writer.ContainerName],
// [Reader.ContainerName]); a Log names its table through [Log.Table].
package logtail
