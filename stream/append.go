package stream

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/timing"
)

// Append appends events to stream id if the stream's version is
// expectedVersion, as versions expectedVersion+1 to
// expectedVersion+len(events), in one entity group transaction with the
// extra actions (in the stream's partition, on RowKeys that are not the
// stream's: a snapshot, a view row of the stream, a change record). All of
// it is applied, or none. expectedVersion 0 creates the stream: it
// succeeds only if the stream has no events.
//
// A stream at another version refuses the append with a *ConflictError
// (matching tablekit.ErrPreconditionFailed) that says the expected and
// the current version. A refused extra action returns a
// *tablekit.TransactionError whose Index counts the extra actions.
//
// When the events carry ids (all of them), the append is idempotent: a
// repeat with the same ids in the same order (a retry after a lost answer,
// or the caller sending it again) returns the first append's Result with
// Replayed set, whatever expectedVersion it gives, and writes nothing; an
// append some of whose ids were recorded otherwise fails with
// ErrPartlyApplied. An append (with ids or not) does not end in
// tablekit.ErrOutcomeUnknown: after a lost answer it reads back whether it
// was applied, and tries again when it was not (see the package doc);
// only when those reads fail for all of Options.Retry's attempts is the
// outcome still unknown. Any number of Stores, in any number of
// processes, may append to a stream at once.
//
// expectedVersion AnyVersion appends at the stream's end, whatever its
// version (see AnyVersion).
//
// An append is at most 100 actions: the events, their id rows, 1 head row
// action (2 when expectedVersion > 0, or AnyVersion) and the extra
// actions, at most 4 MiB (2 MB on Azure Cosmos DB for Table); a larger one
// is refused before anything is sent, with an error naming the limit
// (Check tells without appending).
func (s *Store) Append(ctx context.Context, id ID, expectedVersion int64, events []Event, extra ...tablekit.Action[tablekit.Entity]) (Result, error) {
	const op = "Store.Append"
	if err := s.usable(op); err != nil {
		return Result{}, err
	}
	if expectedVersion == AnyVersion {
		r, err := s.appendAtEnd(ctx, id, events, extra)
		return r, fail(op, err)
	}
	p, err := s.plan(id, expectedVersion, events, extra)
	if err != nil {
		return Result{}, fail(op, err)
	}
	r, err := s.append(ctx, p)
	return r, fail(op, err)
}

// Check returns the error Append would return for these arguments before
// sending anything (an invalid id, version, event or extra action, an
// append over a transaction's limits), or nil: it sends nothing. A caller
// with work to do before an append (package feed marks the stream) checks
// first, so that bad input is refused before anything is written.
func (s *Store) Check(id ID, expectedVersion int64, events []Event, extra ...tablekit.Action[tablekit.Entity]) error {
	const op = "Store.Check"
	if err := s.usable(op); err != nil {
		return err
	}
	if expectedVersion == AnyVersion {
		expectedVersion = 1 // counts the head row's 2 actions of a stream past its first append
	}
	p, err := s.plan(id, expectedVersion, events, extra)
	if err == nil {
		err = s.checkTransaction(p)
	}
	return fail(op, err)
}

// checkTransaction returns the error the root's checks of p's transaction
// give before sending (the entities' keys and sizes, the transaction's
// size), or nil: what plan leaves to them.
func (s *Store) checkTransaction(p *plan) error {
	return transactionInvalid(s.t.CheckTransaction(p.acts...))
}

// transactionInvalid names Append in an error of the root's checks of an
// append's transaction, and says how to fit a transaction that is too
// large.
func transactionInvalid(err error) error {
	var ve *tablekit.ValidationError
	if errors.As(err, &ve) {
		ve.Op = "stream.Store.Append"
		if errors.Is(err, tablekit.ErrTooLarge) {
			ve.Detail += "; an append is one transaction: append the events in several appends, or keep large payloads out of the events (see the package doc)"
		}
	}
	return err
}

