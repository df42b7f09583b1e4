package tablekit

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/spans"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/internal/wire"
)

// BulkOptions configures a [BulkWriter]. A nil *BulkOptions means defaults.
type BulkOptions struct {
	// Concurrency is how many transactions are in flight at once
	// (default 16).
	Concurrency int
	// Retry says how a transaction the service throttled (after the SDK's
	// own retries) is tried again; the zero value means
	// 6 attempts, 1 s to 30 s apart; {MaxAttempts: 1} fails throttled
	// items at once.
	Retry RetryPolicy
	// MaxChunkRequests bounds the requests one chunk (a transaction of up
	// to 100 actions) may take when the service refuses its actions one at
	// a time: after each refusal the refused action fails alone and the
	// rest go again, up to this many requests in all (default 4). Actions
	// still unsent then fail with an error matching [ErrSkipped]; they
	// changed nothing and can be written again. 101 resolves any chunk.
	MaxChunkRequests int
}

// ErrSkipped is the error of a bulk write item that was never sent because
// the service refused too many other actions of its transaction (see
// [BulkOptions].MaxChunkRequests). The item changed nothing.
var ErrSkipped = errors.New("tablekit: skipped: too many other actions of its transaction were refused")

// BulkWriter writes any number of actions, for any partitions, as entity
// group transactions: it groups the actions by PartitionKey, chunks each
// group into transactions of at most 100 actions and 4 MiB, and runs them in
// parallel, paced by the Account's [Governor] so that every writer to one
// account shares its budget and what one learns about throttling carries
// over to the next. It logs to the Account's Logger: a chunk sent again
// after a throttle or a lost answer (debug), a chunk or its rest given up
// (warn). It is safe for concurrent use. A BulkWriter not made by
// [Table.BulkWriter] refuses every write with an error matching
// [ErrInvalidInput].
//
// Actions that address the same entity take effect in the order given: a
// transaction names each entity once, so the second action on an entity
// goes in a later transaction than the first (a later "wave" of its
// partition), and so on. Each chunk is atomic, the call as a whole is not:
// every item's outcome is reported in [BulkResult], and items in other
// chunks still succeed. When the service refuses one action of a chunk,
// that action fails alone and the rest are sent again (see
// [BulkOptions].MaxChunkRequests); when it refuses the whole chunk (the
// table is missing, authorisation fails, throttling outlasts the retries)
// every action of the chunk fails once, with that error.
type BulkWriter[T any] struct {
	t      *Table[T]
	opts   BulkOptions
	gov    *Governor
	logger *slog.Logger // nil: slog.Default() at the time of logging
}

