// Package idem applies a keyed write: the entity actions of one partition
// and an idempotency record of the key, in one entity group transaction,
// so that a write is applied at most once per key. It is the one
// implementation behind coord.Writer's keys and the WithKey writes of
// package index and patterns.
//
// The record is the row ReservedPrefix+"key~"+key of the write's
// partition, inserted as the transaction's first action, with two
// properties: Stamp (random per call, so that the call can tell its own
// apply from another's) and Expires (when coord.Sweep may delete it). A
// repeat of the key meets EntityAlreadyExists at the record: the refused
// transaction changed nothing, and the write is a replay. After a lost
// answer the record is read: present with the call's stamp, this call
// applied it; present with another stamp, another call did; absent,
// nothing was applied and the write may be sent again.
package idem

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/core"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/keys"
)

// ReservedPrefix starts the RowKey of every row tablekit keeps in a
// user's partition (coord's fence row, idempotency records). coord
// exports it as coord.ReservedPrefix.
const ReservedPrefix = "~coord~"

// RecordPrefix starts the RowKey of an idempotency record.
const RecordPrefix = ReservedPrefix + "key~"

// Properties of a record.
const (
	PropStamp   = "Stamp"   // string: random per call, to settle a lost answer
	PropExpires = "Expires" // time: when the record may be swept (coord.Sweep)
)

// DefaultTTL is how long a record is kept unless told otherwise.
const DefaultTTL = 24 * time.Hour

// MaxActions is how many actions of the caller a keyed transaction holds:
// the record takes one of the 100.
const MaxActions = limits.TransactionActions - 1

// Reserved reports whether rk is a RowKey tablekit keeps for itself.
func Reserved(rk string) bool { return strings.HasPrefix(rk, ReservedPrefix) }

// Check refuses a key that cannot be recorded in t: empty
// (tablekit.ErrInvalidInput), or making a RowKey that breaks the key rules
// (tablekit.ErrInvalidKey): 1 KiB, 255 bytes on Cosmos DB. op names the
// caller.
func Check(op string, t *tablekit.Table[tablekit.Entity], key string) error {
	if key == "" {
		return &tablekit.ValidationError{Op: op, Property: "key", Detail: "empty idempotency key", Err: tablekit.ErrInvalidInput}
	}
	const rule = "the RowKey " + RecordPrefix + "+key obeys RowKey rules (<= 1 KiB; 255 bytes on Cosmos DB)"
	rk := RecordPrefix + key
	if err := keys.Validate(rk); err != nil {
		return &tablekit.ValidationError{Op: op, Property: "key", Limit: rule, Detail: fmt.Sprintf("idempotency key %q: %v", key, err), Err: tablekit.ErrInvalidKey}
	}
	if t != nil && core.Cosmos(t) && len(rk) > limits.CosmosRowKeyBytes {
		return &tablekit.ValidationError{Op: op, Property: "key", Limit: rule, Size: len(rk), Unit: "bytes", Detail: fmt.Sprintf("idempotency key of %d bytes: its record's RowKey is too long for Cosmos DB", len(key)), Err: tablekit.ErrInvalidKey}
	}
	return nil
}

// Outcome is what a keyed transaction came to.
type Outcome uint8

const (
	// Applied: this call applied the actions; their ETags are known
	// unless the answer was lost (then nil: read for the versions).
	Applied Outcome = iota + 1
	// Replayed: an earlier call with the key applied it; this call wrote
	// nothing.
	Replayed
	// NotApplied: the answer was lost and the record shows that nothing
	// was applied: the caller may send the write again (with Send).
	NotApplied
)

// errNotApplied is NotApplied's error: it must not match
// tablekit.ErrOutcomeUnknown, since the outcome is known.
var errNotApplied = errors.New("no answer came, and reading the idempotency record showed it was not applied")

// Tx is one keyed write, made once per call of the caller's write and
// sent once per try: the stamp is the call's, so that a try whose answer
// was lost and which the service applied after the settling read (a
// request still in flight) is recognised as this call's.
type Tx struct {
	t     *tablekit.Table[tablekit.Entity]
	pk    string
	key   string
	stamp string
	ttl   time.Duration
	clock func() time.Time
	retry tablekit.RetryPolicy
	lost  bool // a try's answer was lost: it may yet be applied
}