// appendAtEnd is Append at AnyVersion: it reads the stream's version and
// appends at it, and after a conflict at the version the conflict read.
// A try whose answer was lost is settled before the next try (Store.append
// reads back what it left), and the next try is planned at another
// version only once the stream was seen past the one the try expected,
// where that try can no longer land: so no try is applied twice.
func (s *Store) appendAtEnd(ctx context.Context, id ID, events []Event, extra []tablekit.Action[tablekit.Entity]) (Result, error) {
	p, err := s.plan(id, 1, events, extra)
	if err == nil {
		err = s.checkTransaction(p)
	}
	if err != nil {
		return Result{}, err // before anything is sent, as Check
	}
	v, err := s.current(ctx, id)
	if err != nil {
		return Result{}, err
	}
	var last error
	for range timing.Policy(s.o.Retry).Attempts(ctx) {
		p, err := s.plan(id, v, events, extra)
		if err != nil {
			return Result{}, err
		}
		r, err := s.append(ctx, p)
		var ce *ConflictError
		if !errors.As(err, &ce) {
			return r, err
		}
		last, v = err, ce.Current
		if v < 0 {
			if v, err = s.current(ctx, id); err != nil {
				return Result{}, err
			}
		}
	}
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	return Result{}, fmt.Errorf("not appended: other appends came first in each of %d tries; the last: %w", s.o.Retry.MaxAttempts, last)
}

// plan is an append ready to send: its actions, in the order id rows,
// head row (delete of the old, insert of the new), events, extra actions.
type plan struct {
	id       ID
	expected int64
	n        int      // events
	ids      []string // the events' ids, nil when none
	stamp    string   // random, in the first event's row
	acts     []tablekit.Action[tablekit.Entity]
	extraAt  int // index of the first extra action in acts
}

func (p *plan) first() int64 { return p.expected + 1 }
func (p *plan) last() int64  { return p.expected + int64(p.n) }

