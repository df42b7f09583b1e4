package stream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/chaos"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/patterns"
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
// each must come back Replayed with the first append's versions. Readers
// read the streams forward while the appenders run.
//
// Invariants: each stream's versions are 1..n without a gap (read forward,
// backward, and counted by a raw query of its rows), and its head says n;
// no event id is in a stream twice, and no event (tag) anywhere twice;
// every acknowledged event is in its stream exactly once, at the version
// its acknowledgement said; the stream's view row, which every append
// upserts as an extra action, says the stream's version; the log's Table
// writes are stored exactly for the appends whose events are; no event is stored that was not acknowledged
// (appends without ids: or ended unknown); a repeated append returns the
// same versions; 0 appends with ids ended in tablekit.ErrOutcomeUnknown
// (the count for appends without ids is reported: they settle by the
// append's stamp and should show 0 too); concurrent forward reads saw
// contiguous versions.
func TestChaosStream(t *testing.T) {
	chaos.Run(t, func(t *testing.T, seed int64) {
		ctx := context.Background()
		inj, err := chaos.New(seed, chaos.Mixed(0.2))
		if err != nil {
			t.Fatal(err)
		}
		n, perWriter := chaos.Size(8, 12), chaos.Size(12, 40)
		reg := &patterns.Registry{}
		if err := patterns.Register[Tagged](reg, "Tagged", 1); err != nil {
			t.Fatal(err)
		}
		stores := make([]*stream.Store, n+1)
		inj.SetEnabled(false)
		name := testenv.CreateTable(t, inj.Account(t, nil))
		inj.SetEnabled(true)
		for i := range stores {
			acct, err := inj.Open(testenv.ConnectionString(t), nil)
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
		acked := map[string]ack{} // by tag
		unknownTags := map[string]bool{}
		var bad []string
		violate := func(format string, args ...any) {
			mu.Lock()
			bad = append(bad, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
		appends, withIDs, unknownIDs, unknownNoIDs, conflicts, repeats, replays := 0, 0, 0, 0, 0, 0, 0

		// Readers: read each stream forward while the appenders run.
		readCtx, stopReaders := context.WithCancel(ctx)
		var readers sync.WaitGroup
		reads := 0
		readers.Go(func() {
			rs := stores[n]
			for i := 0; readCtx.Err() == nil; i++ {
				id := streams[i%len(streams)]
				next := int64(1)
				for ev, err := range rs.Forward(readCtx, id, 1) {
					if err != nil {
						break // a read that failed under faults proves nothing
					}
					if ev.Version != next {
						violate("reader: %v version %d after %d", id, ev.Version, next-1)
						break
					}
					next++
				}
				mu.Lock()
				reads++
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
		st := inj.Stats()
		inj.SetEnabled(false)

		var v chaos.Violations
		for _, b := range bad {
			v.Addf("%s", b)
		}
		s := stores[0]
		seen := map[string]ack{}
		total, logged := 0, 0
		for _, id := range streams {
			evs, err := tablekit.Collect(s.Forward(chaos.NoFaults(ctx), id, 1), 0)
			if err != nil {
				t.Fatal(err)
			}
			ids := map[string]int64{}
			for i, ev := range evs {
				if ev.Version != int64(i+1) {
					v.Addf("%v: event %d has version %d", id, i, ev.Version)
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
			if ver, err := s.Version(chaos.NoFaults(ctx), id); err != nil || ver != int64(len(evs)) {
				v.Addf("%v: head says version %d (%v), %d events", id, ver, err, len(evs))
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
					v.Addf("%v: Table write of %s stored, its append's events not", id, tag)
				}
				logged = len(writes)
			} else if view, err := stream.TableOf(s).Get(chaos.NoFaults(ctx), id.PartitionKey, id.Prefix+"-view"); err != nil || view.Properties["Version"] != int64(len(evs)) {
				v.Addf("%v: view row says version %v (%v), %d events", id, view.Properties["Version"], err, len(evs))
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
		for tag, a := range acked {
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
		t.Logf("history: %s", hist)
		t.Logf("faults: %s", st.String())
		if st.FaultRate() < 0.15 || st.Count(chaos.AnswerLost, "", "") == 0 {
			v.Addf("fault rate %.1f%%, %d answers lost: too few", 100*st.FaultRate(), st.Count(chaos.AnswerLost, "", ""))
		}
		v.Report(t)
	})
}
