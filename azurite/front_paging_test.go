package azurite_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/azurite"
)

// page is one page of a query as a client saw it.
type page struct {
	keys []string // "pk/rk"
	pks  []string
	more bool // a continuation token came with it
}

// pagesOf reads every page of a query, and fails t past 10,000 pages.
func pagesOf(t *testing.T, c *aztables.Client, opts *aztables.ListEntitiesOptions) []page {
	t.Helper()
	var out []page
	pager := c.NewListEntitiesPager(opts)
	for pager.More() {
		p, err := pager.NextPage(ctxFor(t))
		if err != nil {
			t.Fatal(err)
		}
		var pg page
		for _, e := range p.Entities {
			var k struct{ PartitionKey, RowKey string }
			if err := json.Unmarshal(e, &k); err != nil {
				t.Fatal(err)
			}
			pg.keys = append(pg.keys, k.PartitionKey+"/"+k.RowKey)
			pg.pks = append(pg.pks, k.PartitionKey)
		}
		pg.more = p.NextPartitionKey != nil && *p.NextPartitionKey != "" || p.NextRowKey != nil && *p.NextRowKey != ""
		out = append(out, pg)
		if len(out) > 10_000 {
			t.Fatal("more than 10,000 pages: the pager does not end")
		}
	}
	return out
}

func allKeys(pages []page) []string {
	var out []string
	for _, p := range pages {
		out = append(out, p.keys...)
	}
	return out
}

// pageSizes returns the number of entities of each page.
func pageSizes(pages []page) []int {
	out := make([]int, len(pages))
	for i, p := range pages {
		out[i] = len(p.keys)
	}
	return out
}