// plan checks an append and builds its actions; it sends nothing.
func (s *Store) plan(id ID, expected int64, events []Event, extra []tablekit.Action[tablekit.Entity]) (*plan, error) {
	const op = "Store.Append"
	if err := id.validate(op); err != nil {
		return nil, err
	}
	if expected < 0 {
		return nil, invalid(op, "expectedVersion", fmt.Sprintf("%d: versions start at 1 (0: a new stream)", expected))
	}
	n := len(events)
	if n == 0 {
		return nil, invalid(op, "events", "no events")
	}
	if expected > maxVersion-int64(n) {
		return nil, tooLarge(op, "versions <= 9,999,999,999", int(min(expected+int64(n), 1<<62)), "", "the stream would pass its last version")
	}
	p := &plan{id: id, expected: expected, n: n, stamp: rand.Text()}
	if events[0].ID != "" {
		p.ids = make([]string, n)
		seen := make(map[string]int, n)
		for i, ev := range events {
			if ev.ID == "" {
				return nil, invalid(op, "Event.ID", fmt.Sprintf("event %d has no id but event 0 has one: the events of an append carry ids all, or none", i))
			}
			if j, dup := seen[ev.ID]; dup {
				return nil, invalid(op, "Event.ID", fmt.Sprintf("events %d and %d have the same id %q", j, i, ev.ID))
			}
			seen[ev.ID] = i
			p.ids[i] = ev.ID
		}
	} else {
		for i, ev := range events {
			if ev.ID != "" {
				return nil, invalid(op, "Event.ID", fmt.Sprintf("event %d has an id but event 0 has none: the events of an append carry ids all, or none", i))
			}
		}
	}
	if err := s.checkKeys(op, id, p.ids); err != nil {
		return nil, err
	}
	heads := 1
	if expected > 0 {
		heads = 2
	}
	count := len(p.ids) + heads + n + len(extra)
	if count > limits.TransactionActions {
		return nil, tooLarge(op, "<= 100 actions per entity group transaction", count, "actions",
			fmt.Sprintf("an append is one transaction: %d events, %d id rows, %d head row action(s) and %d extra actions; append the events in several appends, or send fewer extra actions (see the package doc)", n, len(p.ids), heads, len(extra)))
	}
	pk := id.PartitionKey
	p.acts = make([]tablekit.Action[tablekit.Entity], 0, count)
	for i, eid := range p.ids {
		p.acts = append(p.acts, tablekit.InsertAction(tablekit.Entity{PartitionKey: pk, RowKey: id.eventID(eid),
			Properties: map[string]any{propVersion: p.first() + int64(i)}}))
	}
	if expected > 0 {
		p.acts = append(p.acts, tablekit.DeleteAction(tablekit.Entity{PartitionKey: pk, RowKey: id.head(expected)}, azcore.ETagAny))
	}
	p.acts = append(p.acts, tablekit.InsertAction(tablekit.Entity{PartitionKey: pk, RowKey: id.head(p.last()),
		Properties: map[string]any{propVersion: p.last()}}))
	for i, ev := range events {
		if ev.Data == nil {
			return nil, invalid(op, "Event.Data", fmt.Sprintf("event %d has no data", i))
		}
		e, err := s.reg.Encode(ev.Data)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
		props := make(map[string]any, len(e.Properties)+2)
		maps.Copy(props, e.Properties)
		for _, name := range []string{propID, propAppend, coord.ExpiresProperty} {
			if _, ok := props[name]; ok {
				return nil, invalid(op, name, fmt.Sprintf("event %d has a property %q, a name tablekit reserves (the stream's rows use %q and %q; coord.Sweep deletes rows by %q, which would leave a gap in the stream)", i, name, propID, propAppend, coord.ExpiresProperty))
			}
		}
		if ev.ID != "" {
			props[propID] = ev.ID
		}
		if i == 0 {
			props[propAppend] = p.stamp
		}
		p.acts = append(p.acts, tablekit.InsertAction(tablekit.Entity{PartitionKey: pk, RowKey: id.event(p.first() + int64(i)), Properties: props}))
	}
	p.extraAt = len(p.acts)
	own := id.Prefix + "~"
	for i, a := range extra {
		verb, e := a.Verb(), a.Value()
		switch {
		case verb == "":
			return nil, invalid(op, "extra", fmt.Sprintf("extra action %d is the zero Action", i))
		case e.PartitionKey != pk:
			return nil, invalid(op, "extra", fmt.Sprintf("extra action %d has PartitionKey %q, not the stream's %q: one transaction is one partition", i, e.PartitionKey, pk))
		case strings.HasPrefix(e.RowKey, own):
			return nil, invalid(op, "extra", fmt.Sprintf("extra action %d has RowKey %q: RowKeys starting with %q are the stream's own rows", i, e.RowKey, own))
		case streamRow(e.RowKey):
			return nil, invalid(op, "extra", fmt.Sprintf("extra action %d has RowKey %q, a row of another stream of the partition", i, e.RowKey))
		}
		p.acts = append(p.acts, a)
	}
	return p, nil
}

// streamRow reports whether rk is the RowKey of some stream's row: a
// prefix without "~", then "~head~", "~ev~" or "~id~".
func streamRow(rk string) bool {
	i := strings.IndexByte(rk, '~')
	if i < 0 {
		return false
	}
	rest := rk[i:]
	return strings.HasPrefix(rest, headInfix) || strings.HasPrefix(rest, eventInfix) || strings.HasPrefix(rest, idInfix)
}

