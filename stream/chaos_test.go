package stream_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/stream"
)

// Tagged is the event of the chaos suite: Tag names it uniquely
// ("w3-17-2": writer 3, its append 17, event 2).
type Tagged struct {
	PK  string `table:",pk"`
	RK  string `table:",rk"`
	Tag string `table:"Tag"`
}

// ack is what an appender was told about one event.
type ack struct {
	stream  stream.ID
	version int64
}

// trimState is what the trimmer of the chaos suite did to one stream: the
// highest before a Trim of it returned nil for.
type trimState struct{ before int64 }

// TestChaosStream is the event streams suite: chaos.Size(8, 12)
// appenders of chaos.Size(12, 40) appends each, each with its own Account and Store, through ~20% faulted
// tries (answer-lost included), append to 4 streams, 3 of which share a
// partition under prefixes ("", "a", "b"), and to a fifth, a log of plain
// Table writes (prefix "log"), appended to at stream.AnyVersion with an
// insert of a row per append as its extra action: every appender appends to
// every stream, so each stream has them all as concurrent appenders. An
// append is 1 to 4 events, 3 in 4 appends carry event ids, and each
// upserts the stream's view row (its new version) as an extra action. An appender
// reads the stream's version and appends; on a conflict it appends the
// same events (same ids) again at the current version the ConflictError
// says, on any other failure it reads the version again and retries,
// until the append is acknowledged. A fifth of the acknowledged appends
// with ids are sent again (an application that lost the acknowledgement):
// each must come back Replayed with the first append's versions, even
// when its events were trimmed. Readers read the streams forward while the
// appenders run, each from the version after the last it read. A trimmer,
// with its own Store and faults of its own (answers lost on its
// transactions: the tombstone's and the deletes'), trims 3 of the streams
// (one in each partition, and the log) in turn to a point moving behind
// their version (sometimes every event), and goes on after a failure.
//
// Invariants: each stream's start is at or past the highest before its
// Trims returned for, and its versions are start..n without a gap (read
// forward, backward, and counted by a raw query of its rows), and its
// head says n; no event id is in a stream twice, and no event (tag)
// anywhere twice; every acknowledged event at or above its stream's start
// is in it exactly once, at the version its acknowledgement said, and
// every acknowledged event with an id below the start left its id row
// with that version; the stream's view row, which every append upserts as
// an extra action, says the stream's version; the log's Table writes are
// stored exactly for the appends whose events are, or were trimmed; no
// event is stored that was not acknowledged (appends without ids: or
// ended unknown); a repeated append returns the same versions, trimmed or
// not; 0 appends with ids ended in tablekit.ErrOutcomeUnknown (the count
// for appends without ids is reported: they settle by the append's stamp,
// unless a Trim took it); concurrent forward reads saw contiguous
// versions, or ErrTrimmed from where they were.
func TestChaosStream(t *testing.T) {
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		inj, err := chaos.New(seed, chaos.Mixed(0.2))
		if err != nil {
			t.Fatal(err)
		}
		n, perWriter := chaos.Size(8, 12), chaos.Size(12, 40)
		reg := &tablekit.Registry{}
		if err := tablekit.Register[Tagged](reg, "Tagged", 1); err != nil {
			t.Fatal(err)
		}
		stores := make([]*stream.Store, n+2) // the appenders', the readers', the trimmer's
		inj.SetEnabled(false)
		name := testenv.CreateTable(t, inj.Account(t, nil))
		inj.SetEnabled(true)
		// The trimmer's faults: answers lost (or timed out after applying)
		// on its transactions, the tombstone's and the deletes'.
		tinj, err := chaos.New(seed+1000, &chaos.Config{AnswerLost: 0.2, TimeoutAfter: 0.1, Reset: 0.05, Operations: []string{"Transaction"}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range stores {
			open := inj.Open
			if i == n+1 {
				open = tinj.Open
			}
			acct, err := open(testenv.ConnectionString(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			tbl, err := tablekit.OpenTable[tablekit.Entity](acct, name, nil)
			if err != nil {
				t.Fatal(err)
			}
			if stores[i], err = stream.NewStore(tbl, reg, &stream.Options{PageSize: 20}); err != nil {
				t.Fatal(err)
			}
		}
		// The last stream is a log of plain Table writes: appends to it are
		// at AnyVersion, each with the write as its extra action.
		logStream := stream.ID{PartitionKey: "s0", Prefix: "log"}
		streams := []stream.ID{{PartitionKey: "s0"}, {PartitionKey: "s1"}, {PartitionKey: "s1", Prefix: "a"}, {PartitionKey: "s1", Prefix: "b"}, logStream}

		var mu sync.Mutex
		acked := map[string]ack{}      // by tag
		keyedTags := map[string]bool{} // tags of events appended with ids (the tag)
		unknownTags := map[string]bool{}
		var bad []string
		violate := func(format string, args ...any) {
			mu.Lock()
			bad = append(bad, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
		appends, withIDs, unknownIDs, unknownNoIDs, conflicts, repeats, replays := 0, 0, 0, 0, 0, 0, 0

		// Readers: read each stream forward while the appenders run, from
		// the version after the last they read.
		readCtx, stopReaders := context.WithCancel(ctx)
		var readers sync.WaitGroup
		reads, trimmedReads := 0, 0
		readers.Go(func() {
			rs := stores[n]
			nexts := make([]int64, len(streams))
			for i := range nexts {
				nexts[i] = 1
			}
			for i := 0; readCtx.Err() == nil; i++ {
				id := streams[i%len(streams)]
				next := &nexts[i%len(streams)]
				for ev, err := range rs.Forward(readCtx, id, *next) {
					var te *stream.TrimmedError
					if errors.As(err, &te) {
						if te.From != *next || te.Start <= *next {
							violate("reader: %v at version %d: %v", id, *next, err)
						}
						mu.Lock()
						trimmedReads++
						mu.Unlock()
						*next = te.Start
						break
					}
					if err != nil {
						break // a read that failed under faults proves nothing
					}
					if ev.Version != *next {
						violate("reader: %v version %d after %d", id, ev.Version, *next-1)
						break
					}
					*next++
				}
				mu.Lock()
				reads++
				mu.Unlock()
			}
		})
		// The trimmer: trims the streams in turn while the appenders run.
		trimmed := make([]trimState, len(streams))
		trims, trimFailures := 0, 0
		readers.Go(func() {
			ts := stores[n+1]
			rnd := rand.New(rand.NewPCG(uint64(seed), 7))
			for i := 0; readCtx.Err() == nil; i++ {
				k := []int{0, 2, 4}[i%3] // "" in s0 (beside the log), "a" in s1, the log
				v, err := ts.Version(ctx, streams[k])
				if err != nil {
					continue
				}
				before := max(1, v+1-int64(rnd.IntN(40)))
				err = ts.Trim(ctx, streams[k], before) // not cut short when the appenders end
				mu.Lock()
				switch {
				case err == nil:
					trims++
					trimmed[k].before = max(trimmed[k].before, before)
				default:
					trimFailures++
					if errors.Is(err, tablekit.ErrInvalidInput) || errors.As(err, new(*tablekit.DecodeError)) {
						bad = append(bad, fmt.Sprintf("Trim(%v, %d) at version %d: %v", streams[k], before, v, err))
					}
				}
				mu.Unlock()
			}
		})

		hist, err := chaos.RunWriters(ctx, seed, n, func(ctx context.Context, w *chaos.Writer) error {
			s := stores[w.Index]
			for j := range perWriter {
				id := streams[w.Rand.IntN(len(streams))]
				keyed := w.Rand.IntN(4) != 0
				evs := make([]stream.Event, 1+w.Rand.IntN(4))
				for k := range evs {
					tag := fmt.Sprintf("w%d-%d-%d", w.Index, j, k)
					evs[k] = stream.Event{Data: Tagged{Tag: tag}}
					if keyed {
						evs[k].ID = tag
					}
				}
				expected := int64(-1) // unknown: read it
				if id == logStream {
					expected = stream.AnyVersion
				}
				var res stream.Result
				for attempt := 0; ; attempt++ {
					if attempt == 500 {
						return fmt.Errorf("w%d-%d: not acknowledged after 500 tries", w.Index, j)
					}
					if expected < 0 && id != logStream {
						v, err := s.Version(ctx, id)
						if err != nil {
							continue
						}
						expected = v
					}
					op := w.Do(ctx, "Append", fmt.Sprint(id), evs, func(ctx context.Context) (any, error) {
						// The stream's view row joins the append's EGT; an
						// append to the log carries its Table write instead.
						extra := tablekit.UpsertAction(tablekit.Entity{PartitionKey: id.PartitionKey, RowKey: id.Prefix + "-view",
							Properties: map[string]any{"Version": expected + int64(len(evs))}})
						if id == logStream {
							tag := evs[0].Data.(Tagged).Tag
							extra = tablekit.InsertAction(tablekit.Entity{PartitionKey: id.PartitionKey, RowKey: "write-" + tag, Properties: map[string]any{"Write": tag}})
						}
						r, err := s.Append(ctx, id, expected, evs, extra)
						return r, err
					})
					mu.Lock()
					appends++
					if keyed {
						withIDs++
					}
					mu.Unlock()
					var ce *stream.ConflictError
					switch {
					case op.Err == nil:
						res = op.Result.(stream.Result)
					case errors.Is(op.Err, tablekit.ErrOutcomeUnknown):
						mu.Lock()
						if keyed {
							unknownIDs++
							bad = append(bad, fmt.Sprintf("append with ids ended in ErrOutcomeUnknown: %v", op))
						} else {
							unknownNoIDs++
							for _, ev := range evs {
								unknownTags[ev.Data.(Tagged).Tag] = true
							}
						}
						mu.Unlock()
						if !keyed {
							break // it may have been applied: do not send it again
						}
						if id != logStream {
							expected = -1
						}
						continue
					case errors.As(op.Err, &ce) && id != logStream:
						mu.Lock()
						conflicts++
						mu.Unlock()
						expected = ce.Current
						time.Sleep(time.Duration(w.Rand.IntN(3)) * time.Millisecond)
						continue
					case errors.Is(op.Err, stream.ErrPartlyApplied):
						violate("%v", op)
						return nil
					default:
						if id != logStream {
							expected = -1
						}
						continue
					}
					break
				}
				if res.Last == 0 {
					continue // without ids, unknown
				}
				if int(res.Last-res.First+1) != len(evs) {
					violate("w%d-%d: acknowledged versions %d..%d for %d events", w.Index, j, res.First, res.Last, len(evs))
				}
				mu.Lock()
				for k, ev := range evs {
					acked[ev.Data.(Tagged).Tag] = ack{id, res.First + int64(k)}
					keyedTags[ev.Data.(Tagged).Tag] = keyed
				}
				mu.Unlock()
				// An application that lost the acknowledgement sends the
				// append again: it must be replayed with the same versions.
				if keyed && w.Rand.IntN(5) == 0 {
					again := res.Last
					if id == logStream {
						again = stream.AnyVersion
					}
					for attempt := 0; ; attempt++ {
						r, err := s.Append(ctx, id, again, evs)
						if err != nil && attempt < 100 && !errors.Is(err, tablekit.ErrOutcomeUnknown) && !errors.Is(err, stream.ErrPartlyApplied) {
							continue // a failure under faults: send it again
						}
						mu.Lock()
						repeats++
						switch {
						case err != nil:
							bad = append(bad, fmt.Sprintf("w%d-%d sent again: %v", w.Index, j, err))
						case !r.Replayed || r.First != res.First || r.Last != res.Last:
							bad = append(bad, fmt.Sprintf("w%d-%d sent again: %+v, first acknowledged as %d..%d", w.Index, j, r, res.First, res.Last))
						default:
							replays++
						}
						mu.Unlock()
						break
					}
				}
			}
			return nil
		})
		stopReaders()
		readers.Wait()
		if err != nil {
			t.Fatal(err)
		}
		st, tst := inj.Stats(), tinj.Stats()
		inj.SetEnabled(false)
		tinj.SetEnabled(false)

		var v chaos.Violations
		for _, b := range bad {
			v.Addf("%s", b)
		}
		s := stores[0]
		seen := map[string]ack{}
		recordedIDs := map[string]int64{} // "<prefix>/<partition>/<id>" -> version
		total, logged := 0, 0
		starts := map[stream.ID]int64{}
		for k, id := range streams {
			start, err := s.Start(chaos.NoFaults(ctx), id)
			if err != nil {
				t.Fatal(err)
			}
			// A Trim that failed under faults left rows below the start:
			// run again, it deletes them.
			if err := s.Trim(chaos.NoFaults(ctx), id, 1); err != nil {
				v.Addf("%v: Trim(1) to finish the Trims that failed: %v", id, err)
			}
			if start < trimmed[k].before {
				v.Addf("%v: starts at %d, but a Trim to %d returned", id, start, trimmed[k].before)
			}
			starts[id] = start
			evs, err := tablekit.Collect(s.Forward(chaos.NoFaults(ctx), id, start), 0)
			if err != nil {
				t.Fatal(err)
			}
			ids := map[string]int64{}
			for i, ev := range evs {
				if ev.Version != start+int64(i) {
					v.Addf("%v: event %d from the start %d has version %d", id, i, start, ev.Version)
				}
				if ev.ID != "" {
					if w, dup := ids[ev.ID]; dup {
						v.Addf("%v: id %s at versions %d and %d", id, ev.ID, w, ev.Version)
					}
					ids[ev.ID] = ev.Version
				}
				tag := ev.Data.(Tagged).Tag
				if ev.ID != "" && ev.ID != tag {
					v.Addf("%v version %d: id %s holds event %s", id, ev.Version, ev.ID, tag)
				}
				if where, dup := seen[tag]; dup {
					v.Addf("event %s at %v version %d and at %v version %d", tag, where.stream, where.version, id, ev.Version)
				}
				seen[tag] = ack{id, ev.Version}
			}
			back, err := tablekit.Collect(s.Backward(chaos.NoFaults(ctx), id, 0), 0)
			if err != nil || len(back) != len(evs) {
				v.Addf("%v: backward read %d events (%v), forward %d", id, len(back), err, len(evs))
			}
			last := start + int64(len(evs)) - 1
			if ver, err := s.Version(chaos.NoFaults(ctx), id); err != nil || ver != last {
				v.Addf("%v: head says version %d (%v), events %d..%d", id, ver, err, start, last)
			}
			// The id rows: those of the events read name their versions;
			// the others are below the start.
			idRows, err := tablekit.Collect(stream.TableOf(s).Query(chaos.NoFaults(ctx), tablekit.RowKeyPrefix(id.PartitionKey, id.Prefix+"~id~"), &tablekit.QueryOptions{Select: []string{"Version"}}), 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range idRows {
				eid, ver := strings.TrimPrefix(e.RowKey, id.Prefix+"~id~"), e.Properties["Version"].(int64)
				if w, ok := ids[eid]; ok && w != ver || !ok && ver >= start {
					v.Addf("%v: id row %s says version %d, the event is at %d (read: %v; start %d)", id, eid, ver, w, ok, start)
				}
				recordedIDs[id.Prefix+"/"+id.PartitionKey+"/"+eid] = ver
			}
			if id == logStream {
				// Each append's Table write is stored exactly when its
				// events are: the first event of each append (tag "-0")
				// names the write row.
				writes, err := tablekit.Collect(stream.TableOf(s).Query(chaos.NoFaults(ctx), tablekit.RowKeyPrefix(id.PartitionKey, "write-"), nil), 0)
				if err != nil {
					t.Fatal(err)
				}
				written := map[string]bool{}
				for _, e := range writes {
					written[e.Properties["Write"].(string)] = true
				}
				for _, ev := range evs {
					if tag := ev.Data.(Tagged).Tag; strings.HasSuffix(tag, "-0") && !written[tag] {
						v.Addf("%v version %d: event %s stored, its append's Table write not", id, ev.Version, tag)
					}
					delete(written, ev.Data.(Tagged).Tag)
				}
				for tag := range written {
					// Events below the start were trimmed; an append whose
					// outcome was unknown may have been applied and trimmed.
					if a, ok := acked[tag]; !(ok && a.stream == id && a.version < start) && !unknownTags[tag] {
						v.Addf("%v: Table write of %s stored, its append's events not", id, tag)
					}
				}
				logged = len(writes)
			} else if view, err := stream.TableOf(s).Get(chaos.NoFaults(ctx), id.PartitionKey, id.Prefix+"-view"); err != nil || view.Properties["Version"] != last {
				v.Addf("%v: view row says version %v (%v), the stream %d", id, view.Properties["Version"], err, last)
			}
			total += len(evs)
		}
		// A raw count of the event rows: none outside the versions read.
		evRows := 0
		for _, pk := range []string{"s0", "s1"} {
			rows, err := tablekit.Collect(stream.TableOf(s).Query(chaos.NoFaults(ctx), tablekit.PartitionEq(pk), &tablekit.QueryOptions{Select: []string{"Tag"}}), 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if _, ok := r.Properties["Tag"]; ok {
					evRows++
				}
			}
		}
		if evRows != total {
			v.Addf("%d event rows in the table, %d read from the streams", evRows, total)
		}
		belowStart := 0
		for tag, a := range acked {
			if a.version < starts[a.stream] {
				// Trimmed: an event with an id (its tag) left its id row.
				belowStart++
				if w, ok := recordedIDs[a.stream.Prefix+"/"+a.stream.PartitionKey+"/"+tag]; keyedTags[tag] && (!ok || w != a.version) {
					v.Addf("acknowledged event %s at %v version %d, below the start %d: id row says %d (present %v)", tag, a.stream, a.version, starts[a.stream], w, ok)
				}
				continue
			}
			if got, ok := seen[tag]; !ok || got != a {
				v.Addf("acknowledged event %s at %v version %d, stored: %v (present %v)", tag, a.stream, a.version, got, ok)
			}
		}
		for tag := range seen {
			if _, ok := acked[tag]; !ok && !unknownTags[tag] {
				v.Addf("event %s stored but never acknowledged", tag)
			}
		}
		lost := 0
		for _, op := range hist.Ops() {
			if op.AnswerLost() {
				lost++
			}
		}
		t.Logf("%d appenders × %d appends on %d streams (3 share a partition, 1 is a log of Table writes at AnyVersion): %d events in the streams, %d acknowledged, %d Table writes logged; %d append calls (%d with ids), %d conflicts, %d met a lost answer; %d repeats of acknowledged appends, %d replayed with the same versions; ErrOutcomeUnknown: %d with ids, %d without; %d forward reads alongside",
			n, perWriter, len(streams), total, len(acked), logged, appends, withIDs, conflicts, lost, repeats, replays, unknownIDs, unknownNoIDs, reads)
		t.Logf("trims: %d returned, %d failed under faults; %d acknowledged events below their stream's start; %d forward reads ended in ErrTrimmed; starts %v", trims, trimFailures, belowStart, trimmedReads, starts)
		t.Logf("history: %s", hist)
		t.Logf("faults: %s", st.String())
		t.Logf("trimmer's faults: %s", tst.String())
		if st.FaultRate() < 0.15 || st.Count(chaos.AnswerLost, "", "") == 0 {
			v.Addf("fault rate %.1f%%, %d answers lost: too few", 100*st.FaultRate(), st.Count(chaos.AnswerLost, "", ""))
		}
		if lost := tst.Count(chaos.AnswerLost, "table", "Transaction") + tst.Count(chaos.TimeoutAfter, "table", "Transaction"); trims == 0 || lost == 0 {
			v.Addf("%d trims returned, %d of their transactions' answers lost: too few", trims, lost)
		}
		v.Report(t)
	})
}
