package coord

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/names"
	"github.com/tablekit/tablekit/internal/timing"
)

// Reserved RowKeys: the rows coord keeps in a user's partitions.
const (
	// ReservedPrefix starts the RowKey of every row coord keeps in a
	// partition it writes to (the fence row and idempotency records). Keep
	// it out of queries (RowKeys below "~" never start with it) and never
	// write RowKeys that start with it.
	//
	// The patterns' keyed writes (index.SamePartition.WithKey,
	// patterns.Wide.WithKey, patterns.Mixed.WithKey) keep their records
	// under it too.
	ReservedPrefix = names.ReservedRowKeyPrefix
	fenceRowKey    = ReservedPrefix + "fence"
)

// propStamp is the per-call stamp of the fence row and of the
// idempotency records, to settle a lost answer.
const propStamp = "Stamp"

// WriterOptions configure a Writer. The zero value (or nil) means the
// defaults.
type WriterOptions struct {
	// KeyTTL is how long an idempotency record is kept. A record is
	// written with the write it guards, in its transaction, so only an
	// applied write is recorded: within KeyTTL a repeat of its key is
	// Result{Replayed: true} (ErrKeyReused when its fingerprint differs),
	// while a write that was refused (a failed condition, ErrFenced)
	// left no record, and its repeat is tried afresh. Sweep deletes
	// records after KeyTTL; a repeat after that is a new write. Default
	// 24 h.
	KeyTTL time.Duration
	// Retry paces the retries of a fenced write whose fence row another
	// write of the same term changed, and of the reads that settle a
	// lost answer. Default 30 attempts, 10 ms to 1 s apart.
	Retry tablekit.RetryPolicy
	// Clock tells the time of the records' Expires; nil means time.Now.
	Clock func() time.Time
}

// Write says how a Writer's transaction is guarded. The zero Write is an
// unguarded transaction.
type Write struct {
	// Term fences the transaction: it is applied only if no transaction
	// with a higher term was applied in its partition before (ErrFenced),
	// checked in the same entity group transaction by the partition's
	// fence row. 0: not fenced. Use the term of a Lease.
	Term int64
	// Key is an idempotency key: the transaction is applied at most once
	// per key; a repeat after it was applied writes nothing and returns
	// Result{Replayed: true} (see WriterOptions.KeyTTL). The key is
	// recorded in the partition, in the same transaction, as the RowKey
	// ReservedPrefix+"key~"+Key (so Key obeys RowKey rules and limits:
	// 1 KiB in all, 255 bytes on Cosmos DB). "": no key.
	Key string
	// Fingerprint is what the key stands for (e.g. a hash of the request
	// that caused the write); "" means a fingerprint of the actions
	// (verbs, keys and properties, not ETags, nor the values of
	// properties the table encrypts). It is kept with the key's record: a
	// repeat of the key whose fingerprint differs fails with ErrKeyReused
	// and writes nothing. Set it when a repeat may recompute its actions
	// from state that changed since (a redelivered message whose handler
	// reads before it writes), so that the repeat still replays. The
	// record holds a SHA-256 of it, not the text. Only with a Key.
	Fingerprint string
}

// Result is the outcome of a Writer's transaction.
type Result struct {
	// ETags holds the new ETag of each action, in order (a delete's is
	// ""). It is nil when the outcome was settled by reading after a lost
	// answer, or replayed: read the entities for their versions then.
	ETags []azcore.ETag
	// Replayed says that the transaction's Key had been applied before:
	// nothing was written by this call.
	Replayed bool
}

