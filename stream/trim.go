package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/timing"
)

// propStart is the property of a trimmed stream's tombstone (the row of
// version 1): the stream's first version.
const propStart = "_start"

// tombstone reports whether e, the row of version 1, is a trimmed
// stream's tombstone, and the start it records. An event row of version 1
// is always the first event of an append, so it carries the append's
// stamp; the tombstone carries none.
func tombstone(e tablekit.Entity) (start int64, ok bool) {
	if _, stamped := e.Properties[propAppend]; stamped {
		return 0, false
	}
	start, ok = e.Properties[propStart].(int64)
	return start, ok
}

// Trim drops the events of stream id with versions below before: after
// it, the stream starts at version before (Start), reads from below it end
// in ErrTrimmed, and the stream goes on as before (Version, Append, reads
// from before on). before is at least 1 and at most the stream's version
// + 1 (which drops every event), else Trim refuses it
// (tablekit.ErrInvalidInput); a before at or below the stream's start
// changes nothing, but finishes the deletes of a Trim that did not end.
// Trim a stream behind a snapshot of its state, or once every reader has
// passed before (package feed's subscriptions, an outbox's dispatched
// messages).
//
// The row of version 1 stays, as a tombstone that records the start (so
// that an append expecting version 0 is still refused: the stream
// exists). Trim writes it first, conditional on its ETag, in one
// transaction with the delete of the event before-1, so that a read from
// below the start never reaches it; it only moves the start up, so
// concurrent Trims end at the highest before. Then it deletes the events
// in between, 100 per entity group transaction. The events' id rows stay
// (unless Options.DropTrimmedIDs): a repeat of an append whose events were
// trimmed is still recognised (Replayed, with the first append's
// versions). Trim is idempotent: after a failure or a killed process, run
// it again. It may run while others append and read (see "Trimming" in
// the package doc).
//
// Cost: 1 query (the version, unless before is 1) + 1 read (the
// tombstone), + 1 transaction (the tombstone) when the start moves, + 1
// keys-only query per 1,000 events dropped (and 1 that finds none), + 1
// transaction per 100 rows deleted; with Options.DropTrimmedIDs, + 1 read
// (the event below the start, for its id). What stays of a trimmed
// stream: its head row, the tombstone and, unless dropped, an id row per
// event that had an id.
func (s *Store) Trim(ctx context.Context, id ID, before int64) error {
	const op = "Store.Trim"
	if err := s.usable(op); err != nil {
		return err
	}
	if err := id.validate(op); err != nil {
		return err
	}
	if before < 1 || before > maxVersion+1 {
		return invalid(op, "before", fmt.Sprintf("%d: a stream starts at version 1 at least, and at its version + 1 at most", before))
	}
	return fail(op, s.trim(ctx, id, before))
}

func (s *Store) trim(ctx context.Context, id ID, before int64) error {
	if before > 1 {
		cur, err := s.current(ctx, id)
		if err != nil {
			return err
		}
		if before > cur+1 {
			return invalid("Store.Trim", "before", fmt.Sprintf("%d is past the end of stream %s, at version %d: Trim drops versions below %d at most", before, id.name(), cur, cur+1))
		}
	}
	start, err := s.moveStart(ctx, id, before)
	if err != nil {
		return err
	}
	return s.dropBelow(ctx, id, start)
}

// moveStart makes the tombstone say a start of at least before and
// returns the stream's start. It writes the tombstone over the row of
// version 1, conditional on its ETag, in one transaction with the delete
// of the event before-1 (with Options.DropTrimmedIDs, and the id rows of
// the events it replaces and deletes): so whenever the tombstone says a
// start, the version just below it is gone, and a read from below the
// start meets a missing version (and ErrTrimmed) before it reaches the
// start, however far the deletes below have got.
func (s *Store) moveStart(ctx context.Context, id ID, before int64) (int64, error) {
	pk, rk := id.PartitionKey, id.event(1)
	var last error
	for range timing.Policy(s.o.Retry).Attempts(ctx) {
		e, found, err := s.get(ctx, pk, rk)
		if err != nil {
			return 0, err
		}
		if !found {
			if before <= 1 {
				return 1, nil // a stream without events
			}
			return 0, &tablekit.DecodeError{Entity: s.t.Name() + ":" + pk + "/" + rk, Detail: fmt.Sprintf("stream %s has events but no row of version 1 (rows deleted outside the Store?)", id.name())}
		}
		start, trimmed := tombstone(e)
		if !trimmed {
			start = 1
		}
		if before <= start {
			return start, nil
		}
		acts := []tablekit.Action[tablekit.Entity]{tablekit.UpdateAction(tablekit.Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{propStart: before}}, e.ETag)}
		if !trimmed {
			acts = append(acts, s.dropIDRow(id, e)...)
		}
		if below := before - 1; below > 1 {
			acts = append(acts, tablekit.DeleteAction(tablekit.Entity{PartitionKey: pk, RowKey: id.event(below)}, azcore.ETagAny))
			if s.o.DropTrimmedIDs {
				// The event's id is in its row, which the delete takes.
				ev, found, err := s.get(ctx, pk, id.event(below))
				if err != nil {
					return 0, err
				}
				if !found {
					last = fmt.Errorf("stream %s: the row of version %d is gone before its Trim", id.name(), below)
					continue // another Trim deleted it: read the tombstone again
				}
				acts = append(acts, s.dropIDRow(id, ev)...)
			}
		}
		_, err = s.t.Transaction(ctx, acts...)
		switch {
		case err == nil:
			return before, nil
		case errors.Is(err, tablekit.ErrPreconditionFailed), errors.Is(err, tablekit.ErrNotFound), errors.Is(err, tablekit.ErrOutcomeUnknown):
			// Another Trim came first, or this one's answer was lost: read
			// the tombstone again.
			last = err
		default:
			return 0, err
		}
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	return 0, fmt.Errorf("the tombstone of stream %s: gave up after %d tries; the last: %w", id.name(), s.o.Retry.MaxAttempts, last)
}

