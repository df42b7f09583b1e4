package chaos

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/wire"
)

// Policy returns the azcore policy that injects the Injector's faults into
// the requests of an Account with the given endpoints. Install it in
// tablekit.Options.ClientOptions.PerRetryPolicies (as [Injector.Open] does): it then
// runs on every try, after the SDK's retry policy and before tablekit's
// Meter, which therefore counts only the tries that reached the service.
// The endpoints tell which service a request goes to and which part of
// its path names the account; requests to other URLs are guessed from
// their host name (<account>.table.<suffix>, ...).
func (inj *Injector) Policy(endpoints Endpoints) policy.Policy {
	p := &faultPolicy{inj: inj}
	for _, e := range []struct{ service, url string }{
		{wire.ServiceTable, endpoints.Table},
		{wire.ServiceQueue, endpoints.Queue},
		{wire.ServiceBlob, endpoints.Blob},
	} {
		u, err := url.Parse(e.url)
		if e.url == "" || err != nil {
			continue
		}
		p.endpoints = append(p.endpoints, endpoint{service: e.service, scheme: u.Scheme, host: u.Host,
			base: strings.TrimRight(u.EscapedPath(), "/")})
		if e.service == wire.ServiceTable {
			// A transaction's body names each entity by its full URL.
			p.tableURL = regexp.MustCompile(regexp.QuoteMeta(strings.TrimRight(e.url, "/")) + `/[A-Za-z0-9]+`)
		}
	}
	return p
}

// Endpoints are the service URLs of an Account, without a trailing slash.
type Endpoints struct{ Table, Queue, Blob string }

// EndpointsOf returns acct's service URLs.
func EndpointsOf(acct *tablekit.Account) Endpoints {
	t, q, b := acct.Endpoints()
	return Endpoints{t, q, b}
}

type endpoint struct {
	service, scheme, host, base string
}

type faultPolicy struct {
	inj       *Injector
	endpoints []endpoint
	tableURL  *regexp.Regexp // nil when the table endpoint is unknown
}

