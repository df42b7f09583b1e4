package transfer_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/transfer"
)

// The benchmarks of issue 18 load their data once per test binary (100,000
// entities in 64 partitions; Azurite keeps it in memory) and run with
//
//	go test -run '^$' -bench . -benchtime 1x -count 6 ./transfer
//
// Export reads through package azurite's front with its Latency option:
// 20 ms added to every request, the round trip of a link to a distant
// region. The front runs in a child process (this test binary run again,
// see TestMain), so that the benchmark's heap holds the exporter alone.
const (
	benchN     = 100_000
	benchParts = 64
	rtt        = 20 * time.Millisecond
)

// benchServerEnv, set in the environment of this test binary, makes it
// serve instead of testing (see benchServer): its value is "azurite" or
// "replay", and benchTargetEnv the table endpoint to serve.
const (
	benchServerEnv = "TRANSFER_BENCH_SERVER"
	benchTargetEnv = "TRANSFER_BENCH_TARGET"
)

// benchServer is the child process of the export benchmarks: a front with
// Latency rtt before the table endpoint in benchTargetEnv ("azurite"), or
// before a replay server in front of it ("replay": a GET answered before
// is answered from memory, as Azurite answered it the first time, so that
// the server's own time drops out of the measurement and only the link
// and the client are left, as with a service whose query time does not
// grow with the table). It prints the front's table endpoint and serves
// until its standard input closes (the parent ended).
func benchServer(mode, target string) int {
	ctx := context.Background()
	if mode == "replay" {
		u, err := url.Parse(target)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
		rp.Transport = &replayTransport{base: &http.Transport{MaxIdleConnsPerHost: 256}, answers: map[string]*recorded{}}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		go http.Serve(ln, rp)
		target = "http://" + ln.Addr().String() + u.Path
	}
	front, err := azurite.NewFront(ctx, azurite.Endpoints{Table: target}, &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Latency: rtt})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer front.Close()
	fmt.Println(front.Endpoints().Table)
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// startBenchServer runs benchServer in a child process for the rest of
// the benchmark and returns its table endpoint.
func startBenchServer(tb testing.TB, mode, target string) string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"="+mode, benchTargetEnv+"="+target)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("bench server: %v", err)
	}
	return strings.TrimSpace(line)
}

// replayTransport answers GETs it has seen from memory.
type replayTransport struct {
	base    http.RoundTripper
	mu      sync.Mutex
	answers map[string]*recorded
}

type recorded struct {
	status int
	header http.Header
	body   []byte
}

func (r *replayTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return r.base.RoundTrip(req)
	}
	key := req.URL.RequestURI()
	r.mu.Lock()
	a := r.answers[key]
	r.mu.Unlock()
	if a == nil {
		resp, err := r.base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		a = &recorded{status: resp.StatusCode, header: resp.Header.Clone(), body: body}
		r.mu.Lock()
		r.answers[key] = a
		r.mu.Unlock()
	}
	return &http.Response{StatusCode: a.status, Header: a.header.Clone(), Body: io.NopCloser(bytes.NewReader(a.body)),
		ContentLength: int64(len(a.body)), Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
}

var tableEndpoint = regexp.MustCompile(`TableEndpoint=[^;]*`)

// withTableEndpoint returns the connection string cs with its table
// endpoint replaced by endpoint (a URL with the account's path).
func withTableEndpoint(cs, endpoint string) string {
	return tableEndpoint.ReplaceAllLiteralString(cs, "TableEndpoint="+endpoint)
}

func tableEndpointOf(cs string) string {
	m := tableEndpoint.FindString(cs)
	return m[len("TableEndpoint="):]
}

var bench100k struct {
	once sync.Once
	name string
	err  error
}

// benchData returns the name of a table holding 100,000 entities in 64
// partitions, made once per test binary and left to Azurite's end (it is
// in memory). Each entity has 6 properties of 5 types, about 200 bytes.
func benchData(b *testing.B) (*tablekit.Account, string) {
	acct := testenv.Account(b, nil)
	bench100k.once.Do(func() {
		bench100k.name = "bench100k" + fmt.Sprint(time.Now().UnixNano()%1e6)
		t, err := tablekit.OpenTable[tablekit.Entity](acct, bench100k.name, nil)
		if err == nil {
			err = t.CreateIfNotExists(context.Background())
		}
		if err == nil {
			_, err = t.BulkWriter(nil).Upsert(context.Background(), benchEntities(benchN, benchParts))
		}
		bench100k.err = err
	})
	if bench100k.err != nil {
		b.Fatal(bench100k.err)
	}
	return acct, bench100k.name
}

