package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/sas"
)

// probes are the behaviours a run probes, in order, each with the most
// requests it sends. Each uses partitions of its own in the run's table.
var probes = []probe{
	{"keys with quotes and reserved characters", 5, probeKeys},
	{"EDM types round trip", 2, probeEDM},
	{"Edm.Int64 beyond int64", 1, probeInt64},
	{"transaction of 100 actions", 2, probeHundred},
	{"transaction failure reporting", 3, probeFailure},
	{"transaction merge and upsert", 2, probeTxnMerge},
	{"transaction across partitions", 1, probeTwoPartitions},
	{"result order", 4, probeOrder},
	{"continuation", 7, probeContinuation},
	{"SAS PartitionKey/RowKey range", 5, probeSASRange},
	{"error codes", 5, probeErrors},
	{"property over 64 KiB", 1, probePropertySize},
	{"entity over 1 MiB", 1, probeEntitySize},
	{"key with / \\ # or ?", 1, probeKeyCharacters},
	{"table name in another case", 1, probeTableCase},
}

// probeKeys writes, reads, queries, merges and deletes an entity whose
// keys hold quotes, percent signs, pluses, spaces and Unicode beyond the
// BMP: tablekit escapes them in URLs, filters and $batch request lines.
func probeKeys(ctx context.Context, p *prober) Result {
	pk, rk := `o'k %20+&=;,é "q" 😀`, "it''s ~!*()$@:[]{}<>"
	e := tablekit.Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{"V": int32(1)}}
	if _, err := p.tbl.Insert(ctx, e); err != nil {
		return differs("insert: %s", status(err))
	}
	got, err := p.tbl.Get(ctx, pk, rk)
	if err != nil {
		return differs("point read: %s", status(err))
	}
	if got.PartitionKey != pk || got.RowKey != rk {
		return differs("read back as %q/%q", got.PartitionKey, got.RowKey)
	}
	items, err := tablekit.Collect(p.tbl.Query(ctx, tablekit.PointQuery(pk, rk), nil), 10)
	if err != nil {
		return differs("query: %s", status(err))
	}
	if len(items) != 1 || items[0].PartitionKey != pk || items[0].RowKey != rk {
		return differs("the query by both keys found %d entities", len(items))
	}
	e.Properties = map[string]any{"W": int32(2)}
	if _, err := p.tbl.Merge(ctx, e, azcore.ETagAny); err != nil {
		return differs("merge: %s", status(err))
	}
	if err := p.tbl.Delete(ctx, pk, rk, azcore.ETagAny); err != nil {
		return differs("delete: %s", status(err))
	}
	return asExpected("")
}

// edmValues are the values of the EDM probe: every type, with the values
// that are easy to get wrong.
func edmValues() map[string]any {
	g, _ := codec.ParseGUID("c9da6455-213d-42c9-9a79-3e9149a57833")
	return map[string]any{
		"Empty": "", "Text": "Ünïcode 😀 \"'\\ tab\t", "I32": int32(math.MinInt32),
		"I64": int64(math.MaxInt64), "I64Min": int64(math.MinInt64), "Whole": 1.0, "Tenth": 0.1,
		"NaN": math.NaN(), "Inf": math.Inf(1), "NegInf": math.Inf(-1), "Big": 9223372036854775808000.0,
		"Bool": true, "Time": time.Date(2012, 3, 4, 5, 6, 7, 123456700, time.UTC),
		"Early": time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC), "Guid": g, "Bin": []byte{0, 1, 2, 0xff},
	}
}

