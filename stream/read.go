package stream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"

	"github.com/tablekit/tablekit"
)

// Version returns the stream's version: the version of its last event, 0
// when it has none. One query of the stream's head row.
func (s *Store) Version(ctx context.Context, id ID) (int64, error) {
	const op = "Store.Version"
	if err := s.usable(op); err != nil {
		return 0, err
	}
	if err := id.validate(op); err != nil {
		return 0, err
	}
	v, err := s.version(ctx, id)
	return v, fail(op, err)
}

func (s *Store) version(ctx context.Context, id ID) (int64, error) {
	var last int64
	for e, err := range s.t.Query(ctx, tablekit.RowKeyPrefix(id.PartitionKey, id.Prefix+headInfix), &tablekit.QueryOptions{Select: []string{propVersion}}) {
		if err != nil {
			return 0, err
		}
		v, ok := versionOf(e.RowKey, headInfix)
		if !ok {
			return 0, &tablekit.DecodeError{Entity: s.t.Name() + ":" + e.PartitionKey + "/" + e.RowKey, Detail: "not a head row of the stream"}
		}
		last = max(last, v)
	}
	return last, nil
}

// Forward returns the stream's events from version from (1 for the
// first; below 1 means 1) on, in version order, reading Options.PageSize
// versions per query. Break the loop to stop; resume from the last
// version read + 1. Events appended while the loop runs are read too.
// Iteration stops at the first error, yielded with a zero RecordedEvent.
//
// A read from below the stream's start (Store.Trim dropped the versions
// before it) ends in a *TrimmedError (ErrTrimmed) where it meets the first
// version that is gone: before any event when the Trim is done, after the
// ones still there when a Trim is under way. It never skips a version;
// read from the error's Start to go on.
func (s *Store) Forward(ctx context.Context, id ID, from int64) iter.Seq2[RecordedEvent, error] {
	const op = "Store.Forward"
	return func(yield func(RecordedEvent, error) bool) {
		if err := s.usable(op); err != nil {
			yield(RecordedEvent{}, err)
			return
		}
		if err := id.validate(op); err != nil {
			yield(RecordedEvent{}, err)
			return
		}
		next := max(from, 1)
		again := false // the last range had a gap: read once more from it
		for next <= maxVersion {
			rows, err := s.readRange(ctx, id, next, min(next+int64(s.o.PageSize)-1, maxVersion))
			if err != nil {
				yield(RecordedEvent{}, fail(op, err))
				return
			}
			if len(rows) == 0 {
				// Past the end, or below the start of a trimmed stream
				// (whose tombstone, the row of version 1, is never gone).
				if next > 1 {
					if err := s.trimmedAt(ctx, id, next, nil); err != nil {
						yield(RecordedEvent{}, fail(op, err))
					}
				}
				return
			}
			for _, r := range rows {
				if r.tomb || r.version != next {
					// A range read in several pages on a service that does
					// not return keys in order (Cosmos DB) may meet an
					// append in between: later versions without earlier
					// ones. Read again from the gap; a second gap there is
					// a trimmed version, or a missing row.
					if r.tomb || again {
						if err := s.trimmedAt(ctx, id, next, &r); err != nil {
							yield(RecordedEvent{}, fail(op, err))
							return
						}
						yield(RecordedEvent{}, fail(op, s.missing(id, next, r)))
						return
					}
					again = true
					break
				}
				again = false
				ev, err := s.decode(op, r)
				if !yield(ev, err) || err != nil {
					return
				}
				next++
			}
			if !again && len(rows) < s.o.PageSize {
				return
			}
		}
	}
}

// missing is the error of version v of stream id, which is not there
// though it is not below the stream's start; r is the row found instead.
func (s *Store) missing(id ID, v int64, r row) error {
	detail := fmt.Sprintf("stream %s: version %d is missing, version %d is there (rows deleted outside the Store?)", id.name(), v, r.version)
	if r.tomb {
		detail = fmt.Sprintf("stream %s: the row of version 1 is a tombstone that says the stream starts at %d (written outside the Store?)", id.name(), r.start)
	}
	return &tablekit.DecodeError{Entity: s.t.Name() + ":" + id.PartitionKey + "/" + id.event(v), Detail: detail}
}

