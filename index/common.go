package index

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/opname"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/keys"
)

// ID identifies one entity: its PartitionKey and RowKey. Index entities and
// blob lists hold IDs.
type ID struct {
	PartitionKey string
	RowKey       string
}

// String returns "PartitionKey/RowKey".
func (id ID) String() string { return id.PartitionKey + "/" + id.RowKey }

// Property names index copies add to the entity's own properties. An entity
// type must not have properties with these names.
const (
	// primaryPartitionKeyProperty holds, in an inter-partition index copy,
	// the PartitionKey of the entity it copies.
	primaryPartitionKeyProperty = "PrimaryPartitionKey"
	// primaryRowKeyProperty holds, in an index copy, the RowKey of the
	// entity it copies.
	primaryRowKeyProperty = "PrimaryRowKey"
	// primaryETagProperty holds, in an inter-partition index copy, the ETag
	// of the version of the entity it was copied from.
	primaryETagProperty = "PrimaryETag"
)

// UniqueError reports a write refused because another entity already has
// the value in a unique index; nothing was written. It matches
// tablekit.ErrAlreadyExists.
type UniqueError struct {
	// Op is the operation that failed, e.g. "index.SamePartition.Insert".
	Op string
	// Table is the table the entity was written to.
	Table string
	// Index and Value name the index entry that is taken.
	Index, Value string
	// Entity is the entity that was being written.
	Entity ID
	// Err is the service's error (a *tablekit.TransactionError).
	Err error
}

// Error names the operation, the table, the entity and the value taken.
func (e *UniqueError) Error() string {
	return fmt.Sprintf("%s: table %s: entity %s: value %q of unique index %q is already taken by another entity", opname.Prefix(e.Op), e.Table, e.Entity, e.Value, e.Index)
}

// Unwrap returns tablekit.ErrAlreadyExists and the service error.
func (e *UniqueError) Unwrap() []error { return []error{tablekit.ErrAlreadyExists, e.Err} }

// conflictError reports a write that kept losing to concurrent writers: the
// entity or an index entity changed between the read and the conditional
// write on every attempt. Nothing of the failed attempts was applied. It
// matches tablekit.ErrPreconditionFailed.
type conflictError struct {
	op       string // named by withOp
	entity   ID
	attempts int
	err      error // the last attempt's
}

func (e *conflictError) Error() string {
	return fmt.Sprintf("%s: entity %s: concurrent writers changed the entity or its index entities on each of %d attempts: %v", opname.Prefix(e.op), e.entity, e.attempts, e.err)
}

func (e *conflictError) Unwrap() error { return tablekit.ErrPreconditionFailed }

// opError names the failed operation in one of the package's own errors
// that was made below the exported call ("index: ..." without its Op).
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string {
	return opname.Prefix(e.op) + ": " + strings.TrimPrefix(e.err.Error(), "index: ")
}

func (e *opError) Unwrap() error { return e.err }

// notFound returns an error matching tablekit.ErrNotFound.
func notFound(op, what string) error {
	return fmt.Errorf("%s: %s: %w", opname.Prefix(op), what, tablekit.ErrNotFound)
}

// invalid returns a validation error of op matching
// tablekit.ErrInvalidInput. entity is "table:pk/rk", "pk/rk", a table,
// queue or container name, or "".
func invalid(op, entity, detail string) error {
	return &tablekit.ValidationError{Op: op, Entity: entity, Detail: detail, Err: tablekit.ErrInvalidInput}
}

// invalidField is invalid for one option or index field.
func invalidField(op, entity, field, detail string) error {
	return &tablekit.ValidationError{Op: op, Entity: entity, Property: field, Detail: detail, Err: tablekit.ErrInvalidInput}
}

// compoundLimit is the rule a compound key breaks.
const compoundLimit = "a key of <= 1 KiB (two bytes per UTF-16 code unit, after keys.Compound's escapes) of valid UTF-8"

