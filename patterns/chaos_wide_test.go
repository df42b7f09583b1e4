package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

// The wide entities chaos suite: concurrent writers, each with its own
// Account and Wide (as separate processes would have), Upsert, Update
// (with the version of their own Get, or any version) and Modify the same
// few logical entities through a fault-injecting pipeline, while readers
// (with their own Accounts and Wides) Get them. The entities e0..e2 exist
// throughout; c0 starts absent and is also inserted (Insert, and the
// writes above) and deleted (Delete with the version of the writer's own
// Get, DeleteIfExists).
//
// A logical entity holds 40 wide-map entries (X00..X39) plus Base and Ver,
// 8 properties per physical entity: 6 parts, Base and Ver in part 0. Every value a write produces
// is self-identifying: Ver is the id of the write (for a Modify, of the
// attempt: Modify calls its function once per attempt), every entry it
// sets holds that id, and the test records the complete value under the
// id before it is sent. An Upsert or Update sets every entry (an Update
// conditional on the version its writer read records that version's Ver in
// Base); a Modify sets one or two blocks of 8 consecutive entries (so
// different Modify calls change different parts) and records the version
// it read in Base.
//
// Invariants:
//   - every read (a reader's Get, the value a Modify's function is given,
//     and the final Get) is exactly the complete value recorded under its
//     Ver, written by the last attempt of an op that did not fail (a
//     conflicting attempt never lands, a Failed write never appears);
//   - a read is not older than a write acknowledged before it started, and
//     the base of a Modify or of a conditional Update that took effect is
//     not older than a write acknowledged before it started (writes are
//     conditional on the version they read);
//   - the final value is not a write that ended before an acknowledged
//     write started (an acknowledged write is overwritten only by a later
//     or concurrent one);
//   - a read (or a Modify's function, or a DeleteIfExists) that finds c0
//     absent comes after a delete that may have removed every write
//     acknowledged before it; e0..e2 are never found absent;
//   - no orphan parts: the stored physical entities of every logical entity
//     are exactly part 0 and the parts its manifest lists, with the stamps
//     listed, and every logical entity spans several parts; a deleted one
//     leaves no part behind.
func TestChaosWide(t *testing.T) {
	const (
		logical    = 3  // logical entities, shared by every writer
		entries    = 40 // wide-map entries of each
		perPart    = 8  // properties per physical entity
		readers    = 2
		partitionK = "wide"
		churnKey   = "c0" // inserted and deleted during the run
	)
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		cfg := &chaos.Config{
			Reset: 0.05, AnswerLost: 0.07, ServerBusy: 0.04, TimeoutBefore: 0.02, TimeoutAfter: 0.03, Delay: 0.05,
			Services: []string{"table"},
		}
		var injs chaosInjectors
		inj := injs.add(t, seed, 0, cfg)
		setup := inj.Account(t, nil)
		inj.SetEnabled(false)
		tbl := entityTable(t, setup)
		opts := &patterns.WideOptions{PropertiesPerPart: perPart}
		base, err := patterns.NewWide(typed[wideDoc](t, tbl), opts)
		if err != nil {
			t.Fatal(err)
		}
		rec := &wideRecords{values: map[string]wideValue{}, setupETags: map[string]azcore.ETag{}}
		for i := range logical {
			d := wideDoc{PK: partitionK, RK: fmt.Sprintf("e%d", i), Ver: fmt.Sprintf("init-e%d", i), Props: map[string]string{}}
			for j := range entries {
				d.Props[fmt.Sprintf("%02d", j)] = wideEntry(d.Ver, j, 0)
			}
			rec.add(d.Ver, nil, d)
			etag, err := base.Upsert(chaos.NoFaults(ctx), d)
			if err != nil {
				t.Fatal(err)
			}
			rec.setupETags[d.Ver] = etag
		}
		setupEnd := time.Now()
		blocks := wideBlocks(t, chaos.NoFaults(ctx), tbl, partitionK, "e0")
		allKeys := []string{churnKey}
		for i := range logical {
			allKeys = append(allKeys, fmt.Sprintf("e%d", i))
		}

		open := func(inj *chaos.Injector) (*patterns.Wide[wideDoc], error) {
			acct, err := inj.Open(testenv.ConnectionString(t), nil)
			if err != nil {
				return nil, err
			}
			mine, err := tablekit.OpenTable[wideDoc](acct, tbl.Name(), nil)
			if err != nil {
				return nil, err
			}
			return patterns.NewWide(mine, opts)
		}

		// Readers Get the logical entities until the writers are done.
		var stop atomic.Bool
		var rwg sync.WaitGroup
		readerWides := make([]*patterns.Wide[wideDoc], readers)
		for r := range readers {
			if readerWides[r], err = open(injs.add(t, seed, r+1, cfg)); err != nil {
				t.Fatal(err)
			}
		}
		for r, wide := range readerWides {
			rwg.Go(func() {
				for i := 0; !stop.Load(); i++ {
					rk := allKeys[(i+r)%len(allKeys)]
					start := time.Now()
					d, err := wide.Get(ctx, partitionK, rk)
					rec.read(wideRead{who: fmt.Sprintf("reader %d", r), key: rk, start: start, end: time.Now(), doc: d, err: err})
				}
			})
		}

		inj.SetEnabled(true)
		writers, perWriter := chaos.Size(8, 10), chaos.Size(6, 40)
		h, err := chaos.RunWriters(ctx, seed, writers, func(ctx context.Context, w *chaos.Writer) error {
			wide, err := open(inj)
			if err != nil {
				return err
			}
			for n := range perWriter {
				rk := allKeys[w.Rand.IntN(len(allKeys))]
				id := fmt.Sprintf("w%02d.%03d", w.Index, n)
				pad := w.Rand.IntN(200)
				ww := &wideWrite{Key: rk, ID: id}
				if rk == churnKey && w.Rand.IntN(3) == 0 {
					ww.ID = ""
					if w.Rand.IntN(2) == 0 {
						ww.Kind = "DeleteIfExists"
						w.Do(ctx, ww.Kind, rk, ww, func(ctx context.Context) (any, error) {
							existed, err := wide.DeleteIfExists(ctx, partitionK, rk)
							ww.Existed = existed
							return existed, err
						})
						continue
					}
					start := time.Now()
					cur, err := wide.Get(ctx, partitionK, rk)
					rec.read(wideRead{who: fmt.Sprintf("writer %d Get", w.Index), key: rk, start: start, end: time.Now(), doc: cur, err: err})
					if err != nil {
						continue // absent (checked as a read), or failed (a violation)
					}
					ww.Kind = "Delete"
					time.Sleep(time.Duration(w.Rand.IntN(20)) * time.Millisecond)
					w.Do(ctx, ww.Kind, rk, ww, func(ctx context.Context) (any, error) {
						return nil, wide.Delete(ctx, partitionK, rk, cur.ETag)
					})
					continue
				}
				switch pick := w.Rand.IntN(3); pick {
				case 0, 1:
					ww.Kind = "Upsert"
					d := wideDoc{PK: partitionK, RK: rk, Ver: id, Props: map[string]string{}}
					etag := azcore.ETagAny
					if pick == 0 && rk == churnKey && w.Rand.IntN(2) == 0 {
						ww.Kind = "Insert"
					}
					if pick == 1 {
						// An Update: conditional on the version this writer
						// reads (three times in four), or of any version.
						ww.Kind = "Update"
						start := time.Now()
						cur, err := wide.Get(ctx, partitionK, rk)
						rec.read(wideRead{who: fmt.Sprintf("writer %d Get", w.Index), key: rk, start: start, end: time.Now(), doc: cur, err: err})
						if err == nil && w.Rand.IntN(4) != 0 {
							etag, d.Base, ww.Base = cur.ETag, cur.Ver, cur.Ver
						}
						// Give other writers time to make the version read
						// stale: an Update that still lands on it breaks the
						// base invariant.
						time.Sleep(time.Duration(w.Rand.IntN(20)) * time.Millisecond)
					}
					for j := range entries {
						d.Props[fmt.Sprintf("%02d", j)] = wideEntry(id, j, pad)
					}
					rec.add(id, ww, d)
					w.Do(ctx, ww.Kind, rk, ww, func(ctx context.Context) (any, error) {
						var err error
						switch ww.Kind {
						case "Update":
							ww.ETag, err = wide.Update(ctx, d, etag)
						case "Insert":
							ww.ETag, err = wide.Insert(ctx, d)
						default:
							ww.ETag, err = wide.Upsert(ctx, d)
						}
						return nil, err
					})
					continue
				}
				ww.Kind = "Modify"
				ww.Blocks = w.Rand.Perm(len(blocks))[:1+w.Rand.IntN(2)]
				start := time.Now()
				w.Do(ctx, "Modify", rk, ww, func(ctx context.Context) (any, error) {
					stored, err := wide.Modify(ctx, partitionK, rk, func(v *wideDoc) error {
						rec.read(wideRead{who: fmt.Sprintf("w%d Modify %s", w.Index, id), key: rk, start: start, end: time.Now(), doc: *v, attempt: true})
						aid := fmt.Sprintf("%s.%d", id, len(ww.Attempts))
						ww.Attempts = append(ww.Attempts, wideAttempt{ID: aid, Base: v.Ver})
						v.Props = maps.Clone(v.Props)
						if v.Props == nil {
							v.Props = map[string]string{} // c0 absent: Modify creates it
						}
						for _, b := range ww.Blocks {
							for _, j := range blocks[b] {
								v.Props[fmt.Sprintf("%02d", j)] = wideEntry(aid, j, pad)
							}
						}
						v.Base, v.Ver = v.Ver, aid
						rec.add(aid, ww, *v)
						return nil
					})
					ww.ETag, ww.Stored = stored.ETag, stored
					return nil, err
				})
			}
			return nil
		})
		stop.Store(true)
		rwg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		injs.report(t, h, rec.readCount())

		var v chaos.Violations
		final := map[string]wideDoc{}
		finalAt := time.Now()
		for _, rk := range allKeys {
			d, err := base.Get(chaos.NoFaults(ctx), partitionK, rk)
			rec.read(wideRead{who: "final Get", key: rk, start: finalAt, end: finalAt, doc: d, err: err})
			if err == nil {
				final[rk] = d
			}
		}
		if n := checkWideHistory(h, rec, final, churnKey, setupEnd, &v); n > 0 {
			t.Logf("%d writes that insert took effect twice around a concurrent delete (read at two versions), as a retried insert may", n)
		}
		checkWideParts(t, chaos.NoFaults(ctx), tbl, partitionK, allKeys, churnKey, &v)
		if h.Len() < 300 && chaos.Full() {
			v.Addf("only %d operations ran, want at least 300", h.Len())
		}
		v.Report(t)
	})
}

