package feed_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/stream"
)

// The benchmarks of issue 29's cost and speed goals (BENCHMARKS.md,
// "Event streams and the change feed"). They write to Azurite (or the
// account in AZURE_STORAGE_CONNECTION_STRING); run them on a quiet
// machine, one run at a time, interleaved as BENCHMARKS.md says.

// appendStreams, appendEvents: an iteration of BenchmarkAppends writes
// appendEvents entities to each of appendStreams partitions, as one
// transaction each: 98 events is an append's capacity past a stream's
// first (100 actions: the events, the delete of the old head row and the
// insert of the new one).
const (
	appendStreams     = 100
	appendEvents      = 98
	appendConcurrency = 16 // BulkWriter's default
)

// benchEvent has the shape of the root package's BulkWriter benchmark
// rows: a string, an int32 and a double.
type benchEvent struct {
	PK    string `table:",pk"`
	RK    string `table:",rk"`
	Name  string
	Count int32
	Score float64
}

func benchRegistry(b *testing.B) *tablekit.Registry {
	reg := &tablekit.Registry{}
	if err := tablekit.Register[benchEvent](reg, "benchEvent", 1); err != nil {
		b.Fatal(err)
	}
	return reg
}

// BenchmarkAppends: appendStreams x appendEvents entities per iteration,
// one transaction per partition, appendConcurrency in flight, written six
// ways on the same Azurite, from the rows of the root package's BulkWriter
// benchmark to appends:
//   - writer=bulk: BulkWriter.Upsert of rows of that shape, replacing the
//     rows of the iteration before (this file's BulkWriter baseline since
//     issue 3; its chunks are the same 98 entities a partition);
//   - writer=bulkinsert: BulkWriter.Insert of new rows of that shape, with
//     RowKeys unique in the table;
//   - writer=bulkseq: the same, keyed as a stream's events are: a version
//     per partition, so that each RowKey is in every partition;
//   - writer=bulkevents: BulkWriter.Insert of the rows the appends write
//     for their events (the stream's keys, the Registry's encoding with
//     its type property): the appends' entities without the appends;
//   - writer=stream: one stream.Store.Append of 98 events per stream (the
//     head row's delete and insert make its 100 actions);
//   - writer=feed: the same through feed.Feed.Append (+ the mark: 1
//     write per append, no read; no relay runs).
//
// An untimed iteration comes first (see below). entities/s counts the
// caller's entities: rows, or events (not head rows or marks);
// transactions/op counts every storage request (the Meter).
func BenchmarkAppends(b *testing.B) {
	ctx := context.Background()
	for _, writer := range []string{"bulk", "bulkinsert", "bulkseq", "bulkevents", "stream", "feed"} {
		b.Run("writer="+writer, func(b *testing.B) {
			acct := testenv.Account(b, nil)
			var run func(ctx context.Context) error // one iteration
			switch writer {
			case "bulk":
				tbl := testenv.OpenTable[benchEvent](b, acct, nil)
				rows := make([]benchEvent, 0, appendStreams*appendEvents)
				for s := range appendStreams {
					for i := range appendEvents {
						n := s*appendEvents + i
						rows = append(rows, benchEvent{PK: fmt.Sprintf("p%03d", s), RK: fmt.Sprintf("r%06d", n), Name: "some name", Count: int32(n), Score: float64(n) / 3})
					}
				}
				bw := tbl.BulkWriter(&tablekit.BulkOptions{Concurrency: appendConcurrency})
				run = func(ctx context.Context) error {
					_, err := bw.Upsert(ctx, rows)
					return err
				}
			case "bulkinsert", "bulkseq":
				// New rows each iteration, as appends insert new events.
				// bulkseq keys them as a stream keys its events: "~ev~" +
				// the version in the partition (stream's package doc), so
				// each RowKey is in every partition (Azurite indexes RowKey
				// alone: such a key costs it more to find).
				tbl := testenv.OpenTable[benchEvent](b, acct, nil)
				bw := tbl.BulkWriter(&tablekit.BulkOptions{Concurrency: appendConcurrency})
				iter := 0
				run = func(ctx context.Context) error {
					rows := make([]benchEvent, 0, appendStreams*appendEvents)
					for s := range appendStreams {
						for i := range appendEvents {
							n := (iter*appendStreams+s)*appendEvents + i
							rk := fmt.Sprintf("r%09d", n)
							if writer == "bulkseq" {
								rk = fmt.Sprintf("~ev~%010d", iter*appendEvents+i+1)
							}
							rows = append(rows, benchEvent{PK: fmt.Sprintf("p%03d", s), RK: rk, Name: "some name", Count: int32(n), Score: float64(n) / 3})
						}
					}
					iter++
					_, err := bw.Insert(ctx, rows)
					return err
				}
			case "bulkevents":
				// The rows the appends write for their events, keyed and
				// encoded as the stream keys and encodes them: RowKey "~ev~"
				// + the version (stream's package doc), the Registry's
				// encoding, type property included.
				tbl := testenv.OpenTable[tablekit.Entity](b, acct, nil)
				bw := tbl.BulkWriter(&tablekit.BulkOptions{Concurrency: appendConcurrency})
				reg := benchRegistry(b)
				version := 0 // every stream's, after the iteration before
				run = func(ctx context.Context) error {
					rows := make([]tablekit.Entity, 0, appendStreams*appendEvents)
					for s := range appendStreams {
						for i := range appendEvents {
							n := version + i
							e, err := reg.Encode(benchEvent{Name: "some name", Count: int32(n), Score: float64(n) / 3})
							if err != nil {
								return err
							}
							e.PartitionKey, e.RowKey = fmt.Sprintf("p%03d", s), fmt.Sprintf("~ev~%010d", n+1)
							rows = append(rows, e)
						}
					}
					version += appendEvents
					_, err := bw.Insert(ctx, rows)
					return err
				}
			default:
				store, err := stream.NewStore(testenv.OpenTable[tablekit.Entity](b, acct, nil), benchRegistry(b), nil)
				if err != nil {
					b.Fatal(err)
				}
				appendTo := store.Append
				if writer == "feed" {
					f, err := feed.New(store, testenv.OpenTable[tablekit.Entity](b, acct, nil), nil)
					if err != nil {
						b.Fatal(err)
					}
					appendTo = f.Append
				}
				versions := make([]int64, appendStreams) // by stream; one goroutine appends to a stream at a time
				appendOne := func(ctx context.Context, s int) error {
					evs := make([]stream.Event, appendEvents)
					for i := range evs {
						n := int(versions[s]) + i
						evs[i] = stream.Event{Data: benchEvent{Name: "some name", Count: int32(n), Score: float64(n) / 3}}
					}
					r, err := appendTo(ctx, stream.ID{PartitionKey: fmt.Sprintf("p%03d", s)}, versions[s], evs)
					if err != nil {
						return err
					}
					versions[s] = r.Last
					return nil
				}
				run = func(ctx context.Context) error {
					return inParallel(ctx, appendStreams, appendConcurrency, appendOne)
				}
			}
			// One untimed iteration first: the streams exist (every timed
			// append is a full 100-action transaction), the rows too (every
			// timed upsert replaces), the connections are open.
			if err := run(ctx); err != nil {
				b.Fatal(err)
			}
			meter := acct.Meter()
			var total int64
			for b.Loop() {
				before := meter.Snapshot()
				if err := run(ctx); err != nil {
					b.Fatal(err)
				}
				total += meter.Snapshot().Sub(before).Total()
			}
			b.ReportMetric(float64(total)/float64(b.N), "transactions/op")
			b.ReportMetric(float64(appendStreams*appendEvents*b.N)/b.Elapsed().Seconds(), "entities/s")
		})
	}
}