// append sends p until it is applied, refused, or settled as applied
// before.
func (s *Store) append(ctx context.Context, p *plan) (Result, error) {
	lost := false // a try's answer was lost: it may have been applied
	var lastErr error
	for range timing.Policy(s.o.Retry).Attempts(ctx) {
		etags, err := s.t.Transaction(ctx, p.acts...)
		var te *tablekit.TransactionError
		var ve *tablekit.ValidationError
		switch {
		case err == nil:
			return Result{First: p.first(), Last: p.last(), ETags: etags[p.extraAt:]}, nil
		case errors.As(err, &ve):
			// The root's checks of the transaction (its size, the
			// entities' sizes and keys), before sending.
			return Result{}, transactionInvalid(err)
		case errors.Is(err, tablekit.ErrOutcomeUnknown):
			lost = true
			r, done, serr := s.settle(ctx, p, true, -1)
			if serr != nil || done {
				return r, serr
			}
			lastErr = errors.New("no answer came, and reading showed it was not applied")
		case errors.As(err, &te) && te.Index >= p.extraAt:
			// The id rows and the head come first: had a lost try of this
			// call been applied, the retry would have failed there.
			return Result{}, &tablekit.TransactionError{Index: te.Index - p.extraAt, Code: te.Code, Err: te.Err}
		case errors.As(err, &te) && (errors.Is(err, tablekit.ErrAlreadyExists) || errors.Is(err, tablekit.ErrNotFound)):
			// An id is recorded, or the stream is not at the expected
			// version (its head row is not there, or an event row is).
			r, done, serr := s.settle(ctx, p, lost, te.Index)
			if serr != nil || done {
				return r, serr
			}
			return Result{}, s.conflict(ctx, p)
		default:
			return Result{}, err
		}
	}
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	return Result{}, fmt.Errorf("not applied: gave up after %d tries; the last: %w", s.o.Retry.MaxAttempts, lastErr)
}

// settle reads what a refused or unanswered try left: done with a Result
// when this call's append was applied (lost: a try whose answer was lost
// may have been, and its stamp is in the first event's row) or the same
// ids were recorded by an earlier append (Replayed); ErrPartlyApplied when
// some of the ids are recorded otherwise; not done when nothing of it was
// applied. failedAt is the index of the action the service refused (-1:
// none named). Events that Trim dropped are settled by their id rows.
func (s *Store) settle(ctx context.Context, p *plan, lost bool, failedAt int) (Result, bool, error) {
	pk := p.id.PartitionKey
	if lost {
		e, found, err := s.get(ctx, pk, p.id.event(p.first()))
		if err != nil {
			return Result{}, false, unknown(err)
		}
		if found && e.Properties[propAppend] == p.stamp {
			return Result{First: p.first(), Last: p.last()}, true, nil
		}
		if _, tomb := tombstone(e); (!found || tomb) && p.ids == nil {
			// The row may be gone because a Trim dropped it: then whether
			// this append wrote it cannot be read back.
			start, err := s.startRetried(ctx, p.id)
			if err != nil {
				return Result{}, false, unknown(err)
			}
			if p.first() < start {
				return Result{}, false, fmt.Errorf("%w: stream %s was trimmed to start at version %d: whether this append wrote version %d cannot be read back (events with ids settle by their id rows)", tablekit.ErrOutcomeUnknown, p.id.name(), start, p.first())
			}
		}
	}
	if p.ids == nil || !(lost || failedAt < len(p.ids)) {
		return Result{}, false, nil
	}
	v, found, err := s.idVersion(ctx, p, 0)
	if err != nil || !found {
		if err == nil && failedAt > 0 && failedAt < len(p.ids) {
			err = fmt.Errorf("%w: stream %s: event %d's id %q is recorded, event 0's id %q is not", ErrPartlyApplied, p.id.name(), failedAt, p.ids[failedAt], p.ids[0])
		}
		return Result{}, false, err
	}
	recorded, err := s.readRange(ctx, p.id, v, v+int64(p.n)-1)
	if err != nil {
		return Result{}, false, unknown(err)
	}
	for i, eid := range p.ids {
		if i < len(recorded) && recorded[i].version == v+int64(i) && recorded[i].id == eid && !recorded[i].tomb {
			continue
		}
		got := "nothing"
		if i < len(recorded) {
			got = fmt.Sprintf("version %d with id %q", recorded[i].version, recorded[i].id)
		}
		start := int64(0)
		if len(recorded) > 0 && recorded[0].tomb {
			start = recorded[0].start
		} else if start, err = s.startRetried(ctx, p.id); err != nil {
			return Result{}, false, unknown(err)
		}
		if v+int64(i) < start {
			// Trim dropped the event: the id rows say where they were.
			return s.settleByIDs(ctx, p, v)
		}
		return Result{}, false, fmt.Errorf("%w: stream %s: event 0's id %q is recorded at version %d, but event %d (id %q) is not at version %d (found %s): the ids were appended in another append or order",
			ErrPartlyApplied, p.id.name(), p.ids[0], v, i, eid, v+int64(i), got)
	}
	stamp, _ := recorded[0].props[propAppend].(string)
	return Result{First: v, Last: v + int64(p.n) - 1, Replayed: stamp != p.stamp}, true, nil
}

