package coord_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// The lease chaos suite: chaos.Size(8, 12) contenders, each with its own
// Account (as separate processes would have) and its own drifting clock,
// campaign for one lease through a fault injector that fails ~20% of tries
// (answer-lost included). A holder renews, sometimes pauses without
// renewing (a GC pause, a frozen VM) and then writes anyway, and sometimes
// releases. Every write goes to a protected partition as a fenced, keyed
// transaction that appends a row to a log there (rows "log-<seq>", each
// with the writer's term) and advances a sequence row.
//
// Invariants:
//   - at most one holder per term: no term is acquired by two contenders;
//   - terms strictly increase: each contender's terms increase, and the
//     log's terms never decrease along its sequence, and every log row is
//     written by the holder of its term (a stale holder's write is refused);
//   - no lease call ends in tablekit.ErrOutcomeUnknown;
//   - within the drift bound, no contender believes it holds term N (Held)
//     after a later term's acquisition has returned.
//
// Beyond the drift bound (clock rates ±30%, drift margin 1% of the
// duration, a quarter of the rounds pauses) holders do believe they hold
// after a takeover, and the test shows that fencing still refuses every
// one of their writes.

// driftClock is a clock running at rate times real time.
type driftClock struct {
	start time.Time
	base  time.Time
	rate  float64
}

func newDriftClock(rate float64) *driftClock {
	return &driftClock{start: time.Now(), base: time.Unix(2_000_000, 0), rate: rate}
}

func (c *driftClock) Now() time.Time {
	return c.base.Add(time.Duration(float64(time.Since(c.start)) * c.rate))
}

// leaseRun is what one seed's contenders record.
type leaseRun struct {
	mu           sync.Mutex
	acquired     map[int64]int       // term -> contender
	acquiredAt   map[int64]time.Time // term -> when its Acquire returned
	byContender  [][]int64           // each contender's terms, in order
	believedLast map[int64]time.Time // term -> the latest real time a contender started a Held() call that said it held it
	unknown      []error             // lease or keyed calls that ended in ErrOutcomeUnknown
	fenced       int                 // writes refused with ErrFenced
	staleFenced  int                 // of those, after a pause in which the lease passed on
	written      int                 // writes acknowledged
	pauses       int
	releases     int
	errs         map[string]int
}

func (r *leaseRun) errorf(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if errors.Is(err, tablekit.ErrOutcomeUnknown) {
		r.unknown = append(r.unknown, err)
	}
	msg := err.Error()
	if len(msg) > 80 {
		msg = msg[:80]
	}
	r.errs[msg]++
}

type leaseParams struct {
	duration, margin, retry time.Duration
	drift                   float64 // clock rates in [1-drift, 1+drift]
	pause                   float64 // the chance that a holder's round is a pause
	run                     time.Duration
}

func TestChaosLease(t *testing.T) {
	chaos.Run(t, func(t *testing.T, seed int64) {
		p := leaseParams{duration: 500 * time.Millisecond, margin: 60 * time.Millisecond, retry: 60 * time.Millisecond,
			drift: 0.05, pause: 0.12, run: time.Duration(chaos.Size(8, 15)) * time.Second}
		r := runLeaseChaos(t, seed, p)
		r.mu.Lock()
		defer r.mu.Unlock()
		// Within the bound: 2 × 5% × 500 ms = 50 ms < 60 ms margin.
		var v chaos.Violations
		for n, last := range r.believedLast {
			for m, at := range r.acquiredAt {
				if m > n && last.After(at) {
					v.Addf("term %d believed held %v after term %d was acquired", n, last.Sub(at), m)
				}
			}
		}
		v.Report(t)
	})
}

func TestChaosLeaseBeyondDrift(t *testing.T) {
	chaos.Run(t, func(t *testing.T, seed int64) {
		p := leaseParams{duration: 500 * time.Millisecond, margin: 5 * time.Millisecond, retry: 60 * time.Millisecond,
			drift: 0.3, pause: 0.25, run: time.Duration(chaos.Size(8, 15)) * time.Second}
		r := runLeaseChaos(t, seed, p)
		r.mu.Lock()
		defer r.mu.Unlock()
		overlaps := 0
		for n, last := range r.believedLast {
			for m, at := range r.acquiredAt {
				if m > n && last.After(at) {
					overlaps++
					break
				}
			}
		}
		t.Logf("beyond the drift bound: %d terms believed held after a later term was acquired; %d stale writes refused by fencing", overlaps, r.staleFenced)
		if r.staleFenced == 0 {
			t.Errorf("no stale holder's write was refused: the run did not exercise fencing")
		}
	})
}

