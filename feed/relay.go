package feed

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/logs"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/stream"
)

// Change is one event of a stream, as a Relay delivers it to a
// Subscription.
type Change struct {
	// Source names the table the stream is in, as "<account>/<table>"
	// (the storage account's name and the table's): with Stream and
	// Version it names the event among every feed's, so that a
	// consumer fed by several feeds (a Projector, an outbox handler)
	// keeps their events apart.
	Source string
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
//
// Handle is called concurrently for different streams (up to 16 at once):
// one call at a time per stream, in version order, but a Handle that
// shares state across streams (a map, a counter, a connection that is not
// safe for concurrent use) must lock it. A Projector and an
// outbox.Publisher are safe for concurrent use.
type Subscription struct {
	// Name identifies the subscription's checkpoints: the partition
	// "cp~"+Name of the feed's table (so it obeys the PartitionKey rules).
	// A new name starts every stream from version 1 (see Relay.Replay).
	Name string
	// Handle handles one change; nil means it was handled.
	Handle func(ctx context.Context, c Change) error
	// FromStart lets the subscription begin a stream at its start when
	// the events past its checkpoint were trimmed (stream.Store.Trim,
	// RelayOptions.Trim): it is never handed them, and goes on from the
	// stream's first version. For a subscription that needs only what is
	// still there (a new publisher, a consumer of recent changes). Without
	// it, the subscription fails such a stream, every round, with an
	// error matching stream.ErrTrimmed that names the stream and its
	// start, and is handed none of it: a view that folds a stream's
	// whole history must never skip part of it unseen.
	FromStart bool
}

// RelayOptions configure a Relay. The zero value (or nil) means the
// defaults.
type RelayOptions struct {
	// Interval is the pause between two rounds of Run. Default 1 s.
	Interval time.Duration
	// Lead configures the leader election of Run (coord.Lease.Lead).
	Lead *coord.LeadOptions
	// Logger receives, at warning level, the errors of Run's rounds and
	// of its lost leaderships; nil means the Logger of the Account of the
	// feed's table (tablekit.Options.Logger: slog.Default() when that is
	// nil too).
	Logger *slog.Logger
	// Trim, when not nil, chooses the streams the relay trims
	// (stream.Store.Trim) once every subscription has handled their
	// events: an outbox's streams, a log of Table writes, any stream
	// whose events no reader needs once handed over. A round that moves
	// the lowest checkpoint of such a stream (all its subscriptions
	// caught up past it) trims the stream below that checkpoint + 1, in
	// one Trim for all the events it handed over (see "Retention" in the
	// package doc). It is called concurrently, and must be fast: a test
	// of the stream's id (its Prefix, say).
	Trim func(id stream.ID) bool
}

// RoundResult counts what a relay round did.
type RoundResult struct {
	// Streams is how many streams the round read.
	Streams int
	// Delivered is how many changes a subscription handled (returned nil
	// for), all subscriptions together.
	Delivered int
	// Cleared is how many marks the round cleared: pending marks deleted,
	// and directory rows an earlier version of this package marked dirty
	// made clean.
	Cleared int
	// Trimmed is how many streams the round trimmed (RelayOptions.Trim).
	Trimmed int
}

// Relay publishes the feed's changes to subscriptions: each round reads
// the directory's marks, hands each subscription the events of the marked
// streams past its checkpoint, stores its new checkpoint, and clears the
// marks the stream has passed once every subscription has caught up with
// it. Run one at a time per feed (Run elects one with a coord.Lease; its
// term fences the checkpoints). Make one with Feed.NewRelay; it is safe
// for concurrent use (its rounds run one at a time). The zero Relay
// refuses every call with an error matching tablekit.ErrInvalidInput.
type Relay struct {
	f    *Feed
	subs []Subscription
	w    *coord.Writer[tablekit.Entity]
	o    RelayOptions
	log  *slog.Logger

	mu     sync.Mutex // held by a round (or Replay): they run one at a time
	term   int64      // the term the checkpoint partitions are fenced at
	inTerm bool       // term is entered: fenced, cache valid
	manual bool       // term is the latest Round's (called by the application, not Run)

	leadMu   sync.Mutex      // guards the two below
	leadCtx  context.Context // while Run leads: its leadership's context (nil: Run does not lead)
	leadTerm int64           // while Run leads: its term

	cpMu sync.Mutex                  // guards cps, which a round's streams share
	cps  map[string]map[string]int64 // by subscription, then stream key: the checkpoint

	now   func() time.Time // the relay's clock (time.Now; the tests' own)
	lagMu sync.Mutex       // guards since, apart from mu so that Stats never waits for a round
	since []time.Time      // by subscription: since when it may be behind (zero: not reporting)
}

// RelayStats is a snapshot of a Relay's figures (Relay.Stats).
type RelayStats struct {
	// Lag is, by subscription name, an upper bound on the age of the
	// oldest event the subscription may not have been handed: the time
	// since the start of this Relay's latest round that handed it every
	// event of every marked stream without a failure, or, before such a
	// round, since the oldest mark the Relay's first round read (or that
	// round's start). It keeps growing while the relay is stalled. A
	// subscription is absent while this Relay does not lead (no round
	// has read the directory yet, or Run lost the lease). The package
	// doc ("Lag") says exactly what it means.
	Lag map[string]time.Duration
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
	log := o.Logger
	if log == nil {
		log = logs.Or(f.t.Account().Logger())
	}
	return &Relay{f: f, subs: slices.Clone(subs), w: w, o: o, log: log, now: time.Now, since: make([]time.Time, len(subs))}, nil
}

// Stats returns the relay's figures now (see RelayStats). It never waits
// for a round, and is safe to call at any time; the zero Relay's Stats
// are empty.
func (r *Relay) Stats() RelayStats {
	s := RelayStats{Lag: map[string]time.Duration{}}
	if r == nil || r.f == nil {
		return s
	}
	r.lagMu.Lock()
	defer r.lagMu.Unlock()
	now := r.now()
	for i, t := range r.since {
		if !t.IsZero() {
			s.Lag[r.subs[i].Name] = max(now.Sub(t), 0)
		}
	}
	return s
}

// report starts reporting the lag of the subscriptions that do not report
// yet, once a round begun at start has read every shard of the directory,
// whose oldest mark was stored at oldest (the service's Timestamp; zero
// for none): from oldest, moved onto the relay's clock, or from start
// when that is sooner.
func (r *Relay) report(start, oldest time.Time) {
	r.lagMu.Lock()
	defer r.lagMu.Unlock()
	since := start
	if !oldest.IsZero() {
		if age := start.Sub(oldest); age > 0 { // wall clocks: the relay's at start, the service's at the mark
			since = start.Add(-age) // start's reading of the relay's clock, monotonic included
		}
	}
	for i, t := range r.since {
		if t.IsZero() {
			r.since[i] = since
		}
	}
}

// caughtUp records that a round begun at start, which ran to its end,
// caught up every subscription not behind.
func (r *Relay) caughtUp(start time.Time, behind []bool) {
	r.lagMu.Lock()
	defer r.lagMu.Unlock()
	for i := range r.since {
		if !behind[i] && !r.since[i].IsZero() {
			r.since[i] = start
		}
	}
}

// resign stops reporting lag: the relay no longer leads.
func (r *Relay) resign() {
	r.lagMu.Lock()
	defer r.lagMu.Unlock()
	clear(r.since)
}

func (r *Relay) ok(op string) error {
	if r == nil || r.f == nil {
		return invalid(op, "", "zero Relay: make one with Feed.NewRelay")
	}
	return nil
}

// Round runs one round at term (a coord.Lease's term; 0 for a relay that
// is alone by construction, unfenced): every stream the directory marks is
// caught up for every subscription, and the marks it has passed are
// cleared once all have caught up with it. The first round of a term
// fences the subscriptions' checkpoint partitions at term, so that an
// earlier holder's checkpoint writes are refused from then on. Round
// returns the round's failures joined (subscriptions' errors, reads,
// checkpoint writes); one matching coord.ErrFenced means a later term has
// taken over: stop (the round stops too, and cancels the context of the
// streams it was catching up). Run calls it for the application; the
// term of the latest Round is the one Replay runs in when Run does not
// lead. A round cut short because ctx ended (Run's context, a lost lease)
// still stores the checkpoints of what it handled, with fenced writes
// that outlive ctx by up to 5 s: a relay whose rounds keep outliving
// their context still moves on.
//
// The round queries the shards concurrently and catches up to
// streamsInFlight (16) marked streams at once, each stream's events in
// version order: a Subscription's Handle runs concurrently for different
// streams (see Subscription). Through a network's latency a round so
// takes about the time of its slowest stream, not the sum of all.
//
// Costs: 1 query per shard; per marked stream, 1 read per subscription of
// its checkpoint (once per term: they are cached), 1 query per
// stream.Options.PageSize new events (+1, the empty range that ends the
// read), 1 fenced write per subscription that advanced (and 1 more per 32
// changes it handled), 1 EGT to clear its marks (per 100 marks; 1 delete
// when there is one).
func (r *Relay) Round(ctx context.Context, term int64) (RoundResult, error) {
	if err := r.ok("Relay.Round"); err != nil {
		return RoundResult{}, err
	}
	if term < 0 {
		return RoundResult{}, invalid("Relay.Round", "term", fmt.Sprintf("negative term %d", term))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	res, err := r.round(ctx, term)
	r.manual = r.inTerm && r.term == term
	return res, err
}

// round is a round at term; r.mu is held.
func (r *Relay) round(ctx context.Context, term int64) (RoundResult, error) {
	start := r.now() // every event acknowledged before start is in a marked stream or handed over
	// The fence, once per term, before any checkpoint write of the round.
	if err := r.enter(ctx, term); err != nil {
		return RoundResult{}, err
	}
	all := make([]int, len(r.subs))
	for i := range all {
		all[i] = i
	}
	p := r.newPass(ctx, term, all)
	p.marks = p.readMarks()
	// The marked streams are caught up as the shards' marks are read.
	for m := range p.marks.streams() {
		if !p.start(m.id, m) {
			break
		}
	}
	oldest, errs := p.marks.wait()
	if len(errs) == 0 {
		r.report(start, oldest)
	}
	for _, err := range errs {
		p.fail(err, p.subs) // a marked stream may be unread
	}
	res, behind, err := p.wait()
	r.caughtUp(start, behind)
	return res, err
}

// marked is a stream a round found marked.
type marked struct {
	id      stream.ID
	pending []tablekit.Entity // its pending marks read and not yet passed to deletion
	legacy  *tablekit.Entity  // its directory row, when dirty (an earlier version's mark)
	done    bool              // its catch-up has ended
	reached int64             // when done: the lowest checkpoint of the subscriptions (-1: unknown)
	whole   bool              // when done: the catch-up read the stream to its end, without a failure
}

// passes reports whether a catch-up that ended with every subscription's
// checkpoint at or past reached, having read the stream to its end
// without a failure when whole, passed mark e: its append's last version
// is at or below reached, or, whole, its first version is. Either way
// the append can no longer land (its stream has left the version it
// expects), and if it landed, every subscription has handled it.
func passes(e tablekit.Entity, reached int64, whole bool) bool {
	first, _ := e.Properties[propTarget].(int64)
	last, ok := e.Properties[propLast].(int64)
	return reached >= 1 && ((ok && last <= reached) || (whole && first <= reached))
}

// markFilter selects the marks of a shard: its pending marks (a RowKey
// range), and the directory rows an earlier version of this package
// marked dirty, which a round still reads and clears, so that nothing
// appended through a Feed of that version is left behind.
const markFilter = "PartitionKey eq ? and (RowKey ge ? and RowKey lt ? or Dirty eq true)"

// marks is a round's reading of the directory's marks: the shards are
// read concurrently, and each stream is handed to the round (streams)
// when its first mark is read, so that its catch-up starts at once.
type marks struct {
	mu      sync.Mutex
	by      map[string]*marked // by stream key
	queue   []*marked          // streams not yet handed to the round
	reading int                // shards still being read
	wake    chan struct{}      // a stream queued, or a shard read
	oldest  time.Time          // the oldest Timestamp of the marks read
	errs    []error            // the shards' read failures
	readers sync.WaitGroup
}

// readMarks starts reading the marks of every shard, a page at a time:
// the marks of a page that a stream's catch-up, ended already, has passed
// are cleared after the page (an EGT), so that a shard of many marks
// read in many pages is cleared as it is read.
func (p *pass) readMarks() *marks {
	r := p.r
	ms := &marks{by: map[string]*marked{}, reading: r.f.shards, wake: make(chan struct{}, 1)}
	queries := make(chan struct{}, streamsInFlight)
	for s := range r.f.shards {
		ms.readers.Go(func() {
			queries <- struct{}{}
			defer func() { <-queries }()
			defer ms.signal(func() { ms.reading-- })
			f := tablekit.Where(markFilter, shardPK(s), pendingPrefix, pendingPrefix+"~")
			o := &tablekit.QueryOptions{}
			for {
				page, err := r.f.t.QueryPage(p.ctx, f, o)
				if err != nil {
					ms.signal(func() { ms.errs = append(ms.errs, fmt.Errorf("feed: Relay.Round: directory shard %d: %w", s, err)) })
					return
				}
				var passed []tablekit.Entity // marks of streams caught up already, which they passed
				ms.signal(func() {
					for _, e := range page.Items {
						if ms.add(e) {
							passed = append(passed, e)
						}
					}
				})
				if len(passed) > 0 && !p.isStopped() {
					p.clear(shardPK(s), passed)
				}
				if page.Continuation == "" {
					return
				}
				o.Continuation = page.Continuation
			}
		})
	}
	return ms
}

// signal runs f under the lock, then wakes the round.
func (ms *marks) signal(f func()) {
	ms.mu.Lock()
	f()
	ms.mu.Unlock()
	select {
	case ms.wake <- struct{}{}:
	default:
	}
}

// add records mark e (ms.mu is held), and reports whether it is a
// pending mark of a stream whose catch-up has ended and passed it.
func (ms *marks) add(e tablekit.Entity) (passed bool) {
	id := streamOf(e)
	k := streamKey(id)
	m := ms.by[k]
	if m == nil {
		m = &marked{id: id}
		ms.by[k] = m
		ms.queue = append(ms.queue, m)
	}
	if ms.oldest.IsZero() || e.Timestamp.Before(ms.oldest) {
		ms.oldest = e.Timestamp
	}
	switch {
	case !strings.HasPrefix(e.RowKey, pendingPrefix):
		if !m.done {
			m.legacy = &e
		} // (else the next round clears it)
	case !m.done:
		m.pending = append(m.pending, e)
	default:
		return passes(e, m.reached, m.whole)
	}
	return false
}

// streams yields the marked streams as the shards' marks are read, until
// every shard has been read.
func (ms *marks) streams() iter.Seq[*marked] {
	return func(yield func(*marked) bool) {
		for {
			ms.mu.Lock()
			var m *marked
			if len(ms.queue) > 0 {
				m, ms.queue = ms.queue[0], ms.queue[1:]
			}
			reading := ms.reading
			ms.mu.Unlock()
			switch {
			case m != nil:
				if !yield(m) {
					return
				}
			case reading == 0:
				return
			default:
				<-ms.wake
			}
		}
	}
}

// wait waits for the shards' reads, and returns the oldest Timestamp of
// the marks read (zero for none) and the reads' failures.
func (ms *marks) wait() (time.Time, []error) {
	ms.readers.Wait()
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.oldest, ms.errs
}

// caughtUp records that m's catch-up has ended, every subscription's
// checkpoint at or past reached (-1: unknown), reading the stream to its
// end without a failure when whole, and returns its marks to delete
// (those it passed) and its dirty directory row to clear.
func (ms *marks) caughtUp(m *marked, reached int64, whole bool) (passed []tablekit.Entity, legacy *tablekit.Entity) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m.done, m.reached, m.whole = true, reached, whole
	for _, e := range m.pending {
		if passes(e, reached, whole) {
			passed = append(passed, e)
		}
	}
	if reached >= 0 {
		legacy = m.legacy
	}
	m.pending, m.legacy = nil, nil
	return passed, legacy
}

// clearLegacy clears stream id's directory row dir, as the round read it
// dirty (an earlier version of this package's mark), unless its target is
// past reached (the lowest checkpoint of the subscriptions on the
// stream); conditionally on its ETag, so that a mark of that version
// written meanwhile keeps it dirty.
func (p *pass) clearLegacy(id stream.ID, dir *tablekit.Entity, reached int64) {
	target, _ := dir.Properties[propTarget].(int64)
	if reached < target {
		return // its append has not landed, or failed: read again next round
	}
	clean := tablekit.Entity{PartitionKey: dir.PartitionKey, RowKey: dir.RowKey, Properties: map[string]any{
		propStream: id.PartitionKey, propPrefix: id.Prefix, propDirty: false, propTarget: target}}
	switch _, err := p.r.f.t.Update(p.ctx, clean, dir.ETag); {
	case err == nil:
		p.mu.Lock()
		p.res.Cleared++
		p.mu.Unlock()
	case errors.Is(err, tablekit.ErrPreconditionFailed), errors.Is(err, tablekit.ErrNotFound), errors.Is(err, tablekit.ErrOutcomeUnknown):
		// marked again meanwhile: dirty it stays (or, the answer
		// lost, the next round sees which)
	default:
		p.fail(fmt.Errorf("feed: Relay.Round: clearing stream %s: %w", name(id), err), nil)
	}
}

// clear deletes rows, pending marks of one shard partition pk that the
// round's catch-ups passed (see passes).
func (p *pass) clear(pk string, rows []tablekit.Entity) {
	n, err := p.r.deleteMarks(p.ctx, rows)
	p.mu.Lock()
	p.res.Cleared += n
	p.mu.Unlock()
	if err != nil {
		p.fail(fmt.Errorf("feed: Relay.Round: clearing the marks of directory shard %s: %w", pk, err), nil)
	}
}

// deleteMarks deletes rows, pending marks of one shard, in EGTs of up to
// 100; a mark gone already (its appender deleted it) fails its EGT, which
// is sent again without it. It returns how many it deleted. A lost
// answer ends it: the marks left are read again next round.
func (r *Relay) deleteMarks(ctx context.Context, rows []tablekit.Entity) (int, error) {
	rows = slices.Clone(rows)
	deleted := 0
	for len(rows) > 0 {
		batch := rows[:min(len(rows), 100)]
		var err error
		if len(batch) == 1 {
			var existed bool
			existed, err = r.f.t.DeleteIfExists(ctx, batch[0].PartitionKey, batch[0].RowKey)
			if err == nil && existed {
				deleted++
			}
			rows = rows[1:]
			if err != nil {
				return deleted, err
			}
			continue
		}
		acts := make([]tablekit.Action[tablekit.Entity], len(batch))
		for i, e := range batch {
			acts[i] = tablekit.DeleteAction(tablekit.Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey}, azcore.ETagAny)
		}
		_, err = r.f.t.Transaction(ctx, acts...)
		var te *tablekit.TransactionError
		switch {
		case err == nil:
			deleted += len(batch)
			rows = rows[len(batch):]
		case errors.As(err, &te) && te.Index >= 0 && te.Index < len(batch) && errors.Is(err, tablekit.ErrNotFound) && !errors.Is(err, tablekit.ErrOutcomeUnknown):
			rows = slices.Delete(rows, te.Index, te.Index+1) // gone already: send the rest
		case errors.Is(err, tablekit.ErrOutcomeUnknown) && ctx.Err() == nil:
			return deleted, nil // deleted, or not: a later round reads what is left
		default:
			return deleted, err
		}
	}
	return deleted, nil
}

