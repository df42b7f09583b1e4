package tablekit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

type pagedItem struct {
	PK string `table:",pk"`
	RK string `table:",rk"`
	N  int    `table:"N"`
}

// queryCounter counts the query requests of an Account and the answers
// among them that held no entity but a continuation token.
type queryCounter struct {
	requests, empty int
}

func (c *queryCounter) Do(req *policy.Request) (*http.Response, error) {
	r := req.Raw()
	query := r.Method == http.MethodGet && (r.URL.Query().Has("$filter") || r.URL.Query().Has("$top"))
	resp, err := req.Next()
	if !query || err != nil {
		return resp, err
	}
	c.requests++
	body, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var doc struct{ Value []json.RawMessage }
	if rerr == nil && json.Unmarshal(body, &doc) == nil && len(doc.Value) == 0 && resp.Header.Get("x-ms-continuation-NextPartitionKey") != "" {
		c.empty++
	}
	return resp, err
}

var tableEndpointRe = regexp.MustCompile(`TableEndpoint=[^;]*`)

// pagingAccount opens an Account on the test account through a front that
// pages as Azure may (seeded), with policies added to its pipeline.
func pagingAccount(t *testing.T, seed uint64, policies ...policy.Policy) *tablekit.Account {
	t.Helper()
	cs := testenv.ConnectionString(t)
	target := tableEndpointRe.FindString(cs)[len("TableEndpoint="):]
	front, err := azurite.NewFront(context.Background(), azurite.Endpoints{Table: target}, &azurite.FrontOptions{
		NoLimits: true, NoSASRanges: true, Paging: true, Seed: seed,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { front.Close() })
	acct, err := tablekit.Open(tableEndpointRe.ReplaceAllLiteralString(cs, "TableEndpoint="+front.Endpoints().Table), &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: policies}})
	if err != nil {
		t.Fatal(err)
	}
	return acct
}

