package feed_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/stream"
)

const relayEnv = "TABLEKIT_FEED_RELAY"

// relayConfig is what a relay process is told.
type relayConfig struct {
	Conn          string
	Streams, Feed string
	View          string
	Seed          int64
	Index         int
}

// foldTag is the fold of the process suite's view: "prefix:version:tag"
// appended to the row's Folds.
func foldTag(v *tablekit.Entity, c feed.Change) error {
	s, _ := v.Properties["Folds"].(string)
	v.Properties["Folds"] = strings.TrimPrefix(fmt.Sprintf("%s %s:%d:%s", s, c.Stream.Prefix, c.Version, c.Data.(Tagged).Tag), " ")
	return nil
}

// relayProcess runs Relay.Run with a Projector until ctx ends (its stdin
// closes, see chaos.RunChild), through a fault injector of its own. It
// prints "STATS <eligible> <faults>" every 100 ms. It returns the exit
// code.
func relayProcess(ctx context.Context, cfg relayConfig) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 2
	}
	inj, err := chaos.New(cfg.Seed, chaos.Mixed(0.2))
	if err != nil {
		return fail(err)
	}
	acct, err := inj.Open(cfg.Conn, nil)
	if err != nil {
		return fail(err)
	}
	st, _ := tablekit.OpenTable[tablekit.Entity](acct, cfg.Streams, nil)
	ft, _ := tablekit.OpenTable[tablekit.Entity](acct, cfg.Feed, nil)
	vt, _ := tablekit.OpenTable[tablekit.Entity](acct, cfg.View, nil)
	store, err := stream.NewStore(st, newRegistry(), &stream.Options{PageSize: 20})
	if err != nil {
		return fail(err)
	}
	f, err := feed.New(store, ft, &feed.Options{Shards: 2})
	if err != nil {
		return fail(err)
	}
	proj, err := feed.NewProjector(vt, func(c feed.Change) []feed.Row {
		return []feed.Row{{PartitionKey: "view", RowKey: c.Stream.PartitionKey}}
	}, foldTag)
	if err != nil {
		return fail(err)
	}
	var outMu sync.Mutex
	handle := func(ctx context.Context, c feed.Change) error {
		outMu.Lock()
		fmt.Println("H") // handing a change: the test counts kills that land mid-round
		outMu.Unlock()
		return proj.Handle(ctx, c)
	}
	r, err := f.NewRelay([]feed.Subscription{{Name: "view", Handle: handle}}, &feed.RelayOptions{Interval: 20 * time.Millisecond})
	if err != nil {
		return fail(err)
	}
	lease, err := coord.NewLease(ft, "lease", "relay", fmt.Sprintf("p%d-%d", cfg.Index, os.Getpid()), &coord.LeaseOptions{Duration: 600 * time.Millisecond})
	if err != nil {
		return fail(err)
	}
	go func() {
		for ctx.Err() == nil {
			s := inj.Stats()
			outMu.Lock()
			fmt.Printf("STATS %d %d\n", s.Eligible("", ""), s.Faults())
			outMu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	if err := r.Run(ctx, lease); !errors.Is(err, context.Canceled) {
		return fail(err)
	}
	return 0
}

// TestChaosFeedProcesses is the relay check across OS processes: 2 relay
// processes (this test binary, re-executed, see TestMain), each through a
// fault injector of its own (20% of tries faulted), run Relay.Run on one
// lease and publish to a Projector, while 4 appenders in the test append
// through Feed.Append to 3 streams (faulted too). The test SIGKILLs a
// relay process chaos.Size(6, 20) times, every 300-800 ms (3 in 4 times
// the one that handed a change last: the leader), whatever it is doing,
// and starts a fresh one in its place; the appenders go on until the last
// kill. Then it waits for the relays to catch up and checks that the view
// is the fold of its streams: every event folded exactly once, in version
// order per stream, and that no checkpoint moved backwards (read every
// 5 ms).
func TestChaosFeedProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		inj, err := chaos.New(seed, chaos.Mixed(0.2))
		if err != nil {
			t.Fatal(err)
		}
		inj.SetEnabled(false)
		setup := inj.Account(t, nil)
		names := [3]string{testenv.CreateTable(t, setup), testenv.CreateTable(t, setup), testenv.CreateTable(t, setup)}
		inj.SetEnabled(true)
		conn := testenv.ConnectionString(t)
		openAll := func(acct *tablekit.Account) (*stream.Store, *feed.Feed, *tablekit.Table[tablekit.Entity], *tablekit.Table[tablekit.Entity]) {
			var tbl [3]*tablekit.Table[tablekit.Entity]
			var err error
			for i, name := range names {
				if tbl[i], err = tablekit.OpenTable[tablekit.Entity](acct, name, nil); err != nil {
					t.Fatal(err)
				}
			}
			s, err := stream.NewStore(tbl[0], newRegistry(), &stream.Options{PageSize: 20})
			if err != nil {
				t.Fatal(err)
			}
			f, err := feed.New(s, tbl[1], &feed.Options{Shards: 2})
			if err != nil {
				t.Fatal(err)
			}
			return s, f, tbl[1], tbl[2]
		}
		streams := []stream.ID{{PartitionKey: "s0"}, {PartitionKey: "s1"}, {PartitionKey: "s1", Prefix: "a"}}

		// The relay processes.
		type proc struct {
			*chaos.Process
			handing atomic.Int64 // unix ns of its last "H" line
		}
		var pmu sync.Mutex
		lastStats := map[int][2]int64{} // by process: eligible tries and faults, as last reported
		started := 0
		start := func(index int) *proc {
			p := &proc{}
			cfg := relayConfig{Conn: conn, Streams: names[0], Feed: names[1], View: names[2], Seed: seed*100 + int64(index), Index: index}
			p.Process = chaos.StartProcess(t, relayEnv, cfg, func(f []string) {
				if len(f) == 1 && f[0] == "H" {
					p.handing.Store(time.Now().UnixNano())
				}
				if len(f) == 3 && f[0] == "STATS" {
					e, _ := strconv.ParseInt(f[1], 10, 64)
					n, _ := strconv.ParseInt(f[2], 10, 64)
					pmu.Lock()
					lastStats[index] = [2]int64{e, n}
					pmu.Unlock()
				}
			})
			pmu.Lock()
			started++
			pmu.Unlock()
			return p
		}
		next := 0
		procs := []*proc{start(0), start(1)}
		next = 2

		var mu sync.Mutex
		var bad []string
		violate := func(format string, args ...any) {
			mu.Lock()
			bad = append(bad, fmt.Sprintf(format, args...))
			mu.Unlock()
		}

		// The monitor: checkpoints never move backwards.
		monCtx, stopMonitor := context.WithCancel(ctx)
		var monitor sync.WaitGroup
		monitor.Go(func() {
			acct, err := inj.Open(conn, nil)
			if err != nil {
				violate("monitor: %v", err)
				return
			}
			_, _, ft, _ := openAll(acct)
			last := map[string]int64{}
			for monCtx.Err() == nil {
				for e, err := range ft.Query(chaos.NoFaults(monCtx), tablekit.Where("PartitionKey eq 'cp~view'"), nil) {
					if err != nil {
						break
					}
					v, ok := e.Properties["Version"].(int64)
					if !ok {
						continue
					}
					if v < last[e.RowKey] {
						violate("checkpoint %s moved back from %d to %d", e.RowKey, last[e.RowKey], v)
					}
					last[e.RowKey] = max(last[e.RowKey], v)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})

		// The killer.
		kills := chaos.Size(6, 20)
		killCtx, stopKiller := context.WithCancel(ctx)
		var killer sync.WaitGroup
		killed := 0
		var killsDone atomic.Bool
		var midRound atomic.Int64 // kills of a process that handed a change in its last 50 ms
		killer.Go(func() {
			defer killsDone.Store(true)
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			for killed < kills && killCtx.Err() == nil {
				time.Sleep(time.Duration(300+rng.IntN(500)) * time.Millisecond)
				i := rng.IntN(len(procs))
				if rng.IntN(4) != 0 { // 3 in 4: the one that handed a change last, the leader
					for k := range procs {
						if procs[k].handing.Load() > procs[i].handing.Load() {
							i = k
						}
					}
				}
				victim := procs[i]
				handed, killedAt := victim.handing.Load(), time.Now()
				if err := victim.Kill(); err != nil {
					violate("kill: %v", err)
					return
				}
				if killedAt.Sub(time.Unix(0, handed)) < 50*time.Millisecond {
					midRound.Add(1)
				}
				procs[i] = start(next)
				next++
				killed++
			}
		})

		// The appenders.
		acked := map[string]bool{}
		_, err = chaos.RunWriters(ctx, seed, 4, func(ctx context.Context, w *chaos.Writer) error {
			acct, err := inj.Open(conn, nil)
			if err != nil {
				return err
			}
			s, f, _, _ := openAll(acct)
			// Append until the kills are over (at least chaos.Size(15, 40)
			// appends), so that relays are killed while there is work.
			for j := 0; j < chaos.Size(15, 40) || !killsDone.Load(); j++ {
				id := streams[w.Rand.IntN(len(streams))]
				evs := make([]stream.Event, 1+w.Rand.IntN(3))
				for k := range evs {
					tag := fmt.Sprintf("w%d-%d-%d", w.Index, j, k)
					evs[k] = stream.Event{ID: tag, Data: Tagged{Tag: tag}}
				}
				expected := int64(-1)
				for attempt := 0; ; attempt++ {
					if attempt == 500 {
						return fmt.Errorf("w%d-%d: not acknowledged after 500 tries", w.Index, j)
					}
					if expected < 0 {
						if expected, err = s.Version(ctx, id); err != nil {
							expected = -1
							continue
						}
					}
					_, err := f.Append(ctx, id, expected, evs)
					var ce *stream.ConflictError
					switch {
					case err == nil:
					case errors.As(err, &ce):
						expected = ce.Current
						continue
					default:
						expected = -1
						continue
					}
					break
				}
				mu.Lock()
				for _, ev := range evs {
					acked[ev.ID] = true
				}
				mu.Unlock()
				time.Sleep(time.Duration(w.Rand.IntN(40)) * time.Millisecond)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
		killer.Wait()
		stopKiller()

		// Catch up: the 2 live relays go on until every checkpoint is at
		// its stream's version.
		s, _, ft, vt := openAll(setup)
		nctx := chaos.NoFaults(ctx)
		versions := map[stream.ID]int64{}
		for _, id := range streams {
			v, err := s.Version(nctx, id)
			if err != nil {
				t.Fatal(err)
			}
			versions[id] = v
		}
		// How long a catch-up takes depends on the machine's load: it
		// fails when nothing moved for 3 minutes, not after a fixed time.
		catchUp, ok := chaos.WaitProgress(3*time.Minute, 50*time.Millisecond, func() (int64, bool) {
			progress, done, err := caughtUp(nctx, ft, vt, []string{"view"}, versions)
			if err != nil {
				return math.MinInt64, false // no progress seen
			}
			return progress, done
		})
		if !ok {
			violate("relays not caught up, nothing moved for 3 minutes (%v after the appends)", catchUp.Round(time.Second))
		}
		live := make([]*chaos.Process, len(procs))
		for i, p := range procs {
			live[i] = p.Process
		}
		if err := chaos.StopProcesses(time.Minute, live...); err != nil {
			t.Error(err)
		}
		stopMonitor()
		monitor.Wait()
		inj.SetEnabled(false)

		var v chaos.Violations
		for _, b := range bad {
			v.Addf("%s", b)
		}
		stored := map[stream.ID][]string{}
		total := 0
		for _, id := range streams {
			evs, err := tablekit.Collect(s.Forward(nctx, id, 1), 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				stored[id] = append(stored[id], ev.Data.(Tagged).Tag)
			}
			total += len(evs)
		}
		if total != len(acked) {
			v.Addf("%d events stored, %d acknowledged", total, len(acked))
		}
		rows, err := tablekit.Collect(vt.Query(nctx, tablekit.Filter{}, nil), 0)
		if err != nil {
			t.Fatal(err)
		}
		folded := map[stream.ID][]string{}
		for _, row := range rows {
			fs, _ := row.Properties["Folds"].(string)
			for f := range strings.FieldsSeq(fs) {
				parts := strings.SplitN(f, ":", 3)
				if len(parts) != 3 {
					v.Addf("view row %s: bad fold %q", row.RowKey, f)
					continue
				}
				id := stream.ID{PartitionKey: row.RowKey, Prefix: parts[0]}
				if parts[1] != strconv.Itoa(len(folded[id])+1) {
					v.Addf("view row %s: %v version %s folded after version %d", row.RowKey, id, parts[1], len(folded[id]))
				}
				folded[id] = append(folded[id], parts[2])
			}
		}
		for _, id := range streams {
			if w, g := fmt.Sprint(stored[id]), fmt.Sprint(folded[id]); w != g {
				v.Addf("%v: view folded %s, stream holds %s", id, g, w)
			}
		}
		pmu.Lock()
		var eligible, faults int64
		for _, st := range lastStats {
			eligible, faults = eligible+st[0], faults+st[1]
		}
		t.Logf("%d events appended by 4 appenders to %d streams; %d relay processes started, %d SIGKILLed (%d within 50 ms of handing a change); caught up %v after the appends; relay processes' faults as last reported: %d in %d eligible tries", total, len(streams), started, killed, midRound.Load(), catchUp.Round(time.Millisecond), faults, eligible)
		pmu.Unlock()
		v.Report(t)
	})
}