// inParallel calls fn(ctx, i) for i in [0, n), at most workers at once,
// and returns the first error.
func inParallel(ctx context.Context, n, workers int, fn func(context.Context, int) error) error {
	next := make(chan int)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// The view lag benchmark's load: appends of one event each, at each of
// lagRates a second, spread evenly over lagStreams streams, for lagWindow
// per iteration, through a front adding lagLatency before every request.
const (
	lagStreams = 10
	lagWindow  = 15 * time.Second
	lagLatency = 20 * time.Millisecond
)

var lagRates = []int{5, 20}

// BenchmarkViewLag: the lag of a view (a Projector, run by Relay.Run
// with a lease) behind steady appends (Feed.Append), against an Azurite
// behind the front with 20 ms of latency per request. Each event's lag is
// the time its Projector.Handle returned nil (the view row stored) minus
// the time its Feed.Append returned (acknowledged), both on this
// process's clock; p50-ms and p99-ms are over every event of every
// iteration. An iteration appends for lagWindow, then waits until the
// view has folded every event. Sub-benchmarks: the write rate (appends a
// second, lagRates), then the relay's Interval (the default 1 s, and
// 100 ms).
func BenchmarkViewLag(b *testing.B) {
	srv := azurite.StartForTest(b, &azurite.Options{Front: &azurite.FrontOptions{Latency: lagLatency}})
	for _, rate := range lagRates {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			for _, interval := range []time.Duration{time.Second, 100 * time.Millisecond} {
				b.Run(fmt.Sprintf("interval=%v", interval), func(b *testing.B) { viewLag(b, srv, rate, interval) })
			}
		})
	}
}