// Writer makes entity group transactions on one table that can be fenced
// by a lease's term and carry an idempotency key (see Write). Make one with
// NewWriter; it is safe for concurrent use, and caches each partition's
// fence version so that a holder's fenced writes cost 1 transaction each.
//
// Costs: unguarded, keyed, fenced or both: 1 transaction (+1 read of the
// fence row the first time a partition is fenced from this Writer or after
// another term wrote there; +1 read after a lost answer); a repeat of a
// key: 1 refused transaction + 1 read of the record (its fingerprint). A keyed transaction does not end in
// tablekit.ErrOutcomeUnknown: after a lost answer the Writer reads its
// record and writes again only if nothing was applied (only when those
// reads fail too, Retry's attempts over, is the outcome still unknown). An unkeyed fenced
// one is settled by the fence row, unless another write changed that row
// since (then ErrOutcomeUnknown: give it a Key). A transaction has at most
// 98 actions of the caller when both guarded (100 in all).
//
// The zero Writer refuses every call with an error matching
// tablekit.ErrInvalidInput.
type Writer[T any] struct {
	t      *tablekit.Table[T]
	e      *tablekit.Table[tablekit.Entity]
	o      WriterOptions
	mu     sync.Mutex
	fences map[string]fence // by PartitionKey
}

// fence is what a Writer knows of a partition's fence row.
type fence struct {
	term int64
	etag azcore.ETag // "" when the row does not exist
}

// NewWriter returns a Writer of t's transactions. It sends nothing.
func NewWriter[T any](t *tablekit.Table[T], opts *WriterOptions) (*Writer[T], error) {
	var o WriterOptions
	if opts != nil {
		o = *opts
	}
	if t == nil {
		return nil, invalid("NewWriter", "table", "nil table (use tablekit.OpenTable)")
	}
	if o.KeyTTL < 0 {
		return nil, invalid("NewWriter", "KeyTTL", "negative")
	}
	if o.KeyTTL == 0 {
		o.KeyTTL = 24 * time.Hour
	}
	if err := timing.Policy(o.Retry).Validate("coord.NewWriter"); err != nil {
		return nil, err
	}
	o.Retry = tablekit.RetryPolicy(timing.Policy(o.Retry).WithDefaults(timing.Policy(tablekit.RetryPolicy(timing.Conflict))))
	return &Writer[T]{t: t, e: t.AsEntities(), o: o, fences: map[string]fence{}}, nil
}

// Transaction applies actions (all in one partition) as one entity group
// transaction guarded as g says, and returns their ETags. It fails with
// ErrFenced when a higher term than g.Term has written to the partition,
// with the caller's *tablekit.TransactionError (its Index counts the
// caller's actions) when an action is refused, and returns
// Result{Replayed: true} when g.Key was applied before with the same
// fingerprint (g.Fingerprint, or the actions'), ErrKeyReused when with
// another; either way nothing is written.
func (w *Writer[T]) Transaction(ctx context.Context, g Write, actions ...tablekit.Action[T]) (Result, error) {
	if w == nil || w.t == nil {
		return Result{}, invalid("Writer.Transaction", "", "zero Writer (use coord.NewWriter)")
	}
	r, err := w.transaction(ctx, g, actions)
	return r, fail("Writer.Transaction", err)
}

