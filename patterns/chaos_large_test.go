package patterns_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

// The large entities chaos suite: concurrent writers, each with its own
// Account and Large (as separate processes would have), write a few large
// entities with every verb (Upsert, Insert, Update with the ETag of their
// own Get or azcore.ETagAny, Modify, Delete with an ETag, DeleteIfExists)
// while readers (with their own Accounts and Larges) Get and Query them,
// with faults injected into table AND blob requests.
//
// Keys k0 and k1 are stored before the run and never deleted: Upsert,
// Update and Modify replace them. Keys c0 and c1 start absent and are
// written and deleted. Key n0 is a counter: only Modify writes it, adding
// one to N. Every value a write stores is self-identifying (Ver is the
// write's id, and its Body and Data are derived from it and recorded
// before the write), Body always goes to a blob and Data does when it is
// over 1 KiB, so a value has one or two blobs and a replacement changes
// their number.
//
// Invariants:
//   - no read (Get, or an entity of a Query) ever fails, and none reports
//     k0, k1 or n0 missing: they exist throughout every read;
//   - every value read is exactly the complete value recorded under its
//     Ver, written by a write that did not fail, and not older than a
//     write acknowledged before the read started; a read of c0 or c1 that
//     finds nothing comes after a delete that may have removed every write
//     acknowledged before it (the same holds for the final state, and for
//     a DeleteIfExists that reports the entity absent);
//   - n0's final N is at least the number of acknowledged Modifies of it,
//     and at most that plus the ones whose outcome is unknown: no
//     increment is lost to a concurrent one;
//   - at the end no stored entity references a missing blob (before and
//     after Sweep), and after Sweep (no faults, no grace) every blob is
//     referenced by a stored entity.
func TestChaosLarge(t *testing.T) {
	const (
		partitionK = "large"
		readers    = 2
	)
	const counterKey = "n0"
	keepKeys := []string{"k0", "k1", counterKey}
	churnKeys := []string{"c0", "c1"}
	allKeys := slices.Concat(keepKeys, churnKeys)
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		cfg := &chaos.Config{
			Reset: 0.05, AnswerLost: 0.07, ServerBusy: 0.04, TimeoutBefore: 0.02, TimeoutAfter: 0.03, Delay: 0.05,
			Services: []string{"table", "blob"},
		}
		var injs chaosInjectors
		inj := injs.add(t, seed, 0, cfg)
		setup := inj.Account(t, nil)
		inj.SetEnabled(false)
		tbl := entityTable(t, setup)
		cont := testenv.NewContainer(t, setup)
		contName := containerName(cont.URL())
		opts := &patterns.LargeOptions{Threshold: 1024}
		base, err := patterns.NewLarge(typed[largeDoc](t, tbl), cont, opts)
		if err != nil {
			t.Fatal(err)
		}
		rec := &largeRecords{values: map[string]largeValue{}}
		for _, k := range keepKeys {
			d := newLargeDoc(partitionK, k, "init-"+k, 1500, 3000)
			rec.add(nil, d)
			if _, err := base.Upsert(chaos.NoFaults(ctx), d); err != nil {
				t.Fatal(err)
			}
		}
		setupEnd := time.Now()

		open := func(inj *chaos.Injector) (*patterns.Large[largeDoc], error) {
			acct, err := inj.Open(testenv.ConnectionString(t), nil)
			if err != nil {
				return nil, err
			}
			mine, err := tablekit.OpenTable[largeDoc](acct, tbl.Name(), nil)
			if err != nil {
				return nil, err
			}
			return patterns.NewLarge(mine, acct.Blobs().ServiceClient().NewContainerClient(contName), opts)
		}

		// Readers Get and Query until the writers are done.
		var stop atomic.Bool
		var rwg sync.WaitGroup
		readerLarges := make([]*patterns.Large[largeDoc], readers)
		for r := range readers {
			if readerLarges[r], err = open(injs.add(t, seed, r+1, cfg)); err != nil {
				t.Fatal(err)
			}
		}
		for r, large := range readerLarges {
			rwg.Go(func() {
				who := fmt.Sprintf("reader %d", r)
				for i := 0; !stop.Load(); i++ {
					start := time.Now()
					if i%2 == 0 {
						key := allKeys[(i/2+r)%len(allKeys)]
						d, err := large.Get(ctx, partitionK, key)
						rd := largeRead{who: who + " Get", key: key, start: start, end: time.Now(), present: err == nil, doc: d, err: err}
						if errors.Is(err, tablekit.ErrNotFound) && slices.Contains(churnKeys, key) {
							rd.err = nil // absent: checked against the history
						}
						rec.read(rd)
						continue
					}
					found := map[string]largeDoc{}
					var qerr error
					for d, err := range large.Query(ctx, tablekit.PartitionEq(partitionK), nil) {
						if err != nil {
							qerr = err
							break
						}
						if _, dup := found[d.RK]; dup {
							qerr = fmt.Errorf("Query returned %s twice", d.RK)
							break
						}
						found[d.RK] = d
					}
					end := time.Now()
					if qerr != nil {
						rec.read(largeRead{who: who + " Query", key: "*", start: start, end: end, err: qerr})
						continue
					}
					for _, key := range allKeys {
						d, ok := found[key]
						rec.read(largeRead{who: who + " Query", key: key, start: start, end: end, present: ok, doc: d})
						delete(found, key)
					}
					for key := range found {
						rec.read(largeRead{who: who + " Query", key: key, start: start, end: end, err: fmt.Errorf("Query returned an entity no writer wrote: %s", key)})
					}
				}
			})
		}

		inj.SetEnabled(true)
		writers, perWriter := chaos.Size(8, 10), chaos.Size(6, 40)
		h, err := chaos.RunWriters(ctx, seed, writers, func(ctx context.Context, w *chaos.Writer) error {
			large, err := open(inj)
			if err != nil {
				return err
			}
			for n := range perWriter {
				key := allKeys[w.Rand.IntN(len(allKeys))]
				churn := slices.Contains(churnKeys, key)
				pick := w.Rand.IntN(10)
				if churn && pick < 3 {
					lw := &largeWrite{Kind: "DeleteIfExists", Key: key}
					w.Do(ctx, "DeleteIfExists", key, lw, func(ctx context.Context) (any, error) {
						existed, err := large.DeleteIfExists(ctx, partitionK, key)
						lw.Existed = existed
						return existed, err
					})
					continue
				}
				// Update and Delete use the ETag of the writer's own Get
				// (a read like the readers'), or any version when the Get
				// failed.
				readETag := func() (etag azcore.ETag, found bool) {
					start := time.Now()
					d, err := large.Get(ctx, partitionK, key)
					rd := largeRead{who: fmt.Sprintf("writer %d Get", w.Index), key: key, start: start, end: time.Now(), present: err == nil, doc: d, err: err}
					if errors.Is(err, tablekit.ErrNotFound) && churn {
						rd.err = nil
					}
					rec.read(rd)
					if err != nil {
						return azcore.ETagAny, !errors.Is(err, tablekit.ErrNotFound)
					}
					return d.ETag, true
				}
				if churn && pick == 3 {
					if etag, found := readETag(); found {
						lw := &largeWrite{Kind: "Delete", Key: key}
						w.Do(ctx, "Delete", key, lw, func(ctx context.Context) (any, error) {
							return nil, large.Delete(ctx, partitionK, key, etag)
						})
						continue
					}
				}
				id := fmt.Sprintf("w%02d.%03d", w.Index, n)
				d := newLargeDoc(partitionK, key, id, 600+w.Rand.IntN(2400), 200+w.Rand.IntN(3800))
				kind := "Upsert"
				switch {
				case key == counterKey || pick == 7:
					kind = "Modify"
				case churn && pick == 4:
					kind = "Insert"
				case pick == 5 || pick == 6:
					kind = "Update"
				}
				lw := &largeWrite{Kind: kind, Key: key, ID: id}
				rec.add(lw, d)
				var etag azcore.ETag
				if kind == "Update" {
					etag, _ = readETag() // absent: Update must say ErrNotFound
					if pick == 6 {
						etag = azcore.ETagAny
					}
				}
				w.Do(ctx, kind, key, lw, func(ctx context.Context) (any, error) {
					var err error
					switch kind {
					case "Upsert":
						lw.ETag, err = large.Upsert(ctx, d)
					case "Insert":
						lw.ETag, err = large.Insert(ctx, d)
					case "Update":
						lw.ETag, err = large.Update(ctx, d, etag)
					case "Modify":
						var stored largeDoc
						stored, err = large.Modify(ctx, partitionK, key, func(v *largeDoc) error {
							n := v.N
							*v = d
							v.N = n + 1
							return nil
						})
						lw.ETag = stored.ETag
					}
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
		nf := chaos.NoFaults(ctx)
		checkLargeBlobs(t, nf, tbl, cont, partitionK, "before Sweep", &v)
		res, err := base.Sweep(nf, &patterns.SweepOptions{MinAge: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Sweep: %d orphans deleted", len(res))
		if orphans := checkLargeBlobs(t, nf, tbl, cont, partitionK, "after Sweep", &v); orphans > 0 {
			v.Addf("after Sweep, %d blobs are still referenced by no entity", orphans)
		}
		finalAt := time.Now()
		for _, key := range allKeys {
			d, err := base.Get(nf, partitionK, key)
			rd := largeRead{who: "final Get", key: key, start: finalAt, end: finalAt, present: err == nil, doc: d, err: err}
			if errors.Is(err, tablekit.ErrNotFound) && slices.Contains(churnKeys, key) {
				rd.err = nil
			}
			rec.read(rd)
		}
		checkLargeHistory(h, rec, keepKeys, setupEnd, &v)
		checkLargeCounter(t, nf, base, h, partitionK, counterKey, &v)
		if h.Len() < 300 && chaos.Full() {
			v.Addf("only %d operations ran, want at least 300", h.Len())
		}
		v.Report(t)
	})
}

// largeDoc is the entity of the large chaos suite.
type largeDoc struct {
	PK   string      `table:",pk"`
	RK   string      `table:",rk"`
	ETag azcore.ETag `table:",etag"`
	Ver  string      `table:"Ver"` // the id of the write that stored the value
	N    int         `table:"N"`   // a counter that Modify increments (not part of the value's identity)
	Body string      `table:"Body"`
	Data []byte      `table:"Data,omitempty"`
}

// newLargeDoc returns the value write id stores in pk/rk: a Body of
// bodyLen characters and Data of dataLen bytes, both naming the write.
func newLargeDoc(pk, rk, id string, bodyLen, dataLen int) largeDoc {
	fill := func(n int, part string) string {
		unit := id + "/" + part + ";"
		return strings.Repeat(unit, n/len(unit)+1)[:n]
	}
	return largeDoc{PK: pk, RK: rk, Ver: id, Body: fill(bodyLen, "body"), Data: []byte(fill(dataLen, "data"))}
}

func equalLargeDoc(a, b largeDoc) bool {
	return a.PK == b.PK && a.RK == b.RK && a.Ver == b.Ver && a.Body == b.Body && bytes.Equal(a.Data, b.Data)
}

// largeDocString describes a value briefly.
func largeDocString(d largeDoc) string {
	return fmt.Sprintf("{%s Ver:%s Body:%d chars Data:%d bytes}", d.RK, d.Ver, len(d.Body), len(d.Data))
}

// largeWrite is one op of the suite, as recorded in the history.
type largeWrite struct {
	Kind    string // "Upsert", "Insert", "Update", "Modify", "Delete" or "DeleteIfExists"
	Key     string
	ID      string      // a write's (all but the deletes)
	Existed bool        // what a DeleteIfExists reported
	ETag    azcore.ETag // what a write returned
}

// writes reports whether w stores a value (it is not a delete).
func (w *largeWrite) writes() bool { return w.Kind != "Delete" && w.Kind != "DeleteIfExists" }

type largeValue struct {
	write *largeWrite // nil for the setup's
	doc   largeDoc
}

// largeRead is one entity read (or found absent) during the run or at
// the end.
type largeRead struct {
	who        string
	key        string
	start, end time.Time
	present    bool
	doc        largeDoc
	err        error
}

type largeRecords struct {
	mu     sync.Mutex
	values map[string]largeValue
	reads  []largeRead
}

func (r *largeRecords) add(w *largeWrite, d largeDoc) {
	r.mu.Lock()
	r.values[d.Ver] = largeValue{write: w, doc: d}
	r.mu.Unlock()
}

func (r *largeRecords) read(rd largeRead) {
	r.mu.Lock()
	r.reads = append(r.reads, rd)
	r.mu.Unlock()
}

func (r *largeRecords) readCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reads)
}

// checkLargeHistory checks every read, the final state and the Deletes
// that found nothing against what was written and what the writers were
// told.
func checkLargeHistory(h *chaos.History, rec *largeRecords, keepKeys []string, setupEnd time.Time, v *chaos.Violations) {
	ops := map[*largeWrite]chaos.Op{}
	for _, op := range h.Ops() {
		ops[op.Value.(*largeWrite)] = op
	}
	sorted := func() []*largeWrite {
		ws := slices.Collect(maps.Keys(ops))
		slices.SortFunc(ws, func(a, b *largeWrite) int { return ops[a].Start.Compare(ops[b].Start) })
		return ws
	}()
	// changed reports whether op certainly changed the stored state: an
	// acknowledged write or Delete, or a DeleteIfExists that removed the
	// entity.
	changed := func(w *largeWrite) bool { return certainlyChanged(w.Kind, w.Existed, ops[w].Outcome) }
	// mayDelete reports whether op may have removed the entity.
	mayDelete := func(w *largeWrite) bool { return mayHaveDeleted(w.Kind, w.Existed, ops[w].Outcome) }
	// newer returns a write on key, other than w, that certainly changed
	// the state, started after end and ended before t.
	newer := func(key string, w *largeWrite, end, t time.Time) (chaos.Op, bool) {
		for _, c := range sorted {
			op := ops[c]
			if c != w && c.Key == key && changed(c) && op.Start.After(end) && op.End.Before(t) {
				return op, true
			}
		}
		return chaos.Op{}, false
	}
	// checkAbsent checks that key may be absent during [start, end]: every
	// write acknowledged before start is followed by a delete that may have
	// removed it and may have run before end.
	checkAbsent := func(what, key string, start, end time.Time) {
		for _, y := range sorted {
			yop := ops[y]
			if y.Key != key || !y.writes() || yop.Outcome != chaos.OK || !yop.End.Before(start) {
				continue
			}
			ok := false
			for _, d := range sorted {
				dop := ops[d]
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
	// Every acknowledged write returned the entity's new ETag, and every
	// entity read carries one.
	for w, op := range ops {
		if w.writes() && op.Outcome == chaos.OK && w.ETag == "" {
			v.Addf("%s was acknowledged without an ETag", op)
		}
	}
	for _, rd := range rec.reads {
		if rd.err == nil && rd.present && rd.doc.ETag == "" {
			v.Addf("%s of %s returned %s without its ETag", rd.who, rd.key, largeDocString(rd.doc))
		}
	}
	for _, rd := range rec.reads {
		if rd.err != nil {
			v.Addf("%s of %s failed: %v (matches ErrNotFound: %v, ErrMissingBlob: %v)", rd.who, rd.key, rd.err, errors.Is(rd.err, tablekit.ErrNotFound), errors.Is(rd.err, patterns.ErrMissingBlob))
			continue
		}
		if !rd.present {
			if slices.Contains(keepKeys, rd.key) {
				v.Addf("%s reported %s missing; it existed throughout the read", rd.who, rd.key)
				continue
			}
			checkAbsent(rd.who, rd.key, rd.start, rd.end)
			continue
		}
		val, ok := rec.values[rd.doc.Ver]
		switch {
		case !ok:
			v.Addf("%s of %s returned %s: no write stored a value with that Ver", rd.who, rd.key, largeDocString(rd.doc))
			continue
		case !equalLargeDoc(rd.doc, val.doc):
			v.Addf("%s of %s returned %s, not the complete value %s that Ver names", rd.who, rd.key, largeDocString(rd.doc), largeDocString(val.doc))
			continue
		case val.doc.RK != rd.key:
			v.Addf("%s of %s returned the value of %s", rd.who, rd.key, val.doc.RK)
			continue
		}
		end := setupEnd
		if val.write != nil {
			op := ops[val.write]
			end = op.End
			if op.Outcome == chaos.Failed {
				v.Addf("%s of %s returned %s, written by a Failed %s: %s", rd.who, rd.key, largeDocString(rd.doc), val.write.Kind, op)
			}
		}
		if c, ok := newer(rd.key, val.write, end, rd.start); ok {
			v.Addf("%s of %s returned %s, older than %s, which ended before the read started", rd.who, rd.key, largeDocString(rd.doc), c)
		}
	}
	// A DeleteIfExists that found nothing is a read that found the entity
	// absent; a delete that deleted something found it present.
	for _, w := range sorted {
		op := ops[w]
		if w.writes() || op.Outcome != chaos.OK {
			continue
		}
		if w.Kind == "DeleteIfExists" && !w.Existed {
			checkAbsent(op.String(), w.Key, op.Start, op.End)
			continue
		}
		if !slices.ContainsFunc(sorted, func(p *largeWrite) bool {
			return p.Key == w.Key && p.writes() && ops[p].Outcome != chaos.Failed && ops[p].Start.Before(op.End)
		}) {
			v.Addf("%s deleted %s, but no write that did not fail ran before it", op, w.Key)
		}
	}
}

// checkLargeBlobs checks that every stored entity's references name
// existing blobs, and returns how many blobs no
// entity references.
func checkLargeBlobs(t *testing.T, ctx context.Context, tbl *tablekit.Table[tablekit.Entity], cont *container.Client, pk, when string, v *chaos.Violations) int {
	t.Helper()
	blobs := map[string]bool{}
	for _, name := range listBlobs(t, ctx, cont) {
		blobs[name] = false
	}
	entities := rawEntities(t, ctx, tbl, tablekit.PartitionEq(pk))
	refs := 0
	for _, e := range entities {
		raw, ok := e.Properties[patterns.DefaultRefProperty].(string)
		if !ok {
			v.Addf("%s: %s/%s has no blob references (Body always goes to a blob)", when, e.PartitionKey, e.RowKey)
			continue
		}
		var m map[string]patterns.BlobRef
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			v.Addf("%s: %s/%s: bad references %q: %v", when, e.PartitionKey, e.RowKey, raw, err)
			continue
		}
		for prop, ref := range m {
			refs++
			if _, ok := blobs[ref.Blob]; !ok {
				v.Addf("%s: %s/%s (Ver %v) references the missing blob %s for %s", when, e.PartitionKey, e.RowKey, e.Properties["Ver"], ref.Blob, prop)
				continue
			}
			blobs[ref.Blob] = true
		}
	}
	orphans := 0
	for _, used := range blobs {
		if !used {
			orphans++
		}
	}
	t.Logf("%s: %d entities reference %d blobs; %d blobs stored, %d referenced by none", when, len(entities), refs, len(blobs), orphans)
	return orphans
}

// checkLargeCounter checks the counter key's final N against the Modifies
// of it: at least the acknowledged ones, at most those plus the ones whose
// outcome is unknown.
func checkLargeCounter(t *testing.T, ctx context.Context, l *patterns.Large[largeDoc], h *chaos.History, pk, key string, v *chaos.Violations) {
	t.Helper()
	acked, unknown := 0, 0
	for _, op := range h.Ops() {
		if op.Key != key {
			continue
		}
		switch op.Outcome {
		case chaos.OK:
			acked++
		case chaos.Unknown:
			unknown++
		}
	}
	d, err := l.Get(ctx, pk, key)
	if err != nil {
		v.Addf("final Get of the counter %s: %v", key, err)
		return
	}
	t.Logf("counter %s: N %d after %d acknowledged Modifies and %d with unknown outcome", key, d.N, acked, unknown)
	if d.N < acked || d.N > acked+unknown {
		v.Addf("counter %s holds %d; %d Modifies were acknowledged and %d have an unknown outcome", key, d.N, acked, unknown)
	}
}
