package feed_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/stream"
)

const appenderEnv = "TABLEKIT_FEED_APPENDER"

// appendJob is one append of an appender process: the events' tags (also
// their ids) and the index of the stream.
type appendJob struct {
	Stream int
	Tags   []string
}

// appenderConfig is what an appender process is told.
type appenderConfig struct {
	Conn          string
	Streams, Feed string
	IDs           []stream.ID
	Seed          int64
	Serial        int
	// Resume, if set, is the append a killed process had in flight: the
	// process sends it first, with the same ids.
	Resume *appendJob
}

// appenderProcess appends through Feed.Append until ctx ends (its stdin
// closes, see chaos.RunChild), through a fault injector of its own, as
// the in-process appenders of TestChaosFeedProcesses do: 1 to 3 events
// with ids, at the version read, sent again at the version read anew (or
// the conflict's) until acknowledged. Before each append it prints "TRY
// <stream> <tag,...>", after its acknowledgement "ACK <tag,...>" (each
// line one write to the unbuffered stdout, so a SIGKILL cannot take back a
// line written), and "STATS <eligible> <faults>" every 100 ms. It returns
// the exit code.
func appenderProcess(ctx context.Context, cfg appenderConfig) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "appender:", err)
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
	store, err := stream.NewStore(st, newRegistry(), &stream.Options{PageSize: 20})
	if err != nil {
		return fail(err)
	}
	f, err := feed.New(store, ft, &feed.Options{Shards: 2})
	if err != nil {
		return fail(err)
	}
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	go func() {
		for ctx.Err() == nil {
			s := inj.Stats()
			say("STATS %d %d", s.Eligible("", ""), s.Faults())
			time.Sleep(100 * time.Millisecond)
		}
	}()
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 11))
	for j := 0; ctx.Err() == nil; j++ {
		job := cfg.Resume
		if j > 0 || job == nil {
			job = &appendJob{Stream: rng.IntN(len(cfg.IDs))}
			for k := range 1 + rng.IntN(3) {
				job.Tags = append(job.Tags, fmt.Sprintf("p%d-%d-%d", cfg.Serial, j, k))
			}
		}
		id := cfg.IDs[job.Stream]
		evs := make([]stream.Event, len(job.Tags))
		for k, tag := range job.Tags {
			evs[k] = stream.Event{ID: tag, Data: Tagged{Tag: tag}}
		}
		say("TRY %d %s", job.Stream, strings.Join(job.Tags, ","))
		expected := int64(-1)                  // unknown: read it
		logged := job.Stream == len(cfg.IDs)-1 // the last stream is a log of Table writes
		for attempt := 0; ; attempt++ {
			if ctx.Err() != nil {
				return 0 // told to stop: the append stays in flight
			}
			if attempt == 500 {
				return fail(fmt.Errorf("%v not acknowledged after 500 tries", job.Tags))
			}
			if logged {
				expected = stream.AnyVersion
			} else if expected < 0 {
				if expected, err = store.Version(ctx, id); err != nil {
					expected = -1
					continue
				}
			}
			_, err := f.Append(ctx, id, expected, evs)
			var ce *stream.ConflictError
			switch {
			case err == nil:
			case errors.Is(err, stream.ErrPartlyApplied):
				return fail(fmt.Errorf("%v: %w", job.Tags, err))
			case logged:
				continue // the log's conflicts are Append's own; any error: send it again
			case errors.As(err, &ce):
				expected = ce.Current
				continue
			default:
				expected = -1
				continue
			}
			break
		}
		say("ACK %s", strings.Join(job.Tags, ","))
		time.Sleep(time.Duration(rng.IntN(15)) * time.Millisecond)
	}
	return 0
}

