package feed_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/stream"
)

// TestZeroValuesNeverPanic: every exported method of the zero (and nil)
// Feed, Relay and Projector fails with an error matching
// tablekit.ErrInvalidInput that names the constructor, without a panic;
// the constructors refuse nil and bad arguments the same way.
func TestZeroValuesNeverPanic(t *testing.T) {
	ctx := context.Background()
	check := func(what string, err error, ctor string) {
		t.Helper()
		if !errors.Is(err, tablekit.ErrInvalidInput) || !strings.Contains(err.Error(), ctor) {
			t.Errorf("%s: %v, want an error matching ErrInvalidInput naming %s", what, err, ctor)
		}
	}
	id := stream.ID{PartitionKey: "p"}
	evs := []stream.Event{{Data: Tagged{Tag: "t"}}}
	for _, f := range []*feed.Feed{{}, nil} {
		_, err := f.Append(ctx, id, 0, evs)
		check("Feed.Append", err, "feed.New")
		for _, err := range f.Streams(ctx) {
			check("Feed.Streams", err, "feed.New")
		}
		_, err = f.NewRelay([]feed.Subscription{{Name: "a", Handle: func(context.Context, feed.Change) error { return nil }}}, nil)
		check("Feed.NewRelay", err, "feed.New")
	}
	for _, r := range []*feed.Relay{{}, nil} {
		_, err := r.Round(ctx, 1)
		check("Relay.Round", err, "Feed.NewRelay")
		_, err = r.Replay(ctx, "a")
		check("Relay.Replay", err, "Feed.NewRelay")
		check("Relay.Run", r.Run(ctx, &coord.Lease{}), "Feed.NewRelay")
		if s := r.Stats(); len(s.Lag) != 0 {
			t.Errorf("zero Relay's Stats: %+v, want none", s)
		}
	}
	for _, p := range []*feed.Projector[tablekit.Entity]{{}, nil} {
		check("Projector.Handle", p.Handle(ctx, feed.Change{Stream: id, Version: 1}), "feed.NewProjector")
	}
	if _, err := feed.New(nil, nil, nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("New(nil...): %v", err)
	}
	if _, err := feed.NewProjector[tablekit.Entity](nil, nil, nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("NewProjector(nil...): %v", err)
	}
}

// TestBadInput: the constructors and calls refuse bad input before
// anything is sent.
func TestBadInput(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	m := e.acct.Meter()
	before := m.Snapshot()
	h := func(context.Context, feed.Change) error { return nil }
	for name, subs := range map[string][]feed.Subscription{
		"none":       nil,
		"nil handle": {{Name: "a"}},
		"empty name": {{Handle: h}},
		"twice":      {{Name: "a", Handle: h}, {Name: "a", Handle: h}},
		"bad name":   {{Name: "a/b", Handle: h}},
	} {
		if _, err := e.f.NewRelay(subs, nil); !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("NewRelay, %s: %v", name, err)
		}
	}
	if _, err := e.f.NewRelay([]feed.Subscription{{Name: "a", Handle: h}}, &feed.RelayOptions{Interval: -1}); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("negative Interval: %v", err)
	}
	for _, n := range []int{-1, 101} {
		if _, err := feed.New(e.store, e.ft, &feed.Options{Shards: n}); !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("Shards %d: %v", n, err)
		}
	}
	r := relay(t, e.f, feed.Subscription{Name: "a", Handle: h})
	if _, err := r.Round(ctx, -1); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("negative term: %v", err)
	}
	for _, c := range []struct {
		id  stream.ID
		exp int64
	}{{stream.ID{}, 0}, {stream.ID{PartitionKey: "p"}, -2}} { // -1 is stream.AnyVersion
		if _, err := e.f.Append(ctx, c.id, c.exp, []stream.Event{{Data: Tagged{}}}); !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("Append(%v, %d): %v", c.id, c.exp, err)
		}
	}
	if c := m.Snapshot().Sub(before); c.Total() != 0 {
		t.Errorf("refused input sent %v", c)
	}
}
