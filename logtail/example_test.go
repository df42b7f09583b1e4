package logtail_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/logtail"
)

// Reading is a log tail entry: it embeds logtail.Entry, whose keys the Log
// sets.
type Reading struct {
	logtail.Entry
	Celsius float64 `table:"Celsius"`
}

// The newest-first RowKey of the design guide, as a .NET program writes
// it, decodes to the entry's time.
func ExampleEntry_Time() {
	// string.Format("{0:D19}", DateTime.MaxValue.Ticks - t.Ticks)
	e := logtail.Entry{PartitionKey: "sensor-7", RowKey: "2516981361548765432"}
	fmt.Println(e.Time())
	// Output: 2024-01-02 03:04:05.1234567 +0000 UTC
}

// A log tail: append readings, read the latest ones newest first, and
// page back through older ones.
func ExampleLog() {
	ctx := context.Background()
	acct, err := tablekit.Open(os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), nil)
	if err != nil {
		panic(err)
	}
	tbl, err := tablekit.OpenTable[Reading](acct, "Readings", nil)
	if err != nil {
		panic(err)
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		panic(err)
	}
	// Shards: 4 spreads a busy sensor over four partitions.
	log, err := logtail.New(tbl, &logtail.Options{Shards: 4})
	if err != nil {
		panic(err)
	}
	if _, err := log.Append(ctx, "sensor-7", Reading{Celsius: 21.5}); err != nil {
		panic(err)
	}
	latest, err := log.Latest(ctx, "sensor-7", 10)
	if err != nil {
		panic(err)
	}
	for _, r := range latest {
		fmt.Println(r.Time(), r.Celsius)
	}
	// The last hour's readings: a zero end means no upper bound.
	for r, err := range log.Window(ctx, "sensor-7", time.Now().Add(-time.Hour), time.Time{}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(r.Time(), r.Celsius)
	}
	page, err := log.Page(ctx, "sensor-7", &logtail.PageOptions{PageSize: 50})
	for err == nil && page.Continuation != "" {
		page, err = log.Page(ctx, "sensor-7", &logtail.PageOptions{PageSize: 50, Continuation: page.Continuation})
	}
	if err != nil {
		panic(err)
	}
}

// One record per line: the time, a tab, and the message with its
// delimiters escaped.
func ExampleAppendRecord() {
	at := time.Date(2024, 5, 6, 15, 4, 5, 0, time.UTC)
	line, _ := logtail.AppendRecord(nil, logtail.Record{Time: at, Message: "GET /\tok\nnext line"})
	fmt.Printf("%s", line)
	r, _ := logtail.ParseRecord(line)
	fmt.Printf("%q\n", r.Message)
	// Output:
	// 2024-05-06T15:04:05.000000000Z	GET /\tok\nnext line
	// "GET /\tok\nnext line"
}

// Write a source's log to blobs, buffered, and read back a time window.
func ExampleWriter() {
	ctx := context.Background()
	// The Writer logs failed background flushes and commits settled
	// after a lost answer to the Account's Logger.
	acct, err := tablekit.Open(os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), &tablekit.Options{
		Logger: slog.Default().With("component", "weblog"),
	})
	if err != nil {
		panic(err)
	}
	// Blobs named web/YYYY/MM/DD/hhmm/NNNNNN.log in the container "logs",
	// which must exist.
	w, err := logtail.OpenWriter(acct, "logs", "web", &logtail.WriterOptions{
		FlushBytes:    4 << 20,          // a block per 4 MiB...
		FlushAge:      30 * time.Second, // ...or per 30 seconds
		FlushInterval: 5 * time.Second,  // also when no record arrives
	})
	if err != nil {
		panic(err)
	}
	defer w.Close(ctx) // flushes: nothing accepted is lost
	if err := w.Write(ctx, "GET /index.html 200"); err != nil {
		panic(err)
	}

	r, err := logtail.OpenReader(acct, "logs", "web")
	if err != nil {
		panic(err)
	}
	for rec, err := range r.Read(ctx, time.Now().Add(-time.Hour), time.Now()) {
		if err != nil {
			panic(err)
		}
		fmt.Println(rec.Time, rec.Message)
	}
}