// probeEDM writes an entity with every EDM type and reads it back: every
// value must come back with its type (a whole Double stays a Double, NaN
// and the infinities survive, DateTime keeps 100 ns).
func probeEDM(ctx context.Context, p *prober) Result {
	want := edmValues()
	if _, err := p.tbl.Upsert(ctx, tablekit.Entity{PartitionKey: "edm", RowKey: "1", Properties: want}); err != nil {
		return differs("write: %s", status(err))
	}
	got, err := p.tbl.Get(ctx, "edm", "1")
	if err != nil {
		return differs("read: %s", status(err))
	}
	var bad []string
	for name, w := range want {
		g, ok := got.Properties[name]
		switch {
		case !ok:
			bad = append(bad, name+" missing")
		case reflect.TypeOf(g) != reflect.TypeOf(w):
			bad = append(bad, fmt.Sprintf("%s read as %T %v", name, g, g))
		case !sameValue(w, g):
			bad = append(bad, fmt.Sprintf("%s read as %v, wrote %v", name, g, w))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return differs("%s", strings.Join(bad, "; "))
	}
	return asExpected("")
}

func sameValue(a, b any) bool {
	switch a := a.(type) {
	case float64:
		f := b.(float64)
		return a == f || math.IsNaN(a) && math.IsNaN(f)
	case time.Time:
		return a.Equal(b.(time.Time))
	}
	return reflect.DeepEqual(a, b)
}

// probeInt64 sends an Edm.Int64 beyond int64, which tablekit never sends
// (the live services refuse it: 400 InvalidInput).
func probeInt64(ctx context.Context, p *prober) Result {
	_, err := p.raw.AddEntity(ctx, []byte(`{"PartitionKey":"num","RowKey":"1","X@odata.type":"Edm.Int64","X":"9223372036854775808"}`), nil)
	if err == nil {
		return differs("stored; the live services answer 400 InvalidInput")
	}
	if s := status(err); s != "400 InvalidInput" {
		return differs("answered %s; the live services answer 400 InvalidInput", s)
	}
	return asExpected("")
}

// probeHundred sends a transaction of 100 actions (the limit) through
// tablekit, and one of 101 as is (tablekit refuses it before sending).
func probeHundred(ctx context.Context, p *prober) Result {
	acts := make([]tablekit.Action[tablekit.Entity], 100)
	for i := range acts {
		acts[i] = tablekit.InsertAction(tablekit.Entity{PartitionKey: "txn100", RowKey: fmt.Sprintf("%03d", i)})
	}
	etags, err := p.tbl.Transaction(ctx, acts...)
	if err != nil {
		return differs("100 actions: %v", err)
	}
	if len(etags) != 100 || slices.Contains(etags, "") {
		return differs("100 actions: the answer held %d ETags", len(etags))
	}
	raw := make([]aztables.TransactionAction, 101)
	for i := range raw {
		raw[i] = aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd,
			Entity: []byte(fmt.Sprintf(`{"PartitionKey":"txn101","RowKey":"%03d"}`, i))}
	}
	if _, err := p.raw.SubmitTransaction(ctx, raw, nil); err == nil {
		return differs("a transaction of 101 actions was applied; the live services refuse more than 100")
	}
	return asExpected("")
}

// probeFailure sends a transaction whose third insert finds its entity:
// nothing may be applied, and tablekit must report action 2 and
// EntityAlreadyExists from the answer.
func probeFailure(ctx context.Context, p *prober) Result {
	if _, err := p.tbl.Insert(ctx, tablekit.Entity{PartitionKey: "fail", RowKey: "2", Properties: map[string]any{"A": int32(1)}}); err != nil {
		return differs("insert: %s", status(err))
	}
	var acts []tablekit.Action[tablekit.Entity]
	for i := range 4 {
		acts = append(acts, tablekit.InsertAction(tablekit.Entity{PartitionKey: "fail", RowKey: fmt.Sprint(i)}))
	}
	_, err := p.tbl.Transaction(ctx, acts...)
	var te *tablekit.TransactionError
	switch {
	case err == nil:
		return differs("the transaction was applied although action 2's entity exists")
	case !errors.As(err, &te):
		return differs("%v", err)
	case te.Index != 2 || te.Code != "EntityAlreadyExists" || !errors.Is(err, tablekit.ErrAlreadyExists):
		return differs("reported action %d, %s; want action 2, EntityAlreadyExists", te.Index, te.Code)
	}
	items, err := tablekit.Collect(p.tbl.Query(ctx, tablekit.PartitionEq("fail"), nil), 10)
	if err != nil {
		return differs("query: %s", status(err))
	}
	if len(items) != 1 {
		return differs("the refused transaction left %d entities", len(items)-1)
	}
	return asExpected("")
}

// probeTxnMerge sends a transaction of merges (an existing entity and a
// new one): tablekit sends them as the live service is recorded taking
// them (PATCH, or a tunnelled MERGE on Cosmos DB).
func probeTxnMerge(ctx context.Context, p *prober) Result {
	_, err := p.tbl.Transaction(ctx,
		tablekit.MergeAction(tablekit.Entity{PartitionKey: "fail", RowKey: "2", Properties: map[string]any{"M": int32(2)}}, ""),
		tablekit.MergeAction(tablekit.Entity{PartitionKey: "fail", RowKey: "9", Properties: map[string]any{"M": int32(9)}}, ""))
	if err != nil {
		return differs("%v", err)
	}
	got, err := p.tbl.Get(ctx, "fail", "2")
	if err != nil {
		return differs("read: %s", status(err))
	}
	if got.Properties["A"] != int32(1) || got.Properties["M"] != int32(2) {
		return differs("merged into %v", got.Properties)
	}
	return asExpected("")
}

