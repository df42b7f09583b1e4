package patterns_test

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

// wideRace is two writers of one table, as two processes would be: A's
// requests pass through a gate, B's do not.
type wideRace struct {
	g      *gate
	a, b   *patterns.Wide[tablekit.Entity]
	tbl    *tablekit.Table[tablekit.Entity]
	layout map[string]string // property -> RowKey of its part, after setup
}

// newWideRace makes the writers, two properties per part, and stores
// init (when not nil) as the logical entity p/r.
func newWideRace(t *testing.T, g *gate, init map[string]any, policies ...policy.Policy) *wideRace {
	t.Helper()
	ctx := testContext(t)
	acctB := testenv.Account(t, nil)
	tblB := namedTable(t, acctB)
	tblA := openEntityTable(t, gatedAccount(t, g, policies...), tblB.Name())
	opts := &patterns.WideOptions{PropertiesPerPart: 2}
	a, err := patterns.NewWide[tablekit.Entity](tblA, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := patterns.NewWide[tablekit.Entity](tblB, opts)
	if err != nil {
		t.Fatal(err)
	}
	w := &wideRace{g: g, a: a, b: b, tbl: tblB, layout: map[string]string{}}
	if init != nil {
		if _, err := b.Upsert(ctx, wideEntity(init)); err != nil {
			t.Fatal(err)
		}
		for _, e := range rawEntities(t, ctx, tblB, tablekit.Filter{}) {
			for name := range e.Properties {
				if name != patterns.WideStampProperty && name != patterns.WideManifestProperty {
					w.layout[name] = e.RowKey
				}
			}
		}
	}
	return w
}

func wideEntity(props map[string]any) tablekit.Entity {
	return tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: maps.Clone(props)}
}

// samePart fails t unless the named properties share a part and the
// others do not: the premise of a test that two writes touch different
// parts.
func (w *wideRace) samePart(t *testing.T, names ...string) {
	t.Helper()
	part := w.layout[names[0]]
	for name, rk := range w.layout {
		if slices.Contains(names, name) != (rk == part) {
			t.Fatalf("layout %v: want exactly %v in one part", w.layout, names)
		}
	}
}

// race runs a with its transaction held at the gate until b has finished,
// and returns both errors.
func (w *wideRace) race(t *testing.T, a, b func() error) (errA, errB error) {
	t.Helper()
	w.g.arm()
	done := run(a)
	w.g.wait(t)
	errB = b()
	w.g.open()
	return <-done, errB
}

// logical reads the logical entity p/r with a third reader.
func (w *wideRace) logical(t *testing.T) map[string]any {
	t.Helper()
	r, err := patterns.NewWide[tablekit.Entity](w.tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := r.Get(testContext(t), "p", "r")
	if err != nil {
		t.Fatal(err)
	}
	return e.Properties
}

// oneOf fails t unless got equals one of the complete writes.
func oneOf(t *testing.T, got map[string]any, writes ...map[string]any) {
	t.Helper()
	for _, w := range writes {
		if maps.EqualFunc(got, w, func(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
			return
		}
	}
	t.Fatalf("the logical entity is %v: no writer wrote that (writes: %v)", got, writes)
}

// TestWideNoWriteSkew: two writers race on one logical entity, each
// writing parts the other does not; the entity must end as one writer's
// complete write, never a mix.
func TestWideNoWriteSkew(t *testing.T) {
	t.Parallel()
	str := func(names string, v string) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(names); i += 2 {
			m[names[i:i+2]] = v
		}
		return m
	}
	join := func(ms ...map[string]any) map[string]any {
		out := map[string]any{}
		for _, m := range ms {
			maps.Copy(out, m)
		}
		return out
	}

	t.Run("puts on different parts", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		w := newWideRace(t, newGate(false, isBatch), str("P0P1Q0Q1", "0"))
		w.samePart(t, "P0", "P1")
		putA := join(str("P0P1", "a"), str("Q0Q1", "0"))
		putB := join(str("P0P1", "0"), str("Q0Q1", "b"))
		errA, errB := w.race(t,
			func() error { _, err := w.a.Upsert(ctx, wideEntity(putA)); return err },
			func() error { _, err := w.b.Upsert(ctx, wideEntity(putB)); return err })
		if errA != nil || errB != nil {
			t.Fatalf("Upsert A: %v, Upsert B: %v", errA, errB)
		}
		oneOf(t, w.logical(t), putA, putB)
	})

	t.Run("update reads one part and writes another", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		init := map[string]any{"P0": int64(0), "P1": int64(0), "Q0": int64(0), "Q1": int64(0)}
		w := newWideRace(t, newGate(false, isBatch), init)
		w.samePart(t, "P0", "P1")
		// The invariant P0+Q0 <= 1: each writer sets its own flag only
		// when neither is set (the classic write skew).
		claim := func(wide *patterns.Wide[tablekit.Entity], mine string) func() error {
			return func() error {
				_, err := wide.Modify(ctx, "p", "r", func(e *tablekit.Entity) error {
					if e.Properties["P0"].(int64)+e.Properties["Q0"].(int64) == 0 {
						e.Properties[mine] = int64(1)
					}
					return nil
				})
				return err
			}
		}
		errA, errB := w.race(t, claim(w.a, "P0"), claim(w.b, "Q0"))
		if errA != nil || errB != nil {
			t.Fatalf("Update A: %v, Update B: %v", errA, errB)
		}
		got := w.logical(t)
		if sum := got["P0"].(int64) + got["Q0"].(int64); sum != 1 {
			t.Fatalf("P0+Q0 = %d after two exclusive claims, want 1 (%v)", sum, got)
		}
	})

	t.Run("a put that shrinks", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		w := newWideRace(t, newGate(false, isBatch), str("P0P1Q0Q1R0R1", "0"))
		w.samePart(t, "R0", "R1")
		w.samePart(t, "P0", "P1")
		putA := str("P0P1Q0Q1", "0") // drops R0 and R1: their part goes
		putB := join(str("P0P1", "b"), str("Q0Q1R0R1", "0"))
		errA, errB := w.race(t,
			func() error { _, err := w.a.Upsert(ctx, wideEntity(putA)); return err },
			func() error { _, err := w.b.Upsert(ctx, wideEntity(putB)); return err })
		if errA != nil || errB != nil {
			t.Fatalf("Upsert A: %v, Upsert B: %v", errA, errB)
		}
		oneOf(t, w.logical(t), putA, putB)
	})

	t.Run("puts of a new entity", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		w := newWideRace(t, newGate(false, isBatch), nil)
		putA := str("P0P1Q0Q1", "a")
		putB := str("P0P1Q0Q1R0", "b")
		errA, errB := w.race(t,
			func() error { _, err := w.a.Upsert(ctx, wideEntity(putA)); return err },
			func() error { _, err := w.b.Upsert(ctx, wideEntity(putB)); return err })
		if errA != nil || errB != nil {
			t.Fatalf("Upsert A: %v, Upsert B: %v", errA, errB)
		}
		oneOf(t, w.logical(t), putA, putB)
	})
}