func (w *Writer[T]) transaction(ctx context.Context, g Write, actions []tablekit.Action[T]) (Result, error) {
	if g.Term < 0 {
		return Result{}, invalid("Writer.Transaction", "Term", "negative term")
	}
	if len(actions) == 0 {
		return Result{}, invalid("Writer.Transaction", "actions", "no actions")
	}
	if g.Fingerprint != "" && g.Key == "" {
		return Result{}, invalid("Writer.Transaction", "Fingerprint", "a Fingerprint without a Key")
	}
	ents := make([]tablekit.Action[tablekit.Entity], len(actions))
	for i, a := range actions {
		ea, err := tablekit.MapAction(a, w.t.ToEntity)
		if err != nil {
			return Result{}, err
		}
		verb, e := ea.Verb(), ea.Value()
		if verb == "" {
			return Result{}, invalid("Writer.Transaction", "actions", fmt.Sprintf("action %d is the zero Action", i))
		}
		if reserved(e.RowKey) {
			return Result{}, invalid("Writer.Transaction", "RowKey", fmt.Sprintf("action %d: RowKeys starting with %q are coord's", i, ReservedPrefix))
		}
		ents[i] = ea
	}
	pk := ents[0].Value().PartitionKey
	if g.Term == 0 && g.Key == "" {
		etags, err := w.e.Transaction(ctx, ents...)
		return Result{ETags: etags}, err
	}
	var kx *KeyedTx // the keyed part, when g.Key is set: the record joins the EGT
	if g.Key != "" {
		if err := checkKey("coord.Writer.Transaction", w.e, g.Key); err != nil {
			return Result{}, err
		}
		fp := FingerprintActions(w.t, ents)
		if g.Fingerprint != "" {
			fp = Fingerprint(g.Fingerprint)
		}
		kx = NewKeyedTx(w.e, pk, g.Key, fp, &KeyedTxOptions{TTL: w.o.KeyTTL, Clock: w.o.Clock, Retry: w.o.Retry})
	}
	stamp := rand.Text()
	if kx != nil {
		stamp = kx.Stamp()
	}
	var lastErr error
	for range timing.Policy(w.o.Retry).Attempts(ctx) {
		var acts []tablekit.Action[tablekit.Entity]
		var f fence
		fenceAt := -1
		if g.Term > 0 {
			var err error
			if f, err = w.fence(ctx, pk); err != nil {
				return Result{}, err
			}
			if f.term > g.Term {
				return Result{}, fmt.Errorf("%w (partition %q: fence at term %d, write of term %d)", ErrFenced, pk, f.term, g.Term)
			}
			fenceAt = len(acts)
			acts = append(acts, fenceAction(pk, g.Term, stamp, f.etag))
		}
		guards := len(acts)
		acts = append(acts, ents...)
		var etags []azcore.ETag
		var err error
		if kx != nil {
			var o Outcome
			etags, o, err = kx.Send(ctx, acts...)
			switch {
			case err != nil: // a refusal: the switch below says what of
			case o == Replayed:
				return Result{Replayed: true}, nil
			case o == NotApplied:
				lastErr = err
				continue // nothing was applied: write again
			case etags == nil: // applied, settled after a lost answer
				return Result{}, nil
			}
		} else {
			etags, err = w.e.Transaction(ctx, acts...)
		}
		var te *tablekit.TransactionError
		switch {
		case err == nil:
			if fenceAt >= 0 {
				w.setFence(pk, fence{term: g.Term, etag: etags[fenceAt]})
			}
			return Result{ETags: etags[guards:]}, nil
		case kx == nil && errors.Is(err, tablekit.ErrOutcomeUnknown):
			applied, serr := w.settle(ctx, pk, stamp, f)
			if serr != nil {
				return Result{}, serr
			}
			if applied {
				return Result{}, nil
			}
			lastErr = errors.New("no answer came, and reading showed it was not applied")
			continue // nothing was applied: write again
		case errors.As(err, &te) && te.Index == fenceAt && fenceAt >= 0:
			w.forgetFence(pk) // another write changed the fence row: read it again
			lastErr = err
			continue
		case errors.As(err, &te):
			if te.Index >= guards {
				return Result{}, &tablekit.TransactionError{Index: te.Index - guards, Code: te.Code, Err: te.Err}
			}
			return Result{}, err
		default:
			return Result{}, err
		}
	}
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	return Result{}, fmt.Errorf("not applied: gave up after %d tries; the last: %w", w.o.Retry.MaxAttempts, lastErr)
}

func fenceAction(pk string, term int64, stamp string, etag azcore.ETag) tablekit.Action[tablekit.Entity] {
	e := tablekit.Entity{PartitionKey: pk, RowKey: fenceRowKey, Properties: map[string]any{propTerm: term, propStamp: stamp}}
	if etag == "" {
		return tablekit.InsertAction(e)
	}
	return tablekit.UpdateAction(e, etag)
}

