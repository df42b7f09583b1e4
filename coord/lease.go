package coord

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/keys"
)

// Properties of a lease entity.
const (
	propHolder   = "Holder"   // string: the holder's id, "" when released
	propTerm     = "Term"     // int64: the fencing token of the current (or last) holder
	propDuration = "Duration" // int64: the holder's lease duration in milliseconds
)

// LeaseOptions configure a Lease. The zero value (or nil) means the
// defaults.
type LeaseOptions struct {
	// Duration is how long a holder's claim lasts after its last
	// successful write: contenders take the lease over once they have
	// seen it unchanged for longer than this on their own clocks. The
	// holder's Duration is stored with the lease, and a contender waits
	// the longer of that and its own. Default 15 s.
	Duration time.Duration
	// DriftMargin is how much earlier than Duration after its last
	// successful write the holder stops treating itself as holder. It
	// must cover the rate error between the holder's and the contenders'
	// clocks over one Duration (2 × the worst rate error × Duration,
	// for example 2 × 1% × 15 s = 300 ms) plus the delay between the
	// holder's check and its act. Default Duration / 10; must be less
	// than Duration.
	DriftMargin time.Duration
	// Clock tells the time; nil means time.Now. Only differences between
	// its readings are used, so it must be monotonic (time.Now's readings
	// are); wall-clock agreement between processes is never assumed.
	Clock func() time.Time
	// Retry paces the reads that settle a write whose answer was lost.
	// Default 30 attempts, 10 ms to 1 s apart, within the call's context.
	Retry tablekit.RetryPolicy
}

// Lease is a lease on one entity of a table, held by at most one holder
// at a time, with a fencing token: its term, which grows by one with
// every acquisition. Make one per process (holder) with NewLease; a Lease
// is safe for concurrent use.
//
// Acquire takes the lease when it is absent, released, or unchanged (same
// ETag) for longer than the holder's Duration on this process's clock: 1
// read and 1 write. Renew and Release are one conditional write each. The
// holder treats itself as holder (Held) until its last successful write
// plus Duration minus DriftMargin. No clocks are compared between
// processes and the service's Timestamp is not used. A write whose answer
// was lost is settled by reading the lease back (is the holder and term
// mine?), never reported as tablekit.ErrOutcomeUnknown. Use the term as a
// fencing token (Writer) for anything the holder writes: a paused holder
// may act after its lease passed to another, and only fencing refuses it.
//
// The zero Lease refuses every call with an error matching
// tablekit.ErrInvalidInput.
type Lease struct {
	t            *tablekit.Table[tablekit.Entity]
	pk, rk, id   string
	o            LeaseOptions
	op           sync.Mutex  // one Acquire, Renew or Release at a time: each writes on the ETag the last one left
	mu           sync.Mutex  // the fields below
	term         int64       // the term held, 0 when not holding
	etag         azcore.ETag // the lease's ETag as this holder last wrote it
	until        time.Time   // on o.Clock: the end of this holder's claim
	seenETag     azcore.ETag // a contender's last observation of another holder's lease
	seenAt       time.Time   // when it was first seen (after the read that saw it returned)
	seenDuration time.Duration
}

