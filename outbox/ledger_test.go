package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/outbox"
	"github.com/tablekit/tablekit/stream"
)

// suiteTables is what a process of the chaos suites opens on its own
// Account: the streams' table (with the state rows), the feed's and the
// effects', with a Store and a Feed over them.
type suiteTables struct {
	acct       *tablekit.Account
	store      *stream.Store
	f          *feed.Feed
	st, ft, et *tablekit.Table[tablekit.Entity]
}

// openSuiteTables opens the tables names (streams+state, feed, effects) on
// acct, the streams' table with enc (nil: none), or fails t.
func openSuiteTables(t testing.TB, acct *tablekit.Account, names [3]string, reg *tablekit.Registry, enc *tablekit.Encryption) suiteTables {
	var tbl [3]*tablekit.Table[tablekit.Entity]
	var err error
	for i, name := range names {
		var opts *tablekit.TableOptions
		if i == 0 {
			opts = &tablekit.TableOptions{Encryption: enc}
		}
		if tbl[i], err = tablekit.OpenTable[tablekit.Entity](acct, name, opts); err != nil {
			t.Fatal(err)
		}
	}
	s, err := stream.NewStore(tbl[0], reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := feed.New(s, tbl[1], &feed.Options{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	return suiteTables{acct, s, f, tbl[0], tbl[1], tbl[2]}
}

// countAndLog returns the apply of the chaos suites' handlers: it adds 1
// to its partition's count row in et (read, then merged on the ETag read)
// and upserts a log row of the message id ("log~<id>", Tag: the order), so
// a message applied twice counts twice. applied, if not nil, is called on
// each call.
func countAndLog(et *tablekit.Table[tablekit.Entity], applied func()) func(ctx context.Context, m outbox.Message) ([]tablekit.Action[tablekit.Entity], error) {
	return func(ctx context.Context, m outbox.Message) ([]tablekit.Action[tablekit.Entity], error) {
		var s Shipped
		if err := m.Decode(&s); err != nil {
			return nil, err
		}
		if applied != nil {
			applied()
		}
		pk := m.Stream.PartitionKey
		log := tablekit.UpsertAction(tablekit.Entity{PartitionKey: pk, RowKey: "log~" + m.ID, Properties: map[string]any{"Tag": s.Order}})
		row, err := et.Get(ctx, pk, "count")
		switch {
		case errors.Is(err, tablekit.ErrNotFound):
			return []tablekit.Action[tablekit.Entity]{tablekit.InsertAction(tablekit.Entity{PartitionKey: pk, RowKey: "count", Properties: map[string]any{"N": int64(1)}}), log}, nil
		case err != nil:
			return nil, err
		}
		n, _ := row.Properties["N"].(int64)
		row.Properties = map[string]any{"N": n + 1}
		return []tablekit.Action[tablekit.Entity]{tablekit.MergeAction(row, row.ETag), log}, nil
	}
}

// ledger is what the chaos suites' writers were told: the messages and
// state rows of committed and of abandoned transactions. It is safe for
// concurrent use.
type ledger struct {
	parts []string // the partitions written to

	mu                   sync.Mutex
	acked, abandoned     map[string]bool  // message tags
	ackedTx, abandonedTx map[string]where // state row -> where it is
	appends, conflicts   int              // Append calls, and conflicts among them
	bad                  []string         // violations seen while writing
}

// where is where a state row is: the Store (its index in the suite) and
// the partition.
type where struct {
	store int
	pk    string
}

func newLedger(parts []string) *ledger {
	return &ledger{parts: parts, acked: map[string]bool{}, abandoned: map[string]bool{}, ackedTx: map[string]where{}, abandonedTx: map[string]where{}}
}

// write is writer w's transaction j on Store number si of the suite (store,
// appended through f): a state row and 1 to 3 messages (events with ids
// "w<writer>-<j>-<k>") to the outbox stream of one of the partitions, in
// one Feed.Append at the version read; a failed transaction
// is sent again at the version read anew (or the conflict's), except 1 in
// 6, abandoned after a first failure that says it was not applied. An
// outcome unknown, or ErrPartlyApplied, is a violation. It returns an error
// for a broken test only.
func (l *ledger) write(ctx context.Context, w *chaos.Writer, si int, store *stream.Store, f *feed.Feed, j int) error {
	pk := l.parts[w.Rand.IntN(len(l.parts))]
	id := stream.ID{PartitionKey: pk, Prefix: "outbox"}
	evs := make([]stream.Event, 1+w.Rand.IntN(3))
	for k := range evs {
		tag := fmt.Sprintf("w%d-%d-%d", w.Index, j, k)
		evs[k] = stream.Event{ID: tag, Data: Shipped{Order: tag}}
	}
	state := fmt.Sprintf("state~w%d-%d", w.Index, j)
	act := tablekit.InsertAction(tablekit.Entity{PartitionKey: pk, RowKey: state, Properties: map[string]any{"Done": true}})
	abandon := w.Rand.IntN(6) == 0
	expected := int64(-1)
	for attempt := 0; ; attempt++ {
		if attempt == 500 {
			return fmt.Errorf("%s: not acknowledged after 500 tries", state)
		}
		if expected < 0 {
			v, err := store.Version(ctx, id)
			if err != nil {
				continue
			}
			expected = v
		}
		op := w.Do(ctx, "Append", fmt.Sprint(id), evs, func(ctx context.Context) (any, error) {
			return f.Append(ctx, id, expected, evs, act)
		})
		l.mu.Lock()
		l.appends++
		var ce *stream.ConflictError
		switch {
		case op.Err == nil:
			for _, ev := range evs {
				l.acked[ev.ID] = true
			}
			l.ackedTx[state] = where{si, pk}
		case errors.Is(op.Err, tablekit.ErrOutcomeUnknown), errors.Is(op.Err, stream.ErrPartlyApplied):
			l.bad = append(l.bad, op.String())
			l.mu.Unlock()
			return nil
		case abandon:
			for _, ev := range evs {
				l.abandoned[ev.ID] = true
			}
			l.abandonedTx[state] = where{si, pk}
		case errors.As(op.Err, &ce):
			l.conflicts++
			expected = ce.Current
			l.mu.Unlock()
			continue
		default:
			expected = -1
			l.mu.Unlock()
			continue
		}
		l.mu.Unlock()
		return nil
	}
}

// logs returns the log rows of et: message tag -> partition.
func logs(ctx context.Context, et *tablekit.Table[tablekit.Entity]) (map[string]string, error) {
	got := map[string]string{}
	for e, err := range et.Query(ctx, tablekit.Where("RowKey ge 'log~' and RowKey lt 'log~~'"), nil) {
		if err != nil {
			return nil, err
		}
		tag, _ := e.Properties["Tag"].(string)
		got[tag] = e.PartitionKey
	}
	return got, nil
}

// drain waits, reading without faults, until every acknowledged message
// has its log row in et and queue is empty (no copy left to handle). How
// long that takes depends on the machine's load, so it gives up only when
// nothing moved (the log rows less the messages queued) for stall. It
// returns the last log rows read, how long it waited and whether it saw
// both.
func (l *ledger) drain(ctx context.Context, et *tablekit.Table[tablekit.Entity], queue *azqueue.QueueClient, stall time.Duration) (map[string]string, time.Duration, bool) {
	nctx := chaos.NoFaults(ctx)
	var logged map[string]string
	waited, ok := chaos.WaitProgress(stall, 100*time.Millisecond, func() (int64, bool) {
		got, err := logs(nctx, et)
		if err != nil {
			return math.MinInt64, false
		}
		logged = got
		props, err := queue.GetProperties(nctx, nil)
		if err != nil || props.ApproximateMessagesCount == nil {
			return math.MinInt64, false
		}
		queued := int64(*props.ApproximateMessagesCount)
		l.mu.Lock()
		defer l.mu.Unlock()
		all := true
		for tag := range l.acked {
			if _, ok := got[tag]; !ok {
				all = false
				break
			}
		}
		return int64(len(got)) - queued, all && queued == 0
	})
	return logged, waited, ok
}

// check adds to v what the effects (et, log rows logged) and the state rows
// (in sts, by Store) break of the invariants: the log rows are exactly the acknowledged
// messages (none missing, none of an abandoned transaction); each
// partition's count equals its log rows (no message applied twice); each
// acknowledged transaction's state row exists and no abandoned one's does;
// and the violations seen while writing.
func (l *ledger) check(t *testing.T, ctx context.Context, et *tablekit.Table[tablekit.Entity], sts []*tablekit.Table[tablekit.Entity], logged map[string]string, v *chaos.Violations) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	nctx := chaos.NoFaults(ctx)
	for _, b := range l.bad {
		v.Addf("%s", b)
	}
	for tag := range l.acked {
		if _, ok := logged[tag]; !ok {
			v.Addf("message %s of a committed transaction never handled", tag)
		}
	}
	perPart := map[string]int64{}
	for tag, pk := range logged {
		if !l.acked[tag] {
			v.Addf("message %s handled but not acknowledged (abandoned: %v)", tag, l.abandoned[tag])
		}
		perPart[pk]++
	}
	for _, pk := range l.parts {
		row, err := et.Get(nctx, pk, "count")
		var c int64
		if err == nil {
			c, _ = row.Properties["N"].(int64)
		} else if !errors.Is(err, tablekit.ErrNotFound) {
			t.Fatal(err)
		}
		if c != perPart[pk] {
			v.Addf("partition %s: count %d, %d distinct messages handled (a message applied twice, or a count lost)", pk, c, perPart[pk])
		}
	}
	for state, at := range l.ackedTx {
		if _, err := sts[at.store].Get(nctx, at.pk, state); err != nil {
			v.Addf("state %s of an acknowledged transaction: %v", state, err)
		}
	}
	for state, at := range l.abandonedTx {
		if _, err := sts[at.store].Get(nctx, at.pk, state); !errors.Is(err, tablekit.ErrNotFound) {
			v.Addf("state %s of an abandoned transaction: %v, want not found", state, err)
		}
	}
}

// String summarises the writes, e.g. "40 committed (83 messages), 6
// abandoned (11 messages); 71 append calls, 19 conflicts".
func (l *ledger) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d committed (%d messages), %d abandoned (%d messages); %d append calls, %d conflicts",
		len(l.ackedTx), len(l.acked), len(l.abandonedTx), len(l.abandoned), l.appends, l.conflicts)
}
