package tablekit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// cosmosTable opens a table behind package azurite's front in Cosmos DB
// mode: query results in no key order, Cosmos DB's limits.
func cosmosTable(t *testing.T) (*tablekit.Account, *tablekit.Table[wireItem]) {
	t.Helper()
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Seed: 7}})
	acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Service: tablekit.ServiceCosmosDB})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := tablekit.OpenTable[wireItem](acct, "cosmos", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(context.Background()); err != nil {
		t.Fatal(err)
	}
	if acct.Service() != tablekit.ServiceCosmosDB || tbl.Account().Service() != tablekit.ServiceCosmosDB {
		t.Fatal("Options.Service did not reach the table")
	}
	return acct, tbl
}

func TestCosmosOrderDependentAPIs(t *testing.T) {
	ctx := context.Background()
	acct, tbl := cosmosTable(t)
	var want []string
	for p := range 5 {
		for i := range 60 {
			want = append(want, fmt.Sprintf("p%d/%05d", p, i))
		}
		fillPartition(t, tbl, fmt.Sprintf("p%d", p), 60)
	}

	// Query: every entity once, in the service's order (not key order).
	var got []string
	for e, err := range tbl.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.PK+"/"+e.RK)
	}
	if slices.IsSorted(got) {
		t.Fatal("the front's Cosmos mode returned results in key order; the test proves nothing")
	}
	if !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Fatalf("Query returned %d entities, want the %d written", len(got), len(want))
	}

	// Top needs key order: refused before anything is sent.
	before := acct.Meter().Snapshot()
	if _, err := tbl.Top(ctx, tablekit.PartitionEq("p1"), 3, nil); !errors.Is(err, tablekit.ErrUnsupported) || !strings.Contains(err.Error(), "Cosmos") {
		t.Errorf("Top on Cosmos DB: %v", err)
	}
	if n := acct.Meter().Snapshot().Sub(before).Total(); n != 0 {
		t.Errorf("the refused Top sent %d requests", n)
	}

	// A Cursor resumes a broken-off loop exactly once per entity, in pages
	// that are not in key order.
	for _, stop := range []int{1, 37, 100, 299} {
		var cur tablekit.Cursor
		var seen []string
		opts := &tablekit.QueryOptions{PageSize: 50, Cursor: &cur, AllowTableScan: true}
		for e, err := range tbl.Query(ctx, tablekit.Filter{}, opts) {
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, e.PK+"/"+e.RK)
			if len(seen) == stop {
				break
			}
		}
		for e, err := range tbl.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{PageSize: 50, Continuation: cur.Token(), AllowTableScan: true}) {
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, e.PK+"/"+e.RK)
		}
		if !slices.Equal(slices.Sorted(slices.Values(seen)), want) {
			t.Errorf("stop %d: %d entities after resuming, want each of the %d once", stop, len(seen), len(want))
		}
	}

	// KeyOrder: the whole result read, then sorted; Limit applies after.
	got = got[:0]
	for e, err := range tbl.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{PageSize: 70, KeyOrder: true, AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.PK+"/"+e.RK)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Query with KeyOrder returned %d entities, sorted %v; want the %d written in key order", len(got), slices.IsSorted(got), len(want))
	}
	got = got[:0]
	for e, err := range tbl.Query(ctx, tablekit.RowKeyRange("p3", "00010", "00020"), &tablekit.QueryOptions{KeyOrder: true, Limit: 4}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.PK+"/"+e.RK)
	}
	if !slices.Equal(got, want[3*60+10:3*60+14]) {
		t.Errorf("a RowKey range with KeyOrder and Limit 4: %v, want %v", got, want[3*60+10:3*60+14])
	}
	if _, err := tbl.QueryPage(ctx, tablekit.PartitionEq("p1"), &tablekit.QueryOptions{KeyOrder: true}); !errors.Is(err, tablekit.ErrUnsupported) {
		t.Errorf("QueryPage with KeyOrder on Cosmos DB: %v, want ErrUnsupported", err)
	}
	for _, err := range tbl.Query(ctx, tablekit.PartitionEq("p1"), &tablekit.QueryOptions{KeyOrder: true, Cursor: &tablekit.Cursor{}}) {
		if !errors.Is(err, tablekit.ErrUnsupported) {
			t.Errorf("Query with KeyOrder and a Cursor on Cosmos DB: %v, want ErrUnsupported", err)
		}
		break
	}

	// Cosmos DB's own limits: a RowKey of at most 255 bytes.
	if _, err := tbl.Insert(ctx, wireItem{PK: "p", RK: strings.Repeat("k", 256)}); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("a 256-byte RowKey on Cosmos DB: %v", err)
	}
}

func TestCosmosEndpointsRecognised(t *testing.T) {
	const key = "AccountKey=C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==;"
	for cs, want := range map[string]bool{
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;TableEndpoint=https://acct.table.cosmos.azure.com:443/;": true,
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;TableEndpoint=https://acct.table.cosmosdb.azure.com/;":   true,
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;TableEndpoint=https://ACCT.Table.Cosmos.Azure.com/;":     true,
		// The sovereign clouds: Azure China, Azure Government.
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;TableEndpoint=https://acct.table.cosmos.azure.cn:443/;": true,
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;TableEndpoint=https://acct.table.cosmos.azure.us:443/;": true,
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;TableEndpoint=https://acct.table.cosmosdb.azure.us/;":   true,
		// The Cosmos DB emulator's connection string, as Microsoft's
		// documentation gives it.
		"DefaultEndpointsProtocol=http;AccountName=localhost;" + key + "TableEndpoint=http://localhost:8902/;":  true,
		"DefaultEndpointsProtocol=http;AccountName=localhost;" + key + "TableEndpoint=http://127.0.0.1:8902/;":  true,
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;TableEndpoint=http://localhost:8902/;": true,
		// Table storage, Azurite, and hosts that only look alike.
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net":                             false,
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.chinacloudapi.cn":                        false,
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.usgovcloudapi.net":                       false,
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;TableEndpoint=https://table.cosmos.example.com/;":            false,
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;TableEndpoint=https://acct.table.cosmos-proxy.example.com/;": false,
		"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;TableEndpoint=https://cosmos.example.com:8902/;":             false,
		"UseDevelopmentStorage=true": false,
	} {
		acct, err := tablekit.Open(cs, nil)
		if err != nil {
			t.Fatalf("%s: %v", cs, err)
		}
		if (acct.Service() == tablekit.ServiceCosmosDB) != want {
			t.Errorf("%s: Cosmos() = %v, want %v", cs, acct.Service() == tablekit.ServiceCosmosDB, want)
		}
		// Options.Service overrides the host name either way.
		for svc, want := range map[tablekit.Service]bool{tablekit.ServiceTableStorage: false, tablekit.ServiceCosmosDB: true} {
			acct, err := tablekit.Open(cs, &tablekit.Options{Service: svc})
			if err != nil {
				t.Fatalf("%s with %v: %v", cs, svc, err)
			}
			if (acct.Service() == tablekit.ServiceCosmosDB) != want {
				t.Errorf("%s with %v: Cosmos() = %v, want %v", cs, svc, acct.Service() == tablekit.ServiceCosmosDB, want)
			}
		}
	}
	if _, err := tablekit.Open("UseDevelopmentStorage=true", &tablekit.Options{Service: tablekit.ServiceCosmosDB + 1}); !errors.Is(err, tablekit.ErrInvalidInput) || !strings.Contains(err.Error(), "Service") {
		t.Errorf("Options.Service out of range: %v, want ErrInvalidInput naming Service", err)
	}
}

// methods records the method (and X-HTTP-Method) of every request.
type methods struct {
	mu  sync.Mutex
	got []string
}

func (m *methods) Do(req *policy.Request) (*http.Response, error) {
	m.mu.Lock()
	m.got = append(m.got, strings.TrimSpace(req.Raw().Method+" "+req.Raw().Header.Get("X-HTTP-Method")))
	m.mu.Unlock()
	return req.Next()
}

func (m *methods) take() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	got := m.got
	m.got = nil
	return got
}