func benchEntities(n, parts int) []tablekit.Entity {
	es := make([]tablekit.Entity, n)
	for i := range es {
		es[i] = tablekit.Entity{PartitionKey: fmt.Sprintf("device-%04d", i%parts*37%1000), RowKey: fmt.Sprintf("%010d", i),
			Properties: map[string]any{
				"Name": "sensor reading", "Count": int32(i), "Total": int64(i) * 1_000_003, "Value": float64(i) / 7,
				"At": time.Unix(1_700_000_000+int64(i), 0).UTC(), "Ok": i%2 == 0,
			}}
	}
	return es
}

// heapPeak samples the heap every 2 ms until stopped.
type heapPeak struct {
	stop chan struct{}
	done chan struct{}
	base uint64 // live heap when sampling started, after a GC
	peak atomic.Uint64
}

func sampleHeap() *heapPeak {
	runtime.GC()
	h := &heapPeak{stop: make(chan struct{}), done: make(chan struct{})}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	h.base = s[0].Value.Uint64()
	go func() {
		defer close(h.done)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > h.peak.Load() {
				h.peak.Store(v)
			}
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

// finish returns the peak heap and its growth over the start, in MiB.
func (h *heapPeak) finish() (peak, growth float64) {
	close(h.stop)
	<-h.done
	p := h.peak.Load()
	return float64(p) / (1 << 20), float64(p-min(p, h.base)) / (1 << 20)
}

// servers are the two back ends of the export benchmarks: Azurite itself,
// and Azurite's recorded answers replayed (see benchServer).
var servers = []string{"azurite", "replay"}

// linkedTable opens table name through a child process's front with
// Latency rtt (and replayed answers for server "replay").
func linkedTable(b *testing.B, name, server string) (*tablekit.Account, *tablekit.Table[tablekit.Entity]) {
	cs := testenv.ConnectionString(b)
	endpoint := startBenchServer(b, server, tableEndpointOf(cs))
	acct, err := tablekit.Open(withTableEndpoint(cs, endpoint), nil)
	if err != nil {
		b.Fatal(err)
	}
	t, err := tablekit.OpenTable[tablekit.Entity](acct, name, nil)
	if err != nil {
		b.Fatal(err)
	}
	return acct, t
}

// BenchmarkExport: transfer.Export of 100,000 entities in 64 partitions
// through a 20 ms round-trip link, 16 ranges at once (conc=4: 4), to
// io.Discard. The heap figures are this process's, where only the
// exporter runs (the link and the replayed answers live in a child
// process): the peak of the heap's objects (live and not yet swept)
// during an export, and its growth over the heap before it.
func BenchmarkExport(b *testing.B) {
	_, name := benchData(b)
	for _, server := range servers {
		for _, conc := range []int{16, 4} {
			b.Run(fmt.Sprintf("server=%s/conc=%d", server, conc), func(b *testing.B) {
				_, t := linkedTable(b, name, server)
				opts := &transfer.Options{Concurrency: conc}
				export := func() transfer.ExportResult {
					res, err := transfer.Export(context.Background(), t, io.Discard, opts)
					if err != nil || res.Entities != benchN {
						b.Fatalf("export: %+v, %v", res, err)
					}
					return res
				}
				if server == "replay" {
					export() // record
				}
				var peak, growth float64
				var res transfer.ExportResult
				for b.Loop() {
					h := sampleHeap()
					res = export()
					p, g := h.finish()
					peak, growth = max(peak, p), max(growth, g)
				}
				b.ReportMetric(float64(benchN*b.N)/b.Elapsed().Seconds(), "entities/s")
				b.ReportMetric(peak, "peak-heap-MiB")
				b.ReportMetric(growth, "heap-growth-MiB")
				b.ReportMetric(float64(res.Transactions), "requests")
				b.ReportMetric(float64(res.Probes), "probes")
				b.ReportMetric(float64(res.Ranges), "ranges")
			})
		}
	}
}

// BenchmarkExportSequentialPager: the same data through the same link,
// read the way the SDK's samples read a table: one aztables pager, page
// after page (entities only counted, not even decoded).
func BenchmarkExportSequentialPager(b *testing.B) {
	_, name := benchData(b)
	for _, server := range servers {
		b.Run("server="+server, func(b *testing.B) {
			acct, _ := linkedTable(b, name, server)
			client := acct.Tables().NewClient(name)
			read := func() {
				n := 0
				pager := client.NewListEntitiesPager(&aztables.ListEntitiesOptions{})
				for pager.More() {
					page, err := pager.NextPage(context.Background())
					if err != nil {
						b.Fatal(err)
					}
					n += len(page.Entities)
				}
				if n != benchN {
					b.Fatalf("read %d entities", n)
				}
			}
			if server == "replay" {
				read() // record
			}
			for b.Loop() {
				read()
			}
			b.ReportMetric(float64(benchN*b.N)/b.Elapsed().Seconds(), "entities/s")
		})
	}
}

var benchExport struct {
	once sync.Once
	data []byte
	err  error
}

// exportData is the export of the benchmark table, made once.
func exportData(b *testing.B) []byte {
	acct, name := benchData(b)
	benchExport.once.Do(func() {
		t, err := tablekit.OpenTable[tablekit.Entity](acct, name, nil)
		if err != nil {
			benchExport.err = err
			return
		}
		var buf bytes.Buffer
		_, benchExport.err = transfer.Export(context.Background(), t, &buf, nil)
		benchExport.data = buf.Bytes()
	})
	if benchExport.err != nil {
		b.Fatal(benchExport.err)
	}
	return benchExport.data
}

// BenchmarkImport: transfer.Import (upsert-replace) of the 100,000-entity
// export into a table, straight to Azurite.
func BenchmarkImport(b *testing.B) {
	data := exportData(b)
	t := newTable(b, testenv.Account(b, nil))
	for b.Loop() {
		res, err := transfer.Import(context.Background(), t, bytes.NewReader(data), transfer.Replace, &transfer.ImportOptions{})
		if err != nil || res.Written != benchN {
			b.Fatalf("import: written %d, %v", res.Written, err)
		}
	}
	b.ReportMetric(float64(benchN*b.N)/b.Elapsed().Seconds(), "entities/s")
}

// BenchmarkImportBulkWriter: the same entities, already in memory, in one
// BulkWriter.Upsert call: the rate Import is measured against.
func BenchmarkImportBulkWriter(b *testing.B) {
	data := exportData(b)
	var es []tablekit.Entity
	rd, err := transfer.NewReader(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	for {
		e, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		es = append(es, e)
	}
	t := newTable(b, testenv.Account(b, nil))
	for b.Loop() {
		if _, err := t.BulkWriter(nil).Upsert(context.Background(), es); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchN*b.N)/b.Elapsed().Seconds(), "entities/s")
}

// BenchmarkPurge: 50,000 entities in 10 partitions, purged. Loading is
// not timed. scan=default is the default purge (one range, no probes): it
// fails unless the Meter counts exactly the minimum, worked out here from
// the data alone: one keys-only listing page per 1,000 entities and
// ceil(n/100) entity group transactions per partition, nothing else.
// scan=sampled lists in parallel ranges found with key probes
// (MaxProbes 64); it must send the same delete transactions, and reports
// what the probes cost on top.
func BenchmarkPurge(b *testing.B) {
	const n, parts = 50_000, 10
	es := benchEntities(n, parts)
	perPartition := map[string]int64{}
	for _, e := range es {
		perPartition[e.PartitionKey]++
	}
	var minDeletes int64
	for _, c := range perPartition {
		minDeletes += (c + 99) / 100
	}
	minPages := int64((n + 999) / 1000)
	for _, scan := range []string{"default", "sampled"} {
		b.Run("scan="+scan, func(b *testing.B) {
			acct := testenv.Account(b, nil)
			t := newTable(b, acct)
			opts := transfer.PurgeOptions{}
			if scan == "sampled" {
				opts.MaxProbes = 64
			}
			var res transfer.PurgeResult
			var d tablekit.MeterSnapshot
			for b.Loop() {
				b.StopTimer()
				if _, err := t.BulkWriter(nil).Upsert(context.Background(), es); err != nil {
					b.Fatal(err)
				}
				before := acct.Meter().Snapshot()
				b.StartTimer()
				var err error
				res, err = transfer.Purge(context.Background(), t, &opts)
				b.StopTimer()
				d = acct.Meter().Snapshot().Sub(before)
				if err != nil || !res.Complete || res.Deleted != n {
					b.Fatalf("purge: %+v, %v", res, err)
				}
				pages, deletes, all := d.Count("table", "QueryEntities"), d.Count("table", "Transaction"), d.Service("table")
				if deletes != minDeletes {
					b.Fatalf("Meter: %d delete transactions, want %d (%v)", deletes, minDeletes, d)
				}
				if scan == "default" && (pages != minPages || all != minPages+minDeletes) {
					b.Fatalf("Meter: %d transactions (%d listing), want the minimum %d (%d listing pages + %d deletes): %v", all, pages, minPages+minDeletes, minPages, minDeletes, d)
				}
				if all != pages+deletes {
					b.Fatalf("Meter: %d transactions besides listing and deletes: %v", all-pages-deletes, d)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "entities/s")
			b.ReportMetric(float64(d.Count("table", "Transaction")), "delete-tx")
			b.ReportMetric(float64(d.Count("table", "QueryEntities")), "listing-requests")
			b.ReportMetric(float64(res.Probes), "probes")
			b.ReportMetric(float64(d.Service("table")-minPages-minDeletes), "tx-over-minimum")
		})
	}
}