// keyError turns an error of package keys into a validation error of op
// matching tablekit.ErrInvalidKey.
func keyError(op, entity, what string, err error) error {
	return &tablekit.ValidationError{Op: op, Entity: entity, Property: what, Detail: err.Error(), Limit: compoundLimit, Err: tablekit.ErrInvalidKey}
}

// compound is keys.Compound with tablekit's error shape.
func compound(op, entity, what string, components ...string) (string, error) {
	k, err := keys.Compound(components...)
	if err != nil {
		return "", keyError(op, entity, what, err)
	}
	return k, nil
}

// checkName checks an index name: a non-empty string usable as a key
// component (any valid UTF-8 is).
func checkName(op, entity, field, name string) error {
	if name == "" {
		return invalidField(op, entity, field, "an index needs a Name")
	}
	if _, err := keys.Compound(name); err != nil {
		return keyError(op, entity, field, err)
	}
	return nil
}

// withOp names op, the exported operation that failed, in err, the one
// way the package's errors start "index: <Op>: ..." (op is qualified:
// "index.SamePartition.Insert"): tablekit's error types through
// codec.WithOp, the package's own types by their op field, and any other
// error of the package ("index: ...") wrapped in an *opError. Errors of
// other packages keep their own prefix; a nil err gives nil.
func withOp(op string, err error) error {
	if err == nil {
		return nil
	}
	var ce *conflictError
	if errors.As(err, &ce) && ce.op == "" {
		ce.op = op
	}
	var ue *UniqueError
	if errors.As(err, &ue) && ue.Op == "" {
		ue.Op = op
	}
	var oe *opError
	if msg := err.Error(); strings.HasPrefix(msg, "index: ") && !strings.HasPrefix(msg, opname.Prefix(op)+":") && !errors.As(err, &oe) {
		return &opError{op: op, err: err}
	}
	return codec.WithOp(op, err)
}

// defaultRetry is the default Retry of every option of the package:
// tablekit.RetryPolicy(timing.Conflict)'s 30 attempts and 10 ms first back-off,
// with back-off growing up to 2 s instead of 1 s. Measured here (Azurite,
// 5 ms added per request): 30 writers in separate processes adding 30 ids
// each to one index entity lost 5 of 900 adds after 30 attempts with a 1 s
// cap, and took 125 s; with a 2 s cap none failed, in 39 s and 30% fewer
// transactions. Under sustained contention the writers' combined attempt
// rate must fall below the rate the entity can take, and each writer's
// back-off must grow to about writers x cycle time for that.
var defaultRetry = tablekit.RetryPolicy{
	MaxAttempts: tablekit.RetryPolicy(timing.Conflict).MaxAttempts,
	BaseDelay:   tablekit.RetryPolicy(timing.Conflict).BaseDelay,
	MaxDelay:    2 * time.Second,
}

// retryPolicy checks the Retry option given to op and fills in the
// defaults ([defaultRetry]) for its zero fields.
func retryPolicy(op string, p tablekit.RetryPolicy) (tablekit.RetryPolicy, error) {
	if err := timing.Policy(p).Validate(op); err != nil {
		return p, err
	}
	return tablekit.RetryPolicy(timing.Policy(p).WithDefaults(timing.Policy(defaultRetry))), nil
}

// retry runs try under policy p while it reports a lost race (retry true),
// sleeping p's back-off between attempts. It returns try's error when try
// says not to retry, ctx's error when ctx ends first, and a
// *conflictError for entity when every attempt lost.
func retry(ctx context.Context, p tablekit.RetryPolicy, entity ID, try func() (retry bool, err error)) error {
	var lastErr error
	n := 0
	for n = range timing.Policy(p).Attempts(ctx) {
		again, err := try()
		if !again {
			return err
		}
		lastErr = err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return &conflictError{entity: entity, attempts: n, err: lastErr}
}

// lastUnsettled returns err, except for a *conflictError whose last
// attempt's outcome is unknown (it matches tablekit.ErrOutcomeUnknown):
// that attempt may have been applied, which a conflictError denies, so
// its error is returned instead.
func lastUnsettled(err error) error {
	var ce *conflictError
	if errors.As(err, &ce) && errors.Is(ce.err, tablekit.ErrOutcomeUnknown) {
		return fmt.Errorf("index: %s: the last of %d attempts has an unknown outcome: %w", ce.entity, ce.attempts, ce.err)
	}
	return err
}

// transient reports whether err is a failure that trying again may not
// meet: no answer, an unknown outcome, throttling, a timeout or a server
// error.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var re *tablekit.RequestError
	var se *tablekit.ServiceError
	switch {
	case errors.Is(err, tablekit.ErrOutcomeUnknown), errors.Is(err, tablekit.ErrThrottled), errors.As(err, &re):
		return true
	case errors.As(err, &se):
		return se.StatusCode == http.StatusRequestTimeout || se.StatusCode >= http.StatusInternalServerError
	}
	return false
}