// TestQueryPageReturnsEmptyPages: QueryPage sends one request and returns
// its answer, also a page with no entity and a continuation token (as
// Azure answers after 5 s of work or at a partition boundary), so that a
// caller sees every token; reading on while Continuation is not "" reads
// every entity once. Query reads past such pages.
func TestQueryPageReturnsEmptyPages(t *testing.T) {
	ctx := context.Background()
	name := testenv.TableName(t)
	owner, err := tablekit.OpenTable[pagedItem](testenv.Account(t, nil), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.DeleteTable(context.Background()) })
	var items []pagedItem
	for i := range 300 {
		items = append(items, pagedItem{PK: fmt.Sprintf("p%02d", i%6), RK: fmt.Sprintf("%04d", i), N: i})
	}
	if _, err := owner.BulkWriter(nil).Upsert(ctx, items); err != nil {
		t.Fatal(err)
	}

	counter := &queryCounter{}
	tbl, err := tablekit.OpenTable[pagedItem](pagingAccount(t, 1, counter), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := tablekit.Where("PartitionKey ge ?", "p00")
	seen := map[string]int{}
	var calls, empty int
	opts := &tablekit.QueryOptions{PageSize: 20}
	for {
		before := counter.requests
		page, err := tbl.QueryPage(ctx, f, opts)
		if err != nil {
			t.Fatal(err)
		}
		calls++
		if n := counter.requests - before; n != 1 {
			t.Fatalf("QueryPage call %d sent %d requests, want 1", calls, n)
		}
		if len(page.Items) > 20 {
			t.Errorf("a page of %d entities, PageSize 20", len(page.Items))
		}
		for _, it := range page.Items {
			seen[it.PK+"/"+it.RK]++
		}
		if page.Continuation == "" {
			break
		}
		if len(page.Items) == 0 {
			empty++
		}
		opts.Continuation = page.Continuation
	}
	if empty == 0 || empty != counter.empty {
		t.Errorf("QueryPage returned %d empty pages with a token, the front answered %d; want all of them, at least one", empty, counter.empty)
	}
	for _, it := range items {
		if n := seen[it.PK+"/"+it.RK]; n != 1 {
			t.Errorf("%s/%s read %d times", it.PK, it.RK, n)
		}
	}
	t.Logf("%d calls, %d empty pages with a token", calls, empty)

	// Query reads past them, and Get with a projection (a point query)
	// finds its entity whatever the pages.
	n := 0
	for _, err := range tbl.Query(ctx, f, &tablekit.QueryOptions{PageSize: 20}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != len(items) {
		t.Errorf("Query read %d entities, want %d", n, len(items))
	}
	for _, it := range items[:40] {
		got, err := tablekit.Collect(tbl.Query(ctx, tablekit.PointQuery(it.PK, it.RK), &tablekit.QueryOptions{Select: []string{"N"}}), 1)
		if err != nil || len(got) != 1 || got[0].N != it.N {
			t.Errorf("Get %s/%s with Select: %+v, %v", it.PK, it.RK, got, err)
		}
	}
}

// TestCursorTokenInShorterPages: a Cursor's token, taken after 37
// entities of a page of 100, read on with QueryPage in pages of 7 (the
// service may cut pages too: the front pages as Azure may), continues
// right after the 37th, each entity once, also on Cosmos DB where only
// positions say what was yielded; so does one whose 37th entity was
// deleted meanwhile.
func TestCursorTokenInShorterPages(t *testing.T) {
	ctx := context.Background()
	name := testenv.TableName(t)
	owner, err := tablekit.OpenTable[pagedItem](testenv.Account(t, nil), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.DeleteTable(context.Background()) })
	var items []pagedItem
	for i := range 150 {
		items = append(items, pagedItem{PK: fmt.Sprintf("p%d", i%3), RK: fmt.Sprintf("%04d", i), N: i})
	}
	if _, err := owner.BulkWriter(nil).Upsert(ctx, items); err != nil {
		t.Fatal(err)
	}
	cs := testenv.ConnectionString(t)
	target := tableEndpointRe.FindString(cs)[len("TableEndpoint="):]
	for _, mode := range []struct {
		name   string
		cosmos bool
	}{{"storage", false}, {"cosmos", true}} {
		for _, deleteLast := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, deleted %v", mode.name, deleteLast), func(t *testing.T) {
				front, err := azurite.NewFront(ctx, azurite.Endpoints{Table: target}, &azurite.FrontOptions{
					NoLimits: true, NoSASRanges: true, Cosmos: mode.cosmos, Paging: true, Seed: 4,
				})
				if err != nil {
					t.Fatal(err)
				}
				defer front.Close()
				acct, err := tablekit.Open(tableEndpointRe.ReplaceAllLiteralString(cs, "TableEndpoint="+front.Endpoints().Table), &tablekit.Options{Service: cosmosService(mode.cosmos)})
				if err != nil {
					t.Fatal(err)
				}
				tbl, err := tablekit.OpenTable[pagedItem](acct, name, nil)
				if err != nil {
					t.Fatal(err)
				}
				f := tablekit.Where("PartitionKey ge ?", "p")
				seen := map[string]int{}
				var cur tablekit.Cursor
				var last pagedItem
				for it, err := range tbl.Query(ctx, f, &tablekit.QueryOptions{PageSize: 100, Cursor: &cur}) {
					if err != nil {
						t.Fatal(err)
					}
					seen[it.PK+"/"+it.RK]++
					if last = it; len(seen) == 37 {
						break
					}
				}
				if deleteLast {
					if err := owner.Delete(ctx, last.PK, last.RK, "*"); err != nil {
						t.Fatal(err)
					}
					defer owner.Upsert(ctx, last)
				}
				opts := &tablekit.QueryOptions{PageSize: 7, Continuation: cur.Token()}
				for {
					page, err := tbl.QueryPage(ctx, f, opts)
					if err != nil {
						t.Fatal(err)
					}
					for _, it := range page.Items {
						seen[it.PK+"/"+it.RK]++
					}
					if page.Continuation == "" {
						break
					}
					opts.Continuation = page.Continuation
				}
				for _, it := range items {
					if n := seen[it.PK+"/"+it.RK]; n != 1 {
						t.Errorf("%s/%s read %d times", it.PK, it.RK, n)
					}
				}
			})
		}
	}
}

// TestQueryEmptyPartitionKeyPages: a query whose page ends inside the
// partition whose key is "" goes on from there: Azurite then answers an
// empty NextPartitionKey beside a NextRowKey, and the continuation must be
// sent whole. tablekit sent the NextRowKey alone, which Azurite answered
// with an empty last page: every entity of partition "" after the first
// page, and every later partition, was silently left out of Query,
// QueryPage and so of transfer's export, copy, purge and count (found by
// transfer's TestChaosCount).
func TestQueryEmptyPartitionKeyPages(t *testing.T) {
	ctx := context.Background()
	name := testenv.TableName(t)
	tbl, err := tablekit.OpenTable[pagedItem](testenv.Account(t, nil), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.DeleteTable(context.Background()) })
	var items []pagedItem
	for i := range 250 {
		items = append(items, pagedItem{PK: "", RK: fmt.Sprintf("%04d", i), N: i})
	}
	items = append(items, pagedItem{PK: "a", RK: "1"})
	if _, err := tbl.BulkWriter(nil).Upsert(ctx, items); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range tbl.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{PageSize: 100, AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != len(items) {
		t.Errorf("Query in pages of 100 read %d entities, want %d", n, len(items))
	}
	n = 0
	opts := &tablekit.QueryOptions{PageSize: 100, AllowTableScan: true}
	for pages := 0; pages < 10; pages++ {
		page, err := tbl.QueryPage(ctx, tablekit.Filter{}, opts)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Items)
		if page.Continuation == "" {
			break
		}
		opts.Continuation = page.Continuation
	}
	if n != len(items) {
		t.Errorf("QueryPage in pages of 100 read %d entities, want %d", n, len(items))
	}
}