// idVersion reads the version the id row of p's event i holds; found is
// false when there is none.
func (s *Store) idVersion(ctx context.Context, p *plan, i int) (v int64, found bool, err error) {
	e, found, err := s.get(ctx, p.id.PartitionKey, p.id.eventID(p.ids[i]))
	if err != nil {
		return 0, false, unknown(err)
	}
	if !found {
		return 0, false, nil
	}
	v, _ = e.Properties[propVersion].(int64)
	if v < 1 || v > maxVersion-int64(p.n-i)+1 {
		return 0, false, &tablekit.DecodeError{Entity: p.id.PartitionKey + "/" + e.RowKey, Property: propVersion, Detail: fmt.Sprintf("id row holds version %v", e.Properties[propVersion])}
	}
	return v, true, nil
}

// settleByIDs settles p, whose first id is recorded at version v, where
// Trim dropped some of the events: by the id rows of the others (1 read
// each). Every id at its version, in order, is a repeat (Replayed: the
// stamp that would tell this call's own lost try is gone with the event).
func (s *Store) settleByIDs(ctx context.Context, p *plan, v int64) (Result, bool, error) {
	for i := 1; i < p.n; i++ {
		w, found, err := s.idVersion(ctx, p, i)
		if err != nil {
			return Result{}, false, err
		}
		if !found || w != v+int64(i) {
			got := "not recorded"
			if found {
				got = fmt.Sprintf("recorded at version %d", w)
			}
			return Result{}, false, fmt.Errorf("%w: stream %s: event 0's id %q is recorded at version %d (trimmed since), but event %d's id %q is %s: the ids were appended in another append or order",
				ErrPartlyApplied, p.id.name(), p.ids[0], v, i, p.ids[i], got)
		}
	}
	return Result{First: v, Last: v + int64(p.n) - 1, Replayed: true}, true, nil
}

// startRetried is start, retried as Options.Retry says.
func (s *Store) startRetried(ctx context.Context, id ID) (int64, error) {
	err := ctx.Err()
	for range timing.Policy(s.o.Retry).Attempts(ctx) {
		var start int64
		if start, err = s.start(ctx, id); err == nil {
			return start, nil
		}
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	return 0, err
}

// unknown is the error of a settling read that failed: the append's
// outcome is unknown.
func unknown(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: the reads that settle the append failed: %w", tablekit.ErrOutcomeUnknown, err)
}

// conflict returns the ConflictError of p, with the stream's version read
// now.
func (s *Store) conflict(ctx context.Context, p *plan) error {
	cur, err := s.current(ctx, p.id)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		cur = -1
	}
	return &ConflictError{Stream: p.id, Expected: p.expected, Current: cur}
}

// current reads the stream's version, retried as Options.Retry says.
func (s *Store) current(ctx context.Context, id ID) (int64, error) {
	err := ctx.Err()
	for range timing.Policy(s.o.Retry).Attempts(ctx) {
		var v int64
		if v, err = s.version(ctx, id); err == nil {
			return v, nil
		}
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	return 0, err
}

// get reads one row, retried as Options.Retry says; found is false when
// there is none.
func (s *Store) get(ctx context.Context, pk, rk string) (e tablekit.Entity, found bool, err error) {
	for range timing.Policy(s.o.Retry).Attempts(ctx) {
		e, err = s.t.Get(ctx, pk, rk)
		if err == nil {
			return e, true, nil
		}
		if errors.Is(err, tablekit.ErrNotFound) {
			return e, false, nil
		}
	}
	if ctx.Err() != nil {
		return e, false, ctx.Err()
	}
	return e, false, err
}