// wideDoc is the logical entity of the wide chaos suite.
type wideDoc struct {
	PK    string            `table:",pk"`
	RK    string            `table:",rk"`
	ETag  azcore.ETag       `table:",etag"` // the version: part 0's ETag
	Ver   string            `table:"Ver"`   // the id of the write (attempt) that produced the value
	Base  string            `table:"Base"`  // for a Modify, the Ver it read
	Props map[string]string `table:"-" wide:"X"`
}

// wideBlocks reads the layout of logical entity rk and returns the
// entries each part but part 0 holds, in part order: a Modify changes the
// entries of one or two of these blocks, so it writes part 0 (Base and Ver
// are there) and one or two other parts, and concurrent Modify calls often
// write different parts: the write skew that Wide's part 0 condition
// prevents. Every logical entity has the same layout.
func wideBlocks(t *testing.T, ctx context.Context, tbl *tablekit.Table[tablekit.Entity], pk, rk string) [][]int {
	t.Helper()
	parts := map[string]int{}
	for i := range patterns.MaxWideParts {
		k, err := patterns.WidePartKey(rk, i)
		if err != nil {
			t.Fatal(err)
		}
		parts[k] = i
	}
	byPart := map[int][]int{}
	for _, e := range rawEntities(t, ctx, tbl, tablekit.PartitionEq(pk)) {
		part, ok := parts[e.RowKey]
		if !ok {
			continue
		}
		for name := range e.Properties {
			var j int
			if _, err := fmt.Sscanf(name, "X%d", &j); err == nil {
				byPart[part] = append(byPart[part], j)
			} else if (name == "Base" || name == "Ver") && part != 0 {
				t.Fatalf("layout: %s is in part %d, want part 0", name, part)
			}
		}
	}
	var blocks [][]int
	for _, part := range slices.Sorted(maps.Keys(byPart)) {
		if part != 0 {
			blocks = append(blocks, slices.Sorted(slices.Values(byPart[part])))
		}
	}
	if len(blocks) < 3 {
		t.Fatalf("layout: %d parts besides part 0, want several (%v)", len(blocks), byPart)
	}
	t.Logf("layout: part 0 holds Base, Ver and entries %v; Modify calls change the entries of one or two of the parts %v", slices.Sorted(slices.Values(byPart[0])), blocks)
	return blocks
}

