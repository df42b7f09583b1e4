package tablekit

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit/internal/wire"
)

// Meter counts the storage transactions (HTTP requests that got a response
// from the service) of the clients it is installed in, by service and
// operation. Storage bills per transaction, so a Meter tells what an
// operation costs; tests use it to assert exactly that. Retries are counted:
// each try is billed.
//
// Services are "table", "queue" and "blob". Operations are named after the
// REST API: for tables "CreateTable", "DeleteTable", "QueryTables",
// "GetEntity" (point read), "QueryEntities", "InsertEntity",
// "UpdateEntity" (PUT: replace or insert-or-replace), "MergeEntity"
// (MERGE/PATCH: merge or insert-or-merge), "DeleteEntity", "Transaction"
// ($batch), else "Other"; for queues "CreateQueue", "DeleteQueue",
// "PutMessage", "GetMessages", "PeekMessages", "UpdateMessage",
// "DeleteMessage", "ClearMessages", "GetProperties", "SetMetadata",
// "ListQueues", ...; for blobs "PutBlob", "PutBlock", "PutBlockList",
// "AppendBlock", "GetBlob", "GetProperties", "SetMetadata", "DeleteBlob",
// "ListBlobs", "CreateContainer", "DeleteContainer", ...
//
// Every [Account] installs a Meter (see [Account.Meter], [Options].Meter).
// The zero Meter is ready to use (new(tablekit.Meter) to share one between
// Accounts), and a Meter is safe for concurrent use.
type Meter struct {
	counts    sync.Map // meterKey -> *atomic.Int64
	retries   sync.Map // meterKey -> *atomic.Int64: tries after the first
	throttled sync.Map // meterKey -> *atomic.Int64: 503 and 429 answers
}

type meterKey struct{ service, operation string }

func (m *Meter) add(service, operation string) { bump(&m.counts, meterKey{service, operation}) }

// bump adds one to the count of k in counts.
func bump(counts *sync.Map, k meterKey) {
	c, ok := counts.Load(k)
	if !ok {
		c, _ = counts.LoadOrStore(k, new(atomic.Int64))
	}
	c.(*atomic.Int64).Add(1)
}

// load copies the non-zero counts of counts.
func load(counts *sync.Map) map[meterKey]int64 {
	out := map[meterKey]int64{}
	counts.Range(func(k, v any) bool {
		if n := v.(*atomic.Int64).Load(); n != 0 {
			out[k.(meterKey)] = n
		}
		return true
	})
	return out
}

// Snapshot returns the counts so far. Counts keep growing afterwards: use
// [MeterSnapshot.Sub] to get what happened between two snapshots.
func (m *Meter) Snapshot() MeterSnapshot {
	if m == nil {
		return MeterSnapshot{}
	}
	return MeterSnapshot{counts: load(&m.counts), retries: load(&m.retries), throttled: load(&m.throttled)}
}

// endpointPolicy is the per-retry policy that counts the requests of a
// client of service ("table", "queue" or "blob") in m, for the given endpoint, whose path
// (e.g. "/devstoreaccount1" for Azurite) prefixes every request's path.
func (m *Meter) endpointPolicy(service, endpoint string) policy.Policy {
	p := &meterPolicy{meter: m, service: service, baseKnown: true}
	if u, err := url.Parse(endpoint); err == nil {
		p.basePath = strings.TrimRight(u.EscapedPath(), "/")
	}
	return p
}

// meterPolicy counts each request that got a response.
type meterPolicy struct {
	meter     *Meter
	service   string
	basePath  string
	baseKnown bool // else guess: IP hosts (Azurite) put the account in the path
}

func (p *meterPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	var op string
	if wop, ok := wire.OperationOf(req); ok {
		op = string(wop) // tablekit's own table requests say what they are
	} else {
		op = classify(p.service, raw.Method, p.resourcePath(raw.URL), raw.URL.Query(), raw.Header)
	}
	var tries *meterTries
	if req.OperationValue(&tries) && tries.n.Add(1) > 1 {
		bump(&p.meter.retries, meterKey{p.service, op})
	}
	resp, err := req.Next()
	if resp != nil {
		p.meter.add(p.service, op)
		if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests {
			bump(&p.meter.throttled, meterKey{p.service, op})
		}
	}
	return resp, err
}

// resourcePath returns the escaped request path below the account.
func (p *meterPolicy) resourcePath(u *url.URL) string {
	path := u.EscapedPath()
	if p.baseKnown {
		return strings.TrimPrefix(path, p.basePath)
	}
	host := u.Hostname()
	if net.ParseIP(host) != nil || host == "localhost" {
		// path-style URL: /account/resource...
		rest := strings.TrimPrefix(path, "/")
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			return rest[i:]
		}
		return "/"
	}
	return path
}