// TestWideGetNoMix: a Get whose range query comes back in several pages
// (one part per page here) while a writer changes every part in between
// must return one complete write, not the old first part with the new
// second.
func TestWideGetNoMix(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	init := map[string]any{"P0": "0", "P1": "0", "Q0": "0", "Q1": "0"}
	w := newWideRace(t, newGate(false, isNextPage), init, onePerPage{})
	w.samePart(t, "P0", "P1")
	putB := map[string]any{"P0": "b", "P1": "b", "Q0": "b", "Q1": "b"}
	var got tablekit.Entity
	errA, errB := w.race(t,
		func() (err error) { got, err = w.a.Get(ctx, "p", "r"); return err },
		func() error { _, err := w.b.Upsert(ctx, wideEntity(putB)); return err })
	if errA != nil || errB != nil {
		t.Fatalf("Get: %v, Upsert: %v", errA, errB)
	}
	oneOf(t, got.Properties, init, putB)
}

// TestWideBookkeeping: entities written before the consistency protocol
// (parts without bookkeeping) are read as they are and get the
// bookkeeping on their first write; the bookkeeping names are refused as
// properties of a logical entity.
func TestWideBookkeeping(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := namedTable(t, acct)
	w, err := patterns.NewWide[tablekit.Entity](tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, props := range []map[string]any{{"A": "a"}, {"B": "b"}} {
		rk, _ := patterns.WidePartKey("r", i)
		if _, err := tbl.Insert(ctx, tablekit.Entity{PartitionKey: "p", RowKey: rk, Properties: props}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := w.Get(ctx, "p", "r")
	if err != nil {
		t.Fatal(err)
	}
	oneOf(t, got.Properties, map[string]any{"A": "a", "B": "b"})
	if _, err := w.Merge(ctx, tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"A": "a2"}}, ""); err != nil {
		t.Fatal(err)
	}
	for _, e := range rawEntities(t, ctx, tbl, tablekit.Filter{}) {
		if s, _ := e.Properties[patterns.WideStampProperty].(string); len(s) != 16 {
			t.Fatalf("part %s has no stamp after a write: %v", e.RowKey, e.Properties)
		}
	}
	got, err = w.Get(ctx, "p", "r")
	if err != nil {
		t.Fatal(err)
	}
	oneOf(t, got.Properties, map[string]any{"A": "a2", "B": "b"})

	for _, name := range []string{patterns.WideStampProperty, patterns.WideManifestProperty} {
		_, err := w.Upsert(ctx, wideEntity(map[string]any{name: "x"}))
		if !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("Upsert with a property %s: %v, want ErrInvalidInput", name, err)
		}
	}
}