// NewLease returns the Lease pk/rk of table t (the entity view of a table,
// Table.AsEntities) for holder, an id unique to this process among the
// contenders (a host name and process id, or a random id). It sends
// nothing; the entity is created by the first Acquire. It refuses, with a
// *tablekit.ValidationError, what the lease's writes would be refused for:
// keys the service refuses (a "/", "\", "#", "?" or control character,
// over 1 KiB, a RowKey over 255 bytes on Azure Cosmos DB for Table:
// tablekit.ErrInvalidKey), a holder id too large for a property
// (tablekit.ErrTooLarge). Keep the lease's partition apart from data
// partitions, or its row out of their queries.
func NewLease(t *tablekit.Table[tablekit.Entity], pk, rk, holder string, opts *LeaseOptions) (*Lease, error) {
	var o LeaseOptions
	if opts != nil {
		o = *opts
	}
	switch {
	case t == nil:
		return nil, invalid("NewLease", "table", "nil table (use tablekit.OpenTable)")
	case holder == "":
		return nil, invalid("NewLease", "holder", "empty holder id")
	case o.Duration < 0, o.DriftMargin < 0:
		return nil, invalid("NewLease", "Duration", "negative duration or drift margin")
	}
	if o.Duration == 0 {
		o.Duration = 15 * time.Second
	}
	if o.DriftMargin == 0 {
		o.DriftMargin = o.Duration / 10
	}
	if o.DriftMargin >= o.Duration {
		return nil, invalid("NewLease", "DriftMargin", "must be less than Duration")
	}
	if o.Duration/time.Millisecond < 1 {
		return nil, invalid("NewLease", "Duration", "must be at least 1 ms")
	}
	if err := timing.Policy(o.Retry).Validate("coord.NewLease"); err != nil {
		return nil, err
	}
	o.Retry = tablekit.RetryPolicy(timing.Policy(o.Retry).WithDefaults(timing.Policy(tablekit.RetryPolicy(timing.Conflict))))
	if err := checkLease(t, pk, rk, holder); err != nil {
		return nil, err
	}
	return &Lease{t: t, pk: pk, rk: rk, id: holder, o: o}, nil
}

// checkLease refuses the keys and holder of a lease that its writes
// would be refused for.
func checkLease(t *tablekit.Table[tablekit.Entity], pk, rk, holder string) error {
	const keyRule = "<= 1 KiB, no / \\ # ? or control characters"
	bad := func(property, limit, detail string, size int, sentinel error) error {
		return &tablekit.ValidationError{Op: "coord.NewLease", Entity: pk + "/" + rk, Property: property, Limit: limit, Size: size, Detail: detail, Err: sentinel}
	}
	if err := keys.Validate(pk); err != nil {
		return bad("PartitionKey", keyRule, err.Error(), 0, tablekit.ErrInvalidKey)
	}
	if err := keys.Validate(rk); err != nil {
		return bad("RowKey", keyRule, err.Error(), 0, tablekit.ErrInvalidKey)
	}
	if t.Account().Service() == tablekit.ServiceCosmosDB && len(rk) > limits.CosmosRowKeyBytes {
		return bad("RowKey", "<= 255 bytes on Azure Cosmos DB for Table", fmt.Sprintf("RowKey of %d bytes", len(rk)), len(rk), tablekit.ErrInvalidKey)
	}
	if n := 2 * len(utf16.Encode([]rune(holder))); n > limits.PropertyBytes {
		return bad("holder", "<= 64 KiB per property", "holder id too large for the lease's Holder property", n, tablekit.ErrTooLarge)
	}
	return nil
}

func (l *Lease) now() time.Time { return timing.Now(l.o.Clock) }

func (l *Lease) check(op string) error {
	if l == nil || l.t == nil {
		return invalid(op, "", "zero Lease (use coord.NewLease)")
	}
	return nil
}

