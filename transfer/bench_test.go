package transfer_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/transfer"
)

// The benchmarks of issue 18 load their data once per test binary (100,000
// entities in 64 partitions; Azurite keeps it in memory) and run with
//
//	go test -run '^$' -bench . -benchtime 1x -count 6 ./transfer
//
// Export reads through latencyProxy, which adds 20 ms to every request's
// round trip (10 ms each way), as a link to a distant region would.
const (
	benchN     = 100_000
	benchParts = 64
	rtt        = 20 * time.Millisecond
)

// latencyProxy is a reverse proxy in front of target that delays each
// request by half of rtt before forwarding it and each response by the
// other half before returning it.
type latencyProxy struct {
	srv *http.Server
	ln  net.Listener
}

// With replay set, the proxy answers a GET it has answered before from
// memory, as Azurite answered it the first time: the server's own time
// then drops out of the measurement and only the link and the client are
// left, as with a service whose query time does not grow with the table.
func startLatencyProxy(tb testing.TB, target string, delay time.Duration, replay bool) *latencyProxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	var base http.RoundTripper = &http.Transport{MaxIdleConnsPerHost: 256}
	if replay {
		base = &replayTransport{base: base, answers: map[string]*recorded{}}
	}
	rp.Transport = delayTransport{base: base, half: delay / 2}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &latencyProxy{srv: &http.Server{Handler: rp}, ln: ln}
	go p.srv.Serve(ln)
	tb.Cleanup(func() { p.srv.Close() })
	return p
}

type delayTransport struct {
	base http.RoundTripper
	half time.Duration
}

func (d delayTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(d.half)
	resp, err := d.base.RoundTrip(r)
	time.Sleep(d.half)
	return resp, err
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

var tableEndpoint = regexp.MustCompile(`TableEndpoint=https?://[^/;]+`)

// proxied returns the connection string with its table endpoint moved to
// the proxy.
func (p *latencyProxy) proxied(cs string) string {
	return tableEndpoint.ReplaceAllString(cs, "TableEndpoint=http://"+p.ln.Addr().String())
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
// and Azurite's recorded answers replayed (see startLatencyProxy).
var servers = []string{"azurite", "replay"}

// proxiedTable opens table name through a latency proxy.
func proxiedTable(b *testing.B, name string, replay bool) (*tablekit.Account, *tablekit.Table[tablekit.Entity]) {
	proxy := startLatencyProxy(b, tableEndpointOf(testenv.ConnectionString(b)), rtt, replay)
	acct, err := tablekit.Open(proxy.proxied(testenv.ConnectionString(b)), nil)
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
// through a 20 ms round-trip link, 16 ranges at once, to io.Discard.
func BenchmarkExport(b *testing.B) {
	_, name := benchData(b)
	for _, server := range servers {
		b.Run("server="+server, func(b *testing.B) {
			_, t := proxiedTable(b, name, server == "replay")
			export := func() transfer.ExportResult {
				res, err := transfer.Export(context.Background(), t, io.Discard, nil)
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
			// The peak of the whole process (with replay: the recorded
			// answers too), and its growth during the export.
			b.ReportMetric(peak, "peak-heap-MiB")
			b.ReportMetric(growth, "heap-growth-MiB")
			b.ReportMetric(float64(res.Transactions), "requests")
			b.ReportMetric(float64(res.Probes), "probes")
			b.ReportMetric(float64(res.Ranges), "ranges")
		})
	}
}

// BenchmarkExportSequentialPager: the same data through the same link,
// read the way the SDK's samples read a table: one aztables pager, page
// after page (entities only counted, not even decoded).
func BenchmarkExportSequentialPager(b *testing.B) {
	_, name := benchData(b)
	for _, server := range servers {
		b.Run("server="+server, func(b *testing.B) {
			acct, _ := proxiedTable(b, name, server == "replay")
			client := acct.Table(name)
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
		res, err := transfer.Import(context.Background(), t, bytes.NewReader(data), &transfer.ImportOptions{Mode: transfer.UpsertReplace})
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

// BenchmarkPurge: 50,000 entities in 10 partitions, purged; the Meter
// must count exactly the listing requests (pages and key probes) and
// ceil(n/100) transactions per partition (500), or the benchmark fails.
// Loading is not timed. split=none reads the table as one range (no
// probes): the least listing possible, 50 pages of 1,000.
func BenchmarkPurge(b *testing.B) {
	const n, parts = 50_000, 10
	for _, split := range []string{"sampled", "none"} {
		b.Run("split="+split, func(b *testing.B) {
			acct := testenv.Account(b, nil)
			t := newTable(b, acct)
			es := benchEntities(n, parts)
			opts := transfer.PurgeOptions{JobOptions: transfer.JobOptions{Meter: acct.Meter()}}
			if split == "none" {
				opts.Scan.MaxProbes = -1
			}
			var res transfer.PurgeResult
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
				d := acct.Meter().Snapshot().Sub(before)
				if err != nil || !res.Complete || res.Deleted != n {
					b.Fatalf("purge: %+v, %v", res, err)
				}
				if tx := d.Count(tablekit.ServiceTable, "Transaction"); tx != n/100 || d.Service(tablekit.ServiceTable) != res.Pages+tx {
					b.Fatalf("Meter: %v; want %d transactions + %d listing pages", d, n/100, res.Pages)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "entities/s")
			b.ReportMetric(float64(res.DeleteTransactions), "delete-tx")
			b.ReportMetric(float64(res.Pages), "listing-requests")
			b.ReportMetric(float64(res.Probes), "probes")
		})
	}
}