// Do decides the fault of one try and injects it.
func (p *faultPolicy) Do(req *policy.Request) (*http.Response, error) {
	inj := p.inj
	raw := req.Raw()
	service, path := p.locate(raw.URL)
	op := wire.Classify(service, raw.Method, path, raw.URL.Query(), raw.Header)
	ctx := raw.Context()
	if !inj.on.Load() || ctx.Value(noFaultsKey{}) != nil || !inj.cfg.eligible(service, op) {
		inj.countIneligible(service, op)
		return req.Next()
	}
	id, err := p.identity(req, service, op, path)
	if err != nil {
		return nil, fmt.Errorf("chaos: reading the request body: %w", err)
	}
	var call *callState
	req.OperationValue(&call)
	d := inj.decide(id, service, op, call)
	if d.kind == "" {
		return req.Next()
	}
	if tr, ok := ctx.Value(trackerKey{}).(*tracker); ok {
		tr.add(d.kind)
	}
	switch d.kind {
	case Delay:
		t := time.NewTimer(d.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return req.Next()
	case Reset:
		return nil, &FaultError{Kind: Reset, Err: connReset("write")}
	case ServerBusy:
		return errorResponse(raw, service, http.StatusServiceUnavailable, "ServerBusy", serverBusyMessage, d.requestID), nil
	case TimeoutBefore:
		return errorResponse(raw, service, http.StatusInternalServerError, "OperationTimedOut", timedOutMessage, d.requestID), nil
	}
	// AnswerLost, TimeoutAfter: let the service apply the try, then hide
	// its answer.
	resp, err := req.Next()
	if err != nil {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if d.kind == AnswerLost {
		return nil, &FaultError{Kind: AnswerLost, Err: connReset("read")}
	}
	return errorResponse(raw, service, http.StatusInternalServerError, "OperationTimedOut", timedOutMessage, d.requestID), nil
}

// locate returns the service of a request URL and its escaped path below
// the account.
func (p *faultPolicy) locate(u *url.URL) (service, path string) {
	path = u.EscapedPath()
	for _, e := range p.endpoints {
		if u.Scheme == e.scheme && u.Host == e.host && strings.HasPrefix(path, e.base) &&
			(len(path) == len(e.base) || path[len(e.base)] == '/') {
			return e.service, path[len(e.base):]
		}
	}
	labels := strings.Split(u.Hostname(), ".")
	if len(labels) > 2 {
		switch labels[1] {
		case wire.ServiceTable, wire.ServiceQueue, wire.ServiceBlob:
			return labels[1], path
		}
	}
	return "", path
}

// Normalising a request into its identity (see the package doc).
var (
	// aztables names a transaction's multipart parts with random UUIDs.
	boundaryRE = regexp.MustCompile(`(batch|changeset)_(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{32})`)
)

// identity returns the identity of a try: its method, its path below the
// account with the table, queue or container name (random in tests) and
// the queue message id (chosen by the service) replaced by "_", its query
// without the pop receipt, and a hash of its body with a transaction's
// entity URLs and multipart boundaries made the same way.
func (p *faultPolicy) identity(req *policy.Request, service, op, path string) ([32]byte, error) {
	raw := req.Raw()
	q := raw.URL.Query()
	q.Del("popreceipt")
	h := newHasher()
	h.str(raw.Method)
	h.str(normalPath(service, path))
	h.str(q.Encode())
	if body := req.Body(); body != nil {
		if _, err := body.Seek(0, io.SeekStart); err != nil {
			return [32]byte{}, err
		}
		data, err := io.ReadAll(body)
		if err != nil {
			return [32]byte{}, err
		}
		if _, err := body.Seek(0, io.SeekStart); err != nil {
			return [32]byte{}, err
		}
		if op == "Transaction" {
			if p.tableURL != nil {
				data = p.tableURL.ReplaceAll(data, []byte("/_"))
			}
			data = boundaryRE.ReplaceAll(data, []byte("${1}_"))
		}
		h.bytes(data)
	}
	return h.sum(), nil
}

// normalPath replaces the resource names in path that differ from run to
// run: the table, queue or container name, and a queue message's id.
func normalPath(service, path string) string {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(segs) == 0 || segs[0] == "" {
		return path
	}
	switch service {
	case wire.ServiceTable:
		name, args, hasArgs := strings.Cut(segs[0], "(")
		switch {
		case name == "$batch":
		case name == "Tables":
			if hasArgs && args != ")" {
				segs[0] = "Tables(_)"
			}
		case hasArgs:
			segs[0] = "_(" + args
		default:
			segs[0] = "_"
		}
	case wire.ServiceQueue:
		segs[0] = "_"
		if len(segs) == 3 && segs[1] == "messages" {
			segs[2] = "_"
		}
	default:
		segs[0] = "_"
	}
	return "/" + strings.Join(segs, "/")
}

// decision is what the Injector does to one try.
type decision struct {
	kind      Kind // "" = nothing
	delay     time.Duration
	requestID string
}

// decide draws the fault of the next try of identity id, applies the
// budget (the consecutive cap counted per call when call is not nil, else
// per identity), and records the outcome.
func (inj *Injector) decide(id [32]byte, service, op string, call *callState) decision {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	st := inj.ids[id]
	if st == nil {
		st = &identityState{}
		inj.ids[id] = st
	}
	seen := st.seen
	st.seen++
	h := newHasher()
	h.u64(uint64(inj.seed))
	h.bytes(id[:])
	h.u64(uint64(seen))
	sum := h.sum()
	u := float64(binary.BigEndian.Uint64(sum[0:8])>>11) / (1 << 53)
	var kind Kind
	for i, p := range inj.cfg.rates() {
		if u < p {
			kind = Kinds()[i]
			break
		}
		u -= p
	}
	d := decision{kind: kind}
	consecutive := &st.consecutive
	if call != nil {
		consecutive = &call.consecutive
	}
	if kind.Fails() {
		capped := inj.cfg.MaxConsecutive >= 0 && *consecutive >= inj.cfg.MaxConsecutive
		spent := inj.cfg.MaxFaults > 0 && inj.faults >= inj.cfg.MaxFaults
		if capped || spent {
			inj.stats.heldBack++
			d.kind = ""
		}
	}
	if d.kind.Fails() {
		*consecutive++
		inj.faults++
	} else {
		*consecutive = 0
	}
	if d.kind == Delay {
		d.delay = time.Millisecond // between 1 ms and MaxDelay, in whole ms
		if span := uint64(inj.cfg.MaxDelay / time.Millisecond); span > 1 {
			d.delay += time.Duration(binary.BigEndian.Uint64(sum[8:16])%span) * time.Millisecond
		}
	}
	if d.kind != "" {
		d.requestID = fmt.Sprintf("%x-%x-%x-%x-%x", sum[16:20], sum[20:22], sum[22:24], sum[24:26], sum[26:32])
		inj.events = append(inj.events, Event{Kind: d.kind, Service: service, Operation: op,
			Identity: fmt.Sprintf("%x", id[:8]), Seen: seen, Delay: d.delay})
	}
	inj.stats.add(service, op, true, d.kind)
	return d
}

// countIneligible records a try that gets no fault because it is not
// eligible.
func (inj *Injector) countIneligible(service, op string) {
	inj.mu.Lock()
	inj.stats.add(service, op, false, "")
	inj.mu.Unlock()
}
