package feed_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
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

// TestChaosFeed is the change feed suite: chaos.Size(8, 12) appenders of
// chaos.Size(10, 30) appends each, each with its own Account, Store and
// Feed, through ~20% faulted tries (answers lost included), append 1 to 3
// events with ids to 5 streams (3 of them share a partition) through
// Feed.Append; an append that fails is sent again at the version read
// anew (to the fifth stream, a log, always at stream.AnyVersion), except
// 1 in 6, abandoned after a first failure (its error says it was not
// applied). 1 append in 8 to the other streams is preceded by an append
// ahead of its stream (an expected version it never reaches), which must
// be refused; 1 write in 3 to the log is repeated at stream.AnyVersion
// with its ids once acknowledged, which must come back Replayed.
// Meanwhile 3 relays, each with its own Account (faulted) and
// coord.Lease on one lease row, run Relay.Run, each
// restarted as a new Relay every 0.2-1 s (a new process, its cache
// gone), so leadership and terms change many times; they publish to a
// Projector (two view rows per event, its stream partition's and the row
// of all, each folding it as "partition:prefix:version:tag") and to an
// order checker that fails 1 change in 50. A monitor reads the
// checkpoints all along.
//
// Invariants, after the relays caught up (every mark cleared, every
// checkpoint at its stream's version), without appending past anything
// at the end: no mark is left (every append had a definitive outcome,
// and one that appended nothing deleted its mark); the streams hold exactly
// the acknowledged events; the view row of each partition, and the row
// of all, hold each event of their streams exactly once, in version order
// per stream, with the stream's tag at that version (the view is the fold
// of its streams); no event of an abandoned append is anywhere; the order
// checker was never handed version v of a stream before v-1; no
// checkpoint was ever seen to move backwards.
func TestChaosFeed(t *testing.T) {
	chaos.Run(t, func(t *testing.T, seed int64) { chaosFeed(t, seed, false) })
}

// TestChaosFeedCosmos is TestChaosFeed behind package azurite's front in
// Cosmos DB mode with Azure's paging (seeded by the chaos seed): every
// query, the directory's marks and a stream's range of versions
// included, answers in no key order and in short or empty pages, and
// the accounts are opened with tablekit.ServiceCosmosDB. CI runs it on
// seed 1 alone (chaos.RunVariant).
func TestChaosFeedCosmos(t *testing.T) {
	chaos.RunVariant(t, func(t *testing.T, seed int64) { chaosFeed(t, seed, true) })
}