// BulkResult reports the outcome of a bulk write.
type BulkResult struct {
	// Succeeded counts the items applied.
	Succeeded int
	// Failed lists the items that were not applied, in input order. An
	// item whose error matches [ErrOutcomeUnknown] or is a context error
	// may have been applied.
	Failed []BulkFailure
	// ETags holds the new ETag of each applied item, by input position
	// ("" for deletes and failed items).
	ETags []azcore.ETag
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

// bulkError is the error of a bulk write some of whose items failed (see
// BulkResult.Failed for which); it unwraps to the first item's error.
type bulkError struct {
	failed, total int
	first         error
}

// Error says how many items failed and why the first did.
func (e *bulkError) Error() string {
	return "tablekit: bulk write: " + strconv.Itoa(e.failed) + " of " + strconv.Itoa(e.total) + " items failed; first: " + e.first.Error()
}

// Unwrap returns the first item's error.
func (e *bulkError) Unwrap() error { return e.first }

// BulkWriter returns a writer for many actions at once.
func (t *Table[T]) BulkWriter(opts *BulkOptions) *BulkWriter[T] {
	if t.usable() != nil {
		return &BulkWriter[T]{t: t} // its writes fail: see Write
	}
	o := BulkOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.MaxChunkRequests <= 0 {
		o.MaxChunkRequests = 4
	}
	o.Retry = o.Retry.withDefaults(timing.Throttle)
	return &BulkWriter[T]{t: t, opts: o, gov: t.governor, logger: t.logger}
}

// Upsert inserts or replaces every item.
func (w *BulkWriter[T]) Upsert(ctx context.Context, items []T) (BulkResult, error) {
	return w.each(ctx, items, UpsertAction[T])
}

// Merge inserts every item or merges it into the stored entity.
func (w *BulkWriter[T]) Merge(ctx context.Context, items []T) (BulkResult, error) {
	return w.each(ctx, items, func(v T) Action[T] { return MergeAction(v, "") })
}

// Insert inserts every item; an item whose entity exists fails alone.
func (w *BulkWriter[T]) Insert(ctx context.Context, items []T) (BulkResult, error) {
	return w.each(ctx, items, InsertAction[T])
}

// Delete deletes every item's entity, conditional on the item's ETag when T
// has an etag field that is set, else whatever version is stored; an item
// whose entity does not exist fails alone with an error matching
// ErrNotFound. Build the actions with DeleteAction and call Write to give
// each its own condition.
func (w *BulkWriter[T]) Delete(ctx context.Context, items []T) (BulkResult, error) {
	if w == nil || w.t.usable() != nil {
		return w.Write(ctx, nil) // the error of an unusable writer
	}
	return w.each(ctx, items, func(v T) Action[T] {
		etag := w.t.etagOf(&v)
		if etag == "" {
			etag = azcore.ETagAny
		}
		return DeleteAction(v, etag)
	})
}

// logger returns the writer's logger.
func (w *BulkWriter[T]) log() *slog.Logger {
	if w.logger != nil {
		return w.logger
	}
	return slog.Default()
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
	enc   wire.BatchAction
}

// bulkPartition is the work of one PartitionKey: its waves, in order; each
// wave names every entity at most once and is cut into chunks.
type bulkPartition struct {
	waves   [][][]bulkItem
	wave    int          // the wave running now
	started int          // the wave whose chunks were queued (-1: none)
	ready   [][]bulkItem // chunks of that wave not taken by a worker yet
	pending int          // chunks of that wave not finished
}

// Write applies any number of actions. When some items failed it returns
// an error that says how many and unwraps to the first one's error
// (errors.Is matches it); res.Failed lists them all. When ctx ended before
// every item was tried it returns the context's error, and the items not
// tried are in res.Failed with it.
func (w *BulkWriter[T]) Write(ctx context.Context, actions []Action[T]) (res BulkResult, err error) {
	if w == nil || w.t.usable() != nil {
		return BulkResult{}, &ValidationError{Op: "BulkWriter.Write", Detail: "a nil or zero *BulkWriter (make one with Table.BulkWriter of a Table made by OpenTable)", Err: ErrInvalidInput}
	}
	ctx, end := spans.Start(ctx, w.t.tracer, "BulkWriter.Write",
		tracing.Attribute{Key: attrTable, Value: w.t.name},
		tracing.Attribute{Key: attrActions, Value: len(actions)})
	defer func() { end(err) }()
	res = BulkResult{ETags: make([]azcore.ETag, len(actions))}
	var failed []BulkFailure

	// Encode and validate everything first, then place each action in the
	// first wave of its partition that does not name its entity yet.
	type partBuild struct {
		waves [][]bulkItem
		count map[string]int // actions per RowKey so far
	}
	builds := map[string]*partBuild{}
	var order []string
	arena := make([]byte, 0, 512*min(len(actions), 4096))
	for i := range actions {
		ea, err := w.t.encodeAction("BulkWriter.Write", &actions[i], &arena)
		if err != nil {
			failed = append(failed, BulkFailure{Index: i, Err: withOp("BulkWriter.Write", err)})
			continue
		}
		b := builds[ea.PK]
		if b == nil {
			b = &partBuild{count: map[string]int{}}
			builds[ea.PK] = b
			order = append(order, ea.PK)
		}
		wave := b.count[ea.RK]
		b.count[ea.RK] = wave + 1
		if wave == len(b.waves) {
			b.waves = append(b.waves, nil)
		}
		b.waves[wave] = append(b.waves[wave], bulkItem{index: i, enc: ea})
	}
	parts := make([]*bulkPartition, 0, len(order))
	for _, pk := range order {
		p := &bulkPartition{started: -1}
		for _, items := range builds[pk].waves {
			p.waves = append(p.waves, chunkItems(items, w.t.maxTransactionBytes()))
		}
		parts = append(parts, p)
	}

	s := &bulkRun[T]{w: w, ctx: ctx, res: &res}
	s.failed = failed
	s.run(parts)

	res.Failed = s.failed
	slices.SortFunc(res.Failed, func(a, b BulkFailure) int { return a.Index - b.Index })
	res.Succeeded = len(actions) - len(res.Failed)
	if ctx.Err() != nil && s.skipped {
		return res, ctx.Err()
	}
	if len(res.Failed) > 0 {
		return res, &bulkError{failed: len(res.Failed), total: len(actions), first: res.Failed[0].Err}
	}
	return res, nil
}

// chunkItems cuts one wave of a partition into transactions of at most 100
// actions and limit bytes.
func chunkItems(items []bulkItem, limit int) [][]bulkItem {
	var chunks [][]bulkItem
	start, size := 0, 0
	for i, it := range items {
		if i-start == limits.TransactionActions || size+it.enc.Size > limit {
			chunks = append(chunks, items[start:i])
			start, size = i, 0
		}
		size += it.enc.Size
	}
	if start < len(items) {
		chunks = append(chunks, items[start:])
	}
	return chunks
}

// bulkRun is one Write call in progress.
type bulkRun[T any] struct {
	w   *BulkWriter[T]
	ctx context.Context
	res *BulkResult

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []*bulkPartition // partitions with chunks ready, in turn
	ready   int              // chunks ready in all
	waiting int              // partitions with waves left to start
	failed  []BulkFailure
	skipped bool // some items were never attempted because ctx ended
}

// run runs every partition's waves in order, and the chunks of a wave in
// parallel, with at most Concurrency chunks in flight. Workers take chunks
// from the partitions in turn, so that one partition's pace (its Governor
// rate) does not hold up the others.
func (s *bulkRun[T]) run(parts []*bulkPartition) {
	s.cond = sync.NewCond(&s.mu)
	for _, p := range parts {
		s.startWave(p)
	}
	s.waiting = len(parts)
	chunks := 0
	for _, p := range parts {
		for _, w := range p.waves {
			chunks += len(w)
		}
	}
	var wg sync.WaitGroup
	for range min(s.w.opts.Concurrency, chunks) {
		wg.Go(s.worker)
	}
	// Wake the workers when ctx ends, so that they stop waiting.
	stop := context.AfterFunc(s.ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	wg.Wait()
	stop()
	// Whatever was never started failed with the context's error.
	for _, p := range parts {
		for wi := p.wave; wi < len(p.waves); wi++ {
			chunks := p.waves[wi]
			if wi == p.started {
				chunks = p.ready
			}
			for _, c := range chunks {
				s.failAll(c, s.ctx.Err())
				s.skipped = true
			}
		}
	}
}

// startWave queues the chunks of p's current wave. The caller holds mu (or
// is the only goroutine).
func (s *bulkRun[T]) startWave(p *bulkPartition) {
	if p.wave >= len(p.waves) {
		return
	}
	p.started = p.wave
	p.ready = slices.Clone(p.waves[p.wave])
	p.pending = len(p.ready)
	s.ready += len(p.ready)
	s.queue = append(s.queue, p)
}

func (s *bulkRun[T]) worker() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for s.ready == 0 && s.waiting > 0 && s.ctx.Err() == nil {
			s.cond.Wait()
		}
		if s.ready == 0 || s.ctx.Err() != nil {
			if s.ctx.Err() != nil && (s.ready > 0 || s.waiting > 0) {
				s.skipped = true
			}
			return
		}
		p := s.queue[0]
		s.queue = s.queue[1:]
		chunk := p.ready[0]
		p.ready = p.ready[1:]
		s.ready--
		if len(p.ready) > 0 {
			s.queue = append(s.queue, p) // the partition's turn comes again
		}
		s.mu.Unlock()
		requests := s.runChunk(chunk)
		s.mu.Lock()
		s.res.Requests += requests
		p.pending--
		if p.pending == 0 {
			p.wave++
			if p.wave < len(p.waves) && s.ctx.Err() == nil {
				s.startWave(p)
			} else if p.wave >= len(p.waves) {
				s.waiting--
			}
			s.cond.Broadcast()
		}
	}
}

// fail records one item's failure.
func (s *bulkRun[T]) fail(index int, err error) {
	s.mu.Lock()
	s.failed = append(s.failed, BulkFailure{Index: index, Err: err})
	s.mu.Unlock()
}

// failAll records the failure of every item of chunk. The caller holds mu.
func (s *bulkRun[T]) failAll(chunk []bulkItem, err error) {
	for _, it := range chunk {
		s.failed = append(s.failed, BulkFailure{Index: it.index, Err: err})
	}
}

// runChunk applies one chunk and returns how many requests it sent.
func (s *bulkRun[T]) runChunk(chunk []bulkItem) (requests int) {
	chunk = slices.Clone(chunk)
	sctx, end := spans.Start(s.ctx, s.w.t.tracer, "BulkWriter.Chunk",
		tracing.Attribute{Key: attrTable, Value: s.w.t.name},
		tracing.Attribute{Key: attrPartition, Value: chunk[0].enc.PK},
		tracing.Attribute{Key: attrActions, Value: len(chunk)})
	defer func() { end(nil) }()
	gov, table, pk := s.w.gov, s.w.t.name, chunk[0].enc.PK
	// The Governor paces the chunk and handles its throttled answers: it
	// is told of each throttled try at once, and the SDK does not retry
	// them (see internal/wire.NewPipelineClient).
	send := sendOptions{att: &attempts{}, gov: gov, governed: true}
	throttled, refusals := 0, 0
	enc := make([]wire.BatchAction, 0, len(chunk))
	for len(chunk) > 0 {
		if refusals == s.w.opts.MaxChunkRequests {
			s.w.log().Warn("tablekit: bulk write: chunk skipped after too many refused actions", "table", s.w.t.name, "partition", pk, "skipped", len(chunk), "requests", requests)
			s.failChunk(chunk, ErrSkipped)
			return requests
		}
		enc = enc[:0]
		for i := range chunk {
			enc = append(enc, chunk[i].enc)
		}
		requests++
		if err := gov.wait(s.ctx, table, pk, len(enc)); err != nil {
			s.failChunk(chunk, err)
			return requests - 1
		}
		etags, err := s.w.t.submit(sctx, enc, send)
		gov.done(table, pk, len(enc), err)
		if err == nil {
			for i, it := range chunk {
				s.res.ETags[it.index] = etags[i]
			}
			return requests
		}
		var te *TransactionError
		refused := errors.As(err, &te) && te.Index >= 0
		switch {
		case s.ctx.Err() != nil:
			s.failChunk(chunk, s.ctx.Err())
			return requests
		case wire.IsThrottled(err) || (isAmbiguous(err) && !refused):
			// Not applied (throttled), or perhaps applied (no answer):
			// send the same transaction again with the same attempts
			// record, so that a conflict its earlier try caused is
			// recognised as such. A throttled chunk waits for its turn
			// at the Governor's lowered rate; the others back off.
			throttled++
			if throttled >= s.w.opts.Retry.MaxAttempts {
				s.w.log().Warn("tablekit: bulk write: chunk failed after retries", "table", s.w.t.name, "partition", pk, "actions", len(chunk), "attempts", throttled, "error", err)
				s.failChunk(chunk, err)
				return requests
			}
			s.w.log().Debug("tablekit: bulk write: chunk sent again", "table", s.w.t.name, "partition", pk, "actions", len(chunk), "attempt", throttled+1, "throttled", wire.IsThrottled(err), "error", err)
			if !wire.IsThrottled(err) && !timing.Sleep(s.ctx, s.w.opts.Retry.pause(throttled+1)) {
				s.failChunk(chunk, s.ctx.Err())
				return requests
			}
		case refused && actionRefused(te, len(chunk)):
			refusals++
			s.fail(chunk[te.Index].index, err)
			chunk = append(chunk[:te.Index], chunk[te.Index+1:]...)
			// The refused transaction changed nothing: what follows is a
			// new request with nothing left open.
			send.att = &attempts{}
		default:
			s.failChunk(chunk, err)
			return requests
		}
	}
	return requests
}

func (s *bulkRun[T]) failChunk(chunk []bulkItem, err error) {
	s.mu.Lock()
	s.failAll(chunk, err)
	s.mu.Unlock()
}

// actionRefused reports whether a failed transaction names one action
// whose own fault it is (an existing entity, a stale ETag, a bad value), so
// that the others may go without it; failures of the whole request (a
// missing table, authorisation, limits of the request) are not.
func actionRefused(te *TransactionError, n int) bool {
	if te.Index < 0 || te.Index >= n || errors.Is(te, ErrOutcomeUnknown) {
		return false
	}
	switch te.Code {
	case "TableNotFound", "AuthorizationFailure", "AuthenticationFailed", "AuthorizationPermissionMismatch",
		"InsufficientAccountPermissions", "ServerBusy", "OperationTimedOut", "InternalError", "RequestBodyTooLarge":
		return false
	}
	return true
}

// isAmbiguous reports whether err leaves open whether the write was
// applied, without a context error behind it.
func isAmbiguous(err error) bool {
	return errors.Is(err, ErrOutcomeUnknown) && wire.ContextError(err) == nil
}