// wideEntry is entry j as written by write id: it names the write and the
// entry, padded to vary the sizes.
func wideEntry(id string, j, pad int) string {
	return fmt.Sprintf("%s|%02d|%s", id, j, strings.Repeat("x", pad))
}

// wideWrite is one write op of the suite, as recorded in the history.
type wideWrite struct {
	Kind     string // "Upsert", "Insert", "Update", "Modify", "Delete" or "DeleteIfExists"
	Key      string
	ID       string        // the value's id ("" for the deletes)
	Existed  bool          // what a DeleteIfExists reported
	Base     string        // the Ver an Update was conditional on ("" for any version)
	Blocks   []int         // a Modify's blocks of entries (parts but 0)
	Attempts []wideAttempt // a Modify's calls of its function, in order
	ETag     azcore.ETag   // the version the write returned
	Stored   wideDoc       // the value a Modify returned
}

// wideAttempt is one call of a Modify's function: the id of the value it
// made and the Ver it read.
type wideAttempt struct{ ID, Base string }

// wideValue is a value recorded before it was written.
type wideValue struct {
	write *wideWrite // nil for the setup's
	doc   wideDoc
}

// wideRead is a value read during the run (or at the end).
type wideRead struct {
	who        string
	key        string
	start, end time.Time
	doc        wideDoc
	err        error
	attempt    bool // the read a Modify's function was given
}