// probeTwoPartitions sends a transaction over two partitions as is
// (tablekit refuses it before sending).
func probeTwoPartitions(ctx context.Context, p *prober) Result {
	_, err := p.raw.SubmitTransaction(ctx, []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeAdd, Entity: []byte(`{"PartitionKey":"two-a","RowKey":"1"}`)},
		{ActionType: aztables.TransactionTypeAdd, Entity: []byte(`{"PartitionKey":"two-b","RowKey":"1"}`)},
	}, nil)
	if err == nil {
		return differs("applied; the live services refuse a transaction over two partitions")
	}
	return asExpected("")
}

// orderKeys are the entities of the order and continuation probes.
var orderKeys = func() (out [][2]string) {
	for _, pk := range []string{"ord-b", "ord-a", "ord-c"} {
		for _, rk := range []string{"2", "1", "3"} {
			out = append(out, [2]string{pk, rk})
		}
	}
	return out
}()

const orderFilter = "PartitionKey ge 'ord-' and PartitionKey lt 'ord.'"

// probeOrder writes nine entities in three partitions and reads them in
// one query: Table storage answers in PartitionKey and RowKey order,
// Cosmos DB promises no order.
func probeOrder(ctx context.Context, p *prober) Result {
	for i := 0; i < len(orderKeys); i += 3 {
		var acts []tablekit.Action[tablekit.Entity]
		for _, k := range orderKeys[i : i+3] {
			acts = append(acts, tablekit.InsertAction(tablekit.Entity{PartitionKey: k[0], RowKey: k[1]}))
		}
		if _, err := p.tbl.Transaction(ctx, acts...); err != nil {
			return differs("insert: %v", err)
		}
	}
	var got []string
	for e, err := range p.tbl.Query(ctx, tablekit.Where(orderFilter), &tablekit.QueryOptions{PageSize: 1000}) {
		if err != nil {
			return differs("query: %s", status(err))
		}
		got = append(got, e.PartitionKey+"/"+e.RowKey)
	}
	sorted := slices.Sorted(slices.Values(got))
	if len(got) != len(orderKeys) {
		return differs("the query found %d of %d entities", len(got), len(orderKeys))
	}
	inOrder := slices.Equal(got, sorted)
	switch {
	case p.cosmos && inOrder:
		return notApplicable("Cosmos DB promises no order (these came in key order)")
	case p.cosmos:
		return notApplicable("Cosmos DB promises no order (these did not come in key order)")
	case !inOrder:
		return differs("not in key order: %v", got)
	}
	return asExpected("")
}

var (
	storageTokenShape = regexp.MustCompile(`^1!\d+![A-Za-z0-9+/]*-*$`)
	cosmosTokenShape  = regexp.MustCompile(`^\{"token":".*","range":\{.*\}\}$`)
)

// tokenShape names the shape of a continuation.
func tokenShape(npk, nrk string) string {
	switch {
	case storageTokenShape.MatchString(npk) && (nrk == "" || storageTokenShape.MatchString(nrk)):
		return "Table storage's"
	case cosmosTokenShape.MatchString(npk) && nrk == "NA":
		return "Cosmos DB's"
	}
	return "another"
}

// probeContinuation reads the nine entities of the order probe two at a
// time, following the service's continuation: each entity exactly once,
// the tokens in the service's shape (clients store and compare them).
func probeContinuation(ctx context.Context, p *prober) Result {
	pager := p.raw.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr(orderFilter), Top: to.Ptr(int32(2))})
	var got []string
	shapes := map[string]bool{}
	sample := ""
	for page := 0; pager.More(); page++ {
		if page == 7 {
			return differs("more than 7 pages of 2 for 9 entities")
		}
		resp, err := pager.NextPage(ctx)
		if err != nil {
			return differs("page %d: %s", page, status(err))
		}
		for _, raw := range resp.Entities {
			var k struct{ PartitionKey, RowKey string }
			if err := json.Unmarshal(raw, &k); err != nil {
				return differs("page %d: %v", page, err)
			}
			got = append(got, k.PartitionKey+"/"+k.RowKey)
		}
		if resp.NextPartitionKey != nil {
			nrk := ""
			if resp.NextRowKey != nil {
				nrk = *resp.NextRowKey
			}
			shapes[tokenShape(*resp.NextPartitionKey, nrk)] = true
			sample = *resp.NextPartitionKey
		}
	}
	if s := slices.Sorted(slices.Values(got)); len(s) != len(orderKeys) || len(slices.Compact(s)) != len(orderKeys) {
		return differs("the pages held %d entities (%d distinct), want the %d once each", len(got), len(slices.Compact(s)), len(orderKeys))
	}
	want := "Table storage's"
	if p.cosmos {
		want = "Cosmos DB's"
	}
	if len(shapes) == 0 {
		return differs("every entity came in one page of 2")
	}
	if len(shapes) > 1 || !shapes[want] {
		return differs("tokens shaped otherwise than %s (e.g. %.40q)", want, sample)
	}
	return asExpected("tokens in %s shape", want)
}

