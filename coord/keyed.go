package coord

// Keyed writes: the entity actions of one partition and an idempotency
// record of the key, in one entity group transaction, so that a write is
// applied at most once per key. KeyedTx is the one implementation behind
// Writer's keys and the WithKey writes of packages index and patterns;
// a pattern package of one's own builds its keyed writes on it too.
//
// The record is the row KeyRecordPrefix+key of the write's partition,
// inserted as the transaction's first action, with three properties:
// Stamp (random per call, so that the call can tell its own apply from
// another's), Fingerprint (what the write stands for, see [Fingerprint])
// and ExpiresProperty (when Sweep may delete it; records written before it
// was named so carry "Expires"). A repeat of the key meets
// EntityAlreadyExists at the record: the refused transaction changed
// nothing, and the record is read: with the same fingerprint (or none, a
// record older than fingerprints) the write is a replay; with another, the
// key was reused for another write ([ErrKeyReused]). After a lost answer
// the record is read the same way: present with the call's stamp, this
// call applied it; present with another stamp, another call did; absent,
// nothing was applied and the write may be sent again.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/keys"
)

// KeyRecordPrefix starts the RowKey of an idempotency record: the record
// of key is the row KeyRecordPrefix+key of the write's partition.
const KeyRecordPrefix = ReservedPrefix + "key~"

// Properties of a record.
const (
	// propStamp (string: random per call, to settle a lost answer) is
	// the fence row's too.
	propFingerprint = "Fingerprint" // string: what the write stands for (Fingerprint)
	// propOldExpires is the expiry of the records earlier versions of
	// tablekit wrote: Sweep still deletes records (RowKeys starting with
	// KeyRecordPrefix) whose propOldExpires is past, and no other rows.
	propOldExpires = "Expires"
)

// defaultKeyTTL is how long a record is kept unless told otherwise.
const defaultKeyTTL = 24 * time.Hour

// MaxKeyedActions is how many actions of the caller a keyed transaction
// holds: the record takes one of the 100.
const MaxKeyedActions = limits.TransactionActions - 1

// reserved reports whether rk is a RowKey tablekit keeps for itself.
func reserved(rk string) bool { return strings.HasPrefix(rk, ReservedPrefix) }

// CheckKey refuses an idempotency key that cannot be recorded in t: empty
// (tablekit.ErrInvalidInput), or making a RowKey that breaks the key rules
// (tablekit.ErrInvalidKey): 1 KiB, 255 bytes on Azure Cosmos DB for
// Table. Its errors name no operation: the caller names its own.
func CheckKey(t *tablekit.Table[tablekit.Entity], key string) error { return checkKey("", t, key) }

// checkKey is CheckKey naming op in its errors.
func checkKey(op string, t *tablekit.Table[tablekit.Entity], key string) error {
	if key == "" {
		return &tablekit.ValidationError{Op: op, Property: "key", Detail: "empty idempotency key", Err: tablekit.ErrInvalidInput}
	}
	const rule = "the RowKey " + KeyRecordPrefix + "+key obeys RowKey rules (<= 1 KiB; 255 bytes on Cosmos DB)"
	rk := KeyRecordPrefix + key
	if err := keys.Validate(rk); err != nil {
		return &tablekit.ValidationError{Op: op, Property: "key", Limit: rule, Detail: fmt.Sprintf("idempotency key %q: %v", key, err), Err: tablekit.ErrInvalidKey}
	}
	if t != nil && t.Account().Service() == tablekit.ServiceCosmosDB && len(rk) > limits.CosmosRowKeyBytes {
		return &tablekit.ValidationError{Op: op, Property: "key", Limit: rule, Size: len(rk), Unit: "bytes", Detail: fmt.Sprintf("idempotency key of %d bytes: its record's RowKey is too long for Cosmos DB", len(key)), Err: tablekit.ErrInvalidKey}
	}
	return nil
}

// Outcome is what a keyed transaction came to (see [KeyedTx.Send]).
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

// KeyedTx is one keyed write, made once per call of the caller's write
// (NewKeyedTx) and sent once per try (Send): the stamp is the call's, so
// that a try whose answer was lost and which the service applied after
// the settling read (a request still in flight) is recognised as this
// call's. It is not safe for concurrent use.
type KeyedTx struct {
	t     *tablekit.Table[tablekit.Entity]
	pk    string
	key   string
	fp    string // the write's fingerprint, kept in the record
	stamp string
	ttl   time.Duration
	clock func() time.Time
	retry tablekit.RetryPolicy
	lost  bool // a try's answer was lost: it may yet be applied
}

