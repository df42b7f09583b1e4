package tablekit_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// The core chaos suite: concurrent writers, each with its own Account and
// Table (as separate processes would have), send transactions and bulk
// writes through a fault-injecting pipeline; then the stored state is
// checked against what each writer was told.
//
// Invariant: every entity ends as the in-order application of the actions
// acknowledged on it, plus any subset of the actions whose outcome is
// unknown, where a transaction applies all its actions or none. Each
// entity has one writer (its RowKey names the writer), so its actions are
// ordered; writers share partitions, so their transactions compete there.

// chaosItem is the entity the suite writes. A writes set A, merges set B.
type chaosItem struct {
	PK string `table:",pk"`
	RK string `table:",rk"`
	A  int    `table:"A,omitempty"`
	B  int    `table:"B,omitempty"`
}

// chaosAction is one action of an op, as the model applies it.
type chaosAction struct {
	kind chaosKind
	rk   string // entity key "pk/rk"
	val  int
}

// chaosKind is what a chaosAction does.
type chaosKind uint8

const (
	chaosInsert      chaosKind = iota // InsertAction
	chaosUpsert                       // UpsertAction: insert or replace
	chaosUpdate                       // UpdateAction: replace an existing entity
	chaosMergeUpsert                  // MergeAction with etag "": insert or merge
	chaosMerge                        // MergeAction with an etag: merge into an existing entity
	chaosDelete                       // DeleteAction
)

// entState is an entity in the model: absent, or its A and B.
type entState struct {
	present bool
	a, b    int
}

// apply returns st after a, and whether a could have succeeded on st.
func (a chaosAction) apply(st entState) (entState, bool) {
	switch a.kind {
	case chaosInsert:
		return entState{present: true, a: a.val}, !st.present
	case chaosDelete:
		return entState{}, st.present
	}
	if (a.kind == chaosUpdate || a.kind == chaosMerge) && !st.present {
		return st, false
	}
	if a.kind == chaosMerge || a.kind == chaosMergeUpsert {
		if !st.present {
			return entState{present: true, b: a.val}, true
		}
		st.b = a.val
		return st, true
	}
	return entState{present: true, a: a.val}, true
}

const (
	chaosPartitions   = 3
	chaosKeysPerWrite = 4 // entities per writer per partition
)