func (env *frontEnv) testPaging(t *testing.T) {
	ctx := ctxFor(t)
	const table = "paging"
	owner := tableClient(t, env.srv.ConnectionString(), table)
	var want []string
	for p := range 12 {
		var batch []aztables.TransactionAction
		for r := range 1 + p*7 { // partitions of 1 to 78 entities
			pk, rk := fmt.Sprintf("p%02d", p), fmt.Sprintf("r%03d", r)
			want = append(want, pk+"/"+rk)
			batch = append(batch, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: entity(pk, rk, map[string]any{"V": r})})
		}
		if _, err := owner.SubmitTransaction(ctx, batch, nil); err != nil {
			t.Fatal(err)
		}
	}
	paged := func(t *testing.T, o azurite.FrontOptions) *aztables.Client {
		return serviceClient(t, env.newFront(t, &o).ConnectionString()).NewClient(table)
	}
	top := func(n int32) *aztables.ListEntitiesOptions { return &aztables.ListEntitiesOptions{Top: to.Ptr(n)} }

	t.Run("azure pages", func(t *testing.T) {
		c := paged(t, azurite.FrontOptions{Paging: true, Seed: 1})
		var empty, partitionCut, midCut, trailing, maxEmptyRun int
		for _, size := range []int32{1, 7, 50, 1000} {
			pages := pagesOf(t, c, top(size))
			if got := allKeys(pages); !slices.Equal(got, want) {
				t.Fatalf("$top=%d: %d entities, want the %d in key order, each once", size, len(got), len(want))
			}
			run := 0
			for i, p := range pages {
				if len(p.keys) > int(size) {
					t.Errorf("$top=%d: a page of %d entities", size, len(p.keys))
				}
				if len(p.keys) == 0 {
					if run++; run > maxEmptyRun {
						maxEmptyRun = run
					}
					if p.more {
						empty++
					}
					if i < len(pages)-1 && !p.more {
						t.Errorf("$top=%d: page %d is empty and has no token, but more pages came", size, i)
					}
					continue
				}
				run = 0
				switch next := i + 1; {
				case next == len(pages):
				case len(p.keys) < int(size) && p.more:
					var first string
					for _, q := range pages[next:] {
						if len(q.pks) > 0 {
							first = q.pks[0]
							break
						}
					}
					if first != "" && first != p.pks[len(p.pks)-1] {
						partitionCut++
					} else if first != "" {
						midCut++
					}
				}
				if i == len(pages)-2 && p.more && len(pages[i+1].keys) == 0 && !pages[i+1].more {
					trailing++
				}
			}
			if last := pages[len(pages)-1]; last.more {
				t.Errorf("$top=%d: the last page has a token", size)
			}
		}
		t.Logf("%d empty pages with a token (at most %d in a row), %d cut at a partition boundary, %d cut inside a partition, %d trailing tokens", empty, maxEmptyRun, partitionCut, midCut, trailing)
		if empty == 0 || partitionCut == 0 || midCut == 0 {
			t.Errorf("the front did not page as Azure may: %d empty pages, %d cut at a partition boundary, %d inside one", empty, partitionCut, midCut)
		}
		if maxEmptyRun > 2 {
			t.Errorf("%d empty pages in a row, want at most 2", maxEmptyRun)
		}
	})

	t.Run("one page of results", func(t *testing.T) {
		// A query whose results fit one page: some seeds answer it with
		// an empty page first, some end it with a token to an empty last
		// page; every seed returns its entities once.
		var emptyFirst, trailing int
		for seed := range uint64(50) {
			c := paged(t, azurite.FrontOptions{Paging: true, Seed: seed})
			pages := pagesOf(t, c, &aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'p01'"), Top: to.Ptr(int32(100))})
			if !slices.Equal(allKeys(pages), want[1:9]) {
				t.Fatalf("seed %d: %v in pages of %v", seed, allKeys(pages), pageSizes(pages))
			}
			if len(pages[0].keys) == 0 {
				emptyFirst++
			}
			if n := len(pages); n >= 2 && pages[n-2].more && len(pages[n-1].keys) == 0 && !pages[n-1].more && len(pages[n-2].keys) > 0 {
				trailing++
			}
		}
		t.Logf("50 seeds: %d answered an empty page first, %d a token to an empty last page", emptyFirst, trailing)
		if emptyFirst == 0 || trailing == 0 {
			t.Errorf("50 seeds: %d answered an empty page first, %d a token to an empty last page; want some of each", emptyFirst, trailing)
		}
	})

	t.Run("deterministic", func(t *testing.T) {
		a := pageSizes(pagesOf(t, paged(t, azurite.FrontOptions{Paging: true, Seed: 3}), top(20)))
		b := pageSizes(pagesOf(t, paged(t, azurite.FrontOptions{Paging: true, Seed: 3}), top(20)))
		c := pageSizes(pagesOf(t, paged(t, azurite.FrontOptions{Paging: true, Seed: 4}), top(20)))
		if !slices.Equal(a, b) {
			t.Errorf("seed 3 paged %v, then %v", a, b)
		}
		if slices.Equal(a, c) {
			t.Errorf("seeds 3 and 4 paged alike: %v", a)
		}
	})

	t.Run("select", func(t *testing.T) {
		c := paged(t, azurite.FrontOptions{Paging: true, Seed: 5})
		var vs []int
		pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'p03'"), Select: to.Ptr("V"), Top: to.Ptr(int32(5))})
		for pager.More() {
			p, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range p.Entities {
				var m map[string]any
				json.Unmarshal(e, &m)
				if _, ok := m["PartitionKey"]; ok {
					t.Fatalf("$select=V answered the keys too: %s", e)
				}
				vs = append(vs, int(m["V"].(float64)))
			}
		}
		if len(vs) != 22 || !slices.IsSorted(vs) {
			t.Errorf("$select=V over p03: %v, want 0..21 in order", vs)
		}
	})

	t.Run("changes between pages", func(t *testing.T) {
		// Entities deleted and inserted between pages: each entity there
		// for the whole query comes exactly once.
		const tbl = "pagingchanges"
		own := tableClient(t, env.srv.ConnectionString(), tbl)
		for p := range 4 {
			var batch []aztables.TransactionAction
			for r := range 60 {
				batch = append(batch, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: entity(fmt.Sprint("p", p), fmt.Sprintf("r%03d", r), nil)})
			}
			if _, err := own.SubmitTransaction(ctx, batch, nil); err != nil {
				t.Fatal(err)
			}
		}
		c := serviceClient(t, env.newFront(t, &azurite.FrontOptions{Paging: true, Seed: 6}).ConnectionString()).NewClient(tbl)
		seen := map[string]int{}
		deleted := map[string]bool{}
		pager := c.NewListEntitiesPager(top(15))
		for n := 0; pager.More(); n++ {
			p, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range p.Entities {
				var k struct{ PartitionKey, RowKey string }
				json.Unmarshal(e, &k)
				seen[k.PartitionKey+"/"+k.RowKey]++
			}
			// Delete one entity ahead and one behind, insert one ahead.
			pk, rk := fmt.Sprint("p", n%4), fmt.Sprintf("r%03d", (n*7)%60)
			if _, err := own.DeleteEntity(ctx, pk, rk, nil); err == nil {
				deleted[pk+"/"+rk] = true
			}
			own.UpsertEntity(ctx, entity(fmt.Sprint("p", n%4), fmt.Sprintf("s%03d", n), nil), nil)
		}
		for p := range 4 {
			for r := range 60 {
				k := fmt.Sprintf("p%d/r%03d", p, r)
				if n := seen[k]; n > 1 || (n == 0 && !deleted[k]) {
					t.Errorf("%s seen %d times (deleted during the query: %v)", k, n, deleted[k])
				}
			}
		}
		for k, n := range seen {
			if n > 1 {
				t.Errorf("%s seen %d times", k, n)
			}
		}
	})

	t.Run("cosmos", func(t *testing.T) {
		plain := allKeys(pagesOf(t, paged(t, azurite.FrontOptions{Cosmos: true, Seed: 2}), top(1000)))
		c := paged(t, azurite.FrontOptions{Cosmos: true, Paging: true, Seed: 2})
		for _, size := range []int32{3, 40} {
			pages := pagesOf(t, c, top(size))
			if got := allKeys(pages); !slices.Equal(got, plain) {
				t.Errorf("$top=%d: Cosmos mode with paging returned %d entities, not the %d of Cosmos mode in its order", size, len(got), len(plain))
			}
			empty := 0
			for _, p := range pages {
				if len(p.keys) == 0 && p.more {
					empty++
				}
			}
			if empty == 0 {
				t.Errorf("$top=%d: no empty page in %d pages", size, len(pages))
			}
		}
	})

	t.Run("chained", func(t *testing.T) {
		// A front before a front, both paging: the outer one's target
		// answers the same position again after an empty page.
		inner := env.newFront(t, &azurite.FrontOptions{Paging: true, Seed: 7})
		outer, err := azurite.NewFront(ctx, inner.Endpoints(), &azurite.FrontOptions{Paging: true, Seed: 8})
		if err != nil {
			t.Fatal(err)
		}
		defer outer.Close()
		c := serviceClient(t, outer.ConnectionString()).NewClient(table)
		for _, size := range []int32{1, 9, 100} {
			if got := allKeys(pagesOf(t, c, top(size))); !slices.Equal(got, want) {
				t.Errorf("$top=%d through two fronts: %d entities, want the %d in key order, each once", size, len(got), len(want))
			}
		}
	})

	t.Run("chained over Cosmos mode", func(t *testing.T) {
		// A paging front before a front in Cosmos mode (which pages too):
		// the target answers in no key order, so the outer front finds
		// what it returned of a target page by position, not by key.
		inner := env.newFront(t, &azurite.FrontOptions{Cosmos: true, Paging: true, Seed: 7})
		plain := allKeys(pagesOf(t, serviceClient(t, inner.ConnectionString()).NewClient(table), top(1000)))
		outer, err := azurite.NewFront(ctx, inner.Endpoints(), &azurite.FrontOptions{Paging: true, Seed: 8})
		if err != nil {
			t.Fatal(err)
		}
		defer outer.Close()
		c := serviceClient(t, outer.ConnectionString()).NewClient(table)
		for _, size := range []int32{1, 9, 20, 100} {
			if got := allKeys(pagesOf(t, c, top(size))); !slices.Equal(got, plain) {
				t.Errorf("$top=%d through a front before one in Cosmos mode: %d entities, %d distinct; want the %d in the inner front's order, each once",
					size, len(got), len(slices.Compact(slices.Sorted(slices.Values(got)))), len(plain))
			}
		}
	})

	t.Run("point queries whole", func(t *testing.T) {
		for seed := range uint64(40) {
			for _, cosmos := range []bool{false, true} {
				c := paged(t, azurite.FrontOptions{Paging: true, Seed: seed, Cosmos: cosmos})
				pages := pagesOf(t, c, &aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'p05' and RowKey eq 'r007'")})
				if len(pages) != 1 || !slices.Equal(pages[0].keys, []string{"p05/r007"}) {
					t.Fatalf("seed %d, cosmos %v: a point query answered in pages of %v", seed, cosmos, pageSizes(pages))
				}
			}
		}
	})

	t.Run("foreign token", func(t *testing.T) {
		f := env.newFront(t, &azurite.FrontOptions{Paging: true})
		u := f.Endpoints().Table + "/" + table + "()?NextPartitionKey=" + url.QueryEscape("1!8!cDAx") + "&NextRowKey=" + url.QueryEscape("1!8!cjAwMQ--")
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// Unsigned, so the target would refuse it too; the front refuses
		// the token before it asks (the code in the body only).
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"code":"InvalidInput"`) {
			t.Errorf("a token that is not the front's: %d %s, want 400 InvalidInput", resp.StatusCode, body)
		}
	})
}