// wideRecords collects the values written and read, from every goroutine.
type wideRecords struct {
	mu         sync.Mutex
	values     map[string]wideValue
	reads      []wideRead
	setupETags map[string]azcore.ETag // the versions of the setup's values
}

func (r *wideRecords) add(id string, w *wideWrite, d wideDoc) {
	d.Props = maps.Clone(d.Props)
	r.mu.Lock()
	r.values[id] = wideValue{write: w, doc: d}
	r.mu.Unlock()
}

func (r *wideRecords) read(rd wideRead) {
	rd.doc.Props = maps.Clone(rd.doc.Props)
	r.mu.Lock()
	r.reads = append(r.reads, rd)
	r.mu.Unlock()
}

func (r *wideRecords) readCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reads)
}

// equalDoc reports whether two logical values are the same.
func equalDoc(a, b wideDoc) bool {
	return a.PK == b.PK && a.RK == b.RK && a.Ver == b.Ver && a.Base == b.Base && maps.Equal(a.Props, b.Props)
}

// docString describes a value briefly: its Ver, Base and the distinct
// write ids its entries carry.
func docString(d wideDoc) string {
	ids := map[string]int{}
	for _, val := range d.Props {
		id, _, _ := strings.Cut(val, "|")
		ids[id]++
	}
	return fmt.Sprintf("{Ver:%s Base:%s entries:%d by writes %v}", d.Ver, d.Base, len(d.Props), ids)
}

