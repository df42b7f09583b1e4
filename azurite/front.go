package azurite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Endpoints are the service URLs of one storage account, each with its
// path, e.g. Table "http://127.0.0.1:10002/devstoreaccount1" for Azurite or
// "https://myaccount.table.core.windows.net" for Azure. An empty URL means
// the service is absent.
type Endpoints struct {
	Blob, Queue, Table string
}

// ConnectionString returns a connection string for these endpoints with
// the given account name and key, e.g. with [AccountName] and [AccountKey]
// for Azurite. Absent services are left out.
func (e Endpoints) ConnectionString(account, key string) string {
	var b strings.Builder
	scheme := "http"
	for _, u := range []string{e.Table, e.Queue, e.Blob} {
		if strings.HasPrefix(u, "https://") {
			scheme = "https"
			break
		}
	}
	b.WriteString("DefaultEndpointsProtocol=" + scheme + ";AccountName=" + account + ";AccountKey=" + key + ";")
	for _, s := range []struct{ name, url string }{{"BlobEndpoint", e.Blob}, {"QueueEndpoint", e.Queue}, {"TableEndpoint", e.Table}} {
		if s.url != "" {
			b.WriteString(s.name + "=" + s.url + ";")
		}
	}
	return b.String()
}

// FrontOptions configures a [Front]. The zero value enforces Azure's
// entity and batch limits and SAS PartitionKey/RowKey ranges, and neither
// throttles, delays, reorders nor pages as Azure may (the front spec
// "strict" adds Paging: see [ParseFrontSpec]). The package documentation
// says what each mode does.
type FrontOptions struct {
	// NoLimits turns off the checks of Azure's entity and batch limits
	// (key characters and size, property names, count and size, entity
	// size, batch actions, size, partition and duplicates).
	NoLimits bool

	// NoSASRanges turns off the enforcement of the PartitionKey/RowKey
	// range (spk, srk, epk, erk) of table SAS tokens.
	NoSASRanges bool

	// Throttle, if not nil, applies Azure's scalability targets as token
	// buckets and answers 503 ServerBusy beyond them.
	Throttle *ThrottleOptions

	// Latency is added to every request before it is handled, like a WAN
	// round trip (e.g. 20ms), so that concurrency gains show locally.
	Latency time.Duration

	// Cosmos makes the table endpoint behave like Azure Cosmos DB for
	// Table where it differs from Table storage: query results out of key
	// order (the order Seed picks), Cosmos DB's limits, answers' shapes
	// and table names (see "Cosmos DB mode" in the package documentation).
	Cosmos bool

	// Paging makes query answers page as Azure's may: pages cut short at
	// a partition boundary or anywhere, empty pages that carry a
	// continuation token, and a continuation token on the last page (see
	// "Azure's paging" in the package documentation). Which pages are cut
	// is decided by Seed: deterministic, with no real waits.
	Paging bool

	// Seed picks the Cosmos order and the pages Paging cuts: the same
	// seed, the same answers.
	Seed uint64

	// sortWithinPartition keeps each partition's entities in RowKey order
	// in Cosmos mode, as the live service did in every recording (for the
	// replay tests, through export_test.go).
	sortWithinPartition bool
}

// FrontStats counts what a [Front] has done since it started.
type FrontStats struct {
	// Requests is the number of requests received.
	Requests int64
	// Forwarded is the number of requests passed on to the target
	// (a Cosmos-mode query counts once, however many pages it read).
	Forwarded int64
	// Throttled is the number of requests answered 503 ServerBusy:
	// ThrottledAccount for the account's rate, ThrottledPartition for a
	// partition's.
	Throttled, ThrottledAccount, ThrottledPartition int64
	// LimitRejected is the number of requests refused for an entity or
	// batch limit.
	LimitRejected int64
	// SASRejected is the number of requests refused because a key was
	// outside a table SAS's range.
	SASRejected int64
	// SASFiltered is the number of queries narrowed to a table SAS's
	// range.
	SASFiltered int64
}