// TestWideConcurrentModifiesSerialize: writers on separate Accounts (as
// separate processes) each set one counter, in a part of its choosing, to
// one more than the largest counter they read. Serial updates raise the
// largest counter by exactly one each; two updates that both read the
// same version and wrote different parts would raise it by one together.
func TestWideConcurrentModifiesSerialize(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const writers, updates, parts = 6, 8, 4
	tbl := namedTable(t, testenv.Account(t, nil))
	init := map[string]any{}
	for i := range parts {
		init[fmt.Sprint("K", i)] = int64(0)
	}
	opts := &patterns.WideOptions{PropertiesPerPart: 1}
	tbl = typed[tablekit.Entity](t, tbl, &tablekit.TableOptions{Retry: tablekit.RetryPolicy{MaxAttempts: 200}})
	first, err := patterns.NewWide[tablekit.Entity](tbl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Upsert(ctx, wideEntity(init)); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, writers)
	for g := range writers {
		w, err := patterns.NewWide[tablekit.Entity](openEntityTable(t, testenv.Account(t, nil), tbl.Name()), opts)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for u := range updates {
				mine := fmt.Sprint("K", (g+u)%parts)
				_, err := w.Modify(ctx, "p", "r", func(e *tablekit.Entity) error {
					top := int64(0)
					for _, v := range e.Properties {
						top = max(top, v.(int64))
					}
					e.Properties[mine] = top + 1
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	top := int64(0)
	for _, v := range (&wideRace{tbl: tbl}).logical(t) {
		top = max(top, v.(int64))
	}
	if top != writers*updates {
		t.Fatalf("the largest counter is %d after %d serial updates", top, writers*updates)
	}
}

// TestWideWriteAnswerLost: a write's transaction is applied but its answer
// is lost (500), and the SDK's retry fails on the write's own effect (part
// 0's ETag changed), which tablekit reports as ErrOutcomeUnknown. Part 0
// then carries the write's stamp, so Insert, Upsert, Merge and Update report
// success, and the entity holds each write exactly once.
func TestWideWriteAnswerLost(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	var lose atomic.Pointer[loseAnswer]
	arm := func() *loseAnswer {
		p := &loseAnswer{match: func(r *http.Request) bool {
			return r.Method == http.MethodPost && strings.Contains(r.URL.Path, "$batch")
		}}
		lose.Store(p)
		return p
	}
	arm().done.Store(true) // not armed during setup
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{policyFunc(func(req *policy.Request) (*http.Response, error) { return lose.Load().Do(req) })}, Retry: policy.RetryOptions{RetryDelay: 10 * time.Millisecond}}})
	tbl := namedTable(t, acct)
	w, err := patterns.NewWide[tablekit.Entity](tbl, &patterns.WideOptions{PropertiesPerPart: 2})
	if err != nil {
		t.Fatal(err)
	}
	base := map[string]any{"A": "a1", "B": "b1", "C": "c1", "D": "d1", "E": int64(1)}
	var version azcore.ETag // the version the last step returned
	steps := []struct {
		name  string
		write func() (azcore.ETag, error)
		want  map[string]any
	}{
		{"Insert", func() (azcore.ETag, error) { return w.Insert(ctx, wideEntity(base)) }, base},
		{"Upsert", func() (azcore.ETag, error) {
			return w.Upsert(ctx, wideEntity(map[string]any{"A": "a2", "B": "b1", "C": "c1", "D": "d2", "E": int64(1)}))
		}, map[string]any{"A": "a2", "B": "b1", "C": "c1", "D": "d2", "E": int64(1)}},
		{"Merge", func() (azcore.ETag, error) {
			return w.Merge(ctx, tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"C": "c3"}}, "")
		},
			map[string]any{"A": "a2", "B": "b1", "C": "c3", "D": "d2", "E": int64(1)}},
		{"Modify", func() (azcore.ETag, error) {
			v, err := w.Modify(ctx, "p", "r", func(e *tablekit.Entity) error {
				e.Properties["E"] = e.Properties["E"].(int64) + 1 // applied twice would be 3
				return nil
			})
			return v.ETag, err
		}, map[string]any{"A": "a2", "B": "b1", "C": "c3", "D": "d2", "E": int64(2)}},
		{"Update", func() (azcore.ETag, error) {
			return w.Update(ctx, wideEntity(map[string]any{"A": "a3", "B": "b1", "C": "c3", "D": "d2", "E": int64(2)}), version)
		}, map[string]any{"A": "a3", "B": "b1", "C": "c3", "D": "d2", "E": int64(2)}},
	}
	for _, s := range steps {
		p := arm()
		etag, err := s.write()
		if !p.done.Load() {
			t.Fatalf("%s: no transaction answer was lost", s.name)
		}
		if err != nil {
			t.Fatalf("%s whose transaction was applied but whose answer was lost: %v (ErrOutcomeUnknown: %v)", s.name, err, errors.Is(err, tablekit.ErrOutcomeUnknown))
		}
		got, err := w.Get(ctx, "p", "r")
		if err != nil {
			t.Fatal(err)
		}
		oneOf(t, got.Properties, s.want)
		if etag == "" || got.ETag != etag {
			t.Fatalf("%s settled by its stamp returned version %q; Get reads version %q", s.name, etag, got.ETag)
		}
		version = etag
	}
}