// checkWideHistory checks every read and the final values against what
// was written and what the writers were told.
func checkWideHistory(h *chaos.History, rec *wideRecords, final map[string]wideDoc, churnKey string, setupEnd time.Time, v *chaos.Violations) (appliedTwiceCount int) {
	ops := map[*wideWrite]chaos.Op{}
	for _, op := range h.Ops() {
		ops[op.Value.(*wideWrite)] = op
	}
	isDelete := func(w *wideWrite) bool { return w.Kind == "Delete" || w.Kind == "DeleteIfExists" }
	// changed reports whether w certainly changed the stored state: an
	// acknowledged write or Delete, a DeleteIfExists that removed the
	// entity.
	changed := func(w *wideWrite) bool { return certainlyChanged(w.Kind, w.Existed, ops[w].Outcome) }
	// mayDelete reports whether w may have removed the entity.
	mayDelete := func(w *wideWrite) bool { return mayHaveDeleted(w.Kind, w.Existed, ops[w].Outcome) }
	// checkAbsent checks that key may be absent during [start, end]:
	// every write acknowledged before start is followed by a delete that
	// may have removed it and may have run before end.
	checkAbsent := func(what, key string, start, end time.Time) {
		if key != churnKey {
			v.Addf("%s found %s absent; it exists throughout the run", what, key)
			return
		}
		for y, yop := range ops {
			if y.Key != key || isDelete(y) || yop.Outcome != chaos.OK || !yop.End.Before(start) {
				continue
			}
			ok := false
			for d, dop := range ops {
				if d.Key == key && mayDelete(d) && !dop.End.Before(yop.Start) && !end.Before(dop.Start) {
					ok = true
					break
				}
			}
			if !ok {
				v.Addf("%s found %s absent, but %s was acknowledged before and no delete that may have removed it ran in between", what, key, yop)
			}
		}
	}
	// lastAttempt reports whether id is the value of an op's last attempt
	// (an Upsert has one value whatever its retries).
	lastAttempt := func(val wideValue, id string) bool {
		w := val.write
		return w == nil || w.Kind != "Modify" || len(w.Attempts) > 0 && w.Attempts[len(w.Attempts)-1].ID == id
	}
	// span returns the interval of the op that wrote id (the setup's
	// values end before the run).
	span := func(val wideValue) (time.Time, time.Time) {
		if val.write == nil {
			return time.Time{}, setupEnd
		}
		op := ops[val.write]
		return op.Start, op.End
	}
	// Writes known to have taken effect: acknowledged, or seen by a read.
	applied := map[*wideWrite]bool{}
	for w, op := range ops {
		if op.Outcome == chaos.OK {
			applied[w] = true
		}
	}
	for _, rd := range rec.reads {
		if val, ok := rec.values[rd.doc.Ver]; ok && val.write != nil && rd.err == nil {
			applied[val.write] = true
		}
	}
	// newerAcked returns a write or delete on key, other than the one of
	// val, that certainly changed the state, started after val's write
	// ended and ended before t.
	newerAcked := func(key string, val wideValue, t time.Time) (chaos.Op, bool) {
		_, end := span(val)
		for w, op := range ops {
			if w != val.write && w.Key == key && changed(w) && op.Start.After(end) && op.End.Before(t) {
				return op, true
			}
		}
		return chaos.Op{}, false
	}
	// Versions: an acknowledged write returned part 0's new ETag (a
	// Modify, with the value it stored), and a read of the value a write
	// made carries the version that write returned.
	versionOf := maps.Clone(rec.setupETags) // Ver -> the ETag its write returned
	madeBy := map[string]chaos.Op{}         // Ver -> the op whose write made it
	for w, op := range ops {
		if op.Outcome != chaos.OK || isDelete(w) {
			continue
		}
		if w.ETag == "" {
			v.Addf("%s was acknowledged without a version (ETag)", op)
			continue
		}
		ver := w.ID
		if w.Kind == "Modify" {
			if len(w.Attempts) == 0 {
				v.Addf("%s was acknowledged without calling its function", op)
				continue
			}
			ver = w.Attempts[len(w.Attempts)-1].ID
			if want := rec.values[ver].doc; !equalDoc(w.Stored, want) || w.Stored.ETag != w.ETag {
				v.Addf("%s returned %s at version %s, not the value it stored, %s at version %s", op, docString(w.Stored), w.Stored.ETag, docString(want), w.ETag)
			}
		}
		versionOf[ver], madeBy[ver] = w.ETag, op
	}
	// appliedTwice reports whether op's write may have taken effect twice
	// around a delete, as any retried insert can: a try that may have
	// been applied, and a delete of its key that may have removed the
	// entity while op ran. Each application has a version of its own.
	twice := map[string]bool{}
	appliedTwice := func(op chaos.Op) bool {
		if !op.AnswerLost() {
			return false
		}
		for d, dop := range ops {
			if d.Key == op.Key && mayDelete(d) && dop.Start.Before(op.End) && dop.End.After(op.Start) {
				return true
			}
		}
		return false
	}
	for _, rd := range rec.reads {
		if tag, ok := versionOf[rd.doc.Ver]; ok && rd.err == nil && rd.doc.ETag != tag {
			if op, ok := madeBy[rd.doc.Ver]; ok && appliedTwice(op) {
				twice[rd.doc.Ver] = true
				continue
			}
			v.Addf("%s of %s read %s at version %s, but the write that made it returned version %s: %s", rd.who, rd.key, docString(rd.doc), rd.doc.ETag, tag, madeBy[rd.doc.Ver])
		}
	}
	reads := 0
	for _, rd := range rec.reads {
		reads++
		if errors.Is(rd.err, tablekit.ErrNotFound) || rd.err == nil && rd.attempt && rd.doc.Ver == "" {
			checkAbsent(rd.who, rd.key, rd.start, rd.end) // a Modify's function gets a zero value
			continue
		}
		if rd.err != nil {
			v.Addf("%s of %s failed: %v", rd.who, rd.key, rd.err)
			continue
		}
		val, ok := rec.values[rd.doc.Ver]
		if !ok {
			v.Addf("%s of %s returned %s: no write made a value with that Ver", rd.who, rd.key, docString(rd.doc))
			continue
		}
		if !equalDoc(rd.doc, val.doc) {
			v.Addf("%s of %s returned %s, not the complete value %s that Ver names (a mix of writes)", rd.who, rd.key, docString(rd.doc), docString(val.doc))
			continue
		}
		if val.doc.RK != rd.key {
			v.Addf("%s of %s returned the value of %s", rd.who, rd.key, val.doc.RK)
			continue
		}
		if val.write != nil {
			op := ops[val.write]
			if op.Outcome == chaos.Failed {
				v.Addf("%s of %s returned %s, written by a Failed write: %s", rd.who, rd.key, docString(rd.doc), op)
			}
			if !lastAttempt(val, rd.doc.Ver) {
				v.Addf("%s of %s returned %s, made by an attempt that was not its Modify's last (a conflicting write landed): %s", rd.who, rd.key, docString(rd.doc), op)
			}
		}
		if newer, ok := newerAcked(rd.key, val, rd.start); ok {
			what := "read"
			if rd.attempt {
				what = "based its write on"
			}
			v.Addf("%s %s %s, older than %s, acknowledged before the read started", rd.who, what, docString(rd.doc), newer)
		}
	}
	// Each applied Modify's base, and each applied conditional Update's,
	// must be the version just before it: no acknowledged write can lie
	// wholly between the base's write and the op.
	for w, op := range ops {
		if !applied[w] {
			continue
		}
		base := w.Base
		if w.Kind == "Modify" && len(w.Attempts) > 0 {
			base = w.Attempts[len(w.Attempts)-1].Base
		}
		if base == "" {
			continue
		}
		baseVal, ok := rec.values[base]
		if !ok {
			v.Addf("%s: its base %s is no value written", op, base)
			continue
		}
		if newer, ok := newerAcked(w.Key, baseVal, op.Start); ok {
			v.Addf("%s took effect on base %s although %s was acknowledged between them", op, base, newer)
		}
	}
	// A DeleteIfExists that found nothing found the entity absent; a
	// delete that removed something ran after a write that did not fail.
	for w, op := range ops {
		if !isDelete(w) || op.Outcome != chaos.OK {
			continue
		}
		if w.Kind == "DeleteIfExists" && !w.Existed {
			checkAbsent(op.String(), w.Key, op.Start, op.End)
			continue
		}
		if w.Key != churnKey {
			v.Addf("%s deleted %s, which only c0's writers delete", op, w.Key)
		}
	}
	// The final value: not a write that ended before an acknowledged one
	// started.
	keys := map[string]bool{}
	for w := range ops {
		keys[w.Key] = true
	}
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		d, ok := final[key]
		if !ok {
			continue // the final Get's error is reported above
		}
		val := rec.values[d.Ver]
		if newer, ok := newerAcked(key, val, time.Now()); ok {
			v.Addf("%s: the final value %s was overwritten by no later write, but %s was acknowledged after it", key, docString(d), newer)
		}
	}
	return len(twice)
}

