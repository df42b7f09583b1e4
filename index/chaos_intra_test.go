package index_test

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keys"
)

// The intra-partition index chaos suite: concurrent writers, each with its
// own Account and SamePartition (as separate processes would have), insert,
// upsert, modify, update (changing indexed values, values holding '
// included; conditional on the ETag read with Get or through a copy) and
// delete employees (conditional, or whatever the version) through a
// fault-injecting pipeline, and look employees up by email meanwhile. The employees of a department share its partition, its
// index copies and its last-name index entities, so the writers' entity
// group transactions compete there.
//
// Invariants:
//   - the index rows of each partition are exactly the ones derived from
//     the stored employees: a copy per unique value (empid, email), a
//     projected copy per last name, an index entity per last name listing
//     exactly the employees that have it; no row missing, stale or extra;
//   - each writer's employees end in a state that the in-order application
//     of its acknowledged writes and some of its unknown ones gives; every
//     refused write is explained by that state (a unique value held by
//     another of its employees, an existing or missing employee), and
//     DeleteIfExists reports an employee as existing only when it did;
//     every read and lookup saw one of those states.
//
// Each writer draws its shared email values from a pool of its own, so
// unique conflicts happen between its own employees, where the model can
// tell whether a refusal was right.

// chaosIntraIndexes are the indexes under test: the guide's unique copies
// (empid, email), a projected copy by last name, and an index entity per
// last name (option 2).
func chaosIntraIndexes() []index.Index[Employee] {
	return []index.Index[Employee]{
		{Name: "empid", Key: func(e Employee) string { return e.ID }, Unique: true},
		{Name: "email", Key: func(e Employee) string { return e.Email }, Unique: true},
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, Properties: []string{"FirstName", "LastName"}},
		{Name: "surname", Key: func(e Employee) string { return e.LastName }, List: true},
	}
}

// chaosDepartments are the partitions; chaosLastNames the shared last names.
var (
	chaosDepartments = []string{"Sales", "Marketing"}
	chaosLastNames   = []string{"Jones", "O'Neil", "D'Arcy'", "Hall"}
)

// chaosTableConfig injects table faults as the core suite does: about 21%
// of tries fail (a third of them after the service applied the try), 5%
// more are delayed.
func chaosTableConfig() *chaos.Config {
	return &chaos.Config{
		Reset: 0.05, AnswerLost: 0.07, ServerBusy: 0.04, TimeoutBefore: 0.02, TimeoutAfter: 0.03, Delay: 0.05,
		Services: []string{"table"},
	}
}