func TestChaosCore(t *testing.T) {
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		inj, err := chaos.New(seed, &chaos.Config{
			Reset: 0.05, AnswerLost: 0.07, ServerBusy: 0.04, TimeoutBefore: 0.02, TimeoutAfter: 0.03, Delay: 0.05,
			Services: []string{"table"},
		})
		if err != nil {
			t.Fatal(err)
		}
		setup := inj.Account(t, nil)
		inj.SetEnabled(false)
		name := tableNameOf(t, setup)
		inj.SetEnabled(true)

		writers, perWriter := chaos.Size(8, 16), chaos.Size(40, 150)
		h, err := chaos.RunWriters(ctx, seed, writers, func(ctx context.Context, w *chaos.Writer) error {
			// Throttling is injected on purpose: the writer's governor
			// slows down without logging every cut.
			gov := tablekit.NewGovernor(&tablekit.GovernorOptions{Logger: slog.New(slog.DiscardHandler)})
			acct, err := inj.Open(testenv.ConnectionString(t), &tablekit.Options{Governor: gov})
			if err != nil {
				return err
			}
			tbl, err := tablekit.OpenTable[chaosItem](acct, name, nil)
			if err != nil {
				return err
			}
			cw := &coreWriter{w: w, tbl: tbl, etags: map[string]azcore.ETag{}}
			for range perWriter {
				if w.Rand.IntN(3) == 0 {
					cw.bulk(ctx)
				} else {
					cw.transaction(ctx)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		inj.SetEnabled(false)
		st := inj.Stats()
		t.Logf("%d ops (%d ok, %d failed, %d unknown); faults: %s", h.Len(), h.Count(chaos.OK), h.Count(chaos.Failed), h.Count(chaos.Unknown), st.ByKind())
		if rate := st.FaultRate(); rate < 0.15 {
			t.Errorf("only %.1f%% of requests faulted, want at least 15%%", 100*rate)
		}

		stored := map[string]entState{}
		tbl, err := tablekit.OpenTable[chaosItem](setup, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		for e, err := range tbl.Query(chaos.NoFaults(ctx), tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true}) {
			if err != nil {
				t.Fatal(err)
			}
			stored[e.PK+"/"+e.RK] = entState{present: true, a: e.A, b: e.B}
		}
		unknown := map[string]int{}
		for _, op := range h.Ops() {
			if op.Outcome == chaos.Unknown && op.Name != "BulkWrite" {
				unknown[unknownReason(op.Err)]++
			}
		}
		t.Logf("unknown outcomes by reason: %v", unknown)
		var v chaos.Violations
		checkCoreHistory(h, stored, &v)
		v.Report(t)
	})
}

// coreWriter is one writer of the suite.
type coreWriter struct {
	w     *chaos.Writer
	tbl   *tablekit.Table[chaosItem]
	etags map[string]azcore.ETag // the ETag last acknowledged per entity
	seq   int
}

func (c *coreWriter) key(pk, rk int) (string, string) {
	return fmt.Sprintf("P%d", pk), fmt.Sprintf("w%02d-%d", c.w.Index, rk)
}

// action draws an action on entity pk/rk.
func (c *coreWriter) action(pk, rk string) (tablekit.Action[chaosItem], chaosAction) {
	c.seq++
	val := c.w.Index*1_000_000 + c.seq
	key := pk + "/" + rk
	ca := chaosAction{rk: key, val: val}
	v := chaosItem{PK: pk, RK: rk}
	etag := c.etags[key]
	if etag == "" {
		etag = azcore.ETagAny
	}
	switch n := c.w.Rand.IntN(10); {
	case n < 2:
		ca.kind = chaosInsert
		v.A = val
		return tablekit.InsertAction(v), ca
	case n < 4:
		ca.kind = chaosUpsert
		v.A = val
		return tablekit.UpsertAction(v), ca
	case n < 6:
		ca.kind = chaosMergeUpsert
		v.B = val
		return tablekit.MergeAction(v, ""), ca
	case n < 8:
		if c.w.Rand.IntN(2) == 1 {
			ca.kind = chaosMerge
			v.B = val
			return tablekit.MergeAction(v, etag), ca
		}
		ca.kind = chaosUpdate
		v.A = val
		return tablekit.UpdateAction(v, etag), ca
	default:
		ca.kind = chaosDelete
		return tablekit.DeleteAction(v, etag), ca
	}
}

// transaction sends 1-4 actions on distinct entities of one partition.
func (c *coreWriter) transaction(ctx context.Context) {
	pk := c.w.Rand.IntN(chaosPartitions)
	n := 1 + c.w.Rand.IntN(chaosKeysPerWrite)
	rks := c.w.Rand.Perm(chaosKeysPerWrite)[:n]
	var acts []tablekit.Action[chaosItem]
	var model []chaosAction
	for _, rk := range rks {
		p, r := c.key(pk, rk)
		a, m := c.action(p, r)
		acts, model = append(acts, a), append(model, m)
	}
	op := c.w.Do(ctx, "Transaction", fmt.Sprintf("P%d", pk), model, func(ctx context.Context) (any, error) {
		return c.tbl.Transaction(ctx, acts...)
	})
	c.learn(model, op)
}

// bulk writes 2-12 actions across partitions, repeats on one entity
// included, and records each item as its own op.
func (c *coreWriter) bulk(ctx context.Context) {
	n := 2 + c.w.Rand.IntN(11)
	var acts []tablekit.Action[chaosItem]
	var model []chaosAction
	for range n {
		p, r := c.key(c.w.Rand.IntN(chaosPartitions), c.w.Rand.IntN(chaosKeysPerWrite))
		a, m := c.action(p, r)
		acts, model = append(acts, a), append(model, m)
	}
	var res tablekit.BulkResult
	op := c.w.Do(ctx, "BulkWrite", "", len(acts), func(ctx context.Context) (any, error) {
		r, err := c.tbl.BulkWriter(&tablekit.BulkOptions{Concurrency: 4}).Write(ctx, acts)
		res = r
		return nil, err
	})
	failed := map[int]error{}
	for _, f := range res.Failed {
		failed[f.Index] = f.Err
	}
	for i, m := range model {
		item := chaos.Op{Name: "BulkItem", Key: m.rk, Value: []chaosAction{m}, Err: failed[i], Outcome: chaos.OutcomeOf(failed[i]), Faults: op.Faults, Start: op.Start, End: op.End}
		if failed[i] == nil {
			item.Result = []azcore.ETag{res.ETags[i]}
		}
		c.learn([]chaosAction{m}, c.w.Record(item))
	}
}

// learn updates the writer's known ETags from an op's outcome.
func (c *coreWriter) learn(model []chaosAction, op chaos.Op) {
	etags, _ := op.Result.([]azcore.ETag)
	for i, m := range model {
		switch {
		case op.Outcome == chaos.OK && i < len(etags):
			c.etags[m.rk] = etags[i]
		case op.Outcome != chaos.Failed:
			delete(c.etags, m.rk) // unknown: next time, any version
		}
	}
}

// checkCoreHistory checks the stored entities against the history: per
// writer, the reachable states of its entities must hold the stored one.
func checkCoreHistory(h *chaos.History, stored map[string]entState, v *chaos.Violations) {
	byWriter := map[int][]chaos.Op{}
	for _, op := range h.Ops() {
		if op.Name == "BulkWrite" {
			continue // its items are recorded one by one
		}
		byWriter[op.Writer] = append(byWriter[op.Writer], op)
	}
	ops := 0
	for w, list := range byWriter {
		sort.Slice(list, func(i, j int) bool { return list[i].Seq < list[j].Seq })
		states := []map[string]entState{{}}
		for _, op := range list {
			ops++
			acts := op.Value.([]chaosAction)
			var next []map[string]entState
			seen := map[string]bool{}
			add := func(s map[string]entState) {
				k := stateKey(s)
				if !seen[k] {
					seen[k] = true
					next = append(next, s)
				}
			}
			for _, s := range states {
				applied, ok := applyAll(s, acts)
				switch op.Outcome {
				case chaos.OK:
					if ok {
						add(applied)
					}
				case chaos.Failed:
					add(s)
				default:
					add(s)
					if ok {
						add(applied)
					}
				}
			}
			if len(next) == 0 {
				v.Addf("writer %d: %s was acknowledged, but no state the history allows lets it succeed", w, op)
				next = states
			}
			if len(next) > 4096 {
				next = next[:4096] // a bound, not expected to be reached
			}
			states = next
		}
		mine := map[string]entState{}
		prefix := fmt.Sprintf("/w%02d-", w)
		for k, s := range stored {
			if strings.Contains(k, prefix) {
				mine[k] = s
			}
		}
		if !slices.ContainsFunc(states, func(s map[string]entState) bool { return maps.Equal(s, mine) }) {
			v.Addf("writer %d: stored %v is not a state its history allows (%d candidates, e.g. %v)", w, mine, len(states), states[0])
		}
	}
	if ops < 300 {
		v.Addf("only %d operations ran, want at least 300", ops)
	}
}

// applyAll applies a transaction's actions (or one bulk item) to a copy of
// s: all or nothing.
func applyAll(s map[string]entState, acts []chaosAction) (map[string]entState, bool) {
	out := maps.Clone(s)
	for _, a := range acts {
		st, ok := a.apply(out[a.rk])
		if !ok {
			return s, false
		}
		if st.present {
			out[a.rk] = st
		} else {
			delete(out, a.rk)
		}
	}
	return out, true
}

func stateKey(s map[string]entState) string {
	keys := slices.Sorted(maps.Keys(s))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%v;", k, s[k])
	}
	return b.String()
}

// unknownReason sorts the error of an op with an unknown outcome.
func unknownReason(err error) string {
	var re *tablekit.RequestError
	var te *tablekit.TransactionError
	switch {
	case errors.As(err, &te) && te.Index >= 0:
		return "conflict after a lost answer: " + te.Code
	case errors.As(err, &re):
		return "no answer"
	case errors.Is(err, tablekit.ErrOutcomeUnknown):
		var se *tablekit.ServiceError
		if errors.As(err, &se) {
			return "unsettled: " + se.Code
		}
		return "unsettled"
	}
	return fmt.Sprintf("%T", err)
}
