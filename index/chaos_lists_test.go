package index_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// The index entities chaos suite: many concurrent writers, each with its
// own Account, EntityList, BlobList and SamePartition (as separate processes would
// have), add and remove ids on a few shared lists, the guide's last-name
// lists, through a fault-injecting pipeline:
//
//   - option 1, a blob per list (BlobList), and option 3, an index entity
//     per list in a table of its own (EntityList): each writer adds and
//     removes ids of its own on two shared lists (one across partitions,
//     one per partition, a value holding ');
//   - option 2, an index entity in the employees' partition changed in the
//     same transaction as each employee (a SamePartition List index): each writer
//     puts and deletes employees of its own, all in one partition, whose
//     last names are two shared values, so all of them contend on the two
//     index entities.
//
// Invariants:
//   - each list holds exactly the ids the history allows: an id whose last
//     acknowledged op added it is there, one whose last acknowledged op
//     removed it is not, and an unknown op since may have taken effect or
//     not; no list holds an id nobody added, no list is left empty, an
//     index entity's Count is its number of ids; every read of a list
//     agreed with that;
//   - option 2: the index entities list exactly the stored employees that
//     have their value, and each writer's employees end in a state its
//     history allows (the model of TestChaosIntra);
//   - no add or remove fails: faults are let through after 2 failed tries,
//     so the SDK's retries always reach the service, and contention alone
//     must not exhaust the default retries (issue 13, hole 8: the defaults
//     carry tens of writers on one list).

var chaosLists = []index.ListKey{
	{Index: "lastname", Value: "Jones"},
	{Index: "lastname", Partition: "Sales", Value: "O'Neil"},
}

// listOp is a recorded op on a ListStore.
type listOp struct {
	Store string // "entity" or "blob"
	List  index.ListKey
	ID    index.ID
	Add   bool
	// A read: the writer's ids (Mine) and those of them the list held (Seen).
	Read       bool
	Mine, Seen []index.ID
}

func listKeyOf(store string, list index.ListKey, id index.ID) string {
	return store + "|" + list.String() + "|" + id.String()
}