// isConflict reports whether err says a concurrent writer got there first:
// a stale ETag, an entity created meanwhile, or one deleted meanwhile.
func isConflict(err error) bool {
	return errors.Is(err, tablekit.ErrPreconditionFailed) || errors.Is(err, tablekit.ErrAlreadyExists) || errors.Is(err, tablekit.ErrNotFound)
}

// bodySize estimates the bytes an entity adds to a transaction's request
// body (its OData JSON with type annotations), erring on the large side.
func bodySize(e *tablekit.Entity) int {
	n := 64 + jsonLen(e.PartitionKey) + jsonLen(e.RowKey)
	for name, v := range e.Properties {
		n += 2*len(name) + 40
		switch x := v.(type) {
		case string:
			n += jsonLen(x)
		case []byte:
			n += (len(x)+2)/3*4 + 2
		default:
			n += 40
		}
	}
	return n
}

// jsonLen bounds the length of s as a JSON string.
func jsonLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b < 0x20 || b == '"' || b == '\\' || b == '<' || b == '>' || b == '&' {
				n += 6
			} else {
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		n += 6 * max(utf16.RuneLen(r), 1)
		i += size
	}
	return n
}

// keyLocks serialises, within one process, the read-modify-write cycles
// that target the same list: concurrent writers of one index entity or blob
// then take turns instead of failing each other's ETag conditions. Writers
// in other processes are still caught by the conditions.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	ch   chan struct{}
	refs int
}