// KeyedTxOptions configures a [KeyedTx]; nil means defaults.
type KeyedTxOptions struct {
	// TTL is the record's life: Sweep may delete it after (0: 24 hours).
	TTL time.Duration
	// Clock tells the time of the record's expiry (nil: time.Now).
	Clock func() time.Time
	// Retry paces the reads that settle a lost answer or a repeat (its
	// zero fields: 30 attempts, 10 ms to 1 s apart).
	Retry tablekit.RetryPolicy
}

// NewKeyedTx returns the keyed write of key in partition pk of t.
// fingerprint is the write's (made by Fingerprint, FingerprintActions or
// FingerprintWrite from what the caller wrote, not from what was derived
// from it, so that a repeat of the same write has the same one). The key
// must have passed CheckKey.
func NewKeyedTx(t *tablekit.Table[tablekit.Entity], pk, key, fingerprint string, opts *KeyedTxOptions) *KeyedTx {
	var o KeyedTxOptions
	if opts != nil {
		o = *opts
	}
	if o.TTL <= 0 {
		o.TTL = defaultKeyTTL
	}
	return &KeyedTx{t: t, pk: pk, key: key, fp: fingerprint, stamp: rand.Text(), ttl: o.TTL, clock: o.Clock, retry: tablekit.RetryPolicy(timing.Policy(o.Retry).WithDefaults(timing.Conflict))}
}

// Stamp is the call's stamp: the record's Stamp property when this call
// applies it.
func (x *KeyedTx) Stamp() string { return x.stamp }

// record is the action that inserts the key's record.
func (x *KeyedTx) record() tablekit.Action[tablekit.Entity] {
	return tablekit.InsertAction(tablekit.Entity{PartitionKey: x.pk, RowKey: KeyRecordPrefix + x.key, Properties: map[string]any{
		propStamp: x.stamp, propFingerprint: x.fp, ExpiresProperty: timing.Now(x.clock).Add(x.ttl).UTC()}})
}

// Send sends the record and acts (at most MaxKeyedActions, all in the
// partition) as one transaction. It returns:
//   - Applied with the acts' ETags (nil when settled after a lost answer);
//   - Replayed when the key was applied by another call with the same
//     fingerprint (or a record without one);
//   - an error matching ErrKeyReused when it was applied by another call
//     with another fingerprint;
//   - NotApplied with an error saying so when the record shows nothing
//     applied (send again, or give up with that error);
//   - an error otherwise: a *tablekit.TransactionError whose Index counts
//     acts; when every read to settle a lost answer failed, one matching
//     tablekit.ErrOutcomeUnknown; when every read of a repeat's record
//     failed, one saying nothing was applied.
func (x *KeyedTx) Send(ctx context.Context, acts ...tablekit.Action[tablekit.Entity]) ([]azcore.ETag, Outcome, error) {
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
		// stamp). The refused transaction changed nothing; the record
		// says which, and whether the earlier call's write was this one.
		o, serr := x.read(ctx)
		switch {
		case errors.Is(serr, ErrKeyReused), serr != nil && ctx.Err() != nil:
			return nil, 0, serr
		case serr != nil && x.lost: // a try of this call may have applied it
			return nil, 0, unknown(serr)
		case serr != nil: // this call applied nothing
			return nil, 0, fmt.Errorf("not applied: the key %q was applied before, and every read of its record to compare the writes failed: %w", x.key, serr)
		case o == NotApplied: // swept since: the key is new again
			return nil, NotApplied, errors.New("the idempotency record was there, and gone when read")
		}
		return nil, o, nil
	case errors.As(err, &te) && te.Index == 0:
		return nil, 0, fmt.Errorf("the idempotency record %s/%s was refused: %w", x.pk, KeyRecordPrefix+x.key, te.Err)
	case errors.As(err, &te) && te.Index > 0:
		return nil, 0, &tablekit.TransactionError{Index: te.Index - 1, Code: te.Code, Err: te.Err}
	default:
		return nil, 0, err
	}
}

// Settle reads the record, as the retry policy allows: Applied when it
// has this call's stamp, Replayed when another's with the same
// fingerprint (or none: a record older than fingerprints), an error
// matching ErrKeyReused when another's with another fingerprint,
// NotApplied when there is none. When every read failed the error
// matches tablekit.ErrOutcomeUnknown (or is ctx's).
func (x *KeyedTx) Settle(ctx context.Context) (Outcome, error) {
	o, err := x.read(ctx)
	if err != nil && !errors.Is(err, ErrKeyReused) && ctx.Err() == nil {
		return 0, unknown(err)
	}
	return o, err
}