func TestChaosIntra(t *testing.T) {
	const employees = 3 // per writer
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		inj, err := chaos.New(seed, chaosTableConfig())
		if err != nil {
			t.Fatal(err)
		}
		setup := inj.Account(t, nil)
		inj.SetEnabled(false)
		name := newTable(t, setup)
		writers, perWriter := chaos.Size(8, 16), chaos.Size(30, 60)
		ixs := make([]*index.SamePartition[Employee], writers)
		for w := range ixs {
			acct, err := inj.Open(testenv.ConnectionString(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			ixs[w], err = index.NewSamePartition(mustNewTable[Employee](t, acct, name), chaosIntraIndexes(), nil)
			if err != nil {
				t.Fatal(err)
			}
		}
		inj.SetEnabled(true)

		h, err := chaos.RunWriters(ctx, seed, writers, func(ctx context.Context, w *chaos.Writer) error {
			ix := ixs[w.Index]
			pk := chaosDepartments[w.Index%len(chaosDepartments)]
			pool := []string{
				fmt.Sprintf("w%02d.ana@contoso.com", w.Index),
				fmt.Sprintf("w%02d.o'neil@contoso.com", w.Index),
				fmt.Sprintf("w%02d.d'arcy'@contoso.com", w.Index),
			}
			for seq := range perWriter {
				rk := fmt.Sprintf("w%02d-%d", w.Index, w.Rand.IntN(employees))
				key := pk + "/" + rk
				v := Employee{Department: pk, ID: rk, FirstName: fmt.Sprintf("F%02d-%d", w.Index, seq), Age: seq + 1}
				if n := w.Rand.IntN(len(chaosLastNames) + 1); n < len(chaosLastNames) {
					v.LastName = chaosLastNames[n]
				}
				switch n := w.Rand.IntN(10); {
				case n < 5:
					v.Email = pool[w.Rand.IntN(len(pool))]
				case n < 9:
					v.Email = fmt.Sprintf("%s.%d'x@contoso.com", rk, seq) // a value of its own, with a '
				}
				write := func(kind string, call func(ctx context.Context, mo *empOp) error) {
					mo := &empOp{Kind: kind, Key: key, PK: pk, V: empOf(v)}
					w.Do(ctx, kind, key, mo, func(ctx context.Context) (any, error) {
						return nil, call(ctx, mo)
					})
				}
				// get reads the employee and its ETag: with Get, or through
				// its empid copy (whose ETag Update and Delete accept too).
				get := func() (azcore.ETag, bool) {
					mo := &empOp{Kind: opGet, Key: key, PK: pk}
					var etag azcore.ETag
					byCopy := w.Rand.IntN(2) == 0
					op := w.Do(ctx, opGet, key, mo, func(ctx context.Context) (any, error) {
						var e Employee
						var err error
						if byCopy {
							e, err = ix.Find(ctx, pk, "empid", rk)
						} else {
							e, err = ix.Get(ctx, pk, rk)
						}
						if err == nil {
							etag, mo.V = e.ETag, empOf(e)
						}
						return nil, err
					})
					return etag, op.Outcome == chaos.OK
				}
				switch n := w.Rand.IntN(20); {
				case n < 4:
					write(opInsert, func(ctx context.Context, _ *empOp) error { _, err := ix.Insert(ctx, v); return err })
				case n < 7:
					write(opUpsert, func(ctx context.Context, _ *empOp) error { _, err := ix.Upsert(ctx, v); return err })
				case n < 9:
					write(opModify, func(ctx context.Context, _ *empOp) error {
						_, err := ix.Modify(ctx, pk, rk, func(e *Employee) error {
							e.FirstName, e.LastName, e.Email, e.Age = v.FirstName, v.LastName, v.Email, v.Age
							return nil
						})
						return err
					})
				case n < 14:
					if etag, ok := get(); ok {
						write(opUpdate, func(ctx context.Context, _ *empOp) error { _, err := ix.Update(ctx, v, etag); return err })
					}
				case n < 16:
					write(opDeleteIfExists, func(ctx context.Context, mo *empOp) error {
						var err error
						mo.Existed, err = ix.DeleteIfExists(ctx, pk, rk)
						return err
					})
				case n < 18:
					if etag, ok := get(); ok {
						write(opDelete, func(ctx context.Context, _ *empOp) error { return ix.Delete(ctx, pk, rk, etag) })
					}
				default:
					email := pool[w.Rand.IntN(len(pool))]
					mo := &empOp{Kind: opByEmail, PK: pk, Email: email}
					w.Do(ctx, opByEmail, pk+"/email="+email, mo, func(ctx context.Context) (any, error) {
						for e, err := range ix.By(ctx, pk, "email", email) {
							if err != nil {
								return nil, err
							}
							mo.Holders = append(mo.Holders, e.Department+"/"+e.ID)
						}
						slices.Sort(mo.Holders)
						return nil, nil
					})
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		inj.SetEnabled(false)
		st := inj.Stats()
		h = settled(h)
		t.Logf("%d ops (%d ok, %d failed, %d unknown); faults: %s", h.Len(), h.Count(chaos.OK), h.Count(chaos.Failed), h.Count(chaos.Unknown), st.ByKind())
		t.Logf("failed ops by reason: %v", reasons(h, chaos.Failed))
		t.Logf("unknown ops by reason: %v", reasons(h, chaos.Unknown))
		if rate := st.FaultRate(); rate < 0.15 {
			t.Errorf("only %.1f%% of requests faulted, want at least 15%%", 100*rate)
		}

		var v chaos.Violations
		raw := mustNewTable[tablekit.Entity](t, setup, name)
		stored := checkIntraRows(t, chaos.NoFaults(ctx), raw, chaosIntraIndexes(), &v)
		model := empModel{uniqueEmail: true}
		model.check(h, stored, ownerOf, &v)
		if writes := countWrites(h); writes < 300 && chaos.Full() {
			v.Addf("only %d write operations ran, want at least 300", writes)
		}
		v.Report(t)
	})
}

// countWrites counts the recorded ops that write.
func countWrites(h *chaos.History) int {
	n := 0
	for _, op := range h.Ops() {
		if mo, ok := op.Value.(*empOp); ok && mo.Kind != opGet && mo.Kind != opByEmail {
			n++
		}
	}
	return n
}

// checkIntraRows reads every row of the table and checks that the index
// rows are exactly those derived from the stored employees; it returns
// the employees' model states by "pk/rk".
func checkIntraRows(t *testing.T, ctx context.Context, raw *tablekit.Table[tablekit.Entity], indexes []index.Index[Employee], v *chaos.Violations) map[string]empState {
	t.Helper()
	prefixes := make([]string, len(indexes))
	for i, idx := range indexes {
		p, _ := keys.Compound(idx.Name)
		prefixes[i] = p + string(keys.Separator)
	}
	entities := map[string]tablekit.Entity{}
	rows := map[string]tablekit.Entity{} // index rows by "pk|rk"
	for e, err := range raw.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(e.RowKey, p) }) {
			rows[e.PartitionKey+"|"+e.RowKey] = e
		} else {
			entities[e.PartitionKey+"/"+e.RowKey] = e
		}
	}
	stored := map[string]empState{}
	want := map[string]map[string]any{} // copies: properties by "pk|rk"
	lists := map[string][]string{}      // index entities: RowKeys listed, by "pk|rk"
	for key, e := range entities {
		emp, err := tablekit.FromEntity[Employee](e)
		if err != nil {
			t.Fatal(err)
		}
		stored[key] = empOf(emp)
		for _, idx := range indexes {
			value := idx.Key(emp)
			if value == "" {
				continue
			}
			var rk string
			if idx.List || idx.Unique {
				rk, _ = keys.Compound(idx.Name, value)
			} else {
				rk, _ = keys.Compound(idx.Name, value, emp.ID)
			}
			row := e.PartitionKey + "|" + rk
			if idx.List {
				lists[row] = append(lists[row], emp.ID)
				continue
			}
			props := map[string]any{}
			if idx.Properties == nil {
				maps.Copy(props, e.Properties)
			} else {
				for _, p := range idx.Properties {
					if x, ok := e.Properties[p]; ok {
						props[p] = x
					}
				}
			}
			props[index.PrimaryRowKeyProperty] = emp.ID
			if other, dup := want[row]; dup {
				v.Addf("employees %s/%s and %s share the value %q of unique index %s", e.PartitionKey, emp.ID, other[index.PrimaryRowKeyProperty], value, idx.Name)
			}
			want[row] = props
		}
	}
	for row, props := range want {
		got, ok := rows[row]
		switch {
		case !ok:
			v.Addf("index copy %s is missing (employee %s)", row, props[index.PrimaryRowKeyProperty])
		case !reflect.DeepEqual(got.Properties, props):
			v.Addf("index copy %s holds %v, want %v", row, got.Properties, props)
		}
		delete(rows, row)
	}
	for row, ids := range lists {
		slices.Sort(ids)
		got, ok := rows[row]
		if !ok {
			v.Addf("index entity %s is missing (it should list %v)", row, ids)
			continue
		}
		delete(rows, row)
		listed, count := listedIDs(got)
		if !slices.Equal(listed, ids) || count != fmt.Sprint(len(ids)) {
			v.Addf("index entity %s lists %v (Count %s), want %v", row, listed, count, ids)
		}
	}
	for row, e := range rows {
		v.Addf("index row %s is stale or extra: %v", row, e.Properties)
	}
	return stored
}

// listedIDs reads the id list of an index entity (see index.IDsProperty)
// and its Count.
func listedIDs(e tablekit.Entity) (ids []string, count string) {
	for i := 0; ; i++ {
		name := index.IDsProperty
		if i > 0 {
			name = fmt.Sprintf("%s%d", index.IDsProperty, i+1)
		}
		x, ok := e.Properties[name]
		if !ok {
			break
		}
		if s, _ := x.(string); s != "" {
			ids = append(ids, strings.Split(s, "\n")...)
		}
	}
	return ids, fmt.Sprint(e.Properties[index.CountProperty])
}