func TestChaosIndexEntities(t *testing.T) {
	const ids = 3 // per writer and list
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		inj, err := chaos.New(seed, chaosQueueConfig())
		if err != nil {
			t.Fatal(err)
		}
		setup := inj.Account(t, nil)
		inj.SetEnabled(false)
		listTable, empTable := newTable(t, setup), newTable(t, setup)
		container := testenv.ContainerName(t)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			setup.Blobs().ServiceClient().NewContainerClient(container).Delete(ctx, nil) // created on demand
		})
		surnames := []index.Index[Employee]{{Name: "surname", Key: func(e Employee) string { return e.LastName }, List: true}}
		writers, perWriter := chaos.Size(10, 30), chaos.Size(20, 25)
		type stores struct {
			acct   *tablekit.Account
			entity *index.EntityList
			blob   *index.BlobList
			intra  *index.SamePartition[Employee]
		}
		procs := make([]stores, writers)
		for w := range procs {
			acct, err := inj.Open(testenv.ConnectionString(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			p := &procs[w]
			p.acct = acct
			if p.entity, err = index.NewEntityList(mustNewTable[tablekit.Entity](t, acct, listTable), nil); err != nil {
				t.Fatal(err)
			}
			if p.blob, err = index.NewBlobList(acct.Blobs().ServiceClient().NewContainerClient(container), nil); err != nil {
				t.Fatal(err)
			}
			if p.intra, err = index.NewSamePartition(mustNewTable[Employee](t, acct, empTable), surnames, nil); err != nil {
				t.Fatal(err)
			}
		}
		inj.SetEnabled(true)

		h, err := chaos.RunWriters(ctx, seed, writers, func(ctx context.Context, w *chaos.Writer) error {
			p := procs[w.Index]
			idOf := func(k int) index.ID {
				return index.ID{PartitionKey: fmt.Sprintf("D%d", (w.Index+k)%3), RowKey: fmt.Sprintf("w%02d-%d", w.Index, k)}
			}
			for seq := range perWriter {
				var store index.ListStore = p.entity
				name := "entity"
				if w.Rand.IntN(2) == 0 {
					store, name = p.blob, "blob"
				}
				list := chaosLists[w.Rand.IntN(len(chaosLists))]
				switch n := w.Rand.IntN(20); {
				case n < 12:
					id := idOf(w.Rand.IntN(ids))
					add := w.Rand.IntN(3) > 0
					kind := "Remove"
					if add {
						kind = "Add"
					}
					w.Do(ctx, kind, listKeyOf(name, list, id), &listOp{Store: name, List: list, ID: id, Add: add}, func(ctx context.Context) (any, error) {
						if add {
							return nil, store.Add(ctx, list, id)
						}
						return nil, store.Remove(ctx, list, id)
					})
				case n < 14:
					lo := &listOp{Store: name, List: list, Read: true}
					for k := range ids {
						lo.Mine = append(lo.Mine, idOf(k))
					}
					w.Do(ctx, "IDs", name+"|"+list.String(), lo, func(ctx context.Context) (any, error) {
						got, err := store.IDs(ctx, list)
						for _, id := range got {
							if slices.Contains(lo.Mine, id) {
								lo.Seen = append(lo.Seen, id)
							}
						}
						return nil, err
					})
				default:
					// Option 2: an employee of this writer's, in the one
					// partition, named Jones or O'Neil.
					rk := fmt.Sprintf("w%02d-%d", w.Index, w.Rand.IntN(ids))
					key := "Sales/" + rk
					v := Employee{Department: "Sales", ID: rk, FirstName: fmt.Sprintf("F%02d-%d", w.Index, seq), LastName: []string{"Jones", "O'Neil"}[w.Rand.IntN(2)]}
					mo := &empOp{Kind: opUpsert, Key: key, PK: "Sales", V: empOf(v)}
					call := func(ctx context.Context) error { _, err := p.intra.Upsert(ctx, v); return err }
					if w.Rand.IntN(4) == 0 {
						mo.Kind, call = opDeleteIfExists, func(ctx context.Context) error {
							var err error
							mo.Existed, err = p.intra.DeleteIfExists(ctx, "Sales", rk)
							return err
						}
					}
					w.Do(ctx, mo.Kind, key, mo, func(ctx context.Context) (any, error) {
						return nil, call(ctx)
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

		// How hard the writers contended: the conditional writes that
		// reached the service per op that writes.
		var sent int64
		for _, p := range procs {
			m := p.acct.Meter().Snapshot()
			for _, op := range []string{"InsertEntity", "UpdateEntity", "DeleteEntity", "Transaction"} {
				sent += m.Count("table", op)
			}
			sent += m.Count("blob", "PutBlob") + m.Count("blob", "DeleteBlob")
		}
		writeOps := 0
		for _, op := range h.Ops() {
			if lo, ok := op.Value.(*listOp); (ok && !lo.Read) || op.Name == opUpsert || op.Name == opDeleteIfExists {
				writeOps++
			}
		}
		t.Logf("%d writers sent %d writes for %d adds, removes and employee writes (%.1f per op: lost races and retries)", writers, sent, writeOps, float64(sent)/float64(max(writeOps, 1)))

		check := chaos.NoFaults(ctx)
		var v chaos.Violations
		entity, err := index.NewEntityList(mustNewTable[tablekit.Entity](t, setup, listTable), nil)
		if err != nil {
			t.Fatal(err)
		}
		blob, err := index.NewBlobList(setup.Blobs().ServiceClient().NewContainerClient(container), nil)
		if err != nil {
			t.Fatal(err)
		}
		final := map[string][]index.ID{}
		for _, list := range chaosLists {
			for name, store := range map[string]index.ListStore{"entity": entity, "blob": blob} {
				got, err := store.IDs(check, list)
				if err != nil {
					t.Fatal(err)
				}
				final[name+"|"+list.String()] = got
			}
		}
		checkListHistory(h, final, &v)
		checkListStorage(t, check, setup, listTable, container, &v)

		stored := checkIntraRows(t, check, mustNewTable[tablekit.Entity](t, setup, empTable), surnames, &v)
		empModel{}.check(h, stored, ownerOf, &v)
		if writeOps < 300 && chaos.Full() {
			v.Addf("only %d adds, removes and employee writes ran, want at least 300", writeOps)
		}
		v.Report(t)
	})
}

// checkListHistory checks the final lists (by "store|list") and every read
// against the history of the list ops: per id and list, the states (in the
// list or not) that the in-order application of its writer's acknowledged
// ops and some of its unknown ones gives.
func checkListHistory(h *chaos.History, final map[string][]index.ID, v *chaos.Violations) {
	states := map[string][]bool{} // per listKeyOf: possible memberships
	get := func(k string) []bool {
		if s, ok := states[k]; ok {
			return s
		}
		return []bool{false}
	}
	byWriter := map[int][]chaos.Op{}
	for _, op := range h.Ops() {
		if _, ok := op.Value.(*listOp); ok {
			byWriter[op.Writer] = append(byWriter[op.Writer], op)
		}
	}
	for w, ops := range byWriter {
		slices.SortFunc(ops, func(a, b chaos.Op) int { return a.Seq - b.Seq })
		for _, op := range ops {
			lo := op.Value.(*listOp)
			if lo.Read {
				if op.Outcome != chaos.OK {
					continue
				}
				for _, id := range lo.Mine {
					k := listKeyOf(lo.Store, lo.List, id)
					seen := slices.Contains(lo.Seen, id)
					if !slices.Contains(get(k), seen) {
						v.Addf("writer %d: %s saw %s in=%v, but its history allows only %v", w, op, id, seen, get(k))
					}
					states[k] = []bool{seen}
				}
				continue
			}
			k := listKeyOf(lo.Store, lo.List, lo.ID)
			switch op.Outcome {
			case chaos.OK:
				states[k] = []bool{lo.Add}
			case chaos.Unknown:
				if s := get(k); !slices.Contains(s, lo.Add) {
					states[k] = append(s, lo.Add)
				}
			default:
				if !throttledByFaults(op) {
					v.Addf("writer %d: %s failed: no list update may fail under these faults but throttling on every try", w, op)
				}
			}
		}
	}
	for list, got := range final {
		for _, id := range got {
			k := list + "|" + id.String()
			if !slices.Contains(get(k), true) {
				v.Addf("list %s holds %s, which its history says is not there (%v)", list, id, get(k))
			}
		}
	}
	for k, s := range states {
		store, rest, _ := strings.Cut(k, "|")
		i := strings.LastIndex(rest, "|")
		list, id := store+"|"+rest[:i], rest[i+1:]
		in := slices.ContainsFunc(final[list], func(x index.ID) bool { return x.String() == id })
		if !in && !slices.Contains(s, false) {
			v.Addf("list %s misses %s, which its history says is there", list, id)
		}
	}
}

// checkListStorage checks the stored lists themselves: no index entity or
// blob left empty, Count right, ids sorted and listed once, no list but
// the suite's.
func checkListStorage(t *testing.T, ctx context.Context, acct *tablekit.Account, listTable, container string, v *chaos.Violations) {
	t.Helper()
	entity, err := index.NewEntityList(mustNewTable[tablekit.Entity](t, acct, listTable), nil)
	if err != nil {
		t.Fatal(err)
	}
	blob, err := index.NewBlobList(acct.Blobs().ServiceClient().NewContainerClient(container), nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, blobs := map[string]bool{}, map[string]bool{}
	for _, l := range chaosLists {
		pk, rk, err := entity.Keys(l)
		if err != nil {
			t.Fatal(err)
		}
		rows[pk+"|"+rk] = true
		blobs[blob.BlobName(l)] = true
	}
	wellFormed := func(what string, ids []string) {
		if len(ids) == 0 {
			v.Addf("%s is left empty", what)
		}
		if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
			v.Addf("%s lists %q: not sorted, or an id twice", what, ids)
		}
	}
	for row, err := range mustNewTable[tablekit.Entity](t, acct, listTable).Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		what := "index entity " + row.PartitionKey + "|" + row.RowKey
		if !rows[row.PartitionKey+"|"+row.RowKey] {
			v.Addf("%s is not one of the suite's lists", what)
		}
		ids, count := listedIDs(row)
		wellFormed(what, ids)
		if count != fmt.Sprint(len(ids)) {
			v.Addf("%s lists %d ids, Count %s", what, len(ids), count)
		}
	}
	c := acct.Blobs().ServiceClient().NewContainerClient(container)
	pager := c.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			what := "blob list " + *b.Name
			if !blobs[*b.Name] {
				v.Addf("%s is not one of the suite's lists", what)
			}
			resp, err := c.NewBlobClient(*b.Name).DownloadStream(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			wellFormed(what, strings.FieldsFunc(string(data), func(r rune) bool { return r == '\n' }))
		}
	}
}