// Front is a reverse proxy before a storage account (usually an Azurite)
// that answers as Azure does where Azurite is lenient; see the package
// documentation. Its methods are safe for concurrent use.
type Front struct {
	opts     FrontOptions
	cosmos   *cosmosMode
	paging   *paging
	throttle *throttle
	services []*frontService
	ends     Endpoints

	requests, forwarded                   atomic.Int64
	throttledAccount, throttledPartition  atomic.Int64
	limitRejected, sasRejected, sasFilter atomic.Int64

	closeOnce sync.Once
	closeErr  error
	made      bool // by NewFront
}

// serviceKind is one of the three storage services.
type serviceKind int

const (
	blobService serviceKind = iota
	queueService
	tableService
)

// frontService is the front of one service: its listener and proxy.
type frontService struct {
	front    *Front
	kind     serviceKind
	target   *url.URL
	prefix   string // target's path without trailing slash, e.g. "/devstoreaccount1"
	listener net.Listener
	server   *http.Server
	proxy    *httputil.ReverseProxy
	client   *http.Client // for the front's own requests (Cosmos queries)
	endpoint string
}

// maxTableBody bounds the body of a table request the front reads: more
// than any request Azure accepts.
const maxTableBody = 8 << 20

// NewFront starts a front before the services of target, on free loopback
// ports, and returns once it listens. It serves plain HTTP (whatever the
// target's scheme), and its [Front.Endpoints] have the same paths as
// target's. Call [Front.Close] to stop it. A nil opts means the zero
// [FrontOptions]: Azure's limits and SAS ranges.
func NewFront(ctx context.Context, target Endpoints, opts *FrontOptions) (_ *Front, err error) {
	defer func() { err = opErr("NewFront", err) }()
	var o FrontOptions
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	f := &Front{opts: o, made: true}
	if o.Throttle != nil {
		f.throttle = newThrottle(o.Throttle)
	}
	if o.Cosmos {
		f.cosmos = &cosmosMode{seed: o.Seed, sortWithin: o.sortWithinPartition}
	}
	if o.Paging {
		f.paging = &paging{seed: o.Seed}
	}
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
	for _, s := range []struct {
		kind serviceKind
		url  string
		out  *string
	}{{blobService, target.Blob, &f.ends.Blob}, {queueService, target.Queue, &f.ends.Queue}, {tableService, target.Table, &f.ends.Table}} {
		if s.url == "" {
			continue
		}
		svc, err := f.startService(ctx, s.kind, s.url, transport)
		if err != nil {
			f.Close()
			return nil, err
		}
		*s.out = svc.endpoint
	}
	return f, nil
}

func (o *FrontOptions) validate() error {
	if o.Latency < 0 {
		return fmt.Errorf("azurite: FrontOptions.Latency is negative (%v)", o.Latency)
	}
	if o.Throttle != nil {
		if err := o.Throttle.validate(); err != nil {
			return err
		}
	}
	return nil
}

func (f *Front) startService(ctx context.Context, kind serviceKind, target string, transport *http.Transport) (*frontService, error) {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("azurite: front target %q is not an http(s) URL", redactSAS(target))
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("azurite: front: %w", err)
	}
	s := &frontService{
		front:    f,
		kind:     kind,
		target:   u,
		prefix:   strings.TrimSuffix(u.EscapedPath(), "/"),
		listener: l,
		client:   &http.Client{Transport: transport},
	}
	s.endpoint = "http://" + l.Addr().String() + s.prefix
	s.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = u.Scheme
			pr.Out.URL.Host = u.Host
			pr.Out.Host = u.Host
		},
		Transport: transport,
		ErrorLog:  log.New(io.Discard, "", 0),
		ModifyResponse: func(resp *http.Response) error {
			if kind == tableService {
				return s.modifyTableAnswer(resp)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			s.writeError(w, r, http.StatusBadGateway, "InternalError", unreachable("reach the target", err))
		},
	}
	s.server = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	f.services = append(f.services, s)
	go s.server.Serve(l)
	return s, nil
}