// chaosFeed is the body of TestChaosFeed, on Table storage (the tests'
// Azurite) or, cosmos, behind an Azurite of its own in Cosmos DB mode.
func chaosFeed(t *testing.T, seed int64, cosmos bool) {
	ctx := context.Background()
	inj, err := chaos.New(seed, chaos.Mixed(0.2))
	if err != nil {
		t.Fatal(err)
	}
	n, perWriter := chaos.Size(8, 12), chaos.Size(10, 30)
	reg := registry(t)
	openAccount := inj.Opener(t, cosmos)
	inj.SetEnabled(false)
	setup, err := openAccount()
	if err != nil {
		t.Fatal(err)
	}
	names := [3]string{testenv.CreateTable(t, setup), testenv.CreateTable(t, setup), testenv.CreateTable(t, setup)} // streams, feed, view
	inj.SetEnabled(true)
	opts := &feed.Options{Shards: 2}
	type proc struct {
		store *stream.Store
		f     *feed.Feed
		ft    *tablekit.Table[tablekit.Entity]
		vt    *tablekit.Table[tablekit.Entity]
	}
	open := func() proc {
		acct, err := openAccount()
		if err != nil {
			t.Fatal(err)
		}
		var tbl [3]*tablekit.Table[tablekit.Entity]
		for i, name := range names {
			if tbl[i], err = tablekit.OpenTable[tablekit.Entity](acct, name, nil); err != nil {
				t.Fatal(err)
			}
		}
		s, err := stream.NewStore(tbl[0], reg, &stream.Options{PageSize: 20})
		if err != nil {
			t.Fatal(err)
		}
		f, err := feed.New(s, tbl[1], opts)
		if err != nil {
			t.Fatal(err)
		}
		return proc{s, f, tbl[1], tbl[2]}
	}
	streams := []stream.ID{{PartitionKey: "s0"}, {PartitionKey: "s1"}, {PartitionKey: "s1", Prefix: "a"}, {PartitionKey: "s1", Prefix: "b"}, {PartitionKey: "s2"}}
	logStream := streams[4] // appended to at stream.AnyVersion, as a log of Table writes is

	var mu sync.Mutex
	var bad []string
	violate := func(format string, args ...any) {
		mu.Lock()
		bad = append(bad, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	acked := map[string]bool{}
	abandoned := map[string]bool{}
	appends, conflicts, markFails, aheads, repeats := 0, 0, 0, 0, 0

	// The subscriptions.
	fold := func(v *tablekit.Entity, c feed.Change) error {
		s, _ := v.Properties["Folds"].(string)
		v.Properties["Folds"] = strings.TrimPrefix(fmt.Sprintf("%s %s:%s:%d:%s", s, c.Stream.PartitionKey, c.Stream.Prefix, c.Version, c.Data.(Tagged).Tag), " ")
		return nil
	}
	key := func(c feed.Change) []feed.Row { // its partition's row, then the row of all
		return []feed.Row{{PartitionKey: "view", RowKey: c.Stream.PartitionKey}, {PartitionKey: "view", RowKey: "all"}}
	}
	handed := map[stream.ID]int64{} // the highest version handed to the order checker
	checkerFails, handedTotal := 0, 0
	checker := func(rng *rand.Rand) func(context.Context, feed.Change) error {
		return func(_ context.Context, c feed.Change) error {
			mu.Lock()
			defer mu.Unlock()
			if rng.IntN(50) == 0 {
				checkerFails++
				return errors.New("checker: a failure of the subscriber")
			}
			handedTotal++
			if c.Version > handed[c.Stream]+1 {
				bad = append(bad, fmt.Sprintf("checker handed %v version %d, the highest before %d", c.Stream, c.Version, handed[c.Stream]))
			}
			handed[c.Stream] = max(handed[c.Stream], c.Version)
			return nil
		}
	}

	// The relays: 3 contenders, each restarted as a new Relay now and
	// then. Their last errors are shown if they do not catch up.
	relayLog := &lastLines{n: 20}
	relayCtx, stopRelays := context.WithCancel(ctx)
	var relays sync.WaitGroup
	var runs int
	seenTerms := map[int64]bool{}
	for i := range 3 {
		relays.Go(func() {
			p := open()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
			proj, err := feed.NewProjector(p.vt, key, fold)
			if err != nil {
				violate("NewProjector: %v", err)
				return
			}
			lease, err := coord.NewLease(p.ft, "lease", "relay", fmt.Sprintf("relay%d", i), &coord.LeaseOptions{Duration: 600 * time.Millisecond})
			if err != nil {
				violate("NewLease: %v", err)
				return
			}
			for relayCtx.Err() == nil {
				r, err := p.f.NewRelay([]feed.Subscription{
					{Name: "view", Handle: func(ctx context.Context, c feed.Change) error {
						if t, ok := lease.Held(); ok {
							mu.Lock()
							seenTerms[t] = true
							mu.Unlock()
						}
						return proj.Handle(ctx, c)
					}},
					{Name: "checker", Handle: checker(rng)},
				}, &feed.RelayOptions{Interval: 20 * time.Millisecond, Logger: relayLog.logger()})
				if err != nil {
					violate("NewRelay: %v", err)
					return
				}
				runCtx, cancel := context.WithTimeout(relayCtx, time.Duration(200+rng.IntN(800))*time.Millisecond)
				err = r.Run(runCtx, lease)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
					violate("Run: %v", err)
				}
				mu.Lock()
				runs++
				mu.Unlock()
			}
		})
	}

	// The paused leader: a 4th contender that, once it acquires the
	// lease, runs a round, pauses past the lease's Duration without
	// renewing (a GC pause, a frozen VM), then runs another round with
	// its old term and its cached checkpoints: fencing must refuse its
	// checkpoint writes once a later term has run.
	zombieTerms, zombieRounds, zombieFenced := 0, 0, 0
	relays.Go(func() {
		p := open()
		rng := rand.New(rand.NewPCG(uint64(seed), 99))
		proj, err := feed.NewProjector(p.vt, key, fold)
		if err != nil {
			violate("NewProjector: %v", err)
			return
		}
		lease, err := coord.NewLease(p.ft, "lease", "relay", "paused", &coord.LeaseOptions{Duration: 600 * time.Millisecond})
		if err != nil {
			violate("NewLease: %v", err)
			return
		}
		for relayCtx.Err() == nil {
			term, err := lease.Acquire(relayCtx)
			if err != nil {
				time.Sleep(time.Duration(10+rng.IntN(20)) * time.Millisecond)
				continue
			}
			r, err := p.f.NewRelay([]feed.Subscription{{Name: "view", Handle: proj.Handle}, {Name: "checker", Handle: checker(rng)}}, nil)
			if err != nil {
				violate("NewRelay: %v", err)
				return
			}
			mu.Lock()
			zombieTerms++
			mu.Unlock()
			// Its first round runs without renewals: a long one outlives
			// the lease too.
			for pause := range 2 {
				if pause == 1 {
					time.Sleep(time.Duration(1200+rng.IntN(800)) * time.Millisecond) // paused past the lease (600 ms)
				}
				_, err := r.Round(relayCtx, term)
				mu.Lock()
				zombieRounds++
				if errors.Is(err, coord.ErrFenced) {
					zombieFenced++
				}
				mu.Unlock()
				if errors.Is(err, coord.ErrFenced) {
					break
				}
			}
		}
	})

	// The monitor: checkpoints never move backwards.
	monCtx, stopMonitor := context.WithCancel(ctx)
	var monitor sync.WaitGroup
	lastCP := map[string]int64{}
	monitorReads := 0
	monitor.Go(func() {
		p := open()
		for monCtx.Err() == nil {
			for e, err := range p.ft.Query(chaos.NoFaults(monCtx), tablekit.Where("PartitionKey ge 'cp~' and PartitionKey lt 'cp~~'"), nil) {
				if err != nil {
					break
				}
				v, ok := e.Properties["Version"].(int64)
				if !ok {
					continue // coord's fence row
				}
				k := e.PartitionKey + "/" + e.RowKey
				mu.Lock()
				if v < lastCP[k] {
					bad = append(bad, fmt.Sprintf("checkpoint %s moved back from %d to %d", k, lastCP[k], v))
				}
				lastCP[k] = max(lastCP[k], v)
				monitorReads++
				mu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	})

	hist, err := chaos.RunWriters(ctx, seed, n, func(ctx context.Context, w *chaos.Writer) error {
		p := open()
		for j := range perWriter {
			id := streams[w.Rand.IntN(len(streams))]
			evs := make([]stream.Event, 1+w.Rand.IntN(3))
			for k := range evs {
				tag := fmt.Sprintf("w%d-%d-%d", w.Index, j, k)
				evs[k] = stream.Event{ID: tag, Data: Tagged{Tag: tag}}
			}
			if id != logStream && w.Rand.IntN(8) == 0 {
				// An append ahead of the stream (a writer that believes
				// in a version the stream has not reached): refused, it
				// must leave no mark behind.
				ahead := make([]stream.Event, len(evs))
				for k := range ahead {
					tag := fmt.Sprintf("w%d-%d-%d-ahead", w.Index, j, k)
					ahead[k] = stream.Event{ID: tag, Data: Tagged{Tag: tag}}
				}
				far := int64(1_000_000 + w.Rand.IntN(1000)) // beyond any version the suite reaches
				op := w.Do(ctx, "AppendAhead", fmt.Sprint(id), ahead, func(ctx context.Context) (any, error) {
					return p.f.Append(ctx, id, far, ahead)
				})
				mu.Lock()
				aheads++
				if op.Err == nil {
					bad = append(bad, fmt.Sprintf("an append ahead of the stream was acknowledged: %v", op))
				}
				mu.Unlock()
			}
			abandon := w.Rand.IntN(6) == 0
			expected := int64(-1)
			if id == logStream {
				expected = stream.AnyVersion // a log of Table writes: appended at its end
			}
			for attempt := 0; ; attempt++ {
				if attempt == 500 {
					return fmt.Errorf("w%d-%d: not acknowledged after 500 tries", w.Index, j)
				}
				if expected < 0 && id != logStream {
					v, err := p.store.Version(ctx, id)
					if err != nil {
						continue
					}
					expected = v
				}
				op := w.Do(ctx, "Append", fmt.Sprint(id), evs, func(ctx context.Context) (any, error) {
					return p.f.Append(ctx, id, expected, evs)
				})
				mu.Lock()
				appends++
				mu.Unlock()
				var ce *stream.ConflictError
				switch {
				case op.Err == nil:
					mu.Lock()
					for _, ev := range evs {
						acked[ev.ID] = true
					}
					mu.Unlock()
				case errors.Is(op.Err, tablekit.ErrOutcomeUnknown):
					violate("append with ids ended in ErrOutcomeUnknown: %v", op)
					if id != logStream {
						expected = -1
					}
					continue
				case errors.Is(op.Err, stream.ErrPartlyApplied):
					violate("%v", op)
					return nil
				case abandon:
					mu.Lock()
					for _, ev := range evs {
						abandoned[ev.ID] = true
					}
					mu.Unlock()
				case errors.As(op.Err, &ce) && id != logStream:
					mu.Lock()
					conflicts++
					mu.Unlock()
					expected = ce.Current
					continue
				default:
					if strings.Contains(op.Err.Error(), "mark of stream") {
						mu.Lock()
						markFails++
						mu.Unlock()
					}
					if id != logStream {
						expected = -1
					}
					continue
				}
				break
			}
			if id == logStream && !abandon && w.Rand.IntN(3) == 0 {
				// The write repeated at stream.AnyVersion, as after a
				// lost acknowledgement: Replayed, and no mark left.
				for attempt := 0; ; attempt++ {
					if attempt == 500 {
						return fmt.Errorf("w%d-%d: repeat not acknowledged after 500 tries", w.Index, j)
					}
					op := w.Do(ctx, "Repeat", fmt.Sprint(id), evs, func(ctx context.Context) (any, error) {
						return p.f.Append(ctx, id, stream.AnyVersion, evs)
					})
					if op.Err != nil {
						if errors.Is(op.Err, tablekit.ErrOutcomeUnknown) || errors.Is(op.Err, stream.ErrPartlyApplied) {
							violate("a repeat: %v", op)
						}
						continue
					}
					mu.Lock()
					repeats++
					if r, _ := op.Result.(stream.Result); !r.Replayed {
						bad = append(bad, fmt.Sprintf("a repeat at AnyVersion was not Replayed: %+v", op.Result))
					}
					mu.Unlock()
					break
				}
			}
		}
		return nil
	})
	if err != nil {
		stopRelays()
		relays.Wait()
		stopMonitor()
		monitor.Wait()
		t.Fatal(err)
	}

	// Catch up: the relays go on (faults on) until every mark is cleared
	// and every checkpoint at its stream's version. Every appender has
	// returned, each append with a definitive outcome (acknowledged, or
	// refused: an ErrOutcomeUnknown is a violation of its own), so none
	// may have left a mark its stream has not reached: the relay could
	// never clear it.
	check := open()
	versions := map[stream.ID]int64{}
	for _, id := range streams {
		v, err := check.store.Version(chaos.NoFaults(ctx), id)
		if err != nil {
			t.Fatal(err)
		}
		versions[id] = v
	}
	stuck := map[string]string{} // marks whose Target their stream has not reached, by RowKey
	marksLeft := func(nctx context.Context) (n int, err error) {
		for e, err := range check.ft.Query(nctx, tablekit.Where("PartitionKey ge 'dir~' and PartitionKey lt 'dir~~' and (RowKey ge 'p~' and RowKey lt 'p~~' or Dirty eq true)"), nil) {
			if err != nil {
				return 0, err
			}
			spk, _ := e.Properties["Stream"].(string)
			prefix, _ := e.Properties["Prefix"].(string)
			target, _ := e.Properties["Target"].(int64)
			if target > versions[stream.ID{PartitionKey: spk, Prefix: prefix}] || e.Properties["Dirty"] != nil {
				stuck[e.RowKey] = fmt.Sprintf("%s/%s %v/%v target %d dirty %v", e.PartitionKey, e.RowKey, spk, prefix, target, e.Properties["Dirty"])
			}
			n++
		}
		return n, nil
	}
	// The relays' progress: their checkpoints and folds, less the marks
	// left.
	progress := func() (int64, bool) {
		nctx := chaos.NoFaults(ctx)
		n, err := marksLeft(nctx)
		if err != nil {
			return math.MinInt64, false // no progress seen
		}
		p, done, err := caughtUp(nctx, check.ft, check.vt, []string{"view", "checker"}, versions)
		if err != nil {
			return math.MinInt64, false
		}
		return p - int64(n), done && n <= len(stuck)
	}
	// How long a catch-up takes depends on the machine's load: it fails
	// when nothing moved for 3 minutes, not after a fixed time.
	catchUp, ok := chaos.WaitProgress(3*time.Minute, 50*time.Millisecond, progress)
	if !ok {
		var dir []string
		for e, err := range check.ft.Query(chaos.NoFaults(ctx), tablekit.Where("PartitionKey ge 'dir~' and PartitionKey lt 'dir~~'"), nil) {
			if err != nil {
				break
			}
			dir = append(dir, fmt.Sprintf("%s/%s target=%v dirty=%v", e.PartitionKey, e.RowKey, e.Properties["Target"], e.Properties["Dirty"]))
		}
		violate("relays not caught up, nothing moved for 3 minutes (%v after the appends); directory: %v; their last errors:\n%s", catchUp.Round(time.Second), dir, relayLog)
	}
	for _, m := range stuck {
		violate("mark left that its stream has not reached (or of an earlier version's kind): %s", m)
	}
	stopRelays()
	relays.Wait()
	stopMonitor()
	monitor.Wait()
	st := inj.Stats()
	inj.SetEnabled(false)

	var v chaos.Violations
	for _, b := range bad {
		v.Addf("%s", b)
	}
	nctx := chaos.NoFaults(ctx)
	stored := map[stream.ID][]string{} // tags by version - 1
	total := 0
	for _, id := range streams {
		evs, err := tablekit.Collect(check.store.Forward(nctx, id, 1), 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range evs {
			tag := ev.Data.(Tagged).Tag
			if ev.Version != int64(i+1) {
				v.Addf("%v: event %d has version %d", id, i, ev.Version)
			}
			if !acked[tag] {
				v.Addf("%v version %d: event %s stored but not acknowledged (abandoned: %v)", id, ev.Version, tag, abandoned[tag])
			}
			stored[id] = append(stored[id], tag)
		}
		total += len(evs)
	}
	if total != len(acked) {
		v.Addf("%d events stored, %d acknowledged", total, len(acked))
	}
	// The view is the fold of its streams.
	rows, err := tablekit.Collect(check.vt.Query(nctx, tablekit.Filter{}, nil), 0)
	if err != nil {
		t.Fatal(err)
	}
	type rowStream struct {
		row string
		id  stream.ID
	}
	folded := map[rowStream][]string{}
	for _, row := range rows {
		s, _ := row.Properties["Folds"].(string)
		for f := range strings.FieldsSeq(s) {
			parts := strings.SplitN(f, ":", 4)
			if len(parts) != 4 {
				v.Addf("view row %s: bad fold %q", row.RowKey, f)
				continue
			}
			ver, err := strconv.ParseInt(parts[2], 10, 64)
			if err != nil {
				v.Addf("view row %s: bad fold %q", row.RowKey, f)
				continue
			}
			id := stream.ID{PartitionKey: parts[0], Prefix: parts[1]}
			if row.RowKey != "all" && row.RowKey != id.PartitionKey {
				v.Addf("view row %s: an event of %v", row.RowKey, id)
			}
			k := rowStream{row.RowKey, id}
			if ver != int64(len(folded[k])+1) {
				v.Addf("view row %s: %v version %d folded after version %d", row.RowKey, id, ver, len(folded[k]))
			}
			if abandoned[parts[3]] {
				v.Addf("view row %s: event %s of an abandoned append", row.RowKey, parts[3])
			}
			folded[k] = append(folded[k], parts[3])
		}
	}
	for _, id := range streams {
		for _, row := range []string{id.PartitionKey, "all"} {
			if w, g := fmt.Sprint(stored[id]), fmt.Sprint(folded[rowStream{row, id}]); w != g {
				v.Addf("%v: view row %s folded %s, stream holds %s", id, row, g, w)
			}
		}
	}
	mu.Lock()
	for _, id := range streams {
		if handed[id] != versions[id] {
			v.Addf("%v: checker handed up to %d, stream at %d", id, handed[id], versions[id])
		}
	}
	nterms := len(seenTerms)
	mu.Unlock()
	lost := 0
	for _, op := range hist.Ops() {
		if op.AnswerLost() {
			lost++
		}
	}
	t.Logf("%d appenders × %d appends on %d streams: %d events stored = acknowledged, %d abandoned; %d append calls, %d conflicts, %d marks failed, %d met a lost answer; %d appends ahead of their stream refused, %d writes repeated at AnyVersion (Replayed); %d marks left past their stream's version", n, perWriter, len(streams), total, len(abandoned), appends, conflicts, markFails, lost, aheads, repeats, len(stuck))
	t.Logf("3 relays: %d runs, %d terms seen handing changes; caught up %v after the appends; checker handed %d changes (redeliveries included), failed %d; %d checkpoint reads by the monitor", runs, nterms, catchUp.Round(time.Millisecond), handedTotal, checkerFails, monitorReads)
	t.Logf("paused leader: %d terms acquired, %d rounds run without renewing, %d of them refused with ErrFenced", zombieTerms, zombieRounds, zombieFenced)
	t.Logf("faults: %s", st.String())
	if st.FaultRate() < 0.15 || st.Count(chaos.AnswerLost, "", "") == 0 {
		v.Addf("fault rate %.1f%%, %d answers lost: too few", 100*st.FaultRate(), st.Count(chaos.AnswerLost, "", ""))
	}
	if nterms < 2 {
		v.Addf("%d terms handed changes: leadership never changed hands", nterms)
	}
	v.Report(t)
}

// caughtUp reports whether the checkpoints in ft of every subscription in
// subs are at their stream's version in versions, and how far the relays
// have come, as a catch-up's progress for chaos.WaitProgress: the versions
// those checkpoints hold plus the folds the view rows of vt hold (the
// suites' folds each append one field to a row's "Folds").
func caughtUp(ctx context.Context, ft, vt *tablekit.Table[tablekit.Entity], subs []string, versions map[stream.ID]int64) (progress int64, done bool, err error) {
	done = true
	for _, sub := range subs {
		for id, want := range versions {
			pk, rk := feed.CheckpointKey(sub, id)
			e, err := ft.Get(ctx, pk, rk)
			if err != nil && !errors.Is(err, tablekit.ErrNotFound) {
				return 0, false, err
			}
			v, _ := e.Properties["Version"].(int64)
			progress += v
			done = done && err == nil && v == want
		}
	}
	for row, err := range vt.Query(ctx, tablekit.Filter{}, nil) {
		if err != nil {
			return 0, false, err
		}
		s, _ := row.Properties["Folds"].(string)
		progress += int64(len(strings.Fields(s)))
	}
	return progress, done, nil
}

// lastLines is an io.Writer that keeps the last n lines written to it: a
// relay's log, shown when the relays do not catch up.
type lastLines struct {
	mu    sync.Mutex
	n     int
	lines []string
}

func (l *lastLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimRight(string(p), "\n"))
	if len(l.lines) > l.n {
		l.lines = l.lines[len(l.lines)-l.n:]
	}
	return len(p), nil
}

func (l *lastLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (l *lastLines) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }
