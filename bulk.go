package tablekit

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"
)

// BulkOptions configures a [BulkWriter]. A nil *BulkOptions means defaults.
type BulkOptions struct {
	// Concurrency is how many transactions are in flight at once
	// (default 16).
	Concurrency int
	// ThrottleRetries is how often a transaction the service throttled is
	// tried again, after the SDK's own retries, with growing pauses
	// (default 5).
	ThrottleRetries int
	// ThrottleBackoff is the first pause after throttling (default 1 s);
	// each further pause doubles.
	ThrottleBackoff time.Duration
}

// BulkWriter writes any number of actions, for any partitions, as entity
// group transactions: it groups the actions by PartitionKey, chunks each
// group into transactions of at most 100 actions and 4 MiB, and runs them in
// parallel. It is safe for concurrent use.
//
// Within one call, when several actions address the same entity only the
// last one is sent (a transaction may name each entity once); the earlier
// ones are reported as succeeded, since the last one decides the entity's
// final state. Each chunk is atomic, the call as a whole is not: a failure
// is reported per item in [BulkResult], and items in other chunks still
// succeed. When the service refuses one action of a chunk, the chunk is sent
// again without it, so only the bad item fails.
type BulkWriter[T any] struct {
	t    *Table[T]
	opts BulkOptions
}

// BulkResult reports the outcome of a bulk write.
type BulkResult struct {
	// Succeeded counts the items written (or superseded, see BulkWriter).
	Succeeded int
	// Failed lists the items that were not written, in input order.
	Failed []BulkFailure
	// Requests counts the transactions sent.
	Requests int
}

// BulkFailure is one item a bulk write could not apply.
type BulkFailure struct {
	// Index is the item's position in the input slice.
	Index int
	// Err says why: a *ValidationError, or a service error (a
	// *TransactionError for a refused action).
	Err error
}

// BulkError is returned by BulkWriter methods when some items failed; the
// BulkResult says which.
type BulkError struct {
	Failed int
	Total  int
	First  error
}

// Error says how many items failed and why the first did.
func (e *BulkError) Error() string {
	return "tablekit: bulk write: " + strconv.Itoa(e.Failed) + " of " + strconv.Itoa(e.Total) + " items failed; first: " + e.First.Error()
}

// Unwrap returns the first item's error.
func (e *BulkError) Unwrap() error { return e.First }

// BulkWriter returns a writer for many actions at once.
func (t *Table[T]) BulkWriter(opts *BulkOptions) *BulkWriter[T] {
	o := BulkOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.ThrottleRetries <= 0 {
		o.ThrottleRetries = 5
	}
	if o.ThrottleBackoff <= 0 {
		o.ThrottleBackoff = time.Second
	}
	return &BulkWriter[T]{t: t, opts: o}
}

// Upsert inserts or replaces every item.
func (w *BulkWriter[T]) Upsert(ctx context.Context, items []T) (BulkResult, error) {
	return w.each(ctx, items, func(v T) Action[T] { return UpsertAction(v, Replace) })
}

// Merge inserts every item or merges it into the stored entity.
func (w *BulkWriter[T]) Merge(ctx context.Context, items []T) (BulkResult, error) {
	return w.each(ctx, items, func(v T) Action[T] { return UpsertAction(v, Merge) })
}

// Insert inserts every item; an item whose entity exists fails alone.
func (w *BulkWriter[T]) Insert(ctx context.Context, items []T) (BulkResult, error) {
	return w.each(ctx, items, InsertAction[T])
}

// Delete deletes every item's entity (see DeleteAction); an item whose
// entity does not exist fails alone with an error matching ErrNotFound.
func (w *BulkWriter[T]) Delete(ctx context.Context, items []T) (BulkResult, error) {
	return w.each(ctx, items, DeleteAction[T])
}

func (w *BulkWriter[T]) each(ctx context.Context, items []T, mk func(T) Action[T]) (BulkResult, error) {
	actions := make([]Action[T], len(items))
	for i, v := range items {
		actions[i] = mk(v)
	}
	return w.Write(ctx, actions)
}

// bulkItem is an encoded action and its input position.
type bulkItem struct {
	index int
	enc   encodedAction
}

