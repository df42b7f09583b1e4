package transfer_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/transfer"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(benchServerEnv); mode != "" {
		// A child process of the export benchmarks: serve, do not test.
		os.Exit(benchServer(mode, os.Getenv(benchTargetEnv)))
	}
	testenv.Main(m)
}

// newTable creates a fresh table on acct for the test.
func newTable(t testing.TB, acct *tablekit.Account) *tablekit.Table[tablekit.Entity] {
	t.Helper()
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, testenv.CreateTable(t, acct), nil)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func ctxFor(t testing.TB) context.Context {
	// 5 minutes; 30 at the chaos suites' full size, whose runs take
	// minutes each on a loaded machine (a deadline met there is no
	// violation, but it ends the seed before its checks).
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(chaos.Size(5, 30))*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// everyType returns entities holding every EDM type, with edge values, and
// keys that need care (quotes, Unicode, spaces). -0 is not among them:
// Azurite stores it as 0 (the format keeps it: see format_test.go).
func everyType() []tablekit.Entity {
	when := time.Date(2024, 2, 29, 23, 59, 59, 123456700, time.UTC)
	g := tablekit.GUID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}
	base := []tablekit.Entity{
		{PartitionKey: "types", RowKey: "all", Properties: map[string]any{
			"Str": "plain", "Empty": "", "Uni": "héllo wörld ✓ 日本語 🎉 \u2028 \"quoted\" \\ back\nline\ttab",
			"I32": int32(-2147483648), "I32Max": int32(2147483647), "I32Zero": int32(0),
			"I64": int64(math.MinInt64), "I64Max": int64(math.MaxInt64), "I64Small": int64(1),
			"D": 1.5, "DWhole": 1.0, "DZero": 0.0, "DNaN": math.NaN(),
			"DInf": math.Inf(1), "DNegInf": math.Inf(-1), "DTiny": 5e-324, "DBig": 1.7976931348623157e308, "DThird": 1.0 / 3,
			"BTrue": true, "BFalse": false,
			"When": when, "WhenOld": time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC), "WhenLate": time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC),
			"G": g, "GZero": tablekit.GUID{},
			"Bin": []byte{0, 1, 2, 0xfe, 0xff}, "BinEmpty": []byte{},
		}},
		{PartitionKey: "o'k \"quoted\"", RowKey: "it's", Properties: map[string]any{"X": int32(1)}},
		{PartitionKey: "日本", RowKey: "🎉 party", Properties: map[string]any{"Y": "z"}},
		{PartitionKey: "", RowKey: "empty-pk", Properties: map[string]any{}},
		{PartitionKey: "empty-rk", RowKey: "", Properties: map[string]any{"Z": false}},
	}
	return base
}

// seed writes entities into tbl.
func seed(t testing.TB, tbl *tablekit.Table[tablekit.Entity], es []tablekit.Entity) {
	t.Helper()
	if _, err := tbl.BulkWriter(nil).Upsert(ctxFor(t), es); err != nil {
		t.Fatal(err)
	}
}

// seedMany writes n entities over parts partitions, named pNN/rNNNNNN.
func seedMany(t testing.TB, tbl *tablekit.Table[tablekit.Entity], parts, n int) []tablekit.Entity {
	t.Helper()
	es := make([]tablekit.Entity, n)
	for i := range es {
		es[i] = tablekit.Entity{PartitionKey: fmt.Sprintf("p%03d", i%parts), RowKey: fmt.Sprintf("r%06d", i),
			Properties: map[string]any{"N": int64(i), "Name": "entity", "Score": float64(i) / 7}}
	}
	seed(t, tbl, es)
	return es
}

// readAll reads every entity of tbl, by keys, tablekit's own rows included.
func readAll(t testing.TB, tbl *tablekit.Table[tablekit.Entity]) map[[2]string]tablekit.Entity {
	t.Helper()
	out := map[[2]string]tablekit.Entity{}
	for e, err := range tbl.Query(ctxFor(t), tablekit.Filter{}, &tablekit.QueryOptions{Reserved: true}) {
		if err != nil {
			t.Fatal(err)
		}
		out[[2]string{e.PartitionKey, e.RowKey}] = e
	}
	return out
}

// sameValue compares two property values with their Go (and so EDM) types;
// NaN equals NaN and -0 differs from 0.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		if !ok {
			return false
		}
		if math.IsNaN(x) {
			return math.IsNaN(y)
		}
		return x == y && math.Signbit(x) == math.Signbit(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	}
	return fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b) && a == b
}

// sameEntities fails t unless want and got hold the same entities with the
// same properties, property by property, with types.
func sameEntities(t testing.TB, want, got map[[2]string]tablekit.Entity) {
	t.Helper()
	if len(want) != len(got) {
		t.Errorf("got %d entities, want %d", len(got), len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("entity %q/%q is missing", k[0], k[1])
			continue
		}
		if len(w.Properties) != len(g.Properties) {
			t.Errorf("entity %q/%q: %d properties, want %d", k[0], k[1], len(g.Properties), len(w.Properties))
		}
		for name, wv := range w.Properties {
			gv, ok := g.Properties[name]
			if !ok {
				t.Errorf("entity %q/%q: property %s is missing", k[0], k[1], name)
			} else if !sameValue(wv, gv) {
				t.Errorf("entity %q/%q: property %s = %#v (%T), want %#v (%T)", k[0], k[1], name, gv, gv, wv, wv)
			}
		}
	}
}

// scanOpts says how a test reads a scope: the reading fields of
// transfer.Options, as a value tests pass around and vary.
type scanOpts struct {
	Concurrency, PageSize, MaxProbes int
	Boundaries                       []string
}

// withScan returns o reading as s says.
func withScan(o transfer.Options, s scanOpts) transfer.Options {
	o.Concurrency, o.PageSize, o.MaxProbes, o.Boundaries = s.Concurrency, s.PageSize, s.MaxProbes, s.Boundaries
	return o
}

// withScanP returns o reading as s says.
func withScanP(o transfer.PurgeOptions, s scanOpts) transfer.PurgeOptions {
	o.Options = withScan(o.Options, s)
	return o
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// cosmosService is the tablekit.Options.Service of an Account opened on a
// front of the test's own: Cosmos DB when the front is in Cosmos mode.
func cosmosService(cosmos bool) tablekit.Service {
	if cosmos {
		return tablekit.ServiceCosmosDB
	}
	return tablekit.ServiceAuto
}

// onCosmos reports whether the test account is Cosmos DB's (the tests run
// behind the front in Cosmos DB mode): results in no key order, so no
// splits of running ranges and a purge's deletes grouped page by page.
func onCosmos() bool { return testenv.Service() == tablekit.ServiceCosmosDB }