// TestCosmosDetectedByAnswers: an Account with the default Options on an
// endpoint whose host does not say Cosmos DB switches to Cosmos DB mode
// at the first answer that shows it, for all its Tables (opened before
// too), and never on Table storage's answers.
func TestCosmosDetectedByAnswers(t *testing.T) {
	ctx := context.Background()
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Paging: true, Seed: 2}})
	rec := &methods{}
	open := func() *tablekit.Account {
		acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{rec}}})
		if err != nil {
			t.Fatal(err)
		}
		if acct.Service() == tablekit.ServiceCosmosDB {
			t.Fatal("an Account on the front's loopback address started in Cosmos DB mode")
		}
		return acct
	}
	setup := open()
	a, err := tablekit.OpenTable[wireItem](setup, "detectA", nil)
	if err != nil {
		t.Fatal(err)
	}
	// A new table's ETag shows Cosmos DB.
	if err := a.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	if setup.Service() != tablekit.ServiceCosmosDB || a.Account().Service() != tablekit.ServiceCosmosDB {
		t.Error("Cosmos DB's answer to a table's creation (its ETag) did not switch the Account to Cosmos DB mode")
	}
	fillPartition(t, a, "p", 120)

	// A continuation token: two Tables opened before it, one after.
	acct := open()
	a, _ = tablekit.OpenTable[wireItem](acct, "detectA", nil)
	b, _ := tablekit.OpenTable[wireItem](acct, "detectA", nil)
	page, err := a.QueryPage(ctx, tablekit.PartitionEq("p"), &tablekit.QueryOptions{PageSize: 10})
	if err != nil || page.Continuation == "" {
		t.Fatalf("a page of 10 of 120: %d items, continuation %q, %v", len(page.Items), page.Continuation, err)
	}
	c, _ := tablekit.OpenTable[wireItem](acct, "detectA", nil)
	for name, tbl := range map[string]*tablekit.Table[wireItem]{"the querying table": a, "a table opened before": b, "a table opened after": c} {
		if tbl.Account().Service() != tablekit.ServiceCosmosDB {
			t.Errorf("after a continuation token in Cosmos DB's shape, %s is not in Cosmos DB mode", name)
		}
	}
	// Merges go as Cosmos DB takes them, from every Table of the Account.
	rec.take()
	if _, err := b.Merge(ctx, wireItem{PK: "p", RK: "00001", N: 7}, ""); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); !slices.Equal(got, []string{"POST MERGE"}) {
		t.Errorf("a merge after the switch went as %v, want a POST tunnelling MERGE", got)
	}

	// An error answer in Cosmos DB's shape.
	acct = open()
	a, _ = tablekit.OpenTable[wireItem](acct, "detectA", nil)
	if _, err := a.Get(ctx, "p", "missing"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("Get of a missing entity: %v", err)
	}
	if acct.Service() != tablekit.ServiceCosmosDB {
		t.Error("Cosmos DB's 404 did not switch the Account to Cosmos DB mode")
	}

	// A page out of key order, with no continuation.
	acct = open()
	a, _ = tablekit.OpenTable[wireItem](acct, "detectA", nil)
	n := 0
	for _, err := range a.Query(ctx, tablekit.RowKeyRange("p", "00010", "00030"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 20 || acct.Service() != tablekit.ServiceCosmosDB {
		t.Errorf("a page of %d entities out of key order left the Account in Cosmos DB mode %v", n, acct.Service() == tablekit.ServiceCosmosDB)
	}

	// Table storage's answers (the front in Azure mode, with its paging
	// and errors) never switch an Account.
	st := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Paging: true, Seed: 2}})
	sacct, err := tablekit.Open(st.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	stbl := openTableOn[wireItem](t, sacct, "storage")
	fillPartition(t, stbl, "p", 120)
	fillPartition(t, stbl, "q", 30)
	pages := 0
	for tok := "x"; tok != ""; pages++ {
		if tok == "x" {
			tok = ""
		}
		p, err := stbl.QueryPage(ctx, tablekit.Filter{}, &tablekit.QueryOptions{PageSize: 7, Continuation: tok, AllowTableScan: true})
		if err != nil {
			t.Fatal(err)
		}
		tok = p.Continuation
	}
	_, gerr := stbl.Get(ctx, "p", "missing")
	if top, err := stbl.Top(ctx, tablekit.PartitionEq("p"), 3, nil); err != nil || len(top) != 3 || top[0].RK != "00000" {
		t.Errorf("Top on Table storage: %v, %v", top, err)
	}
	if sacct.Service() == tablekit.ServiceCosmosDB || pages < 20 || !errors.Is(gerr, tablekit.ErrNotFound) {
		t.Errorf("Table storage's answers (%d pages, a 404: %v) switched the Account to Cosmos DB mode: %v", pages, gerr, sacct.Service() == tablekit.ServiceCosmosDB)
	}
}