// New returns the keyed write of key in partition pk of t. ttl is the
// record's life (0: DefaultTTL), clock tells the time of its Expires (nil:
// time.Now), retry paces the reads that settle a lost answer (its zero
// fields take core.ConflictRetry's). The key must have passed Check.
func New(t *tablekit.Table[tablekit.Entity], pk, key string, ttl time.Duration, clock func() time.Time, retry tablekit.RetryPolicy) *Tx {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Tx{t: t, pk: pk, key: key, stamp: rand.Text(), ttl: ttl, clock: clock, retry: core.WithDefaults(retry, core.ConflictRetry)}
}

// Stamp is the call's stamp, the record's Stamp when this call applies it.
func (x *Tx) Stamp() string { return x.stamp }

// record is the action that inserts the key's record.
func (x *Tx) record() tablekit.Action[tablekit.Entity] {
	return tablekit.InsertAction(tablekit.Entity{PartitionKey: x.pk, RowKey: RecordPrefix + x.key, Properties: map[string]any{
		PropStamp: x.stamp, PropExpires: core.Now(x.clock).Add(x.ttl).UTC()}})
}

// Send sends the record and acts (at most MaxActions, all in the
// partition) as one transaction. It returns:
//   - Applied with the acts' ETags (nil when settled after a lost answer);
//   - Replayed when the key was applied by another call;
//   - NotApplied with an error saying so when the record shows nothing
//     applied (send again, or give up with that error);
//   - an error otherwise: a *tablekit.TransactionError whose Index counts
//     acts, or, when every read to settle a lost answer failed, one
//     matching tablekit.ErrOutcomeUnknown.
func (x *Tx) Send(ctx context.Context, acts ...tablekit.Action[tablekit.Entity]) ([]azcore.ETag, Outcome, error) {
	all := make([]tablekit.Action[tablekit.Entity], 0, len(acts)+1)
	all = append(append(all, x.record()), acts...)
	etags, err := x.t.Transaction(ctx, all...)
	var te *tablekit.TransactionError
	switch {
	case err == nil:
		return etags[1:], Applied, nil
	case errors.Is(err, tablekit.ErrOutcomeUnknown):
		x.lost = true
		o, serr := x.Settle(ctx)
		if serr != nil {
			return nil, 0, serr
		}
		if o == NotApplied {
			return nil, NotApplied, errNotApplied
		}
		return nil, o, nil
	case errors.As(err, &te) && te.Index == 0 && errors.Is(err, tablekit.ErrAlreadyExists):
		// The record exists: an earlier call applied the write, or a try
		// of this call whose answer was lost and which the service applied
		// after the read that settled it (its record has this call's
		// stamp). The refused transaction changed nothing.
		if x.lost {
			if o, serr := x.Settle(ctx); serr == nil && o != NotApplied {
				return nil, o, nil
			}
		}
		return nil, Replayed, nil
	case errors.As(err, &te) && te.Index == 0:
		return nil, 0, fmt.Errorf("the idempotency record %s/%s was refused: %w", x.pk, RecordPrefix+x.key, te.Err)
	case errors.As(err, &te) && te.Index > 0:
		return nil, 0, &tablekit.TransactionError{Index: te.Index - 1, Code: te.Code, Err: te.Err}
	default:
		return nil, 0, err
	}
}

// Settle reads the record, as the retry policy allows: Applied when it
// has this call's stamp, Replayed when another's, NotApplied when there is
// none. When every read failed the error matches
// tablekit.ErrOutcomeUnknown (or is ctx's).
func (x *Tx) Settle(ctx context.Context) (Outcome, error) {
	var err error
	for range core.Attempts(ctx, x.retry) {
		var e tablekit.Entity
		e, err = x.t.Get(ctx, x.pk, RecordPrefix+x.key)
		if errors.Is(err, tablekit.ErrNotFound) {
			return NotApplied, nil
		}
		if err == nil {
			if s, _ := e.Properties[PropStamp].(string); s == x.stamp {
				return Applied, nil
			}
			return Replayed, nil
		}
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	return 0, fmt.Errorf("%w: the answer was lost and every read of the idempotency record to settle it failed: %w", tablekit.ErrOutcomeUnknown, err)
}