// viewLag is BenchmarkViewLag at rate appends a second, with the relay's
// Interval interval.
func viewLag(b *testing.B, srv *azurite.Server, rate int, interval time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acct, err := tablekit.Open(srv.ConnectionString(), nil)
	if err != nil {
		b.Fatal(err)
	}
	store, err := stream.NewStore(testenv.OpenTable[tablekit.Entity](b, acct, nil), benchRegistry(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	ft := testenv.OpenTable[tablekit.Entity](b, acct, nil)
	f, err := feed.New(store, ft, nil)
	if err != nil {
		b.Fatal(err)
	}
	view, err := feed.NewProjector(testenv.OpenTable[tablekit.Entity](b, acct, nil),
		func(c feed.Change) []feed.Row { return []feed.Row{{PartitionKey: "v", RowKey: c.Stream.PartitionKey}} },
		func(row *tablekit.Entity, c feed.Change) error {
			n, _ := row.Properties["Count"].(int64)
			row.Properties["Count"] = n + 1
			return nil
		})
	if err != nil {
		b.Fatal(err)
	}
	type key struct {
		stream  string
		version int64
	}
	var (
		mu     sync.Mutex
		acked  = map[key]time.Time{}
		folded = map[key]time.Time{}
		cond   = sync.NewCond(&mu)
	)
	relay, err := f.NewRelay([]feed.Subscription{{Name: "view", Handle: func(ctx context.Context, c feed.Change) error {
		if err := view.Handle(ctx, c); err != nil {
			return err
		}
		now := time.Now()
		mu.Lock()
		k := key{c.Stream.PartitionKey, c.Version}
		if _, ok := folded[k]; !ok {
			folded[k] = now
			cond.Broadcast()
		}
		mu.Unlock()
		return nil
	}}}, &feed.RelayOptions{Interval: interval})
	if err != nil {
		b.Fatal(err)
	}
	lease, err := coord.NewLease(ft, "lease", "relay", "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	relayDone := make(chan error, 1)
	go func() { relayDone <- relay.Run(ctx, lease) }()
	defer func() {
		cancel()
		<-relayDone
	}()

	for len(relay.Stats().Lag) == 0 { // it leads: its rounds have begun
		if err := ctx.Err(); err != nil {
			b.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}

	versions := make([]int64, lagStreams)
	var lags []time.Duration
	for b.Loop() {
		// One goroutine per stream, each appending every
		// lagStreams/rate, staggered: rate appends a second.
		period := time.Second * lagStreams / time.Duration(rate)
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, lagStreams)
		for s := range lagStreams {
			wg.Go(func() {
				id := stream.ID{PartitionKey: fmt.Sprintf("s%02d", s)}
				next := start.Add(period * time.Duration(s) / lagStreams)
				for next.Before(start.Add(lagWindow)) {
					time.Sleep(time.Until(next))
					next = next.Add(period)
					r, err := f.Append(ctx, id, versions[s], []stream.Event{{Data: benchEvent{Name: "some name", Count: int32(versions[s])}}})
					if err != nil {
						errs <- err
						return
					}
					now := time.Now()
					versions[s] = r.Last
					mu.Lock()
					acked[key{id.PartitionKey, r.Last}] = now
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		// Wait for the view to fold every event acknowledged.
		deadline := time.AfterFunc(time.Minute, func() {
			mu.Lock()
			defer mu.Unlock()
			cond.Broadcast()
		})
		mu.Lock()
		for !allFolded(acked, folded) && time.Since(start) < lagWindow+time.Minute {
			cond.Wait()
		}
		for k, t := range acked {
			f, ok := folded[k]
			if !ok {
				mu.Unlock()
				b.Fatalf("stream %s version %d not in the view a minute after the appends ended", k.stream, k.version)
			}
			lags = append(lags, f.Sub(t))
		}
		clear(acked)
		clear(folded)
		mu.Unlock()
		deadline.Stop()
	}
	slices.Sort(lags)
	b.ReportMetric(percentile(lags, 0.50).Seconds()*1000, "p50-ms")
	b.ReportMetric(percentile(lags, 0.99).Seconds()*1000, "p99-ms")
	b.ReportMetric(float64(len(lags))/float64(b.N), "events/op")
}

func allFolded[K comparable](acked, folded map[K]time.Time) bool {
	for k := range acked {
		if _, ok := folded[k]; !ok {
			return false
		}
	}
	return true
}

// percentile returns the q-quantile of sorted (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// The retention benchmark's outbox: retainStreams streams of retainEach
// messages each per iteration, one message per append (as a state
// change's outbox message is), each with an id.
const (
	retainStreams = 50
	retainEach    = 20
)

// outboxMessage is a message of the retention benchmark: an order's
// shipment, some 200 bytes.
type outboxMessage struct {
	Order    string
	Customer string
	Amount   int64
	Note     string
}

// BenchmarkRetention: what an outbox-like stream leaves in storage per
// message once its messages are dispatched, and what dispatching costs.
// Each iteration appends retainEach messages (one per append, with an
// id, 16 appends in flight) to each of retainStreams outbox streams
// (stream.ID{PartitionKey: customer, Prefix: "outbox"}) through
// Feed.Append, and runs relay rounds with one subscription (a publisher
// that sends nothing) until no stream is marked: after every message of
// each stream (rounds=each: a round per message, a low rate, the worst
// case for trims), or after all of them (rounds=batch: many messages a
// round). Sub-benchmarks by trim:
//   - trim=off: no RelayOptions.Trim: every message stays;
//   - trim=on: RelayOptions.Trim chooses the outbox streams;
//   - trim=dropids: the same, and stream.Options.DropTrimmedIDs.
//
// rows/msg and bytes/msg are the rows left in both tables (the streams'
// rows; the feed's directory, checkpoint and mark rows) after the last
// iteration, per message appended, bytes as Azure measures an entity
// against its 1 MiB limit; requests/msg counts every storage request of
// the timed iterations (the appends, the rounds, the trims) per message.
// The breakdown of what is left is logged (-v).
func BenchmarkRetention(b *testing.B) {
	ctx := context.Background()
	note := strings.Repeat("n", 120)
	for _, rounds := range []string{"each", "batch"} {
		for _, mode := range []string{"off", "on", "dropids"} {
			b.Run("rounds="+rounds+"/trim="+mode, func(b *testing.B) {
				retention(ctx, b, rounds == "each", mode, note)
			})
		}
	}
}

func retention(ctx context.Context, b *testing.B, each bool, mode, note string) {
	acct := testenv.Account(b, nil)
	reg := &tablekit.Registry{}
	if err := tablekit.Register[outboxMessage](reg, "Shipped", 1); err != nil {
		b.Fatal(err)
	}
	st := testenv.OpenTable[tablekit.Entity](b, acct, nil)
	ft := testenv.OpenTable[tablekit.Entity](b, acct, nil)
	store, err := stream.NewStore(st, reg, &stream.Options{DropTrimmedIDs: mode == "dropids"})
	if err != nil {
		b.Fatal(err)
	}
	f, err := feed.New(store, ft, nil)
	if err != nil {
		b.Fatal(err)
	}
	opts := &feed.RelayOptions{}
	if mode != "off" {
		opts.Trim = func(id stream.ID) bool { return id.Prefix == "outbox" }
	}
	r, err := f.NewRelay([]feed.Subscription{{Name: "publisher", Handle: func(context.Context, feed.Change) error { return nil }}}, opts)
	if err != nil {
		b.Fatal(err)
	}
	sent := 0
	appendWave := func(ctx context.Context, n int) error { // n messages, spread over the streams
		return inParallel(ctx, n, appendConcurrency, func(ctx context.Context, i int) error {
			id := stream.ID{PartitionKey: fmt.Sprintf("customer-%03d", i%retainStreams), Prefix: "outbox"}
			msg := outboxMessage{Order: fmt.Sprintf("order-%d", sent+i), Customer: id.PartitionKey, Amount: int64(i), Note: note}
			_, err := f.Append(ctx, id, stream.AnyVersion, []stream.Event{{ID: msg.Order, Data: msg}})
			return err
		})
	}
	dispatch := func(ctx context.Context) error {
		for {
			res, err := r.Round(ctx, 1)
			if err != nil || res.Streams == 0 {
				return err
			}
		}
	}
	run := func(ctx context.Context) error {
		waves, per := 1, retainStreams*retainEach
		if each {
			waves, per = retainEach, retainStreams
		}
		for range waves {
			if err := appendWave(ctx, per); err != nil {
				return err
			}
			sent += per
			if err := dispatch(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	meter := acct.Meter()
	var requests int64
	for b.Loop() {
		before := meter.Snapshot()
		if err := run(ctx); err != nil {
			b.Fatal(err)
		}
		requests += meter.Snapshot().Sub(before).Total()
	}
	msgs := float64(retainStreams * retainEach * b.N)
	kinds := map[string][2]int{} // rows, bytes by kind
	count := func(kind string, e tablekit.Entity) {
		k := kinds[kind]
		k[0]++
		k[1] += codec.EntitySize(e)
		kinds[kind] = k
	}
	for e, err := range st.Query(ctx, tablekit.Filter{}, nil) {
		if err != nil {
			b.Fatal(err)
		}
		_, rest, _ := strings.Cut(e.RowKey, "~")
		kind, _, _ := strings.Cut(rest, "~")
		if kind == "ev" && strings.HasSuffix(e.RowKey, "~ev~0000000001") {
			kind = "ev1" // the tombstone, once trimmed
		}
		count("stream "+kind, e)
	}
	for e, err := range ft.Query(ctx, tablekit.Filter{}, nil) {
		if err != nil {
			b.Fatal(err)
		}
		kind := "feed " + e.PartitionKey[:strings.Index(e.PartitionKey, "~")+1] + e.RowKey[:min(2, len(e.RowKey))]
		count(kind, e)
	}
	rows, bytes := 0, 0
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		rows, bytes = rows+kinds[k][0], bytes+kinds[k][1]
		lines = append(lines, fmt.Sprintf("%s: %d rows, %d bytes", k, kinds[k][0], kinds[k][1]))
	}
	b.Logf("%d messages in %d streams: %s", int(msgs), retainStreams, strings.Join(lines, "; "))
	b.ReportMetric(float64(rows)/msgs, "rows/msg")
	b.ReportMetric(float64(bytes)/msgs, "bytes/msg")
	b.ReportMetric(float64(requests)/msgs, "requests/msg")
}