// Replay catches subscription name up on every stream of the directory
// (Feed.Streams), marked or not, from its checkpoint: from version 1 for
// a new name. It is how a new view is built from zero (see the package
// doc); marks are left to rounds. Like a round, it catches up to
// streamsInFlight streams at once. It returns the failures joined, and
// can be run again to go on where it stopped.
//
// Replay runs in this Relay's term, its checkpoint writes fenced as a
// round's: while Run leads, the term Run holds (and Replay stops when
// that leadership ends); otherwise the term of the latest Round called on
// this Relay. Without either (Run has not won the lease, or has lost it,
// and no Round was called), it returns an error matching coord.ErrLost,
// sending nothing. It waits for a round in progress, and rounds wait for
// it.
func (r *Relay) Replay(ctx context.Context, name string) (RoundResult, error) {
	const op = "Relay.Replay"
	if err := r.ok(op); err != nil {
		return RoundResult{}, err
	}
	i := slices.IndexFunc(r.subs, func(s Subscription) bool { return s.Name == name })
	if i < 0 {
		return RoundResult{}, invalid(op, "name", fmt.Sprintf("no subscription %q", name))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	term, lead := r.leading()
	switch {
	case lead != nil:
		var stop context.CancelFunc
		ctx, stop = context.WithCancel(ctx)
		defer stop()
		defer context.AfterFunc(lead, stop)()
	case r.manual:
		term = r.term
	default:
		return RoundResult{}, fmt.Errorf("feed: %s: %w: this Relay does not lead (Run has not won the lease, or lost it, and no Round was called): a replay runs in the leader's term", op, coord.ErrLost)
	}
	if err := r.enter(ctx, term); err != nil {
		return RoundResult{}, err
	}
	p := r.newPass(ctx, term, []int{i})
	for id, err := range r.f.Streams(p.ctx) {
		if err != nil {
			p.fail(err, nil)
			break
		}
		if !p.start(id, nil) {
			break
		}
	}
	res, _, err := p.wait() // (Replay's lag is not reported: Rounds wait meanwhile)
	return res, err
}

// leading returns Run's term and the context of its leadership while Run
// leads (nil when it does not).
func (r *Relay) leading() (int64, context.Context) {
	r.leadMu.Lock()
	defer r.leadMu.Unlock()
	return r.leadTerm, r.leadCtx
}

// lead records that Run leads with term until ctx ends, and returns the
// function that records that it no longer does.
func (r *Relay) lead(ctx context.Context, term int64) (end func()) {
	r.leadMu.Lock()
	defer r.leadMu.Unlock()
	r.leadCtx, r.leadTerm = ctx, term
	return func() {
		r.leadMu.Lock()
		defer r.leadMu.Unlock()
		r.leadCtx, r.leadTerm = nil, 0
	}
}

// Run runs rounds every Interval while this process leads by lease
// (coord.Lease.Lead, with Options.Lead), each with the lease's term, and
// campaigns again when leadership is lost or fenced, until ctx ends; it
// then returns ctx's error, once the round that ctx's end cut short has
// stored the checkpoints of what it handled (fenced writes, within 5 s;
// see Round). It returns at once an error matching
// tablekit.ErrInvalidInput, ErrInvalidKey or ErrTooLarge when the lease
// (nil included) or options are refused (by the client or the service).
// Relay.Replay, called meanwhile, runs in the term Run holds.
func (r *Relay) Run(ctx context.Context, lease *coord.Lease) error {
	if err := r.ok("Relay.Run"); err != nil {
		return err
	}
	if lease == nil {
		return invalid("Relay.Run", "lease", "nil lease: make one with coord.NewLease")
	}
	for {
		err := lease.Lead(ctx, func(ctx context.Context, term int64) error {
			defer r.lead(ctx, term)()
			for {
				r.mu.Lock()
				_, err := r.round(ctx, term)
				r.manual = false
				r.mu.Unlock()
				if errors.Is(err, coord.ErrFenced) {
					return err
				}
				if err != nil && ctx.Err() == nil {
					r.log.Warn("feed: relay round", "term", term, "err", err)
				}
				if !timing.Sleep(ctx, r.o.Interval) {
					return ctx.Err()
				}
			}
		}, r.o.Lead)
		r.resign() // another relay leads (or none): its lag is not this one's to report
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, tablekit.ErrInvalidInput), errors.Is(err, tablekit.ErrInvalidKey), errors.Is(err, tablekit.ErrTooLarge):
			return err
		}
		r.log.Warn("feed: relay leadership ended", "err", err)
		timing.Sleep(ctx, r.o.Interval)
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
	r.inTerm, r.term = false, term
	r.cpMu.Lock()
	r.cps = map[string]map[string]int64{}
	r.cpMu.Unlock()
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
	r.cpMu.Lock()
	v, ok := r.cps[s.Name][k]
	r.cpMu.Unlock()
	if ok {
		return v, nil
	}
	e, err := r.f.t.Get(ctx, cpPrefix+s.Name, k)
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

// remember caches v as subscription s's checkpoint of the stream of key k.
func (r *Relay) remember(s Subscription, k string, v int64) {
	r.cpMu.Lock()
	defer r.cpMu.Unlock()
	if r.cps[s.Name] == nil {
		r.cps[s.Name] = map[string]int64{}
	}
	r.cps[s.Name][k] = v
}

// forget drops subscription s's cached checkpoint of the stream of key k:
// the next round reads it.
func (r *Relay) forget(s Subscription, k string) {
	r.cpMu.Lock()
	defer r.cpMu.Unlock()
	delete(r.cps[s.Name], k)
}

// checkpointEvery is how many changes a subscription handles on a stream
// before its checkpoint is stored in the middle of a round, so that a
// relay that loses its lease (or dies) in a long catch-up hands at most
// that many again.
const checkpointEvery = 32

// catchUp hands the pass's subscriptions the events of stream id past
// their checkpoints, then stores their new checkpoints. It returns the
// lowest checkpoint before (from) and after (reached, as stored: -1 when
// a checkpoint could not be read), an error too; the error when any
// subscription failed or a read or write did. It adds the changes handled
// to the pass's Delivered, and marks behind each subscription it may not
// have caught up.
//
// A subscription whose checkpoint is below the stream's start (Store.Trim
// dropped the events it has not been handed) fails the stream with an
// error matching stream.ErrTrimmed, unless it is FromStart: it is then
// handed the stream from its start. The others go on.
func (p *pass) catchUp(id stream.ID) (from, reached int64, err error) {
	r, ctx, term, subs := p.r, p.ctx, p.term, p.subs
	var failed []bool
	delivered := 0
	defer func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.res.Delivered += delivered
		for j, i := range subs {
			if failed == nil || failed[j] {
				p.behind[i] = true
			}
		}
	}()
	from = -1
	cp := make([]int64, len(subs))
	for j, i := range subs {
		v, err := r.checkpoint(ctx, r.subs[i], id)
		if err != nil {
			return -1, -1, err
		}
		cp[j] = v
		if from < 0 || v < from {
			from = v
		}
	}
	done := slices.Clone(cp)
	failed = make([]bool, len(subs))
	nfailed := 0
	var errs []error
	fail := func(j int, err error) {
		errs = append(errs, err)
		if !failed[j] {
			failed[j] = true
			nfailed++
		}
	}
	// save stores subs[j]'s checkpoint at done[j] (with wctx); it returns
	// an error only when fenced (stop). A failed write stops the
	// subscription on this stream for the round, its checkpoint the last
	// one stored.
	wctx := ctx
	save := func(j int) error {
		s := r.subs[subs[j]]
		row := tablekit.Entity{PartitionKey: cpPrefix + s.Name, RowKey: streamKey(id), Properties: map[string]any{propVersion: done[j]}}
		if _, err := r.w.Transaction(wctx, coord.Write{Term: term}, tablekit.UpsertAction(row)); err != nil {
			r.forget(s, streamKey(id)) // read it again: it may be either
			err = fmt.Errorf("feed: Relay.Round: checkpoint of %q on stream %s at version %d: %w", s.Name, name(id), done[j], err)
			if errors.Is(err, coord.ErrFenced) {
				errs = append(errs, err)
				return err
			}
			done[j] = cp[j]
			fail(j, err)
			return nil
		}
		r.remember(s, streamKey(id), done[j])
		cp[j] = done[j]
		return nil
	}
	// handle hands ev to the subscriptions that have not handled it; it
	// returns an error only when fenced.
	handle := func(ev stream.RecordedEvent) error {
		c := Change{Source: r.f.source, Stream: id, Version: ev.Version, EventID: ev.ID, Kind: ev.Kind, Data: ev.Data, Time: ev.Time}
		for j, i := range subs {
			if failed[j] || ev.Version <= done[j] {
				continue
			}
			if err := r.subs[i].Handle(ctx, c); err != nil {
				fail(j, fmt.Errorf("feed: subscription %q on stream %s version %d: %w", r.subs[i].Name, name(id), ev.Version, err))
				continue
			}
			done[j] = ev.Version
			delivered++
			if done[j]-cp[j] >= checkpointEvery {
				if err := save(j); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for next := from + 1; next > 0; {
		read := next
		next = 0
		for ev, err := range r.f.store.Forward(ctx, id, read) {
			var te *stream.TrimmedError
			switch {
			case errors.As(err, &te) && te.Start > read:
				// The events from te.From to te.Start-1 are gone: the
				// subscriptions that have not handled them fail the
				// stream (or, FromStart, skip them); the others go on
				// from the start.
				for j, i := range subs {
					switch s := r.subs[i]; {
					case failed[j] || done[j] >= te.Start-1:
					case s.FromStart:
						done[j] = te.Start - 1
					default:
						fail(j, fmt.Errorf("feed: subscription %q on stream %s: its checkpoint, version %d, is below the stream's start, version %d: the events between were trimmed (a Subscription that may begin at the start is FromStart): %w", s.Name, name(id), done[j], te.Start, err))
					}
				}
				if nfailed < len(subs) {
					next = te.Start
				}
			case err != nil:
				errs = append(errs, fmt.Errorf("feed: Relay.Round: reading stream %s: %w", name(id), err))
				for j := range failed {
					failed[j] = true // (the events past the error are unread; nfailed is no longer needed)
				}
				nfailed = len(subs)
			default:
				if err := handle(ev); err != nil {
					return from, slices.Min(cp), errors.Join(errs...)
				}
			}
			if err != nil || nfailed == len(subs) {
				break
			}
		}
	}
	if ctx.Err() != nil && p.parent.Err() != nil {
		// Cut short by the caller (Run's context ended, or its lease
		// was lost): what was handled is stored all the same, fenced as
		// ever, within cutSaveTimeout. Otherwise a relay whose rounds
		// keep outliving their context (restarted, or losing its lease,
		// while a backlog takes longer than that to catch up) would hand
		// the same changes again every time, never storing past the
		// last multiple of checkpointEvery.
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), cutSaveTimeout)
		defer cancel()
	}
	for j := range subs {
		if done[j] > cp[j] {
			if err := save(j); err != nil {
				return from, slices.Min(cp), errors.Join(errs...)
			}
		}
	}
	return from, slices.Min(cp), errors.Join(errs...)
}

// cutSaveTimeout bounds the checkpoint writes of a catch-up cut short by
// the end of its round's context (see catchUp): Run returns that much
// later at most.
const cutSaveTimeout = 5 * time.Second

// streamsInFlight is how many streams a round (or Replay) catches up at
// once, and how many directory shards a round queries at once: as many as
// tablekit.BulkOptions.Concurrency's default. A stream's catch-up is a
// chain of requests (checkpoints, reads, each Handle's, checkpoint writes,
// the clear), so a round through a network's latency is bound by its
// slowest stream rather than by the sum of its streams, while the
// requests in flight stay few enough for one account's partitions and for
// the Handles, which run concurrently for different streams.
const streamsInFlight = 16

// pass is one round's (or Replay's) catch-up of streams: it runs each
// stream's in a goroutine of its own, at most streamsInFlight at once, and
// gathers their results.
type pass struct {
	r      *Relay
	term   int64
	subs   []int              // the subscriptions caught up: indices of r.subs
	parent context.Context    // the caller's
	ctx    context.Context    // parent's child, canceled when the pass stops early
	cancel context.CancelFunc //
	slots  chan struct{}      // a token per stream in flight
	wg     sync.WaitGroup     // the streams in flight

	marks *marks // a round's marks (nil for Replay)

	mu      sync.Mutex // guards the fields below
	res     RoundResult
	errs    []error
	behind  []bool // by subscription (index of r.subs): may not be caught up
	stopped bool   // fenced, or parent ended: start no more streams
}

func (r *Relay) newPass(ctx context.Context, term int64, subs []int) *pass {
	p := &pass{r: r, term: term, subs: subs, parent: ctx, slots: make(chan struct{}, streamsInFlight), behind: make([]bool, len(r.subs))}
	p.ctx, p.cancel = context.WithCancel(ctx)
	return p
}

// start catches stream id up in a goroutine of its own, once fewer than
// streamsInFlight streams are in flight; m, when not nil, is its marks:
// once every subscription has caught up, it clears those the stream has
// passed, and trims the stream when RelayOptions.Trim chooses it. It
// returns false, starting nothing, when the pass has stopped.
func (p *pass) start(id stream.ID, m *marked) bool {
	select {
	case p.slots <- struct{}{}:
	case <-p.ctx.Done():
		return false
	}
	p.mu.Lock()
	stopped := p.stopped
	if !stopped {
		p.res.Streams++
	}
	p.mu.Unlock()
	if stopped {
		<-p.slots
		return false
	}
	p.wg.Go(func() {
		defer func() { <-p.slots }()
		from, reached, err := p.catchUp(id)
		if err != nil {
			p.fail(err, nil)
		}
		if m == nil {
			return
		}
		// What every subscription has handled and checkpointed is done
		// with, whether or not the catch-up ended well.
		passed, legacy := p.marks.caughtUp(m, reached, err == nil)
		if len(passed) > 0 {
			p.clear(passed[0].PartitionKey, passed) // (a stream's marks are in its shard's partition)
		}
		if legacy != nil {
			p.clearLegacy(id, legacy, reached)
		}
		if reached > from && p.r.o.Trim != nil && p.r.o.Trim(id) {
			p.trim(id, reached+1)
		}
	})
	return true
}

// fail records err, and that the subscriptions behind (indices of r.subs)
// may not be caught up. A fenced err, or the end of the caller's context,
// stops the pass: it starts no more streams and cancels those in flight,
// whose context errors are then left out (the cause is in).
func (p *pass) fail(err error, behind []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, i := range behind {
		p.behind[i] = true
	}
	if p.stopped && !errors.Is(err, coord.ErrFenced) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return // the end of a stopped pass: its cause is recorded
	}
	p.errs = append(p.errs, err)
	if errors.Is(err, coord.ErrFenced) || p.parent.Err() != nil {
		p.stopped = true
		p.cancel()
	}
}

// trim drops the events of stream id below before, which every
// subscription has handled (Store.Trim).

// trim drops the events of stream id below before, which every
// subscription has handled (Store.Trim).
func (p *pass) trim(id stream.ID, before int64) {
	if err := p.r.f.store.Trim(p.ctx, id, before); err != nil {
		p.fail(fmt.Errorf("feed: Relay.Round: trimming stream %s below version %d: %w", name(id), before, err), nil)
		return
	}
	p.mu.Lock()
	p.res.Trimmed++
	p.mu.Unlock()
}

// isStopped reports whether the pass has stopped (fenced, or its
// caller's context ended).
func (p *pass) isStopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}

// wait waits for the streams in flight, and returns the pass's result, the
// subscriptions it may not have caught up, and its failures joined.
func (p *pass) wait() (RoundResult, []bool, error) {
	p.wg.Wait()
	p.cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		for _, i := range p.subs {
			p.behind[i] = true // streams unread, or cut short
		}
	}
	return p.res, p.behind, errors.Join(p.errs...)
}
