package azurite_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/testkit/replay"
	"github.com/tablekit/tablekit/internal/wire"
)

// player sends a recording's requests to a live endpoint (a front before
// Azurite), as the SDK that made the recording sent them, adapted only
// where the recording cannot be sent as is: the recorded table names are
// replaced by fresh ones, requests are signed with Azurite's key, and
// ETags and continuation tokens the recording holds are replaced by the
// ones the endpoint answered for the same exchanges.
type player struct {
	t        *testing.T
	endpoint string // the table endpoint, e.g. http://127.0.0.1:1234/devstoreaccount1
	pl       runtime.Pipeline
	names    map[string]string // recorded table name -> fresh name
	etags    map[string]string // recorded ETag -> the endpoint's
	tokens   map[string]string // recorded continuation value -> the endpoint's
	sas      string            // when not "", a SAS query replacing the recorded one
}

// newPlayer returns a player of table requests to endpoint.
func newPlayer(t *testing.T, endpoint string) *player {
	t.Helper()
	key, err := wire.NewSharedKey(azurite.AccountName, azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	pl := runtime.NewPipeline("replay", "v0", runtime.PipelineOptions{PerRetry: []policy.Policy{key}},
		&policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}})
	return &player{t: t, endpoint: strings.TrimRight(endpoint, "/"), pl: pl,
		names: map[string]string{}, etags: map[string]string{}, tokens: map[string]string{}}
}

// recordedTable matches the table names the recordings use.
var recordedTable = regexp.MustCompile(`\b(tableName\d+|uttable[0-9a-f]+|testtable[0-9a-z]+)\b`)

// fresh replaces the recorded table names in s by the player's fresh ones.
func (p *player) fresh(s string) string {
	return recordedTable.ReplaceAllStringFunc(s, func(name string) string {
		if n, ok := p.names[name]; ok {
			return n
		}
		var b [4]byte
		rand.Read(b[:])
		n := "fid" + hex.EncodeToString(b[:]) + fmt.Sprint(len(p.names))
		p.names[name] = n
		return n
	})
}

// answer is an endpoint's answer.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// play sends the request of entry e and returns the answer.
func (p *player) play(e replay.Entry) answer {
	p.t.Helper()
	u, err := url.Parse(p.endpoint)
	if err != nil {
		p.t.Fatal(err)
	}
	path := p.fresh(e.URL.EscapedPath())
	q := e.URL.Query()
	for _, k := range []string{"NextPartitionKey", "NextRowKey"} {
		if v := q.Get(k); v != "" {
			if actual, ok := p.tokens[v]; ok {
				q.Set(k, actual)
			}
		}
	}
	q.Del("$format")
	for _, k := range []string{"sig", "se", "sp", "sv", "st", "spr", "tn", "spk", "srk", "epk", "erk"} {
		q.Del(k)
	}
	raw := q.Encode()
	if p.sas != "" {
		if raw != "" {
			raw += "&"
		}
		raw += p.sas
	}
	target := u.Scheme + "://" + u.Host + u.EscapedPath() + path
	if raw != "" {
		target += "?" + raw
	}
	req, err := runtime.NewRequest(context.Background(), e.Method, target)
	if err != nil {
		p.t.Fatal(err)
	}
	h := req.Raw().Header
	for _, k := range []string{"Accept", "DataServiceVersion", "Prefer", "X-HTTP-Method", "x-ms-version", "MaxDataServiceVersion"} {
		if v := e.RequestHeader.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	if v := e.RequestHeader.Get("If-Match"); v != "" {
		if actual, ok := p.etags[v]; ok {
			v = actual
		}
		h.Set("If-Match", v)
	}
	body := e.RequestBody
	ct := e.RequestHeader.Get("Content-Type")
	if len(body) > 0 {
		body = []byte(p.fresh(string(body)))
		if strings.HasPrefix(ct, "multipart/") {
			body = p.batchBody(body, u)
			// The recordings sanitize the boundary in the header only.
			if line, _, ok := bytes.Cut(body, []byte("\r\n")); ok && bytes.HasPrefix(line, []byte("--")) {
				ct = "multipart/mixed; boundary=" + string(line[2:])
			}
		}
		if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), ct); err != nil {
			p.t.Fatal(err)
		}
	}
	resp, err := p.pl.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", e.Method, target, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	a := answer{Status: resp.StatusCode, Header: resp.Header, Body: b}
	p.learn(e, a)
	return a
}

// batchBody points a recorded $batch body's request URLs at the endpoint
// and replaces the ETags it knows.
func (p *player) batchBody(body []byte, endpoint *url.URL) []byte {
	s := string(body)
	s = regexp.MustCompile(`https://[A-Za-z0-9.-]+/`).ReplaceAllString(s, endpoint.Scheme+"://"+endpoint.Host+endpoint.EscapedPath()+"/")
	for rec, actual := range p.etags {
		s = strings.ReplaceAll(s, "If-Match: "+rec, "If-Match: "+actual)
	}
	return []byte(s)
}

// learn records the ETags and continuation tokens of a recorded answer
// and of the endpoint's answer to the same request.
func (p *player) learn(e replay.Entry, a answer) {
	if w, g := e.ResponseHeader.Get("ETag"), a.Header.Get("ETag"); w != "" && g != "" {
		p.etags[w] = g
	}
	for _, k := range []string{"x-ms-continuation-NextPartitionKey", "x-ms-continuation-NextRowKey"} {
		if w, g := e.ResponseHeader.Get(k), a.Header.Get(k); w != "" && g != "" {
			p.tokens[w] = g
		}
	}
	if ct := e.ResponseHeader.Get("Content-Type"); strings.HasPrefix(ct, "multipart/") && a.Status == http.StatusAccepted {
		w, err1 := replay.BatchResponses(ct, e.ResponseBody)
		g, err2 := replay.BatchResponses(a.Header.Get("Content-Type"), a.Body)
		if err1 == nil && err2 == nil && len(w) == len(g) {
			for i := range w {
				if we, ge := w[i].Header.Get("ETag"), g[i].Header.Get("ETag"); we != "" && ge != "" {
					p.etags[we] = ge
				}
			}
		}
	}
}
