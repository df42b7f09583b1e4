package feed_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/stream"
)

// TestRoundsCutShort: rounds whose context ends in the middle of a long
// catch-up (Run's context, a lost lease: each round a new Relay of a new
// term, as a relay restarted whenever its round outlives a deadline)
// still store the checkpoints of what they handled, so that each round
// moves them forward even when it hands fewer changes per stream than a
// mid-round checkpoint needs (32): 3 streams of 100 events, each round
// cut after 20 changes handed to one of its two subscriptions. Then an
// uncut round clears every mark, and the view holds every event once,
// in order. On Table storage (the tests' account) and behind the Cosmos
// DB front, where the suite's relays, restarted every 0.2-1 s, never got
// past the first multiple of 32 when their rounds took longer than that
// (TestChaosFeedCosmos at full size).
func TestRoundsCutShort(t *testing.T) {
	t.Run("storage", func(t *testing.T) {
		acct := testenv.Account(t, nil)
		roundsCutShort(t, acct, testenv.OpenTable[tablekit.Entity](t, acct, nil), testenv.OpenTable[tablekit.Entity](t, acct, nil), testenv.OpenTable[tablekit.Entity](t, acct, nil))
	})
	t.Run("cosmos", func(t *testing.T) {
		srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: true, Paging: true, Seed: 1}})
		acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Service: tablekit.ServiceCosmosDB})
		if err != nil {
			t.Fatal(err)
		}
		var tbl [3]*tablekit.Table[tablekit.Entity]
		for i, name := range []string{"cutstreams", "cutfeed", "cutview"} {
			if tbl[i], err = tablekit.OpenTable[tablekit.Entity](acct, name, nil); err != nil {
				t.Fatal(err)
			}
			if err := tbl[i].CreateIfNotExists(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		roundsCutShort(t, acct, tbl[0], tbl[1], tbl[2])
	})
}

func roundsCutShort(t *testing.T, acct *tablekit.Account, st, ft, vt *tablekit.Table[tablekit.Entity]) {
	const events, per, cut = 100, 4, 20
	store, err := stream.NewStore(st, registry(t), &stream.Options{PageSize: 20})
	if err != nil {
		t.Fatal(err)
	}
	f, err := feed.New(store, ft, &feed.Options{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{acct: acct, store: store, st: st, ft: ft, f: f}
	ids := []stream.ID{{PartitionKey: "a"}, {PartitionKey: "b"}, {PartitionKey: "b", Prefix: "x"}}
	want := map[string][]string{}
	for _, id := range ids {
		for v := 0; v < events; v += per {
			var tags []string
			for k := range per {
				tags = append(tags, fmt.Sprintf("%s.%s-%d", id.PartitionKey, id.Prefix, v+k+1))
			}
			e.append(t, id, int64(v), tags...)
			want[fmt.Sprintf("%s.%s", id.PartitionKey, id.Prefix)] = append(want[fmt.Sprintf("%s.%s", id.PartitionKey, id.Prefix)], tags...)
		}
	}
	var mu sync.Mutex
	var stop context.CancelFunc // the current round's
	handed := 0                 // changes handed to "rec" in the current round
	rec := newRecorder()
	subs := []feed.Subscription{
		{Name: "view", Handle: tagView(t, vt).Handle},
		{Name: "rec", Handle: func(ctx context.Context, c feed.Change) error {
			if err := rec.handle(ctx, c); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if handed++; handed == cut {
				stop() // the round's context ends: Run's deadline, a lost lease
			}
			return nil
		}},
	}
	progress := func() (sum int64, done bool) {
		done = true
		for _, s := range subs {
			for _, id := range ids {
				v := e.checkpoint(t, s.Name, id)
				sum += v
				done = done && v == events
			}
		}
		return sum, done
	}
	last, done := progress()
	term := int64(0)
	for !done {
		term++
		ctx, cancel := context.WithCancel(context.Background())
		mu.Lock()
		stop, handed = cancel, 0
		mu.Unlock()
		_, _ = relay(t, f, subs...).Round(ctx, term) // (an error when cut: the context's, or a Handle's)
		cancel()
		var p int64
		if p, done = progress(); p <= last {
			t.Fatalf("round %d, cut after %d changes handed: checkpoints at %d in all, %d before: it stored nothing it handled", term, cut, p, last)
		}
		last = p
	}
	term++
	if res := round(t, relay(t, f, subs...), term); res.Delivered != 0 {
		t.Errorf("round after the catch-up: %+v, want nothing delivered", res)
	}
	if m := e.allMarks(t); len(m) != 0 {
		t.Errorf("marks left: %v", m)
	}
	for _, id := range ids {
		rec.mu.Lock()
		vers := rec.vers[id]
		rec.mu.Unlock()
		high := int64(0)
		for _, v := range vers {
			if v > high+1 {
				t.Fatalf("%v: version %d handed after version %d at most", id, v, high)
			}
			high = max(high, v)
		}
		if high != events {
			t.Errorf("%v: handed up to %d, want %d", id, high, events)
		}
	}
	got := foldsByStream(t, vt)
	for k, w := range want {
		if g := fmt.Sprint(got[k]); g != fmt.Sprint(w) {
			t.Errorf("view, stream %s: folded %s, want %s", k, g, w)
		}
	}
	t.Logf("caught up in %d rounds cut short", term-1)
}