// probeSASRange signs a table SAS for one partition (it needs the
// account key) and reads, writes and queries through it: a point read
// outside the range is 404, a write 403, and a query is narrowed.
func probeSASRange(ctx context.Context, p *prober) Result {
	if p.signer == nil {
		return notApplicable("signing a SAS needs the account key (a connection string with AccountKey)")
	}
	u, err := p.signer.TableURL(p.name, sas.Permissions{Read: true, Add: true}, time.Now().Add(time.Hour),
		&sas.Options{Start: time.Now().Add(-5 * time.Minute), StartPartitionKey: "sas-in", EndPartitionKey: "sas-in"})
	if err != nil {
		return differs("signing the SAS: %v", err)
	}
	for _, pk := range []string{"sas-in", "sas-out"} {
		if _, err := p.tbl.Insert(ctx, tablekit.Entity{PartitionKey: pk, RowKey: "1"}); err != nil {
			return differs("insert: %s", status(err))
		}
	}
	ranged, err := sas.OpenTable[tablekit.Entity](u, &tablekit.Options{Meter: p.acct.Meter(), ClientOptions: azcore.ClientOptions{Retry: noRetries}, Service: service(p.cosmos)}, nil)
	if err != nil {
		return differs("%v", err)
	}
	var bad []string
	if _, err := ranged.Get(ctx, "sas-out", "1"); err == nil {
		bad = append(bad, "a point read outside the range found the entity (live: 404 ResourceNotFound)")
	} else if s := status(err); s != "404 ResourceNotFound" {
		bad = append(bad, "a point read outside the range: "+s+" (live: 404 ResourceNotFound)")
	}
	if _, err := ranged.Insert(ctx, tablekit.Entity{PartitionKey: "sas-out", RowKey: "2"}); err == nil {
		bad = append(bad, "an insert outside the range was applied (live: 403 AuthorizationFailure)")
	} else if s := status(err); s != "403 AuthorizationFailure" {
		bad = append(bad, "an insert outside the range: "+s+" (live: 403 AuthorizationFailure)")
	}
	items, err := tablekit.Collect(ranged.Query(ctx, tablekit.Where("PartitionKey ge 'sas-' and PartitionKey lt 'sas.'"), nil), 10)
	if err != nil {
		bad = append(bad, "query: "+status(err))
	} else if len(items) != 1 || items[0].PartitionKey != "sas-in" {
		bad = append(bad, fmt.Sprintf("a query found %d entities, not only the range's one", len(items)))
	}
	if len(bad) > 0 {
		return differs("%s", strings.Join(bad, "; "))
	}
	return asExpected("")
}

// probeErrors provokes the failures tablekit maps to its sentinels and
// checks the codes, which the live services send in the body only.
func probeErrors(ctx context.Context, p *prober) Result {
	var bad []string
	header := false
	check := func(what string, err, sentinel error, want string) {
		if r := responseOf(err); r != nil && r.Header.Get("x-ms-error-code") != "" {
			header = true
		}
		if s := status(err); s != want || !errors.Is(err, sentinel) {
			bad = append(bad, fmt.Sprintf("%s: %s, want %s", what, s, want))
		}
	}
	_, err := p.tbl.Get(ctx, "err", "missing")
	check("read of a missing entity", err, tablekit.ErrNotFound, "404 ResourceNotFound")
	e := tablekit.Entity{PartitionKey: "err", RowKey: "1"}
	if _, err := p.tbl.Insert(ctx, e); err != nil {
		return differs("insert: %s", status(err))
	}
	_, err = p.tbl.Insert(ctx, e)
	check("insert of an existing entity", err, tablekit.ErrAlreadyExists, "409 EntityAlreadyExists")
	_, err = p.tbl.Update(ctx, e, `W/"datetime'2001-01-01T00%3A00%3A00.0000000Z'"`)
	check("update with a stale ETag", err, tablekit.ErrPreconditionFailed, "412 UpdateConditionNotSatisfied")
	_, err = p.tbl.Merge(ctx, tablekit.Entity{PartitionKey: "err", RowKey: "missing"}, azcore.ETagAny)
	check("merge of a missing entity", err, tablekit.ErrNotFound, "404 ResourceNotFound")
	if header {
		bad = append(bad, "the code also comes in an x-ms-error-code header, which the live services do not send (code that reads it breaks live)")
	}
	if len(bad) > 0 {
		return differs("%s", strings.Join(bad, "; "))
	}
	return asExpected("")
}