// classify names the operation of a request to service, given its method,
// escaped path below the account, query and headers.
func classify(service, method, path string, q url.Values, h http.Header) string {
	return wire.Classify(service, method, path, q, h)
}

// MeterSnapshot is the counts of a [Meter] at one moment. The zero value
// has all counts zero.
type MeterSnapshot struct {
	counts, retries, throttled map[meterKey]int64
}

// Count returns the number of requests of one operation of service, e.g.
// Count("table", "GetEntity").
func (s MeterSnapshot) Count(service, operation string) int64 {
	return s.counts[meterKey{service, operation}]
}

// Service returns the number of requests to service ("table", "queue" or
// "blob").
func (s MeterSnapshot) Service(service string) int64 {
	var n int64
	for k, c := range s.counts {
		if k.service == service {
			n += c
		}
	}
	return n
}

// Total returns the number of requests to all services.
func (s MeterSnapshot) Total() int64 {
	var n int64
	for _, c := range s.counts {
		n += c
	}
	return n
}

// Sub returns the requests counted in s but not yet in before, an earlier
// snapshot of the same Meter.
func (s MeterSnapshot) Sub(before MeterSnapshot) MeterSnapshot {
	return MeterSnapshot{counts: subCounts(s.counts, before.counts), retries: subCounts(s.retries, before.retries), throttled: subCounts(s.throttled, before.throttled)}
}

// subCounts returns now - before, key by key.
func subCounts(now, before map[meterKey]int64) map[meterKey]int64 {
	d := map[meterKey]int64{}
	for k, c := range now {
		if n := c - before[k]; n != 0 {
			d[k] = n
		}
	}
	for k, c := range before {
		if _, ok := now[k]; !ok && c != 0 {
			d[k] = -c
		}
	}
	return d
}

// MeterCount is one count of a [MeterSnapshot].
type MeterCount struct {
	Service, Operation string
	// Requests is the number of requests answered (each try counts).
	Requests int64
	// Retries is the number of those that were retries (tries after the
	// first of one call, as the SDK's retry policy sent them).
	Retries int64
	// Throttled is the number of those answered 503 Server Busy or 429
	// Too Many Requests: the service asking the client to slow down.
	Throttled int64
}

// Counts returns every non-zero count of the snapshot, by service and
// operation, in a stable order (for exporting them, e.g. as metrics).
func (s MeterSnapshot) Counts() []MeterCount {
	seen := map[meterKey]bool{}
	for _, m := range []map[meterKey]int64{s.counts, s.retries, s.throttled} {
		for k := range m {
			seen[k] = true
		}
	}
	out := make([]MeterCount, 0, len(seen))
	for k := range seen {
		out = append(out, MeterCount{Service: k.service, Operation: k.operation, Requests: s.counts[k], Retries: s.retries[k], Throttled: s.throttled[k]})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Service != out[j].Service {
			return out[i].Service < out[j].Service
		}
		return out[i].Operation < out[j].Operation
	})
	return out
}

// meterTries counts the tries of one call: meterCallPolicy attaches it to
// the request (an operation value, which the retry policy's clones of the
// request share), and the Meter's per-retry policy counts with it, so that
// it tells retries from first tries.
type meterTries struct{ n atomic.Int32 }

// meterCallPolicy gives each call a try counter.
type meterCallPolicy struct{}

func (meterCallPolicy) Do(req *policy.Request) (*http.Response, error) {
	req.SetOperationValue(&meterTries{})
	return req.Next()
}

// String lists the counts by service and operation, sorted, e.g.
// "3 requests (table: CreateTable=1 GetEntity=1 InsertEntity=1)".
func (s MeterSnapshot) String() string {
	keys := make([]meterKey, 0, len(s.counts))
	for k := range s.counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].service != keys[j].service {
			return serviceOrder(keys[i].service) < serviceOrder(keys[j].service) ||
				serviceOrder(keys[i].service) == serviceOrder(keys[j].service) && keys[i].service < keys[j].service
		}
		return keys[i].operation < keys[j].operation
	})
	var b strings.Builder
	total := s.Total()
	if total == 1 {
		b.WriteString("1 request")
	} else {
		fmt.Fprintf(&b, "%d requests", total)
	}
	if len(keys) == 0 {
		return b.String()
	}
	b.WriteString(" (")
	for i, k := range keys {
		switch {
		case i == 0:
			b.WriteString(k.service + ":")
		case k.service != keys[i-1].service:
			b.WriteString("; " + k.service + ":")
		}
		fmt.Fprintf(&b, " %s=%d", k.operation, s.counts[k])
	}
	b.WriteString(")")
	return b.String()
}

func serviceOrder(s string) int {
	switch s {
	case wire.ServiceTable:
		return 0
	case wire.ServiceQueue:
		return 1
	case wire.ServiceBlob:
		return 2
	}
	return 3
}