// Endpoints returns the front's service URLs (empty for a service the
// target lacks).
func (f *Front) Endpoints() Endpoints {
	if f == nil {
		return Endpoints{}
	}
	return f.ends
}

// ConnectionString returns a connection string for the front with
// Azurite's well-known account ([AccountName], [AccountKey]). Before
// another account, use Endpoints().ConnectionString(name, key).
func (f *Front) ConnectionString() string {
	if f == nil || f.ends == (Endpoints{}) {
		return "" // not made by NewFront
	}
	return f.ends.ConnectionString(AccountName, AccountKey)
}

// Stats returns what the front has counted so far.
func (f *Front) Stats() FrontStats {
	if f == nil {
		return FrontStats{}
	}
	a, p := f.throttledAccount.Load(), f.throttledPartition.Load()
	return FrontStats{
		Requests:           f.requests.Load(),
		Forwarded:          f.forwarded.Load(),
		Throttled:          a + p,
		ThrottledAccount:   a,
		ThrottledPartition: p,
		LimitRejected:      f.limitRejected.Load(),
		SASRejected:        f.sasRejected.Load(),
		SASFiltered:        f.sasFilter.Load(),
	}
}

// Close stops the front's listeners and waits (up to five seconds) for
// requests in flight. Calling it again returns the first call's result.
func (f *Front) Close() error {
	if f == nil || !f.made {
		return errNotMade("Front.Close", "NewFront")
	}
	f.closeOnce.Do(func() {
		defer func() { f.closeErr = opErr("Front.Close", f.closeErr) }()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, s := range f.services {
			if err := s.server.Shutdown(ctx); err != nil && f.closeErr == nil {
				s.server.Close()
				f.closeErr = fmt.Errorf("azurite: closing the front: %w", err)
			}
		}
		for _, s := range f.services {
			s.client.CloseIdleConnections()
		}
	})
	return f.closeErr
}

// ServeHTTP handles one request to this service's front.
func (s *frontService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := s.front
	f.requests.Add(1)
	if d := f.opts.Latency; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if s.kind == tableService {
		s.serveTable(w, r)
		return
	}
	if !s.admit(w, r, "", 0) {
		return
	}
	s.forward(w, r)
}

// forward passes r on to the target.
func (s *frontService) forward(w http.ResponseWriter, r *http.Request) {
	s.front.forwarded.Add(1)
	s.proxy.ServeHTTP(w, r)
}

// admit takes a request's tokens from the throttle: one from the account
// and, when partition is not "", entities from that partition. It answers
// 503 ServerBusy and returns false when a bucket is short.
func (s *frontService) admit(w http.ResponseWriter, r *http.Request, partition string, entities int) bool {
	t := s.front.throttle
	if t == nil {
		return true
	}
	switch t.take(partition, entities) {
	case throttleAccount:
		s.front.throttledAccount.Add(1)
		s.writeError(w, r, http.StatusServiceUnavailable, "ServerBusy", "Operations per second is over the account limit.")
		return false
	case throttlePartition:
		s.front.throttledPartition.Add(1)
		s.writeError(w, r, http.StatusServiceUnavailable, "ServerBusy", "The server is busy.")
		return false
	}
	return true
}

// writeError answers r with a service error in the service's format.
func (s *frontService) writeError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if s.kind == tableService {
		s.tableError(w, r, status, code, msg)
	} else {
		writeXMLError(w, r, status, code, msg)
	}
}

// String describes the front for logs.
func (f *Front) String() string {
	if f == nil {
		return "azurite.Front(nil)"
	}
	var parts []string
	for _, s := range f.services {
		parts = append(parts, strconv.Quote(s.endpoint)+" -> "+strconv.Quote(s.target.String()))
	}
	return "azurite.Front{" + strings.Join(parts, ", ") + "}"
}
