package patterns_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// gate is a test-local azcore per-retry policy that holds one request
// matching match until the test releases it, so that a test can run
// another writer in between: before the request is sent (then the request
// honours its context while it waits), or after the service answered
// (the service applied it; the caller has not heard yet). It holds only
// the first matching request after arm. The shared chaos package will
// replace it.
type gate struct {
	match   func(*http.Request) bool
	after   bool
	armed   atomic.Bool
	reached chan struct{}
	release chan struct{}
	relOnce sync.Once
}

func newGate(after bool, match func(*http.Request) bool) *gate {
	return &gate{match: match, after: after, reached: make(chan struct{}), release: make(chan struct{})}
}

// arm makes the gate hold the next matching request.
func (g *gate) arm() { g.armed.Store(true) }

// open releases the held request (and any later one).
func (g *gate) open() { g.relOnce.Do(func() { close(g.release) }) }

// wait blocks until a request is held, failing t if none comes within a
// minute (the code under test did not send what the test expects).
func (g *gate) wait(t *testing.T) {
	t.Helper()
	select {
	case <-g.reached:
	case <-time.After(time.Minute):
		t.Fatal("gate: no matching request was sent")
	}
}

func (g *gate) Do(req *policy.Request) (*http.Response, error) {
	r := req.Raw()
	if !g.match(r) || !g.armed.CompareAndSwap(true, false) {
		return req.Next()
	}
	if g.after {
		resp, err := req.Next()
		close(g.reached)
		<-g.release
		return resp, err
	}
	close(g.reached)
	select {
	case <-g.release:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return req.Next()
}

// isBatch matches an entity group transaction.
func isBatch(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "$batch")
}

// gatedAccount opens an Account on the test account whose requests pass
// through policies (after the SDK's retry policy).
func gatedAccount(t *testing.T, g *gate, more ...policy.Policy) *tablekit.Account {
	t.Helper()
	t.Cleanup(g.open) // never leave a request held
	return testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: append(more, g)}})
}

// openEntityTable opens the existing table name through acct.
func openEntityTable(t *testing.T, acct *tablekit.Account, name string) *tablekit.Table[tablekit.Entity] {
	t.Helper()
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	accounts.Store(tbl, acct)
	return tbl
}

// run runs fn in a goroutine and returns a channel with its error.
func run(fn func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- fn() }()
	return ch
}

// onePerPage makes every table query of its account ask for one entity
// per page, so that a test can act between the pages of one read.
type onePerPage struct{}

func (onePerPage) Do(req *policy.Request) (*http.Response, error) {
	r := req.Raw()
	if r.Method == http.MethodGet && r.URL.Query().Has("$filter") {
		q := r.URL.Query()
		q.Set("$top", "1")
		r.URL.RawQuery = q.Encode()
	}
	return req.Next()
}

// isNextPage matches a table query request that continues a query.
func isNextPage(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Query().Has("NextRowKey")
}

// namedTable creates a table with a name for t on acct (deleted when t
// ends), so that other accounts can open it too.
func namedTable(t *testing.T, acct *tablekit.Account) *tablekit.Table[tablekit.Entity] {
	t.Helper()
	tbl := openEntityTable(t, acct, testenv.TableName(t))
	if err := tbl.CreateIfNotExists(testContext(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tbl.DeleteTable(context.Background()) })
	return tbl
}
