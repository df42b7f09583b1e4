package feed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/core"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/stream"
)

// Change is one event of a stream, as a Relay delivers it to a
// Subscription.
type Change struct {
	// Stream is the stream the event is in.
	Stream stream.ID
	// Version is the event's version in its stream, from 1.
	Version int64
	// EventID is the event's id, "" when it was appended without one.
	EventID string
	// Kind is the event's kind (see stream.RecordedEvent.Kind), "" when
	// it has none.
	Kind string
	// Data is the event, decoded by the Store's Registry (see
	// stream.RecordedEvent.Data).
	Data any
	// Time is when the service stored the event.
	Time time.Time
}

// Subscription is a consumer of the feed: a Relay calls Handle with each
// new event of each stream, in version order per stream, at least once.
// Handle must be idempotent (a Projector is). An error stops the stream for
// this subscription until the next round; other streams and subscriptions
// go on.
type Subscription struct {
	// Name identifies the subscription's checkpoints: the partition
	// "cp~"+Name of the feed's table (so it obeys the PartitionKey rules).
	// A new name starts every stream from version 1 (see Relay.Replay).
	Name string
	// Handle handles one change; nil means it was handled.
	Handle func(ctx context.Context, c Change) error
}

// RelayOptions configure a Relay. The zero value (or nil) means the
// defaults.
type RelayOptions struct {
	// Interval is the pause between two rounds of Run. Default 1 s.
	Interval time.Duration
	// Lead configures the leader election of Run (coord.Lease.Lead).
	Lead *coord.LeadOptions
	// Logger receives, at warning level, the errors of Run's rounds and
	// of its lost leaderships; nil logs nothing.
	Logger *slog.Logger
}

// RoundResult counts what a relay round did.
type RoundResult struct {
	// Streams is how many streams the round read.
	Streams int
	// Delivered is how many changes a subscription handled (returned nil
	// for), all subscriptions together.
	Delivered int
	// Cleared is how many dirty marks the round cleared.
	Cleared int
}

// Relay publishes the feed's changes to subscriptions: each round reads
// the directory's dirty streams, hands each subscription the events past
// its checkpoint, stores its new checkpoint, and clears the marks of the
// streams every subscription has caught up with. Run one at a time per feed
// (Run elects one with a coord.Lease; its term fences the checkpoints).
// Make one with Feed.NewRelay; it is safe for concurrent use (its rounds
// run one at a time). The zero Relay refuses every call with an error
// matching tablekit.ErrInvalidInput.
type Relay struct {
	f    *Feed
	subs []Subscription
	w    *coord.Writer[tablekit.Entity]
	o    RelayOptions

	mu     sync.Mutex
	term   int64                       // the term the checkpoint partitions are fenced at
	inTerm bool                        // term is entered: fenced, cache valid
	cps    map[string]map[string]int64 // by subscription, then stream key: the checkpoint
}

// NewRelay returns a Relay of the feed's changes to subs (at least one,
// names distinct). It sends nothing.
func (f *Feed) NewRelay(subs []Subscription, opts *RelayOptions) (*Relay, error) {
	const op = "Feed.NewRelay"
	if err := f.ok(op); err != nil {
		return nil, err
	}
	var o RelayOptions
	if opts != nil {
		o = *opts
	}
	if len(subs) == 0 {
		return nil, invalid(op, "subs", "no subscriptions")
	}
	seen := map[string]bool{}
	for i, s := range subs {
		switch {
		case s.Handle == nil:
			return nil, invalid(op, fmt.Sprintf("subs[%d].Handle", i), "nil Handle")
		case seen[s.Name]:
			return nil, invalid(op, fmt.Sprintf("subs[%d].Name", i), fmt.Sprintf("name %q used twice", s.Name))
		}
		if s.Name == "" {
			return nil, invalid(op, fmt.Sprintf("subs[%d].Name", i), "empty name")
		}
		if err := keys.Validate(cpPrefix + s.Name); err != nil {
			return nil, invalid(op, fmt.Sprintf("subs[%d].Name", i), err.Error())
		}
		seen[s.Name] = true
	}
	if o.Interval < 0 {
		return nil, invalid(op, "Interval", fmt.Sprintf("negative interval %v", o.Interval))
	}
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	w, err := coord.NewWriter(f.t, nil)
	if err != nil {
		return nil, err
	}
	return &Relay{f: f, subs: slices.Clone(subs), w: w, o: o}, nil
}

func (r *Relay) ok(op string) error {
	if r == nil || r.f == nil {
		return invalid(op, "", "zero Relay: make one with Feed.NewRelay")
	}
	return nil
}