// dropBelow deletes the event rows 2..start-1 that are left (and, with
// Options.DropTrimmedIDs, their id rows, each in its event's transaction):
// it reads their keys (up to 1,000 per query) and deletes them in
// transactions of up to 100 actions, until a query finds none. A
// transaction refused because a row is gone (another Trim deleted it) or
// whose answer was lost ends the round: the next query reads what is
// left.
func (s *Store) dropBelow(ctx context.Context, id ID, start int64) error {
	if start <= 2 {
		return nil
	}
	pk := id.PartitionKey
	f := tablekit.Where("PartitionKey eq ? and RowKey ge ? and RowKey lt ?", pk, id.event(2), id.event(start))
	failures := 0
	for {
		var batch []tablekit.Action[tablekit.Entity]
		var batches [][]tablekit.Action[tablekit.Entity]
		n := 0
		for e, err := range s.t.Query(ctx, f, &tablekit.QueryOptions{Select: []string{propID}, PageSize: limits.PageSize}) {
			if err != nil {
				return err
			}
			acts := append([]tablekit.Action[tablekit.Entity]{tablekit.DeleteAction(tablekit.Entity{PartitionKey: pk, RowKey: e.RowKey}, azcore.ETagAny)}, s.dropIDRow(id, e)...)
			if len(batch)+len(acts) > limits.TransactionActions {
				batches = append(batches, batch)
				batch = nil
			}
			batch = append(batch, acts...)
			if n++; n == limits.PageSize {
				break
			}
		}
		if n == 0 {
			return nil
		}
		batches = append(batches, batch)
		for _, b := range batches {
			_, err := s.t.Transaction(ctx, b...)
			if err == nil {
				failures = 0
				continue
			}
			if !errors.Is(err, tablekit.ErrNotFound) && !errors.Is(err, tablekit.ErrOutcomeUnknown) {
				return err
			}
			// A row is gone already (another Trim), or the answer was
			// lost: read what is left.
			if failures++; failures >= s.o.Retry.MaxAttempts {
				return fmt.Errorf("the events below version %d of stream %s: gave up after %d refused transactions in a row; the last: %w", start, id.name(), failures, err)
			}
			if !timing.Sleep(ctx, timing.Policy(s.o.Retry).Pause(failures+1)) {
				return ctx.Err()
			}
			break
		}
	}
}

// dropIDRow returns the delete of the id row of event row e, when it has
// an id and Options.DropTrimmedIDs says to drop it.
func (s *Store) dropIDRow(id ID, e tablekit.Entity) []tablekit.Action[tablekit.Entity] {
	eid, _ := e.Properties[propID].(string)
	if eid == "" || !s.o.DropTrimmedIDs {
		return nil
	}
	return []tablekit.Action[tablekit.Entity]{tablekit.DeleteAction(tablekit.Entity{PartitionKey: id.PartitionKey, RowKey: id.eventID(eid)}, azcore.ETagAny)}
}

// Start returns the first version of stream id: 1 for a stream that was
// never trimmed (or has no events), else the before of its last Trim.
// Versions below it are gone: a read from below it ends in ErrTrimmed. One
// read (the row of version 1).
func (s *Store) Start(ctx context.Context, id ID) (int64, error) {
	const op = "Store.Start"
	if err := s.usable(op); err != nil {
		return 0, err
	}
	if err := id.validate(op); err != nil {
		return 0, err
	}
	start, err := s.start(ctx, id)
	return start, fail(op, err)
}

// start reads the stream's start: one read of the row of version 1.
func (s *Store) start(ctx context.Context, id ID) (int64, error) {
	e, err := s.t.Get(ctx, id.PartitionKey, id.event(1))
	if errors.Is(err, tablekit.ErrNotFound) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	if start, ok := tombstone(e); ok {
		return start, nil
	}
	return 1, nil
}

// trimmedAt returns a *TrimmedError when version v of stream id is below
// its start (read from tomb, the tombstone row when the caller has it, or
// else by one read), nil when it is not.
func (s *Store) trimmedAt(ctx context.Context, id ID, v int64, tomb *row) error {
	var start int64
	if tomb != nil && tomb.tomb {
		start = tomb.start
	} else {
		var err error
		if start, err = s.start(ctx, id); err != nil {
			return err
		}
	}
	if v < start {
		return &TrimmedError{Stream: id, From: v, Start: start}
	}
	return nil
}