// lock takes the locks of keys, in sorted order; unlock releases them.
func (k *keyLocks) lock(ctx context.Context, keys ...string) (unlock func(), err error) {
	if len(keys) == 0 {
		return func() {}, nil
	}
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var held []*keyLock
	release := func(l *keyLock, key string) {
		k.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
	unlockAll := func() {
		for i := len(held) - 1; i >= 0; i-- {
			<-held[i].ch
			release(held[i], keys[i])
		}
	}
	for _, key := range keys {
		k.mu.Lock()
		if k.m == nil {
			k.m = make(map[string]*keyLock)
		}
		l := k.m[key]
		if l == nil {
			l = &keyLock{ch: make(chan struct{}, 1)}
			k.m[key] = l
		}
		l.refs++
		k.mu.Unlock()
		select {
		case l.ch <- struct{}{}:
			held = append(held, l)
		case <-ctx.Done():
			release(l, key)
			unlockAll()
			return nil, ctx.Err()
		}
	}
	return unlockAll, nil
}

// checkSecrets refuses index values computed from properties the table
// encrypts: keys are stored in clear, so an index on an encrypted property
// would give its value away. table converts v to its property bag and back
// (Table.ToEntity, FromEntity); v's value in index names[i] is values[i]
// (key(i, v) computes it). A value that changes when the encrypted
// properties are removed from v is derived from them.
func checkSecrets[T any](op, entity string, table *tablekit.Table[T], v T, names, values []string, key func(i int, v T) string) error {
	enc := table.Encrypted()
	if len(enc) == 0 {
		return nil
	}
	e, err := table.ToEntity(v)
	if err != nil {
		return withOp(op, err)
	}
	without := func(props ...string) (T, error) {
		c := e
		c.Properties = maps.Clone(e.Properties)
		for _, p := range props {
			delete(c.Properties, p)
		}
		return table.FromEntity(c)
	}
	bare, err := without(enc...)
	if err != nil {
		return withOp(op, err)
	}
	for i, value := range values {
		if value == "" || key(i, bare) == value {
			continue
		}
		secret := enc[0]
		for _, p := range enc {
			if w, err := without(p); err == nil && key(i, w) != value {
				secret = p
				break
			}
		}
		return &tablekit.ValidationError{Op: op, Entity: entity, Property: secret,
			Detail: fmt.Sprintf("the value of index %q is derived from %s, which the table encrypts: index keys are stored in clear, so the index would give the value away; index a property that is not encrypted", names[i], secret),
			Err:    tablekit.ErrInvalidInput}
	}
	return nil
}

// lookupConcurrency is how many entities a list-index lookup reads at
// once.
const lookupConcurrency = 16

// idSeq yields ids, for fetchOrdered.
func idSeq(ids []ID) iter.Seq2[ID, error] {
	return func(yield func(ID, error) bool) {
		for _, id := range ids {
			if !yield(id, nil) {
				return
			}
		}
	}
}

// fetchOrdered reads the entity of each id that ids yields with get, up to
// lookupConcurrency at once, and yields them in the order of ids. An
// entity that is gone (tablekit.ErrNotFound: deleted since its id was
// listed) is skipped. Iteration stops at the first error, of ids or of a
// read, after the entities of the ids before it; breaking out of the loop
// cancels the reads under way.
func fetchOrdered[T any](ctx context.Context, ids iter.Seq2[ID, error], get func(ctx context.Context, id ID) (T, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer func() {
			cancel()
			wg.Wait()
		}()
		type slot struct {
			done chan struct{}
			v    T
			err  error
		}
		next, stop := iter.Pull2(ids)
		defer stop()
		var pending []*slot
		var srcErr error
		srcDone := false
		for {
			for !srcDone && len(pending) < lookupConcurrency {
				id, err, ok := next()
				if !ok || err != nil {
					srcDone, srcErr = true, err
					break
				}
				s := &slot{done: make(chan struct{})}
				pending = append(pending, s)
				wg.Go(func() {
					defer close(s.done)
					s.v, s.err = get(ctx, id)
				})
			}
			if len(pending) == 0 {
				if srcErr != nil {
					yield(*new(T), srcErr)
				}
				return
			}
			s := pending[0]
			pending = pending[1:]
			<-s.done
			if errors.Is(s.err, tablekit.ErrNotFound) {
				continue
			}
			if !yield(s.v, s.err) || s.err != nil {
				return
			}
		}
	}
}

// queryEntities runs f over the entities' table (its property-bag view) and
// yields the entities only, decoded with typed: rows for which isIndex
// reports true (index entries and sync records kept in the same table) are
// read and skipped. opts.Limit counts entities; opts.Cursor records the
// last entity yielded, as Table.Query's does.
func queryEntities[T any](ctx context.Context, op string, raw *tablekit.Table[tablekit.Entity], typed *tablekit.Table[T], f tablekit.Filter, opts *tablekit.QueryOptions, isIndex func(pk, rk string) bool) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var o tablekit.QueryOptions
		if opts != nil {
			o = *opts
		}
		if o.Limit < 0 {
			yield(*new(T), invalidField(op, raw.Name(), "Limit", fmt.Sprintf("Limit %d is negative", o.Limit)))
			return
		}
		limit := o.Limit
		o.Limit = 0
		n := 0
		for e, err := range raw.Query(ctx, f, &o) {
			if err != nil {
				yield(*new(T), withOp(op, err))
				return
			}
			if isIndex(e.PartitionKey, e.RowKey) || strings.HasPrefix(e.RowKey, coord.ReservedPrefix) {
				continue // an index row, or tablekit's own (an idempotency record, a fence row)
			}
			v, err := typed.FromEntity(e)
			if err != nil {
				yield(*new(T), withOp(op, err))
				return
			}
			if !yield(v, nil) {
				return
			}
			if n++; limit > 0 && n >= limit {
				return
			}
		}
	}
}