// Held reports the term this process holds the lease with, and whether
// it holds it now on its own clock: until its last successful write plus
// Duration minus DriftMargin.
func (l *Lease) Held() (term int64, ok bool) {
	if l.check("Lease.Held") != nil {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term == 0 || !l.now().Before(l.until) {
		return 0, false
	}
	return l.term, true
}

// stored is the lease entity as read.
type stored struct {
	holder   string
	term     int64
	duration time.Duration
	etag     azcore.ETag
	exists   bool
}

func (l *Lease) read(ctx context.Context) (stored, error) {
	e, err := l.t.Get(ctx, l.pk, l.rk)
	if errors.Is(err, tablekit.ErrNotFound) {
		return stored{}, nil
	}
	if err != nil {
		return stored{}, err
	}
	s := stored{etag: e.ETag, exists: true}
	s.holder, _ = e.Properties[propHolder].(string)
	s.term, _ = e.Properties[propTerm].(int64)
	if ms, ok := e.Properties[propDuration].(int64); ok && ms > 0 {
		s.duration = time.Duration(ms) * time.Millisecond
	}
	return s, nil
}

// readSettled reads the lease, retrying failed reads within ctx: the read
// that settles a write whose answer was lost.
func (l *Lease) readSettled(ctx context.Context) (stored, error) {
	var s stored
	var err error
	for range timing.Policy(l.o.Retry).Attempts(ctx) {
		if s, err = l.read(ctx); err == nil {
			return s, nil
		}
	}
	if ctx.Err() != nil {
		return s, ctx.Err()
	}
	return s, err
}

func (l *Lease) entity(holder string, term int64) tablekit.Entity {
	return tablekit.Entity{PartitionKey: l.pk, RowKey: l.rk, Properties: map[string]any{
		propHolder: holder, propTerm: term, propDuration: int64(l.o.Duration / time.Millisecond)}}
}

// Acquire takes the lease for this holder and returns its term, or an
// error matching ErrHeld when another holder holds it. It costs 1 read
// and, when the lease is free, 1 write (+1 read when the write's answer
// was lost). A lease is free when absent, released, or seen unchanged for
// longer than its holder's Duration by this Lease's earlier Acquire
// calls: a contender calls Acquire repeatedly (Lead does, every
// RetryPeriod). When this process holds the lease already, Acquire renews
// it.
func (l *Lease) Acquire(ctx context.Context) (int64, error) {
	if err := l.check("Lease.Acquire"); err != nil {
		return 0, err
	}
	l.op.Lock()
	defer l.op.Unlock()
	if term, ok := l.Held(); ok {
		if err := l.renew(ctx); err == nil {
			return term, nil
		} else if !errors.Is(err, ErrLost) {
			return 0, fail("Lease.Acquire", err)
		}
	}
	term, err := l.acquire(ctx)
	return term, fail("Lease.Acquire", err)
}

func (l *Lease) acquire(ctx context.Context) (int64, error) {
	s, err := l.read(ctx)
	if err != nil {
		return 0, err
	}
	now := l.now()
	free := !s.exists || s.holder == ""
	if !free {
		l.mu.Lock()
		if s.etag != l.seenETag {
			l.seenETag, l.seenAt, l.seenDuration = s.etag, now, s.duration
		}
		d := max(l.seenDuration, l.o.Duration)
		free = now.Sub(l.seenAt) > d
		l.mu.Unlock()
	}
	if !free {
		return 0, ErrHeld
	}
	term := s.term + 1
	sent := l.now()
	var etag azcore.ETag
	if s.exists {
		etag, err = l.t.Update(ctx, l.entity(l.id, term), s.etag)
	} else {
		etag, err = l.t.Insert(ctx, l.entity(l.id, term))
	}
	switch {
	case err == nil:
	case errors.Is(err, tablekit.ErrOutcomeUnknown):
		// Settle: the lease is mine if it names me with my term (nobody
		// else writes my term, and only a higher term replaces it).
		r, rerr := l.readSettled(ctx)
		if rerr != nil {
			return 0, errors.Join(errors.New("the write's answer was lost and reading the lease back failed: not acquired"), rerr)
		}
		if !r.exists || r.holder != l.id || r.term != term {
			return 0, ErrHeld
		}
		etag = r.etag
	case errors.Is(err, tablekit.ErrPreconditionFailed), errors.Is(err, tablekit.ErrAlreadyExists), errors.Is(err, tablekit.ErrNotFound):
		return 0, ErrHeld // another contender won
	default:
		return 0, err
	}
	l.mu.Lock()
	l.term, l.etag, l.until = term, etag, sent.Add(l.o.Duration-l.o.DriftMargin)
	l.seenETag = ""
	l.mu.Unlock()
	return term, nil
}

// Renew extends this holder's claim by one conditional write (+1 read
// when its answer was lost). It returns an error matching ErrLost when the
// lease is no longer this holder's: taken over, or lapsed on this
// process's clock. Other errors (the service unreachable) leave the claim
// as it was: it lapses at the end of its validity unless a later Renew
// succeeds.
func (l *Lease) Renew(ctx context.Context) error {
	if err := l.check("Lease.Renew"); err != nil {
		return err
	}
	l.op.Lock()
	defer l.op.Unlock()
	return fail("Lease.Renew", l.renew(ctx))
}

func (l *Lease) renew(ctx context.Context) error {
	l.mu.Lock()
	term, etag, until := l.term, l.etag, l.until
	l.mu.Unlock()
	if term == 0 {
		return ErrLost
	}
	sent := l.now()
	if !sent.Before(until) {
		l.drop(term)
		return ErrLost
	}
	newETag, err := l.t.Update(ctx, l.entity(l.id, term), etag)
	switch {
	case err == nil:
	case errors.Is(err, tablekit.ErrOutcomeUnknown):
		r, rerr := l.readSettled(ctx)
		if rerr != nil {
			return errors.Join(errors.New("the renewal's answer was lost and reading the lease back failed: claim unchanged"), rerr)
		}
		if !r.exists || r.holder != l.id || r.term != term {
			l.drop(term)
			return ErrLost
		}
		if r.etag == etag { // the renewal was not applied
			return errors.New("renewal not applied (its answer was lost); claim unchanged")
		}
		newETag = r.etag
	case errors.Is(err, tablekit.ErrPreconditionFailed), errors.Is(err, tablekit.ErrNotFound):
		l.drop(term)
		return ErrLost
	default:
		return err
	}
	l.mu.Lock()
	if l.term == term {
		l.etag, l.until = newETag, sent.Add(l.o.Duration-l.o.DriftMargin)
	}
	l.mu.Unlock()
	return nil
}

// drop forgets the claim on term.
func (l *Lease) drop(term int64) {
	l.mu.Lock()
	if l.term == term {
		l.term, l.etag, l.until = 0, "", time.Time{}
	}
	l.mu.Unlock()
}

// Release gives the lease up in one conditional write, keeping its term
// so that the next holder's is higher; contenders may take it at once.
// This process stops treating itself as holder before the write is sent.
// Releasing a lease not held does nothing.
func (l *Lease) Release(ctx context.Context) error {
	if err := l.check("Lease.Release"); err != nil {
		return err
	}
	l.op.Lock()
	defer l.op.Unlock()
	l.mu.Lock()
	term, etag := l.term, l.etag
	l.mu.Unlock()
	if term == 0 {
		return nil
	}
	l.drop(term)
	_, err := l.t.Update(ctx, l.entity("", term), etag)
	switch {
	case err == nil, errors.Is(err, tablekit.ErrPreconditionFailed), errors.Is(err, tablekit.ErrNotFound):
		return nil // released, or no longer ours anyway
	case errors.Is(err, tablekit.ErrOutcomeUnknown):
		r, rerr := l.readSettled(ctx)
		if rerr != nil {
			return fail("Lease.Release", errors.Join(errors.New("the release's answer was lost and reading the lease back failed; it lapses after Duration"), rerr))
		}
		if r.exists && r.holder == l.id && r.term == term && r.etag == etag {
			_, err = l.t.Update(ctx, l.entity("", term), etag)
			if err != nil && !errors.Is(err, tablekit.ErrPreconditionFailed) && !errors.Is(err, tablekit.ErrOutcomeUnknown) {
				return fail("Lease.Release", err)
			}
		}
		return nil
	default:
		return fail("Lease.Release", err)
	}
}

// wait returns how long a contender should wait before its next Acquire
// can succeed, at most max: until the lease it saw has been unchanged
// for its holder's Duration.
func (l *Lease) wait(limit time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seenETag == "" {
		return limit
	}
	left := l.seenAt.Add(max(l.seenDuration, l.o.Duration)).Sub(l.now()) + time.Millisecond
	return max(0, min(left, limit))
}