// checkWideParts reads the physical entities and checks that each logical
// entity is part 0 plus exactly the parts its manifest lists, with their
// stamps, spanning several parts, and that nothing else is stored.
func checkWideParts(t *testing.T, ctx context.Context, tbl *tablekit.Table[tablekit.Entity], pk string, rks []string, churnKey string, v *chaos.Violations) {
	t.Helper()
	stored := map[string]tablekit.Entity{}
	for _, e := range rawEntities(t, ctx, tbl, tablekit.Filter{}) {
		stored[e.PartitionKey+"/"+e.RowKey] = e
	}
	total, present := 0, 0
	for _, rk := range rks {
		key := func(part int) string {
			k, err := patterns.WidePartKey(rk, part)
			if err != nil {
				t.Fatal(err)
			}
			return pk + "/" + k
		}
		p0, ok := stored[key(0)]
		if !ok {
			if rk != churnKey {
				v.Addf("%s: no part 0 is stored", rk)
			}
			continue // any other part of it is reported below, as belonging to no logical entity
		}
		present++
		stamp, _ := p0.Properties[patterns.WideStampProperty].(string)
		manifest, _ := p0.Properties[patterns.WideManifestProperty].(string)
		want := map[string]string{key(0): stamp}
		for _, f := range strings.Fields(manifest) {
			var n int
			idx, s, _ := strings.Cut(f, ":")
			if _, err := fmt.Sscanf(idx, "%d", &n); err != nil {
				v.Addf("%s: bad manifest entry %q", rk, f)
				continue
			}
			want[key(n)] = s
		}
		for part := range patterns.MaxWideParts {
			k := key(part)
			e, have := stored[k]
			s, listed := want[k]
			switch {
			case have && !listed:
				v.Addf("%s: orphan part %s (manifest %q)", rk, k, manifest)
			case listed && !have:
				v.Addf("%s: part %s is listed in the manifest but not stored", rk, k)
			case have && e.Properties[patterns.WideStampProperty] != s:
				v.Addf("%s: part %s has stamp %v, the manifest says %s", rk, k, e.Properties[patterns.WideStampProperty], s)
			}
			if have {
				total++
				delete(stored, k)
			}
		}
		if len(want) < 3 && rk != churnKey { // a Modify may create c0 with a few entries
			v.Addf("%s spans %d parts, want several", rk, len(want))
		}
	}
	for k := range stored {
		v.Addf("physical entity %s belongs to no logical entity", k)
	}
	t.Logf("%d logical entities stored as %d physical entities", present, total)
}