// unknown is the error of a lost answer that reading the record, with
// err last, could not settle.
func unknown(err error) error {
	return fmt.Errorf("%w: every read of the idempotency record to settle the write failed: %w", tablekit.ErrOutcomeUnknown, err)
}

// read is Settle, returning the last read's error (or ctx's, bare) when
// every read failed.
func (x *KeyedTx) read(ctx context.Context) (Outcome, error) {
	var err error
	for range timing.Policy(x.retry).Attempts(ctx) {
		var e tablekit.Entity
		e, err = x.t.Get(ctx, x.pk, KeyRecordPrefix+x.key)
		if errors.Is(err, tablekit.ErrNotFound) {
			return NotApplied, nil
		}
		if err == nil {
			if s, _ := e.Properties[propStamp].(string); s == x.stamp {
				return Applied, nil
			}
			if fp, _ := e.Properties[propFingerprint].(string); fp != "" && fp != x.fp {
				return 0, fmt.Errorf("%w: key %q in partition %q was recorded for a write with other content (another fingerprint); nothing written", ErrKeyReused, x.key, x.pk)
			}
			return Replayed, nil
		}
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	return 0, err
}

// Fingerprint returns the fingerprint of what a caller says a key stands
// for (Write.Fingerprint): a SHA-256 of it, so that the record
// holds a short digest and never the caller's text.
func Fingerprint(what string) string {
	h := newHasher("text")
	h.str(what)
	return h.sum()
}

// FingerprintActions returns the fingerprint of acts, actions of t: their verbs,
// keys and properties, not their ETags (a repeat that read the entities
// again carries other ETags). The values of the properties t encrypts are
// left out (their names are kept), so that the record holds nothing
// derived from a secret.
func FingerprintActions[T any](t *tablekit.Table[T], acts []tablekit.Action[tablekit.Entity]) string {
	secret := t.Encrypted()
	h := newHasher("actions")
	for _, a := range acts {
		verb, e := a.Verb(), a.Value()
		h.str(verb)
		h.entity(e, secret)
	}
	return h.sum()
}

// FingerprintWrite returns the fingerprint of a pattern's write: op names the
// write (e.g. "index.SamePartition.Upsert"), e holds the keys and the
// properties the caller wrote (none for a delete, or a write computed by
// a function, such as Modify's). Encrypted values are left out as
// FingerprintActions does.
func FingerprintWrite[T any](t *tablekit.Table[T], op string, e tablekit.Entity) string {
	h := newHasher("write")
	h.str(op)
	h.entity(e, t.Encrypted())
	return h.sum()
}

// hasher writes values into a SHA-256, each length-prefixed and typed, so
// that different inputs never write the same bytes.
type hasher struct{ h hash.Hash }

func newHasher(kind string) *hasher {
	h := &hasher{sha256.New()}
	h.str(kind)
	return h
}

func (h *hasher) sum() string { return hex.EncodeToString(h.h.Sum(nil)) }

func (h *hasher) u64(v uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	h.h.Write(b[:])
}

func (h *hasher) str(s string) {
	h.u64(uint64(len(s)))
	h.h.Write([]byte(s))
}

// entity writes e's keys and properties, by name; a property in secret
// is written without its value.
func (h *hasher) entity(e tablekit.Entity, secret []string) {
	h.str(e.PartitionKey)
	h.str(e.RowKey)
	names := make([]string, 0, len(e.Properties))
	for k := range e.Properties {
		names = append(names, k)
	}
	slices.Sort(names)
	h.u64(uint64(len(names)))
	for _, k := range names {
		h.str(k)
		if _, ok := slices.BinarySearch(secret, k); ok {
			h.str("secret")
			continue
		}
		h.value(e.Properties[k])
	}
}

// value writes a property value with its type.
func (h *hasher) value(v any) {
	switch v := v.(type) {
	case string:
		h.str("s")
		h.str(v)
	case int32:
		h.str("i32")
		h.u64(uint64(v))
	case int64:
		h.str("i64")
		h.u64(uint64(v))
	case float64:
		h.str("f")
		h.u64(math.Float64bits(v))
	case bool:
		h.str("b")
		h.str(fmt.Sprint(v))
	case time.Time:
		h.str("t")
		h.str(v.UTC().Format(time.RFC3339Nano))
	case []byte:
		h.str("x")
		h.str(string(v))
	case tablekit.GUID:
		h.str("g")
		h.str(string(v[:]))
	default:
		h.str(fmt.Sprintf("%T", v))
		h.str(fmt.Sprint(v))
	}
}