// settle tells whether the unkeyed fenced transaction of stamp was
// applied, after a lost answer, by the fence row: its stamp is this
// call's (applied), or its version is still the one the transaction was
// conditional on (not applied). (A keyed one is settled by its record:
// KeyedTx.)
func (w *Writer[T]) settle(ctx context.Context, pk string, stamp string, f fence) (applied bool, err error) {
	for range timing.Policy(w.o.Retry).Attempts(ctx) {
		var e tablekit.Entity
		e, err = w.e.Get(ctx, pk, fenceRowKey)
		if errors.Is(err, tablekit.ErrNotFound) {
			if f.etag == "" {
				return false, nil
			}
			return false, fmt.Errorf("fence row of partition %q deleted", pk)
		}
		if err == nil {
			if s, _ := e.Properties[propStamp].(string); s == stamp {
				term, _ := e.Properties[propTerm].(int64)
				w.setFence(pk, fence{term: term, etag: e.ETag})
				return true, nil
			}
			if e.ETag == f.etag {
				return false, nil
			}
			// Another write replaced the fence row after ours may have
			// been applied: the row cannot tell. Only a key settles that.
			w.forgetFence(pk)
			return false, fmt.Errorf("%w (fenced write without a Key: the fence row changed since; give the write a Key to settle it)", tablekit.ErrOutcomeUnknown)
		}
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	// Still unknown: say so, with why it could not be settled.
	return false, fmt.Errorf("%w: the answer was lost and every read to settle it failed: %w", tablekit.ErrOutcomeUnknown, err)
}

// Fence raises partition pk's fence to term, so that writes of lower
// terms are refused from now on: a new holder calls it after Acquire,
// before it acts, to shut out its predecessor's writes in pk. 1 read
// (when the fence is not cached) + 1 write. It fails with ErrFenced when
// the fence is above term already.
func (w *Writer[T]) Fence(ctx context.Context, pk string, term int64) error {
	if w == nil || w.t == nil {
		return invalid("Writer.Fence", "", "zero Writer (use coord.NewWriter)")
	}
	if term <= 0 {
		return invalid("Writer.Fence", "term", "term must be positive")
	}
	return fail("Writer.Fence", w.raise(ctx, pk, term))
}

func (w *Writer[T]) raise(ctx context.Context, pk string, term int64) error {
	var lastErr error
	for range timing.Policy(w.o.Retry).Attempts(ctx) {
		f, err := w.fence(ctx, pk)
		if err != nil {
			return err
		}
		if f.term > term {
			return fmt.Errorf("%w (partition %q: fence at term %d, raise to %d)", ErrFenced, pk, f.term, term)
		}
		if f.term == term {
			return nil
		}
		stamp := rand.Text()
		etags, err := w.e.Transaction(ctx, fenceAction(pk, term, stamp, f.etag))
		switch {
		case err == nil:
			w.setFence(pk, fence{term: term, etag: etags[0]})
			return nil
		case errors.Is(err, tablekit.ErrOutcomeUnknown):
			w.forgetFence(pk) // the next round reads it: the term is there or not
		case errors.Is(err, tablekit.ErrPreconditionFailed), errors.Is(err, tablekit.ErrAlreadyExists):
			w.forgetFence(pk)
		default:
			return err
		}
		lastErr = err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return lastErr
}

// fence returns the partition's fence, from the cache or read.
func (w *Writer[T]) fence(ctx context.Context, pk string) (fence, error) {
	w.mu.Lock()
	f, ok := w.fences[pk]
	w.mu.Unlock()
	if ok {
		return f, nil
	}
	e, err := w.e.Get(ctx, pk, fenceRowKey)
	if errors.Is(err, tablekit.ErrNotFound) {
		return fence{}, nil
	}
	if err != nil {
		return fence{}, err
	}
	f.term, _ = e.Properties[propTerm].(int64)
	f.etag = e.ETag
	w.setFence(pk, f)
	return f, nil
}

func (w *Writer[T]) setFence(pk string, f fence) {
	w.mu.Lock()
	if old, ok := w.fences[pk]; !ok || f.term >= old.term {
		w.fences[pk] = f
	}
	w.mu.Unlock()
}

func (w *Writer[T]) forgetFence(pk string) {
	w.mu.Lock()
	delete(w.fences, pk)
	w.mu.Unlock()
}