// probePropertySize sends a string property of 33,000 UTF-16 units as is
// (tablekit refuses it before sending): over Table storage's 64 KiB
// limit, within Cosmos DB's (which has no per-property limit).
func probePropertySize(ctx context.Context, p *prober) Result {
	body, _ := json.Marshal(map[string]string{"PartitionKey": "size", "RowKey": "prop", "S": strings.Repeat("x", 33_000)})
	_, err := p.raw.AddEntity(ctx, body, nil)
	return sizeOutcome(p.cosmos, err, "400 PropertyValueTooLarge")
}

// probeEntitySize sends an entity of 1.2 MB in Table storage's size
// formula (about 600 KB of JSON) as is: over Table storage's 1 MiB, within
// Cosmos DB's 2 MB.
func probeEntitySize(ctx context.Context, p *prober) Result {
	m := map[string]string{"PartitionKey": "size", "RowKey": "entity"}
	for i := range 20 {
		m[fmt.Sprintf("P%02d", i)] = strings.Repeat("x", 30_000)
	}
	body, _ := json.Marshal(m)
	_, err := p.raw.AddEntity(ctx, body, nil)
	return sizeOutcome(p.cosmos, err, "400 EntityTooLarge")
}

// sizeOutcome judges a size probe: Table storage refuses with want,
// Cosmos DB stores.
func sizeOutcome(cosmos bool, err error, want string) Result {
	s := status(err)
	switch {
	case cosmos && err == nil:
		return asExpected("stored, as Cosmos DB does")
	case cosmos:
		return differs("%s; Cosmos DB stores it", s)
	case err == nil:
		return differs("stored; Table storage answers %s", want)
	case s != want:
		return differs("%s; Table storage answers %s", s, want)
	}
	return asExpected("")
}

// probeKeyCharacters sends a RowKey with '/' as is (tablekit refuses it
// before sending): the services refuse it with 400.
func probeKeyCharacters(ctx context.Context, p *prober) Result {
	_, err := p.raw.AddEntity(ctx, []byte(`{"PartitionKey":"keys","RowKey":"a/b"}`), nil)
	s := status(err)
	switch {
	case err == nil:
		return differs("stored; the services refuse / \\ # ? in keys")
	case !strings.HasPrefix(s, "400 "):
		return differs("answered %s; the services answer 400", s)
	}
	return asExpected("refused with %s", s)
}

// probeTableCase reads an entity of the run's table through its name in
// lower case: Table storage's table names are case-insensitive, Cosmos
// DB's are not.
func probeTableCase(ctx context.Context, p *prober) Result {
	lower, err := tablekit.OpenTable[tablekit.Entity](p.acct, strings.ToLower(p.name), nil)
	if err != nil {
		return differs("%v", err)
	}
	_, err = lower.Get(ctx, "err", "1")
	switch {
	case p.cosmos && err == nil:
		return differs("found through %s; Cosmos DB's table names are case-sensitive", strings.ToLower(p.name))
	case p.cosmos && status(err) == "404 TableNotFound", p.cosmos && status(err) == "404 ResourceNotFound":
		return asExpected("")
	case p.cosmos:
		return differs("%s", status(err))
	case err != nil:
		return differs("%s through %s; Table storage's table names are case-insensitive", status(err), strings.ToLower(p.name))
	}
	return asExpected("")
}

// service is the tablekit.Options.Service of a probe's Accounts: Cosmos
// DB's when the run probes Cosmos DB, else found out.
func service(cosmos bool) tablekit.Service {
	if cosmos {
		return tablekit.ServiceCosmosDB
	}
	return tablekit.ServiceAuto
}