// Backward returns the stream's events from version from down to its
// start (1, unless Store.Trim moved it), in reverse version order, reading
// Options.PageSize versions per query; from 0 (or below) means from the
// stream's last event (one more query, of the head row), another from
// costs one read more (the start), unless its range reaches version 1. A
// from past the last version starts at the last; a from below the start
// yields nothing. Iteration stops at the start without an error (after one
// more read, of the start, on a trimmed stream), or at the first error,
// yielded with a zero RecordedEvent.
func (s *Store) Backward(ctx context.Context, id ID, from int64) iter.Seq2[RecordedEvent, error] {
	const op = "Store.Backward"
	return func(yield func(RecordedEvent, error) bool) {
		if err := s.usable(op); err != nil {
			yield(RecordedEvent{}, err)
			return
		}
		if err := id.validate(op); err != nil {
			yield(RecordedEvent{}, err)
			return
		}
		next := min(from, maxVersion)
		last := int64(-1) // the stream's version, when read
		if next <= 0 {
			v, err := s.version(ctx, id)
			if err != nil {
				yield(RecordedEvent{}, fail(op, err))
				return
			}
			next, last = v, v
		}
		// stop is the end of a read that did not find version next (found
		// is the row there instead, nil for none): nil when next is below
		// the stream's start, where the read ends, else the error of a
		// missing version.
		stop := func(found *row) error {
			err := s.trimmedAt(ctx, id, next, found)
			var te *TrimmedError
			switch {
			case errors.As(err, &te):
				return nil
			case err != nil:
				return fail(op, err)
			case found == nil:
				found = &row{version: next + 1}
			}
			return fail(op, s.missing(id, next, *found))
		}
		top := true // the first range: versions above the last are absent
		for next >= 1 {
			rows, err := s.readRange(ctx, id, max(next-int64(s.o.PageSize)+1, 1), next)
			if err != nil {
				yield(RecordedEvent{}, fail(op, err))
				return
			}
			if top {
				top = false
				if len(rows) == 0 {
					// from is past the last version by more than a range
					// (start at the last), or below the start.
					v, err := s.version(ctx, id)
					if err != nil {
						yield(RecordedEvent{}, fail(op, err))
						return
					}
					if v < next {
						next, last = v, v
						continue
					}
					return
				}
				// The top row may be below the start, if a Trim under way
				// has not deleted it yet: then nothing is read. The version
				// just below the start is always gone (see Store.Trim), so
				// the stream's last version is at or above it.
				t := rows[len(rows)-1].version
				if t != last || rows[0].tomb {
					err := s.trimmedAt(ctx, id, t, &rows[0])
					if errors.As(err, new(*TrimmedError)) {
						return
					}
					if err != nil {
						yield(RecordedEvent{}, fail(op, err))
						return
					}
				}
				next = t
			}
			if len(rows) == 0 {
				if err := stop(nil); err != nil {
					yield(RecordedEvent{}, err)
				}
				return
			}
			for i := len(rows) - 1; i >= 0; i-- {
				r := rows[i]
				if r.tomb || r.version != next {
					if err := stop(&r); err != nil {
						yield(RecordedEvent{}, err)
					}
					return
				}
				ev, err := s.decode(op, r)
				if !yield(ev, err) || err != nil {
					return
				}
				next--
			}
		}
	}
}

// row is an event row as read, or the tombstone of a trimmed stream
// (version 1, tomb set, start its start).
type row struct {
	version int64
	id      string
	e       tablekit.Entity
	props   map[string]any
	tomb    bool
	start   int64
}

// readRange reads the event rows of versions lo to hi (one query, which
// the service may answer in several pages) and returns them in version
// order: Azure Cosmos DB for Table returns them in no order.
func (s *Store) readRange(ctx context.Context, id ID, lo, hi int64) ([]row, error) {
	f := tablekit.Where("PartitionKey eq ? and RowKey ge ? and RowKey le ?", id.PartitionKey, id.event(lo), id.event(hi))
	var rows []row
	for e, err := range s.t.Query(ctx, f, &tablekit.QueryOptions{PageSize: int(min(hi-lo+1, 1000))}) {
		if err != nil {
			return nil, err
		}
		v, ok := versionOf(e.RowKey, eventInfix)
		if !ok {
			return nil, &tablekit.DecodeError{Entity: s.t.Name() + ":" + e.PartitionKey + "/" + e.RowKey, Detail: "not an event row of the stream"}
		}
		eid, _ := e.Properties[propID].(string)
		r := row{version: v, id: eid, e: e, props: e.Properties}
		if v == 1 {
			r.start, r.tomb = tombstone(e)
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(a.version, b.version) })
	return rows, nil
}

// decode turns an event row into a RecordedEvent, its data decoded by the
// Registry without the stream's own properties.
func (s *Store) decode(op string, r row) (RecordedEvent, error) {
	e := r.e
	e.Properties = maps.Clone(r.props)
	delete(e.Properties, propID)
	delete(e.Properties, propAppend)
	data, err := s.reg.Decode(e)
	if err != nil {
		return RecordedEvent{}, fail(op, err)
	}
	kind, _, _ := s.reg.Kind(e)
	return RecordedEvent{Version: r.version, ID: r.id, Kind: kind, Data: data, Time: r.e.Timestamp}, nil
}