// Round runs one round at term (a coord.Lease's term; 0 for a relay that
// is alone by construction, unfenced): every dirty stream of the directory
// is caught up for every subscription and its mark cleared when all have
// caught up to its target. The first round of a term fences the
// subscriptions' checkpoint partitions at term, so that an earlier
// holder's checkpoint writes are refused from then on. Round returns the
// round's failures joined (subscriptions' errors, reads, checkpoint
// writes); one matching coord.ErrFenced means a later term has taken over:
// stop.
//
// Costs: 1 query per shard; per dirty stream, 1 read per subscription of
// its checkpoint (once per term: they are cached), 1 query per
// stream.Options.PageSize new events (+1, the empty range that ends the
// read), 1 fenced write per subscription that advanced (and 1 more per 32
// changes it handled), 1 write to clear.
func (r *Relay) Round(ctx context.Context, term int64) (RoundResult, error) {
	var res RoundResult
	if err := r.ok("Relay.Round"); err != nil {
		return res, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.enter(ctx, term); err != nil {
		return res, err
	}
	all := make([]int, len(r.subs))
	for i := range all {
		all[i] = i
	}
	var errs []error
	for s := range r.f.shards {
		var rows []tablekit.Entity
		for e, err := range r.f.t.Query(ctx, tablekit.Where("PartitionKey eq ? and Dirty eq true", shardPK(s)), nil) {
			if err != nil {
				errs = append(errs, fmt.Errorf("feed: Relay.Round: directory shard %d: %w", s, err))
				break
			}
			rows = append(rows, e)
		}
		for _, e := range rows {
			id := streamOf(e)
			target, _ := e.Properties[propTarget].(int64)
			res.Streams++
			reached, n, err := r.catchUp(ctx, term, id, all)
			res.Delivered += n
			if err != nil {
				errs = append(errs, err)
				if errors.Is(err, coord.ErrFenced) || ctx.Err() != nil {
					return res, errors.Join(errs...)
				}
				continue
			}
			if reached < target {
				continue // its append has not landed, or failed: read again next round
			}
			clean := tablekit.Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey, Properties: map[string]any{
				propStream: id.PartitionKey, propPrefix: id.Prefix, propDirty: false, propTarget: target}}
			switch _, err := r.f.t.Update(ctx, clean, e.ETag); {
			case err == nil:
				res.Cleared++
			case errors.Is(err, tablekit.ErrPreconditionFailed), errors.Is(err, tablekit.ErrNotFound), errors.Is(err, tablekit.ErrOutcomeUnknown):
				// marked again meanwhile: dirty it stays (or, the answer
				// lost, the next round sees which)
			default:
				errs = append(errs, fmt.Errorf("feed: Relay.Round: clearing stream %s: %w", name(id), err))
			}
		}
	}
	return res, errors.Join(errs...)
}

// Replay catches subscription name up on every stream of the directory
// (Feed.Streams), dirty or not, from its checkpoint: from version 1 for a
// new name. It is how a new view is built from zero (see the package doc);
// marks are left to Round. term fences its checkpoint writes as in Round;
// run it in the leader (or while no relay runs). It returns the failures
// joined, and can be run again to go on where it stopped.
func (r *Relay) Replay(ctx context.Context, term int64, name string) (RoundResult, error) {
	var res RoundResult
	if err := r.ok("Relay.Replay"); err != nil {
		return res, err
	}
	i := slices.IndexFunc(r.subs, func(s Subscription) bool { return s.Name == name })
	if i < 0 {
		return res, invalid("Relay.Replay", "name", fmt.Sprintf("no subscription %q", name))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.enter(ctx, term); err != nil {
		return res, err
	}
	var errs []error
	for id, err := range r.f.Streams(ctx) {
		if err != nil {
			errs = append(errs, err)
			break
		}
		res.Streams++
		_, n, err := r.catchUp(ctx, term, id, []int{i})
		res.Delivered += n
		if err != nil {
			errs = append(errs, err)
			if errors.Is(err, coord.ErrFenced) || ctx.Err() != nil {
				break
			}
		}
	}
	return res, errors.Join(errs...)
}

// Run runs rounds every Interval while this process leads by lease
// (coord.Lease.Lead, with Options.Lead), each with the lease's term, and
// campaigns again when leadership is lost or fenced, until ctx ends; it
// then returns ctx's error. It returns at once an error matching
// tablekit.ErrInvalidInput when the lease or options are refused.
func (r *Relay) Run(ctx context.Context, lease *coord.Lease) error {
	if err := r.ok("Relay.Run"); err != nil {
		return err
	}
	for {
		err := lease.Lead(ctx, func(ctx context.Context, term int64) error {
			for {
				_, err := r.Round(ctx, term)
				if errors.Is(err, coord.ErrFenced) {
					return err
				}
				if err != nil && ctx.Err() == nil && r.o.Logger != nil {
					r.o.Logger.Warn("feed: relay round", "term", term, "err", err)
				}
				if !core.Sleep(ctx, r.o.Interval) {
					return ctx.Err()
				}
			}
		}, r.o.Lead)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, tablekit.ErrInvalidInput):
			return err
		}
		if r.o.Logger != nil {
			r.o.Logger.Warn("feed: relay leadership ended", "err", err)
		}
		core.Sleep(ctx, r.o.Interval)
	}
}

