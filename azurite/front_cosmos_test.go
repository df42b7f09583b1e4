package azurite_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/azurite"
)

func (env *frontEnv) testCosmos(t *testing.T) {
	ctx := ctxFor(t)
	const table = "cosmosorder"
	owner := tableClient(t, env.srv.ConnectionString(), table)
	var want []string
	for p := range 5 {
		var batch []aztables.TransactionAction
		for r := range 6 {
			pk, rk := fmt.Sprint("p", p), fmt.Sprint("r", r)
			want = append(want, pk+"/"+rk)
			batch = append(batch, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: entity(pk, rk, map[string]any{"V": p*10 + r})})
		}
		if _, err := owner.SubmitTransaction(ctx, batch, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := keysOf(t, owner, nil); !slices.Equal(got, want) {
		t.Fatalf("Table storage (Azurite) order: %v", got)
	}

	cosmos := func(t *testing.T, o azurite.FrontOptions) *aztables.Client {
		o.Cosmos = true
		f := env.newFront(t, &o)
		return serviceClient(t, f.ConnectionString()).NewClient(table)
	}
	c1 := cosmos(t, azurite.FrontOptions{Seed: 1})

	whole := keysOf(t, c1, nil)
	if slices.Equal(whole, want) {
		t.Fatalf("Cosmos mode returned key order: %v", whole)
	}
	if sorted := slices.Sorted(slices.Values(whole)); !slices.Equal(sorted, want) {
		t.Fatalf("Cosmos mode lost or repeated entities: %v", whole)
	}
	runs := 1
	for i := 1; i < len(whole); i++ {
		if strings.Split(whole[i-1], "/")[0] != strings.Split(whole[i], "/")[0] {
			runs++
		}
	}
	if runs == 5 {
		t.Fatalf("each partition came whole, although entities are placed independently: %v", whole)
	}

	t.Run("pages", func(t *testing.T) {
		var pages [][]string
		pager := c1.NewListEntitiesPager(&aztables.ListEntitiesOptions{Top: to.Ptr(int32(7))})
		var all []string
		for pager.More() {
			p, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, e := range p.Entities {
				var k struct{ PartitionKey, RowKey string }
				json.Unmarshal(e, &k)
				keys = append(keys, k.PartitionKey+"/"+k.RowKey)
			}
			pages = append(pages, keys)
			all = append(all, keys...)
		}
		if len(pages) != 5 || len(pages[4]) != 2 {
			t.Fatalf("30 entities in pages of 7: %v", pages)
		}
		if !slices.Equal(all, whole) {
			t.Fatalf("paged order %v differs from the one-page order %v", all, whole)
		}
	})

	t.Run("deterministic per seed", func(t *testing.T) {
		if again := keysOf(t, cosmos(t, azurite.FrontOptions{Seed: 1}), nil); !slices.Equal(again, whole) {
			t.Fatalf("same seed, another order: %v vs %v", again, whole)
		}
		if other := keysOf(t, cosmos(t, azurite.FrontOptions{Seed: 2}), nil); slices.Equal(other, whole) {
			t.Fatalf("seeds 1 and 2 give the same order %v", other)
		}
	})

	t.Run("filter and select", func(t *testing.T) {
		f, sel := "PartitionKey eq 'p3'", "V"
		got := keysOf(t, c1, &aztables.ListEntitiesOptions{Filter: &f})
		if len(got) != 6 || slices.ContainsFunc(got, func(k string) bool { return !strings.HasPrefix(k, "p3/") }) {
			t.Fatalf("filtered query: %v", got)
		}
		pager := c1.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &f, Select: &sel, Top: to.Ptr(int32(4))})
		n := 0
		for pager.More() {
			p, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range p.Entities {
				var m map[string]any
				json.Unmarshal(e, &m)
				if _, ok := m["PartitionKey"]; ok {
					t.Fatalf("$select=V returned the PartitionKey: %s", e)
				}
				if _, ok := m["V"]; !ok {
					t.Fatalf("$select=V lost V: %s", e)
				}
				n++
			}
		}
		if n != 6 {
			t.Fatalf("selected %d entities over pages, want 6", n)
		}
	})

	t.Run("sort within partition", func(t *testing.T) {
		got := keysOf(t, cosmos(t, azurite.FrontOptions{Seed: 1, SortWithinPartition: true}), nil)
		var parts []string
		for i, k := range got {
			pk := strings.Split(k, "/")[0]
			if i == 0 || !strings.HasPrefix(got[i-1], pk+"/") {
				parts = append(parts, pk)
			} else if got[i-1] > k {
				t.Fatalf("row keys out of order within %s: %v", pk, got)
			}
		}
		if len(parts) != 5 {
			t.Fatalf("partitions split up: %v", got)
		}
		if slices.IsSorted(parts) {
			t.Fatalf("partitions in key order with seed 1: %v", parts)
		}
	})

	t.Run("limits", func(t *testing.T) {
		f := env.newFront(t, &azurite.FrontOptions{Cosmos: true})
		c := serviceClient(t, f.ConnectionString()).NewClient(table)
		if _, err := c.AddEntity(ctx, entity("lim", strings.Repeat("k", 255), nil), nil); err != nil {
			t.Fatalf("RowKey of 255 bytes: %v", err)
		}
		_, err := c.AddEntity(ctx, entity("lim", strings.Repeat("é", 128), nil), nil) // 256 bytes
		wantError(t, "RowKey over 255 bytes", err, http.StatusBadRequest, "OutOfRangeInput")
		_, err = c.AddEntity(ctx, entity("lim", "rid", map[string]any{"rid": 1}), nil)
		wantError(t, "reserved property name", err, http.StatusBadRequest, "PropertyNameInvalid")

		// Over 1 MiB in Table storage's formula but under 2 MB of JSON:
		// Cosmos DB takes it, the strict Table storage front does not.
		big := entity("lim", "big", bigProps(20, 30_000))
		if _, err := c.AddEntity(ctx, big, nil); err != nil {
			t.Fatalf("1.2 MB entity in Cosmos mode: %v", err)
		}
		_, err = serviceClient(t, env.srv.ConnectionString()).NewClient(table).AddEntity(ctx, big, nil)
		wantError(t, "the same entity on the Table storage front", err, http.StatusBadRequest, "EntityTooLarge")
		_, err = c.AddEntity(ctx, entity("lim", "huge", bigProps(75, 30_000)), nil)
		wantError(t, "entity over 2 MB of JSON", err, http.StatusRequestEntityTooLarge, "RequestBodyTooLarge")

		// A batch over 2 MB is refused; Table storage would take it (4 MiB).
		_, err = c.SubmitTransaction(ctx, adds("limbatch", 5, bigProps(15, 30_000)), nil)
		wantError(t, "batch over 2 MB", err, http.StatusRequestEntityTooLarge, "RequestBodyTooLarge")
		if n := count(t, owner, "PartitionKey eq 'limbatch'"); n != 0 {
			t.Fatalf("the refused batch stored %d entities", n)
		}
	})

	// Cosmos DB's table names are case-sensitive: another case names
	// another table, which does not exist. Azurite addresses tables so
	// too (Table storage does not: FIDELITY.md).
	t.Run("table names", func(t *testing.T) {
		f := env.newFront(t, &azurite.FrontOptions{Cosmos: true})
		svc := serviceClient(t, f.ConnectionString())
		if _, err := svc.CreateTable(ctx, "CaseSensitive", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.NewClient("CaseSensitive").AddEntity(ctx, entity("p", "1", nil), nil); err != nil {
			t.Fatalf("insert into the table by its name: %v", err)
		}
		_, err := svc.NewClient("casesensitive").GetEntity(ctx, "p", "1", nil)
		wantError(t, "read through another case", err, http.StatusNotFound, "TableNotFound")
		if _, err := svc.DeleteTable(ctx, "CaseSensitive", nil); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCosmosUnreadablePage: in Cosmos mode the front reads every page of a
// query from its target. A page it cannot read is answered with an error,
// never as an empty page or an entity without keys. Azurite never sends
// such a page, so the target here is a test server with fixed answers.
func TestCosmosUnreadablePage(t *testing.T) {
	t.Parallel()
	var page atomic.Value // the body the target answers every query with
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8")
		w.Write([]byte(page.Load().(string)))
	}))
	t.Cleanup(target.Close)
	f, err := azurite.NewFront(ctxFor(t), azurite.Endpoints{Table: target.URL + "/" + azurite.AccountName}, &azurite.FrontOptions{Cosmos: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	client := serviceClient(t, f.ConnectionString()).NewClient("cosmospage")
	query := func() ([]string, error) {
		var got []string
		pager := client.NewListEntitiesPager(nil)
		for pager.More() {
			resp, err := pager.NextPage(ctxFor(t))
			if err != nil {
				return got, err
			}
			for _, e := range resp.Entities {
				got = append(got, string(e))
			}
		}
		return got, nil
	}

	// A readable page passes, so the cases below fail for their page alone.
	page.Store(`{"odata.metadata":"m","value":[{"PartitionKey":"p","RowKey":"r"}]}`)
	if got, err := query(); err != nil || len(got) != 1 || !strings.Contains(got[0], `"RowKey":"r"`) {
		t.Fatalf("readable page: %q, %v", got, err)
	}
	for name, body := range map[string]string{
		"not JSON":              `<html>502 Bad Gateway</html>`,
		"no value":              `{"odata.metadata":"m"}`,
		"value not an array":    `{"odata.metadata":"m","value":{"PartitionKey":"p","RowKey":"r"}}`,
		"entity not an object":  `{"odata.metadata":"m","value":[1]}`,
		"key not a string":      `{"odata.metadata":"m","value":[{"PartitionKey":7,"RowKey":"r"}]}`,
		"truncated after value": `{"odata.metadata":"m","value":[{"PartitionKey":"p","RowKey":"r"}`,
	} {
		page.Store(body)
		got, err := query()
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusBadGateway || re.ErrorCode != "InternalError" {
			t.Errorf("%s: got entities %q and error %v, want 502 InternalError", name, got, err)
		}
	}
}