// logRow is a row of the protected partition's log; seqRow its sequence.
type logRow struct {
	PK     string      `table:",pk"`
	RK     string      `table:",rk"`
	Term   int64       `table:"Term"`
	Holder int         `table:"Holder"`
	Seq    int64       `table:"Seq"`
	ETag   azcore.ETag `table:",etag"`
}

func runLeaseChaos(t *testing.T, seed int64, p leaseParams) *leaseRun {
	ctx := context.Background()
	inj, err := chaos.New(seed, chaos.Mixed(0.2))
	if err != nil {
		t.Fatal(err)
	}
	n := chaos.Size(8, 12)
	accts := make([]*tablekit.Account, n)
	for i := range accts {
		accts[i] = inj.Account(t, nil)
	}
	inj.SetEnabled(false)
	name := testenv.CreateTable(t, accts[0])
	inj.SetEnabled(true)
	r := &leaseRun{acquired: map[int64]int{}, acquiredAt: map[int64]time.Time{}, byContender: make([][]int64, n),
		believedLast: map[int64]time.Time{}, errs: map[string]int{}}
	end := time.Now().Add(p.run)
	hist, err := chaos.RunWriters(ctx, seed, n, func(ctx context.Context, w *chaos.Writer) error {
		return contend(ctx, w, accts[w.Index], name, p, end, r)
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = hist
	st := inj.Stats()
	inj.SetEnabled(false)

	var v chaos.Violations
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, terms := range r.byContender {
		for k := 1; k < len(terms); k++ {
			if terms[k] <= terms[k-1] {
				v.Addf("contender %d acquired term %d after term %d", i, terms[k], terms[k-1])
			}
		}
	}
	for _, e := range r.unknown {
		v.Addf("ended in ErrOutcomeUnknown: %v", e)
	}
	tbl, err := tablekit.OpenTable[logRow](accts[0], name, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tablekit.Collect(tbl.Query(ctx, tablekit.RowKeyPrefix("data", "log-"), &tablekit.QueryOptions{KeyOrder: true}), 0)
	if err != nil {
		t.Fatal(err)
	}
	var prev logRow
	for i, row := range rows {
		if row.Seq != int64(i+1) {
			v.Addf("log row %s has Seq %d, want %d", row.RK, row.Seq, i+1)
		}
		if row.Term < prev.Term {
			v.Addf("log row %d of term %d after row %d of term %d: a stale holder's write was applied", row.Seq, row.Term, prev.Seq, prev.Term)
		}
		if h, ok := r.acquired[row.Term]; !ok || h != row.Holder {
			v.Addf("log row %d written by contender %d with term %d, which it did not acquire (acquired by %d, %v)", row.Seq, row.Holder, row.Term, h, ok)
		}
		prev = row
	}
	terms := mapsKeys(r.acquired)
	slices.Sort(terms)
	t.Logf("%d contenders, %v: %d acquisitions (terms %v...), %d log rows, %d writes acknowledged, %d fenced (%d after a pause), %d pauses, %d releases",
		n, p.run, len(terms), head(terms, 8), len(rows), r.written, r.fenced, r.staleFenced, r.pauses, r.releases)
	t.Logf("faults: %s", st.String())
	t.Logf("errors seen: %v", topErrs(r.errs))
	if st.FaultRate() < 0.15 {
		v.Addf("fault rate %.1f%% < 15%%", 100*st.FaultRate())
	}
	if st.Count(chaos.AnswerLost, "", "") == 0 {
		v.Addf("no answer lost")
	}
	if len(terms) < 3 {
		v.Addf("only %d acquisitions: the run did not exercise takeovers", len(terms))
	}
	v.Report(t)
	return r
}

func mapsKeys(m map[int64]int) []int64 {
	var ks []int64
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func head(s []int64, n int) []int64 { return s[:min(n, len(s))] }

func topErrs(m map[string]int) string {
	type kv struct {
		k string
		n int
	}
	var s []kv
	for k, n := range m {
		s = append(s, kv{k, n})
	}
	sort.Slice(s, func(i, j int) bool { return s[i].n > s[j].n })
	out := ""
	for i, e := range s {
		if i == 6 {
			break
		}
		out += fmt.Sprintf("\n  %d× %s", e.n, e.k)
	}
	return out
}

// contend is one contender's loop until end.
func contend(ctx context.Context, w *chaos.Writer, acct *tablekit.Account, name string, p leaseParams, end time.Time, r *leaseRun) error {
	rng := w.Rand
	clock := newDriftClock(1 + p.drift*(2*rng.Float64()-1))
	ents, err := tablekit.OpenTable[tablekit.Entity](acct, name, nil)
	if err != nil {
		return err
	}
	lease, err := coord.NewLease(ents, "lease", "L", fmt.Sprintf("c%d", w.Index),
		&coord.LeaseOptions{Duration: p.duration, DriftMargin: p.margin, Clock: clock.Now})
	if err != nil {
		return err
	}
	logs, err := tablekit.OpenTable[logRow](acct, name, nil)
	if err != nil {
		return err
	}
	writer, err := coord.NewWriter(logs, nil)
	if err != nil {
		return err
	}
	// The belief monitor: samples Held every 2 ms.
	mctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for mctx.Err() == nil {
			at := time.Now()
			if term, ok := lease.Held(); ok {
				r.mu.Lock()
				if at.After(r.believedLast[term]) {
					r.believedLast[term] = at
				}
				r.mu.Unlock()
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	writes := 0
	for time.Now().Before(end) {
		term, err := lease.Acquire(ctx)
		if err != nil {
			if !errors.Is(err, coord.ErrHeld) {
				r.errorf(err)
			}
			time.Sleep(p.retry/2 + time.Duration(rng.Int64N(int64(p.retry/2))))
			continue
		}
		r.mu.Lock()
		if h, ok := r.acquired[term]; ok && h != w.Index {
			r.mu.Unlock()
			return fmt.Errorf("term %d acquired by contender %d and %d", term, h, w.Index)
		}
		if _, ok := r.acquired[term]; !ok {
			r.acquired[term] = w.Index
			r.acquiredAt[term] = time.Now()
			r.byContender[w.Index] = append(r.byContender[w.Index], term)
		}
		r.mu.Unlock()
		if err := writer.Fence(ctx, "data", term); err != nil {
			if !errors.Is(err, coord.ErrFenced) {
				r.errorf(err)
			}
			continue
		}
		for round := 0; time.Now().Before(end); round++ {
			paused := false
			switch x := rng.Float64(); {
			case x < p.pause: // pause past the lease, then write anyway
				r.mu.Lock()
				r.pauses++
				r.mu.Unlock()
				time.Sleep(p.duration/2 + time.Duration(rng.Int64N(int64(p.duration*3/2))))
				paused = true
			case x < p.pause+0.06:
				r.mu.Lock()
				r.releases++
				r.mu.Unlock()
				if err := lease.Release(ctx); err != nil {
					r.errorf(err)
				}
			default:
				time.Sleep(p.retry/2 + time.Duration(rng.Int64N(int64(p.retry/2))))
				if err := lease.Renew(ctx); err != nil {
					if !errors.Is(err, coord.ErrLost) {
						r.errorf(err)
						continue
					}
				}
			}
			if _, ok := lease.Held(); !ok && !paused {
				break
			}
			writes++
			err := appendLog(ctx, logs, writer, term, w.Index, fmt.Sprintf("c%d-%d", w.Index, writes))
			r.mu.Lock()
			switch {
			case err == nil:
				r.written++
			case errors.Is(err, coord.ErrFenced):
				r.fenced++
				if paused {
					r.staleFenced++
				}
			}
			r.mu.Unlock()
			if err != nil {
				if !errors.Is(err, coord.ErrFenced) {
					r.errorf(err)
				}
				break
			}
			if paused {
				break
			}
		}
	}
	_ = lease.Release(ctx)
	return nil
}

// appendLog appends a row of term to the protected partition's log, as a
// fenced, keyed transaction on the sequence row read just before.
func appendLog(ctx context.Context, logs *tablekit.Table[logRow], w *coord.Writer[logRow], term int64, holder int, key string) error {
	seq, err := logs.Get(ctx, "data", "seq")
	var seqAct tablekit.Action[logRow]
	switch {
	case errors.Is(err, tablekit.ErrNotFound):
		seq = logRow{PK: "data", RK: "seq"}
	case err != nil:
		return err
	}
	next := logRow{PK: "data", RK: "seq", Seq: seq.Seq + 1, Term: term, Holder: holder}
	if seq.Seq == 0 && err != nil {
		seqAct = tablekit.InsertAction(next)
	} else {
		seqAct = tablekit.UpdateAction(next, seq.ETag)
	}
	row := logRow{PK: "data", RK: fmt.Sprintf("log-%08d", next.Seq), Term: term, Holder: holder, Seq: next.Seq}
	_, err = w.Transaction(ctx, coord.Write{Term: term, Key: key, Fingerprint: key}, seqAct, tablekit.InsertAction(row))
	return err
}
