package keys_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keys"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestAzuriteOrder stores keys built by each encoder, in shuffled order,
// and reads them back with partition and range queries: the service must
// return them in the order of the values they encode. On Cosmos DB (the
// front in Cosmos DB mode), which returns results in no key order, the
// range queries must return exactly the keys of the range: the service
// compares keys in the order of the values too.
func TestAzuriteOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Azurite")
	}
	acct := testenv.Account(t, nil)
	client := testenv.NewTable(t, acct)
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(4, 2))

	// put stores one entity per RowKey in partition pk, in shuffled order.
	put := func(t *testing.T, pk string, rks []string) {
		t.Helper()
		shuffled := slices.Clone(rks)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for _, rk := range shuffled {
			body, err := json.Marshal(map[string]any{"PartitionKey": pk, "RowKey": rk})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.AddEntity(ctx, body, nil); err != nil {
				t.Fatalf("AddEntity(%q, %q): %v", pk, rk, err)
			}
		}
	}
	// expectRows checks that filter returns exactly want, in that order
	// (in any order on Cosmos DB).
	expectRows := func(t *testing.T, filter string, want []string) {
		t.Helper()
		got := queryKeys(ctx, t, client, filter, "RowKey")
		if testenv.Service() == tablekit.ServiceCosmosDB {
			got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
		}
		if !slices.Equal(got, want) {
			t.Errorf("filter %s:\n got %q\nwant %q", filter, got, want)
		}
	}
	// expectOrder stores rks (given in the expected order) and reads the
	// partition back, then a range over its middle.
	expectOrder := func(t *testing.T, pk string, rks []string) {
		t.Helper()
		put(t, pk, rks)
		expectRows(t, "PartitionKey eq "+lit(pk), rks)
		lo, hi := len(rks)/4, 3*len(rks)/4
		expectRows(t, "PartitionKey eq "+lit(pk)+" and RowKey ge "+lit(rks[lo])+" and RowKey lt "+lit(rks[hi]), rks[lo:hi])
	}

	t.Run("Compound", func(t *testing.T) {
		// Tricky content: the separator, every escape lead and its group,
		// characters Azure refuses in keys, control characters, spaces,
		// empty components, a quote (doubled in OData literals), and
		// Unicode on both sides of the UTF-16 / code point divergence.
		atoms := []string{"", " ", "!", `"`, "'", "a", "a ", "a!", `a"`, `a""`, "a!b", `a"b`, "a'b", "a0", "ab", "é", "\ue000", "\uffff", "\U0001F600", "日本",
			"\x00", "\x1f", "#", "$", ".", "/", "a/b", "a.b", ">", "?", "[", "\\", "]", "|", "~", "\x7f", "\u0085", "\u00a0", "\U0001F600/"}
		var tuples [][]string
		for _, x := range atoms {
			tuples = append(tuples, []string{x})
			for _, y := range atoms[:8] {
				tuples = append(tuples, []string{x, y})
			}
			tuples = append(tuples, []string{x, "", ""}, []string{x, `"`, "!"})
		}
		// Azure and Azurite compare UTF-16 code units.
		slices.SortFunc(tuples, func(a, b []string) int { return tupleCompare(a, b, utf16Compare) })
		tuples = slices.CompactFunc(tuples, slices.Equal)
		rks := make([]string, len(tuples))
		for i, tu := range tuples {
			k, err := keys.Compound(tu...)
			if err != nil {
				t.Fatal(err)
			}
			rks[i] = k
		}
		const pk = "compound"
		expectOrder(t, pk, rks)

		extending := func(prefix []string, partial *string) []string {
			var out []string
			for i, tu := range tuples {
				if len(tu) < len(prefix) || !slices.Equal(tu[:len(prefix)], prefix) {
					continue
				}
				if partial != nil && (len(tu) == len(prefix) || !strings.HasPrefix(tu[len(prefix)], *partial)) {
					continue
				}
				out = append(out, rks[i])
			}
			return out
		}
		for _, prefix := range [][]string{{"a"}, {`"`}, {`a"`}, {"!"}, {""}, {"a", `"`}, {"'"}, {"\U0001F600"}, {"/"}, {"."}, {"~"}, {"\x00"}} {
			lo, hi, err := keys.TupleRange(prefix...)
			if err != nil {
				t.Fatal(err)
			}
			want := extending(prefix, nil)
			if len(want) < 2 {
				t.Fatalf("TupleRange(%q): only %d keys to find", prefix, len(want))
			}
			expectRows(t, "PartitionKey eq "+lit(pk)+" and RowKey ge "+lit(lo)+" and RowKey lt "+lit(hi), want)
		}
		for _, c := range []struct {
			prefix  []string
			partial string
		}{
			{nil, "a"}, {nil, `a"`}, {nil, "a!"}, {nil, `"`}, {nil, ""}, {[]string{"a"}, ""},
			{[]string{"a"}, `"`}, {[]string{`a"`}, "!"}, {nil, "\uffff"}, {nil, "a'"},
			{nil, "a/"}, {nil, "a."}, {nil, "/"}, {nil, "."}, {nil, "\U0001F600"}, {[]string{"~"}, ""}, {nil, "\x00"},
		} {
			lo, hi, err := keys.ComponentPrefixRange(c.prefix, c.partial)
			if err != nil {
				t.Fatal(err)
			}
			want := extending(c.prefix, &c.partial)
			if len(want) < 1 {
				t.Fatalf("ComponentPrefixRange(%q, %q): no keys to find", c.prefix, c.partial)
			}
			filter := "PartitionKey eq " + lit(pk) + " and RowKey ge " + lit(lo)
			if hi != "" {
				filter += " and RowKey lt " + lit(hi)
			}
			expectRows(t, filter, want)
		}
	})

	t.Run("PrefixEnd", func(t *testing.T) {
		rks := []string{"a", "a.", "a.x", "a0", "email_jones", "email_jones@x", "email_jonesj", "email_jonet", "x~", "x~~", "x\u00a0", "y\uffff", "y\uffff\uffff", "z"}
		slices.Sort(rks)
		put(t, "prefixend", rks)
		for _, p := range []string{"a.", "email_jones", "x~", "y\uffff"} {
			end, ok := keys.PrefixEnd(p)
			if !ok {
				t.Fatalf("PrefixEnd(%q): no bound", p)
			}
			var want []string
			for _, k := range rks {
				if strings.HasPrefix(k, p) {
					want = append(want, k)
				}
			}
			expectRows(t, "PartitionKey eq 'prefixend' and RowKey ge "+lit(p)+" and RowKey lt "+lit(end), want)
		}
	})

	ints := []int64{math.MinInt64, math.MinInt64 + 1, -1e15, -1001, -1000, -999, -10, -9, -1, 0, 1, 9, 10, 999, 1000, 1e15, math.MaxInt64 - 1, math.MaxInt64}
	uints := []uint64{0, 1, 9, 10, 99, 100, 1e6, 1e18, math.MaxUint64 - 1, math.MaxUint64}
	t.Run("Int", func(t *testing.T) {
		expectOrder(t, "int", mapEach(ints, keys.Int))
		expectOrder(t, "invertedint", reversed(mapEach(ints, func(v int64) string { return keys.Int(^v) })))
	})
	t.Run("Uint", func(t *testing.T) {
		expectOrder(t, "uint", mapEach(uints, keys.Uint))
		expectOrder(t, "inverteduint", reversed(mapEach(uints, func(v uint64) string { return keys.Uint(math.MaxUint64 - v) })))
		small := []uint64{0, 1, 9, 10, 99, 100, 223, 999, 1000, 999999}
		expectOrder(t, "uintn", mapEach(small, func(v uint64) string { s, _ := keys.UintN(v, 6); return s }))
	})
	times := []time.Time{
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(0, 0),
		time.Unix(0, 100),
		time.Unix(0, 200),
		time.Unix(1, 0),
		time.Date(2024, 5, 1, 12, 34, 56, 789123400, time.UTC),
		time.Date(2024, 5, 1, 12, 34, 56, 789123500, time.UTC),
		time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC),
	}
	must := func(f func(time.Time) (string, error)) func(time.Time) string {
		return func(tm time.Time) string {
			s, err := f(tm)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	t.Run("Time", func(t *testing.T) {
		expectOrder(t, "ticks", mapEach(times, must(keys.Ticks)))
		expectOrder(t, "time", mapEach(times, must(keys.Time)))
		inv := reversed(mapEach(times, must(keys.InvertedTicks)))
		expectOrder(t, "invertedticks", inv)
		// Newest first: the latest N is a plain top-N of the partition
		// (on Table storage; Cosmos DB returns no key order).
		if testenv.Service() != tablekit.ServiceCosmosDB {
			got := queryKeys(ctx, t, client, "PartitionKey eq 'invertedticks'", "RowKey")[:3]
			for i, k := range got {
				tm, err := keys.ParseInvertedTicks(k)
				if want := times[len(times)-1-i]; err != nil || !tm.Equal(want) {
					t.Errorf("newest %d: %q = %v, %v; want %v", i, k, tm, err, want)
				}
			}
		}
		// Many entries in one tick: unique keys, newest (larger seq) first.
		var desc []string
		for i := len(times) - 1; i >= 0; i-- {
			for seq := uint64(3); seq > 0; seq-- {
				k, err := keys.DescendingKey(times[i], seq)
				if err != nil {
					t.Fatal(err)
				}
				desc = append(desc, k)
			}
		}
		expectOrder(t, "descending", desc)
	})
	t.Run("GUID", func(t *testing.T) {
		var gs [][16]byte
		for i := range 12 {
			var g [16]byte
			for j := range g {
				g[j] = byte(rng.Uint32())
			}
			g[i%16] = byte(i * 20) // some shared bytes, some not
			gs = append(gs, g)
		}
		gs = append(gs, [16]byte{}, [16]byte{0: 0xff, 15: 0xff})
		slices.SortFunc(gs, func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) })
		expectOrder(t, "guid", mapEach(gs, keys.GUID))
		expectOrder(t, "invertedguid", reversed(mapEach(gs, func(g [16]byte) string { return keys.GUID(complement(g)) })))
	})
	t.Run("Builder", func(t *testing.T) {
		// (customer, order number, newest first): tuple order with typed components.
		var rks []string
		var b keys.Builder
		for _, cust := range []string{"ACME Corp", "acme", "acme!", `acme"`} {
			for _, order := range []int64{-5, 0, 7} {
				for i := len(times) - 1; i >= len(times)-3; i-- {
					b.Reset(nil)
					k, err := b.Add(cust).AddInt(order).AddInvertedTicks(times[i]).Key()
					if err != nil {
						t.Fatal(err)
					}
					rks = append(rks, k)
				}
			}
		}
		expectOrder(t, "builder", rks)
		lo, hi, _ := keys.TupleRange("acme", keys.Int(0))
		var want []string
		for _, k := range rks {
			if strings.HasPrefix(k, "acme!"+keys.Int(0)+"!") {
				want = append(want, k)
			}
		}
		expectRows(t, "PartitionKey eq 'builder' and RowKey ge "+lit(lo)+" and RowKey lt "+lit(hi), want)
	})
	t.Run("Shards", func(t *testing.T) {
		const n = 8
		const day = "2024-05-01"
		ids := make([]string, 40)
		for i := range ids {
			ids[i] = keys.Uint(uint64(i))
			bucket, err := keys.Shard(ids[i], n)
			if err != nil {
				t.Fatal(err)
			}
			pk, err := keys.ShardedKey(bucket, n, day)
			if err != nil {
				t.Fatal(err)
			}
			put(t, pk, []string{ids[i]})
			other, _ := keys.ShardedKey(bucket, n, "2024-05-02") // another day in the same bucket
			put(t, other, []string{ids[i]})
		}
		pks, err := keys.ShardedKeys(n, day)
		if err != nil {
			t.Fatal(err)
		}
		// The fan-out query: one partition per bucket; together they hold
		// every id once, each in the bucket its hash names.
		var all []string
		used := 0
		for b, pk := range pks {
			got := queryKeys(ctx, t, client, "PartitionKey eq "+lit(pk), "RowKey")
			for _, id := range got {
				if want, _ := keys.Shard(id, n); want != b {
					t.Errorf("id %s in bucket %d, hash says %d", id, b, want)
				}
			}
			if len(got) > 0 {
				used++
			}
			all = append(all, got...)
		}
		slices.Sort(all)
		if !slices.Equal(all, ids) {
			t.Errorf("fan-out found %q, want %q", all, ids)
		}
		if used < n/2 {
			t.Errorf("only %d of %d buckets used", used, n)
		}
		// A range of logical keys inside one bucket is one PartitionKey range:
		// bucket 3, May 2024.
		lo, _ := keys.ShardedKey(3, n, "2024-05")
		hi, _ := keys.ShardedKey(3, n, "2024-06")
		got := queryKeys(ctx, t, client, "PartitionKey ge "+lit(lo)+" and PartitionKey lt "+lit(hi), "PartitionKey")
		days := map[string]int{}
		for _, pk := range got {
			b, day, err := keys.ParseShardedKey(pk, n)
			if err != nil || b != 3 {
				t.Errorf("bucket 3 range returned %q (%d, %v)", pk, b, err)
			}
			days[day]++
		}
		if len(days) != 2 {
			t.Errorf("bucket 3 range found days %v, want both", days)
		}
	})
}

// queryKeys returns the property prop (PartitionKey or RowKey) of every
// entity filter selects, in the order the service returns them.
func queryKeys(ctx context.Context, t *testing.T, client *aztables.Client, filter, prop string) []string {
	t.Helper()
	out := []string{}
	pager := client.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatalf("query %s: %v", filter, err)
		}
		for _, e := range page.Entities {
			var m map[string]any
			if err := json.Unmarshal(e, &m); err != nil {
				t.Fatal(err)
			}
			s, _ := m[prop].(string)
			out = append(out, s)
		}
	}
	return out
}

// lit quotes s as an OData string literal.
func lit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func mapEach[T any](in []T, f func(T) string) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

func reversed(s []string) []string {
	s = slices.Clone(s)
	slices.Reverse(s)
	return s
}