// TestCosmosServiceTableStorage: an Account whose Options.Service says
// Table storage on an endpoint that answers as Cosmos DB fails, with an
// error that says so, instead of taking the service's order for key
// order, and then sends nothing more.
func TestCosmosServiceTableStorage(t *testing.T) {
	ctx := context.Background()
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Seed: 3}})
	setup, err := tablekit.Open(srv.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	fillPartition(t, openTableOn[wireItem](t, setup, "stor"), "p", 40)

	acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Service: tablekit.ServiceTableStorage})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := tablekit.OpenTable[wireItem](acct, "stor", nil)
	if err != nil {
		t.Fatal(err)
	}
	wrong := func(err error) bool {
		return errors.Is(err, tablekit.ErrInvalidInput) && strings.Contains(err.Error(), "Cosmos DB") && strings.Contains(err.Error(), "Service")
	}
	// One page, all of the partition, out of key order.
	var got []string
	var qerr error
	for e, err := range tbl.Query(ctx, tablekit.PartitionEq("p"), nil) {
		if err != nil {
			qerr = err
			break
		}
		got = append(got, e.RK)
	}
	if !wrong(qerr) || len(got) != 0 {
		t.Errorf("a query answered out of key order with Options.Service Table storage: %d entities, %v; want none and an error naming Service and Cosmos DB", len(got), qerr)
	}
	before := acct.Meter().Snapshot()
	if _, err := tbl.Get(ctx, "p", "00001"); !wrong(err) {
		t.Errorf("Get after that: %v", err)
	}
	if _, err := acct.Tables().NewClient("stor").GetAccessPolicy(ctx, nil); !wrong(err) {
		t.Errorf("the SDK's client after that: %v", err)
	}
	if n := acct.Meter().Snapshot().Sub(before).Total(); n != 0 {
		t.Errorf("%d requests sent after the endpoint showed Cosmos DB", n)
	}
	if acct.Service() == tablekit.ServiceCosmosDB {
		t.Error("the Account switched to Cosmos DB mode against its Options.Service")
	}

	// A continuation token in Cosmos DB's shape.
	acct, _ = tablekit.Open(srv.ConnectionString(), &tablekit.Options{Service: tablekit.ServiceTableStorage})
	tbl, _ = tablekit.OpenTable[wireItem](acct, "stor", nil)
	if _, err := tbl.QueryPage(ctx, tablekit.PartitionEq("p"), &tablekit.QueryOptions{PageSize: 5}); !wrong(err) {
		t.Errorf("a page with Cosmos DB's continuation with Options.Service Table storage: %v", err)
	}
}