// Write applies any number of actions. It returns a *BulkError when some
// items failed (see the result for which), or the context's error when ctx
// ended; items not attempted by then are reported failed with it.
func (w *BulkWriter[T]) Write(ctx context.Context, actions []Action[T]) (BulkResult, error) {
	var res BulkResult
	var mu sync.Mutex
	fail := func(i int, err error) {
		mu.Lock()
		res.Failed = append(res.Failed, BulkFailure{Index: i, Err: err})
		mu.Unlock()
	}

	// Encode and validate everything first; group by partition, keeping
	// the last action per entity.
	type group struct {
		items []bulkItem
		byRK  map[string]int
	}
	groups := map[string]*group{}
	var order []string
	superseded := 0
	for i := range actions {
		ea, err := w.t.encodeAction(&actions[i])
		if err != nil {
			res.Failed = append(res.Failed, BulkFailure{Index: i, Err: err})
			continue
		}
		g := groups[ea.pk]
		if g == nil {
			g = &group{byRK: map[string]int{}}
			groups[ea.pk] = g
			order = append(order, ea.pk)
		}
		if j, dup := g.byRK[ea.rk]; dup {
			g.items[j] = bulkItem{index: i, enc: ea}
			superseded++
			continue
		}
		g.byRK[ea.rk] = len(g.items)
		g.items = append(g.items, bulkItem{index: i, enc: ea})
	}

	// Chunk each partition's items into transactions.
	var chunks [][]bulkItem
	for _, pk := range order {
		items := groups[pk].items
		start, size := 0, 0
		for i, it := range items {
			if i-start == MaxTransactionActions || size+it.enc.size > MaxTransactionBytes {
				chunks = append(chunks, items[start:i])
				start, size = i, 0
			}
			size += it.enc.size
		}
		if start < len(items) {
			chunks = append(chunks, items[start:])
		}
	}

	succeeded := superseded
	work := make(chan []bulkItem)
	var wg sync.WaitGroup
	for range min(w.opts.Concurrency, len(chunks)) {
		wg.Go(func() {
			for chunk := range work {
				ok, requests := w.runChunk(ctx, chunk, fail)
				mu.Lock()
				succeeded += ok
				res.Requests += requests
				mu.Unlock()
			}
		})
	}
	sent := 0
feed:
	for _, c := range chunks {
		select {
		case work <- c:
			sent++
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	for _, c := range chunks[sent:] {
		for _, it := range c {
			fail(it.index, ctx.Err())
		}
	}
	res.Succeeded = succeeded
	slices.SortFunc(res.Failed, func(a, b BulkFailure) int { return a.Index - b.Index })
	if ctx.Err() != nil && sent < len(chunks) {
		return res, ctx.Err()
	}
	if len(res.Failed) > 0 {
		return res, &BulkError{Failed: len(res.Failed), Total: len(actions), First: res.Failed[0].Err}
	}
	return res, nil
}

// runChunk submits one chunk, dropping refused actions and retrying the
// rest, and retrying throttled chunks with backoff. It returns how many
// items succeeded and how many requests it sent.
func (w *BulkWriter[T]) runChunk(ctx context.Context, chunk []bulkItem, fail func(int, error)) (int, int) {
	chunk = append([]bulkItem(nil), chunk...)
	requests := 0
	throttled := 0
	backoff := w.opts.ThrottleBackoff
	for len(chunk) > 0 {
		enc := make([]encodedAction, len(chunk))
		for i := range chunk {
			enc[i] = chunk[i].enc
		}
		requests++
		err := w.t.submit(ctx, enc)
		if err == nil {
			return len(chunk), requests
		}
		var te *TransactionError
		switch {
		case ctx.Err() != nil:
			for _, it := range chunk {
				fail(it.index, ctx.Err())
			}
			return 0, requests
		case errors.As(err, &te) && te.Index >= 0 && te.Index < len(chunk):
			fail(chunk[te.Index].index, err)
			chunk = append(chunk[:te.Index], chunk[te.Index+1:]...)
		case errors.Is(err, ErrThrottled) && throttled < w.opts.ThrottleRetries:
			throttled++
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			backoff *= 2
		default:
			for _, it := range chunk {
				fail(it.index, err)
			}
			return 0, requests
		}
	}
	return 0, requests
}