// TestChaosFeedAppenderProcesses is the appender check across OS
// processes: 3 appender processes (this test binary, re-executed, see
// TestMain and appenderProcess), each through a fault injector of its own
// (20% of tries faulted), append to 3 streams through Feed.Append (the
// third, a log of Table writes, at stream.AnyVersion) while a
// relay in the test (faulted too) publishes to a Projector. The test
// SIGKILLs an appender chaos.Size(6, 20) times, every 100-400 ms, each
// time one that has an append in flight (a TRY line with no ACK after
// it; the kill comes 0-11 ms after the look, so some land between the
// append's transaction and its ACK), and starts a fresh one in its
// place: half the time it sends the killed process's append again first
// (same ids, at the version it reads or at AnyVersion), which must then
// be acknowledged and stored once. After the kills the appenders stop and
// the test waits for the relay to catch up: every checkpoint at its
// stream's version, and no mark left that its stream has reached. It
// appends nothing past the marks at the end.
//
// Invariants: per stream, versions 1..n with no gap and no event id twice;
// every acknowledged event stored exactly once, in its append's stream, its
// append's events consecutive and in order; every other stored event
// belongs to an append a kill left unknown, which is stored whole or not
// at all; the view is the fold of the streams (each event folded once, in
// version order); every mark left is short of its Target, on a stream
// with an append a kill (or the stop) left unknown that did not land: the
// cost of an append given up in flight (the package doc).
func TestChaosFeedAppenderProcesses(t *testing.T) {
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

		var mu sync.Mutex // guards what follows, and the procs' fields
		var bad []string
		violate := func(format string, args ...any) {
			mu.Lock()
			bad = append(bad, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
		acked := map[string]int{}         // tag -> stream index
		ackedJobs := [][]string{}         // the acknowledged appends, as their tags
		unknown := map[string]appendJob{} // first tag -> append in flight when its process was killed, not acknowledged since

		// The relay and its projector, in this process.
		relayCtx, stopRelay := context.WithCancel(ctx)
		var relayDone sync.WaitGroup
		relayDone.Go(func() {
			acct, err := inj.Open(conn, nil)
			if err != nil {
				violate("relay: %v", err)
				return
			}
			_, f, ft, vt := openAll(acct)
			proj, err := feed.NewProjector(vt, func(c feed.Change) []feed.Row {
				return []feed.Row{{PartitionKey: "view", RowKey: c.Stream.PartitionKey}}
			}, foldTag)
			if err != nil {
				violate("relay: %v", err)
				return
			}
			r, err := f.NewRelay([]feed.Subscription{{Name: "view", Handle: proj.Handle}}, &feed.RelayOptions{Interval: 20 * time.Millisecond})
			if err != nil {
				violate("relay: %v", err)
				return
			}
			lease, err := coord.NewLease(ft, "lease", "relay", "relay", &coord.LeaseOptions{Duration: 600 * time.Millisecond})
			if err != nil {
				violate("relay: %v", err)
				return
			}
			if err := r.Run(relayCtx, lease); !errors.Is(err, context.Canceled) {
				violate("relay: Run: %v", err)
			}
		})

		// The appender processes.
		type proc struct {
			*chaos.Process
			inFlight *appendJob // its last TRY with no ACK yet
			stats    [2]int64   // eligible tries and faults, as last reported
		}
		var all []*proc
		start := func(serial int, resume *appendJob) *proc {
			p := &proc{}
			cfg := appenderConfig{Conn: conn, Streams: names[0], Feed: names[1], IDs: streams, Seed: seed*1000 + int64(serial), Serial: serial, Resume: resume}
			p.Process = chaos.StartProcess(t, appenderEnv, cfg, func(f []string) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case len(f) == 3 && f[0] == "TRY":
					i, _ := strconv.Atoi(f[1])
					p.inFlight = &appendJob{Stream: i, Tags: strings.Split(f[2], ",")}
				case len(f) == 2 && f[0] == "ACK":
					tags := strings.Split(f[1], ",")
					if p.inFlight == nil || strings.Join(p.inFlight.Tags, ",") != f[1] {
						bad = append(bad, fmt.Sprintf("appender %d acknowledged %v, which it did not try", serial, tags))
					} else {
						for _, tag := range tags {
							acked[tag] = p.inFlight.Stream
						}
						ackedJobs = append(ackedJobs, tags)
						delete(unknown, tags[0])
					}
					p.inFlight = nil
				case len(f) == 3 && f[0] == "STATS":
					p.stats[0], _ = strconv.ParseInt(f[1], 10, 64)
					p.stats[1], _ = strconv.ParseInt(f[2], 10, 64)
				}
			})
			mu.Lock()
			all = append(all, p)
			mu.Unlock()
			return p
		}
		const appenders = 3
		procs := make([]*proc, appenders)
		for i := range procs {
			procs[i] = start(i, nil)
		}
		next := appenders

		// The killer: each victim has an append in flight.
		kills := chaos.Size(6, 20)
		killed, resumed, idle := 0, 0, 0
		rng := rand.New(rand.NewPCG(uint64(seed), 0xa99e))
		for killed < kills {
			time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond)
			var victim int
			var job *appendJob
			// 60 s, not 2: on a loaded machine an appender process can
			// take seconds to start, and Azurite sometimes answers
			// nothing for up to ~30 s (outbox's worker suite saw it).
			for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(2 * time.Millisecond) {
				victim = rng.IntN(appenders)
				mu.Lock()
				busy := procs[victim].inFlight != nil
				mu.Unlock()
				if busy {
					// A few ms into the append, so that some kills land
					// after its transaction and before its ACK.
					time.Sleep(time.Duration(rng.IntN(12)) * time.Millisecond)
					if err := procs[victim].Kill(); err != nil { // every line it wrote is read
						t.Fatal(err)
					}
					mu.Lock()
					if job = procs[victim].inFlight; job != nil {
						unknown[job.Tags[0]] = *job
					}
					mu.Unlock()
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no appender had an append in flight for 60 s (%d kills done)", killed)
				}
			}
			if job == nil {
				idle++ // acknowledged between the look and the kill
			} else {
				killed++
			}
			var resume *appendJob
			if job != nil && rng.IntN(2) == 0 {
				resume = job
				resumed++
			}
			procs[victim] = start(next, resume)
			next++
		}
		live := make([]*chaos.Process, len(procs))
		for i, p := range procs {
			live[i] = p.Process
		}
		if err := chaos.StopProcesses(time.Minute, live...); err != nil {
			t.Fatal(err)
		}
		for _, p := range procs {
			if p.inFlight != nil { // stopped between its TRY and its ACK
				unknown[p.inFlight.Tags[0]] = *p.inFlight
			}
		}

		// Catching up: wait until every checkpoint is at its stream's
		// version and every mark left is one the relay must keep: a mark
		// whose Target its stream has not reached, which only an append
		// left unknown by a kill (or the stop) may have left: it may still
		// be on its way, for all the relay can tell.
		s, _, ft, vt := openAll(setup)
		nctx := chaos.NoFaults(ctx)
		type mark struct {
			id     stream.ID
			target int64
		}
		marks := func() ([]mark, error) {
			var m []mark
			for e, err := range ft.Query(nctx, tablekit.Where("PartitionKey ge 'dir~' and PartitionKey lt 'dir~~' and (RowKey ge 'p~' and RowKey lt 'p~~' or Dirty eq true)"), nil) {
				if err != nil {
					return nil, err
				}
				pk, _ := e.Properties["Stream"].(string)
				prefix, _ := e.Properties["Prefix"].(string)
				target, _ := e.Properties["Target"].(int64)
				if e.Properties["Dirty"] != nil {
					target = -1 // an earlier version's kind of mark: none should be here
				}
				m = append(m, mark{stream.ID{PartitionKey: pk, Prefix: prefix}, target})
			}
			return m, nil
		}
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
		var left []mark
		catchUpTime, ok := chaos.WaitProgress(3*time.Minute, 50*time.Millisecond, func() (int64, bool) {
			progress, done, err := caughtUp(nctx, ft, vt, []string{"view"}, versions)
			if err != nil {
				return math.MinInt64, false // no progress seen
			}
			if left, err = marks(); err != nil {
				return math.MinInt64, false
			}
			n := 0
			for _, m := range left {
				if m.target >= 0 && m.target <= versions[m.id] {
					n++ // a mark the relay should clear
				}
			}
			return progress - int64(n), done && n == 0
		})
		if !ok {
			violate("relay not caught up, or marks left it should clear (%v at versions %v), nothing moved for 3 minutes (%v after the last appends)", left, versions, catchUpTime.Round(time.Second))
		}
		stopRelay()
		relayDone.Wait()
		inj.SetEnabled(false)

		var v chaos.Violations
		for _, b := range bad {
			v.Addf("%s", b)
		}
		// The streams.
		stored := map[stream.ID][]string{}
		where := map[string]int{} // tag -> position in its stream, from 0
		total := 0
		for i, id := range streams {
			evs, err := tablekit.Collect(s.Forward(nctx, id, 1), 0)
			if err != nil {
				t.Fatal(err)
			}
			for k, ev := range evs {
				tag := ev.Data.(Tagged).Tag
				if ev.Version != int64(k+1) {
					v.Addf("%v: version %d at position %d (a gap or a duplicate)", id, ev.Version, k+1)
				}
				if ev.ID != tag {
					v.Addf("%v version %d: event id %q, tag %q", id, ev.Version, ev.ID, tag)
				}
				if _, dup := where[tag]; dup {
					v.Addf("event %s stored twice", tag)
				}
				where[tag] = k
				if si, ok := acked[tag]; ok && si != i {
					v.Addf("event %s acknowledged in %v, stored in %v", tag, streams[si], id)
				}
				stored[id] = append(stored[id], tag)
			}
			total += len(evs)
		}
		// Each append whole, in order, or (unknown only) absent.
		whole := func(tags []string, mustBe bool) bool {
			first, ok := where[tags[0]]
			for k, tag := range tags {
				pos, in := where[tag]
				switch {
				case in != ok:
					v.Addf("append %v stored in part (%s stored: %v)", tags, tag, in)
					return false
				case in && pos != first+k:
					v.Addf("append %v not consecutive in its stream (%s at %d, first at %d)", tags, tag, pos, first)
					return false
				}
			}
			if mustBe && !ok {
				v.Addf("acknowledged append %v not stored", tags)
			}
			return ok
		}
		for _, tags := range ackedJobs {
			whole(tags, true)
		}
		unknownIn := 0
		accounted := len(acked)
		for _, job := range unknown {
			if whole(job.Tags, false) {
				unknownIn++
				accounted += len(job.Tags)
			}
		}
		if total != accounted {
			v.Addf("%d events stored, %d acknowledged + %d of unknown appends present: an event of no append", total, len(acked), accounted-len(acked))
		}
		// The view.
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
			if !slices.Equal(stored[id], folded[id]) {
				v.Addf("%v: view folded %v, stream holds %v", id, folded[id], stored[id])
			}
		}
		// The marks left: each of an append a kill (or the stop) left
		// unknown, which did not land, on its stream, short of its Target
		// (a live appender deletes the mark of an append that appended
		// nothing, and the relay those its streams have passed).
		unlanded := map[stream.ID]int{}
		for _, job := range unknown {
			if _, in := where[job.Tags[0]]; !in {
				unlanded[streams[job.Stream]]++
			}
		}
		for _, m := range left {
			if m.target < 0 || m.target <= versions[m.id] {
				v.Addf("mark of %v (Target %d) left at version %d", m.id, m.target, versions[m.id])
			}
			if unlanded[m.id] == 0 {
				v.Addf("mark of %v (Target %d) left, and no append to it was left unknown without landing", m.id, m.target)
			}
		}
		if killed < min(kills, 5) {
			v.Addf("only %d kills caught an append in flight, want %d", killed, kills)
		}
		mu.Lock()
		var eligible, faults int64
		for _, p := range all {
			eligible, faults = eligible+p.stats[0], faults+p.stats[1]
		}
		t.Logf("%d events in %d streams: %d acknowledged appends (%d events), %d appends left unknown by a kill or the stop (%d of them stored); %d marks left short of their Target (of those unknown appends that did not land); %d appender processes started, %d SIGKILLed with an append in flight (%d of those appends sent again by the next process; %d more kills found it acknowledged meanwhile); caught up %v after the appenders stopped; appender processes' faults as last reported: %d in %d eligible tries",
			total, len(streams), len(ackedJobs), len(acked), len(unknown), unknownIn, len(left), next, killed, resumed, idle, catchUpTime.Round(time.Millisecond), faults, eligible)
		mu.Unlock()
		v.Report(t)
	})
}