// TestCosmosReservedNames: Cosmos DB refuses the property names Id, rid,
// etag and ResourceId; in Cosmos DB mode tablekit refuses them before
// sending (other cases are other names), and elsewhere they are fine.
func TestCosmosReservedNames(t *testing.T) {
	ctx := context.Background()
	acct, _ := cosmosTable(t)
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, "cosmos", nil)
	if err != nil {
		t.Fatal(err)
	}
	type withRid struct {
		PK  string `table:",pk"`
		RK  string `table:",rk"`
		Rid string `table:"rid"`
	}
	typed, err := tablekit.OpenTable[withRid](acct, "cosmos", nil)
	if err != nil {
		t.Fatal(err)
	}
	before := acct.Meter().Snapshot()
	for _, name := range []string{"Id", "rid", "etag", "ResourceId"} {
		e := tablekit.Entity{PartitionKey: "r", RowKey: name, Properties: map[string]any{name: "x"}}
		_, err := tbl.Insert(ctx, e)
		var ve *tablekit.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, tablekit.ErrInvalidInput) || ve.Property != name || !strings.Contains(err.Error(), "Cosmos DB") {
			t.Errorf("Insert with property %s on Cosmos DB: %v, want a ValidationError naming it and Cosmos DB", name, err)
		}
		if _, err := tbl.Transaction(ctx, tablekit.UpsertAction(e)); !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("a transaction with property %s on Cosmos DB: %v", name, err)
		}
	}
	if _, err := typed.Upsert(ctx, withRid{PK: "r", RK: "typed", Rid: "x"}); !errors.Is(err, tablekit.ErrInvalidInput) || !strings.Contains(err.Error(), "rid") {
		t.Errorf("a struct field stored as rid on Cosmos DB: %v", err)
	}
	if n := acct.Meter().Snapshot().Sub(before).Total(); n != 0 {
		t.Errorf("the refused writes sent %d requests", n)
	}
	for _, name := range []string{"ID", "Rid", "ETAG", "resourceId", "Identity"} {
		if _, err := tbl.Insert(ctx, tablekit.Entity{PartitionKey: "r", RowKey: name, Properties: map[string]any{name: "x"}}); err != nil {
			t.Errorf("Insert with property %s on Cosmos DB: %v", name, err)
		}
	}
	// Table storage takes them.
	st := testenv.Account(t, &tablekit.Options{Service: tablekit.ServiceTableStorage})
	if testenv.Service() == tablekit.ServiceCosmosDB {
		return // the test account is Cosmos DB's
	}
	stbl := testenv.OpenTable[tablekit.Entity](t, st, nil)
	for _, name := range []string{"Id", "rid", "etag", "ResourceId"} {
		if _, err := stbl.Insert(ctx, tablekit.Entity{PartitionKey: "r", RowKey: name, Properties: map[string]any{name: "x"}}); err != nil {
			t.Errorf("Insert with property %s on Table storage: %v", name, err)
		}
	}
}

// TestCosmosMerges: on Azure Cosmos DB for Table a merge goes as POST with
// "X-HTTP-Method: MERGE" (Cosmos DB has no PATCH); merges of every kind
// (upsert, update, in a transaction too) keep the properties they do not
// name.
func TestCosmosMerges(t *testing.T) {
	ctx := context.Background()
	acct, tbl := cosmosTable(t)
	etag, err := tbl.Insert(ctx, wireItem{PK: "m", RK: "o'k", N: 1, Tag: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	before := acct.Meter().Snapshot()
	if etag, err = tbl.Merge(ctx, wireItem{PK: "m", RK: "o'k", N: 2}, etag); err != nil {
		t.Fatalf("update merge: %v", err)
	} else if etag == "" {
		t.Error("update merge returned no ETag")
	}
	if _, err = tbl.Merge(ctx, wireItem{PK: "m", RK: "o'k", N: 3}, ""); err != nil {
		t.Fatalf("upsert merge: %v", err)
	}
	if n := acct.Meter().Snapshot().Sub(before).Count("table", "MergeEntity"); n != 2 {
		t.Errorf("%d MergeEntity requests, want 2", n)
	}
	if got, err := tbl.Get(ctx, "m", "o'k"); err != nil || got.N != 3 || got.Tag != "kept" {
		t.Fatalf("after merges: %+v, %v", got, err)
	}
	if _, err := tbl.Transaction(ctx, tablekit.MergeAction(wireItem{PK: "m", RK: "o'k", N: 4}, "")); err != nil {
		t.Fatalf("merge in a transaction: %v", err)
	}
	if got, err := tbl.Get(ctx, "m", "o'k"); err != nil || got.N != 4 || got.Tag != "kept" {
		t.Fatalf("after the merge transaction: %+v, %v", got, err)
	}
}

// cosmosService is the tablekit.Options.Service of an Account opened on a
// front of the test's own: Cosmos DB when the front is in Cosmos mode.
func cosmosService(cosmos bool) tablekit.Service {
	if cosmos {
		return tablekit.ServiceCosmosDB
	}
	return tablekit.ServiceAuto
}

// openTableOn opens the table name on acct for T and creates it.
func openTableOn[T any](t *testing.T, acct *tablekit.Account, name string) *tablekit.Table[T] {
	t.Helper()
	tbl, err := tablekit.OpenTable[T](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tbl
}