// enter makes term the relay's term: on a new one, it forgets the cached
// checkpoints and fences the checkpoint partitions at term (term > 0).
func (r *Relay) enter(ctx context.Context, term int64) error {
	if term < 0 {
		return invalid("Relay.Round", "term", fmt.Sprintf("negative term %d", term))
	}
	if r.inTerm && r.term == term {
		return nil
	}
	r.inTerm, r.term, r.cps = false, term, map[string]map[string]int64{}
	if term > 0 {
		for _, s := range r.subs {
			if err := r.w.Fence(ctx, cpPrefix+s.Name, term); err != nil {
				return fmt.Errorf("feed: Relay.Round: fencing the checkpoints of %q at term %d: %w", s.Name, term, err)
			}
		}
	}
	r.inTerm = true
	return nil
}

// checkpoint returns subscription s's checkpoint of stream id: the last
// version it handled, 0 for none.
func (r *Relay) checkpoint(ctx context.Context, s Subscription, id stream.ID) (int64, error) {
	k := streamKey(id)
	if v, ok := r.cps[s.Name][k]; ok {
		return v, nil
	}
	e, err := r.f.t.Get(ctx, cpPrefix+s.Name, k)
	var v int64
	switch {
	case errors.Is(err, tablekit.ErrNotFound):
	case err != nil:
		return 0, fmt.Errorf("feed: Relay.Round: reading the checkpoint of %q on stream %s: %w", s.Name, name(id), err)
	default:
		v, _ = e.Properties[propVersion].(int64)
	}
	r.remember(s, k, v)
	return v, nil
}

func (r *Relay) remember(s Subscription, k string, v int64) {
	if r.cps[s.Name] == nil {
		r.cps[s.Name] = map[string]int64{}
	}
	r.cps[s.Name][k] = v
}

// checkpointEvery is how many changes a subscription handles on a stream
// before its checkpoint is stored in the middle of a round, so that a
// relay that loses its lease (or dies) in a long catch-up hands at most
// that many again.
const checkpointEvery = 32

// catchUp hands subscriptions subs (indices) the events of stream id past
// their checkpoints, then stores their new checkpoints. It returns the
// lowest checkpoint reached and how many changes were handled; an error
// when any subscription failed or a read or write did.
func (r *Relay) catchUp(ctx context.Context, term int64, id stream.ID, subs []int) (reached int64, delivered int, err error) {
	from := int64(-1)
	cp := make([]int64, len(subs))
	for j, i := range subs {
		v, err := r.checkpoint(ctx, r.subs[i], id)
		if err != nil {
			return 0, 0, err
		}
		cp[j] = v
		if from < 0 || v < from {
			from = v
		}
	}
	done := slices.Clone(cp)
	failed := make([]bool, len(subs))
	nfailed := 0
	var errs []error
	// save stores subs[j]'s checkpoint at done[j]; it returns an error
	// only when fenced (stop). A failed write stops the subscription on
	// this stream for the round, its checkpoint the last one stored.
	save := func(j int) error {
		s := r.subs[subs[j]]
		row := tablekit.Entity{PartitionKey: cpPrefix + s.Name, RowKey: streamKey(id), Properties: map[string]any{propVersion: done[j]}}
		if _, err := r.w.Transaction(ctx, coord.Write{Term: term}, tablekit.UpsertAction(row)); err != nil {
			delete(r.cps[s.Name], streamKey(id)) // read it again: it may be either
			errs = append(errs, fmt.Errorf("feed: Relay.Round: checkpoint of %q on stream %s at version %d: %w", s.Name, name(id), done[j], err))
			if errors.Is(err, coord.ErrFenced) {
				return err
			}
			done[j] = cp[j]
			if !failed[j] {
				failed[j] = true
				nfailed++
			}
			return nil
		}
		r.remember(s, streamKey(id), done[j])
		cp[j] = done[j]
		return nil
	}
	for ev, err := range r.f.store.Forward(ctx, id, from+1) {
		if err != nil {
			errs = append(errs, fmt.Errorf("feed: Relay.Round: reading stream %s: %w", name(id), err))
			break
		}
		c := Change{Stream: id, Version: ev.Version, EventID: ev.ID, Kind: ev.Kind, Data: ev.Data, Time: ev.Time}
		for j, i := range subs {
			if failed[j] || ev.Version <= done[j] {
				continue
			}
			if err := r.subs[i].Handle(ctx, c); err != nil {
				errs = append(errs, fmt.Errorf("feed: subscription %q on stream %s version %d: %w", r.subs[i].Name, name(id), ev.Version, err))
				failed[j] = true
				nfailed++
				continue
			}
			done[j] = ev.Version
			delivered++
			if done[j]-cp[j] >= checkpointEvery {
				if err := save(j); err != nil {
					return 0, delivered, errors.Join(errs...)
				}
			}
		}
		if nfailed == len(subs) {
			break
		}
	}
	reached = -1
	for j := range subs {
		if done[j] > cp[j] {
			if err := save(j); err != nil {
				return 0, delivered, errors.Join(errs...)
			}
		}
		if reached < 0 || done[j] < reached {
			reached = done[j]
		}
	}
	return reached, delivered, errors.Join(errs...)
}
