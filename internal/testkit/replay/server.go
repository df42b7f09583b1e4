package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Server answers requests with recorded answers, in the recorded order,
// checking each request against the recorded one. Point a client's table
// endpoint at its URL.
type Server struct {
	// URL is the table endpoint to use, e.g. "http://127.0.0.1:1234".
	URL string

	t       testing.TB
	srv     *httptest.Server
	mu      sync.Mutex
	entries []Entry
	next    int
	loose   map[int]bool
}

// MismatchStatus is the status the Server answers a request that is not
// the recorded one (or one too many) with: no client retries it.
const MismatchStatus = http.StatusTeapot

// NewServer starts a Server that plays entries for t, and stops it when t
// ends, failing t if a request differed from the recorded one or an entry
// was not played.
func NewServer(t testing.TB, entries []Entry) *Server {
	t.Helper()
	s := &Server{t: t, entries: entries, loose: map[int]bool{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(func() {
		s.srv.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.next < len(s.entries) {
			t.Errorf("replay: %d of %d recorded requests were not sent; the next: %s %s", len(s.entries)-s.next, len(s.entries), s.entries[s.next].Method, s.entries[s.next].URL)
		}
	})
	return s
}

// AnswerOnly makes the entry at index i (of the entries the Server plays)
// answer any request with the same method and path, whatever its query
// and body: for a recorded answer that tablekit's own request cannot
// provoke (the recorded request is one tablekit refuses to send), whose
// reading is still worth checking.
func (s *Server) AnswerOnly(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loose[i] = true
}

// Played returns how many entries have been answered.
func (s *Server) Played() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	if s.next >= len(s.entries) {
		s.mu.Unlock()
		s.t.Errorf("replay: request %s %s after the %d recorded ones", r.Method, r.URL, len(s.entries))
		http.Error(w, "replay: no more recorded requests", MismatchStatus)
		return
	}
	i := s.next
	e := s.entries[i]
	loose := s.loose[i]
	s.next++
	s.mu.Unlock()

	want := EntryRequest(e)
	got := RequestOf(r.Method, r.URL, r.Header, body, "")
	var diff string
	if loose {
		if want.Method != got.Method || want.Path != got.Path {
			diff = fmt.Sprintf("%s %s, want %s %s", got.Method, got.Path, want.Method, want.Path)
		}
	} else {
		diff = CompareRequest(want, got)
	}
	if diff != "" {
		s.t.Errorf("replay: request %d (%s %s) is not the recorded one (%s): %s", i, r.Method, r.URL.Path, e.URL, diff)
		http.Error(w, "replay: not the recorded request: "+diff, MismatchStatus)
		return
	}
	h := w.Header()
	for k, v := range e.ResponseHeader {
		switch strings.ToLower(k) {
		case "transfer-encoding", "content-length", "connection", "content-encoding":
			continue
		}
		h[k] = v
	}
	body = WireBody(e.ResponseBody)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.Status)
	w.Write(body)
}

// WireBody returns a recorded body as the service sent it: the test
// proxies store JSON bodies re-indented, and the services send them
// compact, so a JSON body is compacted (its tokens, such as
// 9.2233720368547758E+21, unchanged); any other body is returned as is.
func WireBody(b []byte) []byte {
	if len(b) == 0 || b[0] != '{' {
		return b
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}
