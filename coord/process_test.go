package coord_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// TestChaosLeaseProcesses is the lease check across OS processes: 3
// contender processes (this test binary, re-executed, see TestMain) run
// Lease.Lead on one lease, each through a fault injector of its own (20%
// of tries faulted), and the leader appends to a protected partition's
// log with fenced, keyed writes (appendLog) while it leads. The test
// SIGKILLs the leader chaos.Size(5, 10) times, each time after it has led
// for a random 100-600 ms, and starts a fresh process in its place. It
// measures, for each kill, the time until another process reports
// leading (liveness: the bound is Duration + RetryPeriod plus request
// latency), and checks the invariants of TestChaosLease on the log:
// each term led by one process, terms strictly increasing in the order
// processes began leading, log terms never decreasing, each log row
// written by the leader of its term.

const contenderEnv = "TABLEKIT_COORD_CONTENDER"

// contenderConfig is what a contender process is told.
type contenderConfig struct {
	Conn, Table string
	Seed        int64
	Index       int
	Duration    time.Duration
	Margin      time.Duration
	Retry       time.Duration
}

// contenderProcess runs a contender until ctx ends (its stdin closes,
// see chaos.RunChild). It prints "LEAD <term> <unix ns>" when it starts
// leading and "STATS <eligible> <faults> <answer-lost>" every 100 ms. It
// returns the exit code.
func contenderProcess(ctx context.Context, cfg contenderConfig) int {
	inj, err := chaos.New(cfg.Seed, chaos.Mixed(0.2))
	if err != nil {
		fmt.Fprintln(os.Stderr, "contender:", err)
		return 2
	}
	acct, err := inj.Open(cfg.Conn, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "contender:", err)
		return 2
	}
	ents, _ := tablekit.OpenTable[tablekit.Entity](acct, cfg.Table, nil)
	logs, _ := tablekit.OpenTable[logRow](acct, cfg.Table, nil)
	writer, err := coord.NewWriter(logs, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "contender:", err)
		return 2
	}
	lease, err := coord.NewLease(ents, "lease", "L", fmt.Sprintf("p%d-%d", cfg.Index, os.Getpid()),
		&coord.LeaseOptions{Duration: cfg.Duration, DriftMargin: cfg.Margin})
	if err != nil {
		fmt.Fprintln(os.Stderr, "contender:", err)
		return 2
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		fmt.Printf(format+"\n", args...)
		out.Unlock()
	}
	go func() {
		for ctx.Err() == nil {
			st := inj.Stats()
			say("STATS %d %d %d", st.Eligible("", ""), st.Faults(), st.Count(chaos.AnswerLost, "", ""))
			time.Sleep(100 * time.Millisecond)
		}
	}()
	writes := 0
	for ctx.Err() == nil {
		err := lease.Lead(ctx, func(ctx context.Context, term int64) error {
			say("LEAD %d %d", term, time.Now().UnixNano())
			if err := writer.Fence(ctx, "data", term); err != nil {
				return nil // fenced out already: campaign again
			}
			for ctx.Err() == nil {
				writes++
				err := appendLog(ctx, logs, writer, term, cfg.Index, fmt.Sprintf("p%d-%d-%d", cfg.Index, os.Getpid(), writes))
				if errors.Is(err, coord.ErrFenced) {
					return nil
				}
				time.Sleep(20 * time.Millisecond)
			}
			return nil
		}, &coord.LeadOptions{RetryPeriod: cfg.Retry})
		if errors.Is(err, tablekit.ErrInvalidInput) {
			fmt.Fprintln(os.Stderr, "contender:", err)
			return 2
		}
	}
	return 0
}

// leadReport is a "LEAD" line of a contender.
type leadReport struct {
	index int
	term  int64
	at    time.Time
}

func TestChaosLeaseProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		acct := testenv.Account(t, nil)
		name := testenv.CreateTable(t, acct)
		cfg := contenderConfig{Conn: testenv.ConnectionString(t), Table: name, Duration: time.Second, Margin: 100 * time.Millisecond, Retry: 150 * time.Millisecond}

		var mu sync.Mutex
		var leads []leadReport
		stats := map[int][3]int64{}
		newLead := make(chan leadReport, 100)
		start := func(index int) *chaos.Process {
			c := cfg
			c.Index, c.Seed = index, seed*1000+int64(index)
			return chaos.StartProcess(t, contenderEnv, c, func(f []string) {
				switch {
				case len(f) == 3 && f[0] == "LEAD":
					term, _ := strconv.ParseInt(f[1], 10, 64)
					ns, _ := strconv.ParseInt(f[2], 10, 64)
					r := leadReport{index: index, term: term, at: time.Unix(0, ns)}
					mu.Lock()
					leads = append(leads, r)
					mu.Unlock()
					newLead <- r
				case len(f) == 4 && f[0] == "STATS":
					var s [3]int64
					for i := range s {
						s[i], _ = strconv.ParseInt(f[i+1], 10, 64)
					}
					mu.Lock()
					stats[index] = s
					mu.Unlock()
				}
			})
		}
		procs := map[int]*chaos.Process{}
		next := 0
		for range 3 {
			procs[next] = start(next)
			next++
		}

		// The observer reads the lease every 10 ms without faults, to
		// split each kill's latency into what the protocol bounds (from
		// the lease's last change by the killed leader to a new term,
		// at most Duration + RetryPeriod + round trips) and the rest.
		type change struct {
			at   time.Time
			term int64
		}
		var changes []change
		obsCtx, stopObs := context.WithCancel(ctx)
		obsDone := make(chan struct{})
		go func() {
			defer close(obsDone)
			ents, _ := tablekit.OpenTable[tablekit.Entity](acct, name, nil)
			var last azcore.ETag
			for obsCtx.Err() == nil {
				e, err := ents.Get(obsCtx, "lease", "L")
				if err == nil && e.ETag != last {
					last = e.ETag
					term, _ := e.Properties["Term"].(int64)
					mu.Lock()
					changes = append(changes, change{time.Now(), term})
					mu.Unlock()
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		type killRecord struct {
			term    int64
			at      time.Time
			latency time.Duration
			newTerm int64
		}
		var killed []killRecord

		rng := chaos.NewWriter(seed, 0, &chaos.History{}).Rand
		kills := chaos.Size(5, 10)
		var latencies []time.Duration
		wait := func(after time.Time, minTerm int64) (leadReport, bool) {
			timeout := time.After(30 * time.Second)
			for {
				select {
				case r := <-newLead:
					if r.at.After(after) && r.term > minTerm {
						return r, true
					}
				case <-timeout:
					return leadReport{}, false
				}
			}
		}
		cur, ok := wait(time.Time{}, 0)
		if !ok {
			t.Fatal("no process began leading within 30 s")
		}
		for k := 0; k < kills; k++ {
			time.Sleep(100*time.Millisecond + time.Duration(rng.Int64N(int64(500*time.Millisecond))))
			// The leader may have changed meanwhile (a lease lost to
			// faults): kill the latest.
			mu.Lock()
			cur = leads[len(leads)-1]
			mu.Unlock()
			victim := procs[cur.index]
			killedAt := time.Now()
			if err := victim.Kill(); err != nil {
				t.Fatal(err)
			}
			delete(procs, cur.index)
			procs[next] = start(next)
			next++
			r, ok := wait(killedAt, cur.term)
			if !ok {
				t.Fatalf("kill %d: no new leader within 30 s of killing the leader of term %d", k+1, cur.term)
			}
			latencies = append(latencies, r.at.Sub(killedAt))
			killed = append(killed, killRecord{term: cur.term, at: killedAt, latency: r.at.Sub(killedAt), newTerm: r.term})
			cur = r
		}
		time.Sleep(20 * time.Millisecond)
		stopObs()
		<-obsDone
		if err := chaos.StopProcesses(time.Minute, slices.Collect(maps.Values(procs))...); err != nil {
			t.Error(err)
		}

		// Invariants.
		var v chaos.Violations
		mu.Lock()
		defer mu.Unlock()
		byTerm := map[int64]int{}
		slices.SortFunc(leads, func(a, b leadReport) int { return a.at.Compare(b.at) })
		for i, r := range leads {
			if h, ok := byTerm[r.term]; ok && h != r.index {
				v.Addf("term %d led by processes %d and %d", r.term, h, r.index)
			}
			byTerm[r.term] = r.index
			if i > 0 && r.term <= leads[i-1].term {
				v.Addf("process %d began leading with term %d after process %d with term %d", r.index, r.term, leads[i-1].index, leads[i-1].term)
			}
		}
		logs, _ := tablekit.OpenTable[logRow](acct, name, nil)
		rows, err := tablekit.Collect(logs.Query(ctx, tablekit.RowKeyPrefix("data", "log-"), &tablekit.QueryOptions{KeyOrder: true}), 0)
		if err != nil {
			t.Fatal(err)
		}
		var prev logRow
		for i, row := range rows {
			if row.Seq != int64(i+1) {
				v.Addf("log row %s has Seq %d, want %d", row.RK, row.Seq, i+1)
			}
			if row.Term < prev.Term {
				v.Addf("log row %d of term %d after row %d of term %d", row.Seq, row.Term, prev.Seq, prev.Term)
			}
			if h, ok := byTerm[row.Term]; !ok || h != row.Holder {
				v.Addf("log row %d written by process %d with term %d, led by %d (%v)", row.Seq, row.Holder, row.Term, h, ok)
			}
			prev = row
		}
		var eligible, faults, lost int64
		for _, s := range stats {
			eligible, faults, lost = eligible+s[0], faults+s[1], lost+s[2]
		}
		bound := cfg.Duration + cfg.Retry
		slices.Sort(latencies)
		within := 0
		for _, l := range latencies {
			if l <= bound {
				within++
			}
		}
		t.Logf("%d processes started, %d SIGKILLed leaders, %d terms led, %d log rows; faults in the processes (as last reported): %d of %d tries (%.1f%%), %d answers lost",
			next, kills, len(byTerm), len(rows), faults, eligible, 100*float64(faults)/float64(max(eligible, 1)), lost)
		t.Logf("liveness: time from SIGKILL to a new leader (Duration %v + RetryPeriod %v = %v): min %v, median %v, max %v; %d of %d within the bound",
			cfg.Duration, cfg.Retry, bound, latencies[0].Round(time.Millisecond), latencies[len(latencies)/2].Round(time.Millisecond),
			latencies[len(latencies)-1].Round(time.Millisecond), within, len(latencies))
		t.Logf("LIVENESS %v", roundAll(latencies))
		// The protocol's part: from the killed leader's last change of the
		// lease (as the observer saw it, up to 10 ms late) to the first
		// sight of a higher term.
		var protocol []time.Duration
		for _, k := range killed {
			var lastOld, firstNew time.Time
			for _, c := range changes {
				switch {
				case c.term == k.term:
					lastOld = c.at
				case c.term > k.term && firstNew.IsZero():
					firstNew = c.at
				}
			}
			if lastOld.IsZero() || firstNew.IsZero() {
				t.Logf("kill of term %d: the observer missed its changes", k.term)
				continue
			}
			protocol = append(protocol, firstNew.Sub(lastOld))
			if k.latency > bound {
				t.Logf("SLOW kill of term %d: SIGKILL to new leader %v; last renewal %v before the kill; that renewal to the new term %v (term %d)",
					k.term, k.latency.Round(time.Millisecond), k.at.Sub(lastOld).Round(time.Millisecond), firstNew.Sub(lastOld).Round(time.Millisecond), k.newTerm)
			}
		}
		slices.Sort(protocol)
		if len(protocol) > 0 {
			over := 0
			for _, p := range protocol {
				if p > bound {
					over++
				}
			}
			t.Logf("PROTOCOL last renewal to new term: min %v, median %v, max %v; %d of %d over Duration + RetryPeriod %v: %v",
				protocol[0].Round(time.Millisecond), protocol[len(protocol)/2].Round(time.Millisecond), protocol[len(protocol)-1].Round(time.Millisecond),
				over, len(protocol), bound, roundAll(protocol))
		}
		for _, l := range latencies {
			if l > 2*bound {
				v.Addf("a new leader %v after a kill, more than twice Duration + RetryPeriod", l)
			}
		}
		if float64(faults) < 0.15*float64(eligible) {
			v.Addf("fault rate %d of %d < 15%%", faults, eligible)
		}
		v.Report(t)
	})
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
