package transfer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/internal/wire"
)

// PurgeOptions configures [Purge]. A nil *PurgeOptions means defaults,
// which purge the whole table: set Scope.
//
// Unlike the other operations, a purge reads its scope as one range by
// default: its parallelism is in the delete transactions (Transactions
// of them in flight, over partitions as the listing meets them, paced by
// the Account's Governor), so that the listing costs the least possible,
// one keys-only page per 1,000 entities, and no key probes. Set MaxProbes
// (for example to 4 × Concurrency) or Boundaries to list in parallel
// ranges: worth it for a scope of many large partitions on Azure, where
// each partition takes at most about 2,000 deletes per second and one
// listing reaches the next partition only when it is done with the last.
type PurgeOptions struct {
	Options
	// Budget, when positive, is how long the call may run: no new page is
	// listed after it (the transactions of pages already listed finish),
	// the checkpoint is saved and the result says Complete false.
	Budget time.Duration
	// AnyETag deletes whatever version of a listed entity is stored.
	// Without it (the default) each entity is deleted only if its ETag is
	// still the one it was listed with: an entity written since is left
	// alone and counted in Changed.
	AnyETag bool
	// Transactions is how many delete transactions are in flight at once
	// over all ranges (default 16; at most 1,024). They are taken from
	// the partitions listed in turn, and the listing goes on while they
	// run, up to Transactions × 1,000 entities ahead of the deletes.
	Transactions int
}

// EntityKey names an entity.
type EntityKey struct {
	PartitionKey, RowKey string
}

// PurgeResult reports a purge. Counts are over all runs of a resumed purge
// except those marked "this run".
type PurgeResult struct {
	// Listed counts the entities listed; Deleted those deleted. Each is
	// counted as it happens and saved with the checkpoint, so that
	// Deleted + Changed + Gone never exceeds Listed. After a crash, a
	// resumed purge lists again, and counts again, what the crashed run
	// listed after its last checkpoint (its deletes since then are done
	// but not counted).
	Listed, Deleted int64
	// Changed counts the entities left alone because they were written
	// after they were listed (their ETag no longer matched); ChangedKeys
	// names those of this run (the first 1,000).
	Changed     int64
	ChangedKeys []EntityKey
	// Gone counts the entities that were deleted by someone else between
	// listing and deleting. Deleted+Gone counts exactly the listed
	// entities that are gone; when a delete transaction's answer was lost
	// while another writer deleted or rewrote every one of its entities,
	// the split between the two may be wrong (see [Purge]).
	Gone int64
	// Pages counts this run's listing requests (Meter's QueryEntities
	// when a Meter is given), Probes the key-sampling requests among them.
	Pages, Probes int64
	// DeleteTransactions counts this run's entity group transactions sent
	// (each up to 100 deletes); Transactions all storage transactions of
	// this run (Meter, or pages + deletes + the reads that settled lost
	// answers without one).
	DeleteTransactions, Transactions int64
	// Ranges and RangesDone count the key ranges and those finished.
	Ranges, RangesDone int
	// Complete is true when every range is done: nothing listed in the
	// scope is left but what Changed counts.
	Complete bool
	// Elapsed is the time this run took.
	Elapsed time.Duration
}

// Purge deletes every entity in opts.Scope. It lists the scope keys-only
// ($select=PartitionKey,RowKey, which still gives each entity's ETag) in
// parallel ranges and deletes what it lists in entity group transactions of
// up to 100 entities of one partition, carrying a partition's last partial
// transaction over to the next page of the range, so that a partition of n
// entities costs ceil(n/100) transactions. The deletes go through a
// BulkWriter paced by the Account's Governor: a throttled
// transaction waits for the partition's lowered rate and is sent again.
//
// Nothing outside the listing is deleted, and each delete is conditional on
// the ETag the entity was listed with (unless AnyETag): an entity written
// after it was listed is left alone and reported in Changed. An entity
// deleted by someone else meanwhile is counted in Gone.
//
// A delete transaction whose answer was lost is settled by reading its
// entities back ("Purge" in the package documentation says how).
//
// A purge stops when ctx ends, when Budget is spent, or at the first error
// that is not an entity's own; it then saves its checkpoint (each range
// resumes at the first page with an entity not yet deleted) and returns
// Complete false. Call it again with Resume and the same Checkpoint and
// Scope to go on: re-listing is safe, as deleted entities are gone.
func Purge(ctx context.Context, t *tablekit.Table[tablekit.Entity], opts *PurgeOptions) (PurgeResult, error) {
	return purge(ctx, t, opts, nil, nil)
}

// purge is Purge, with clock measuring the Budget (nil: time.Now) and,
// for tests, accepted called with every page the purge takes to delete
// (after a split range cut it at its new end), so that a test knows what
// the purge listed, not only what the service answered (nil: none).
func purge(ctx context.Context, t *tablekit.Table[tablekit.Entity], opts *PurgeOptions, clock func() time.Time, accepted func([]tablekit.Entity)) (PurgeResult, error) {
	const op = "transfer.Purge"
	if opts == nil {
		opts = &PurgeOptions{}
	}
	o := *opts
	if o.Budget < 0 || o.Transactions < 0 {
		return PurgeResult{}, validation(op, "Budget and Transactions must not be negative")
	}
	if o.Transactions > maxConcurrency {
		return PurgeResult{}, validation(op, fmt.Sprintf("Transactions is %d; it must be 0 (default 16) to %d", o.Transactions, maxConcurrency))
	}
	if o.Transactions == 0 {
		o.Transactions = 16
	}
	if o.MaxProbes == 0 && o.Boundaries == nil {
		o.MaxProbes = -1 // one range: see PurgeOptions
	}
	j, err := newJob(ctx, o.config("purge", t, keysOnly))
	if err != nil {
		return PurgeResult{}, err
	}
	p := &purger{j: j, o: o, accepted: accepted, ranges: map[*rangeState]*rangePurge{}, parts: map[string]*partQueue{}, window: o.Transactions * limits.PageSize}
	p.cond = sync.NewCond(&p.qmu)
	// One transaction per Write call (the purger cuts them), each refused
	// delete taken out and the rest sent again until all are settled. The
	// writer logs to the Account's Logger and is paced by its Governor: a
	// transaction still throttled after its tries is logged as failed by
	// the writer, and the purge sends it again (see deleteChunk).
	p.w = t.BulkWriter(&tablekit.BulkOptions{
		Concurrency: 1, MaxChunkRequests: limits.TransactionActions + 1, Retry: j.scan.Retry,
	})
	j.rangeEnd = p.rangeEnd
	start := timing.Now(clock)
	var stop func() bool
	if o.Budget > 0 {
		stop = func() bool { return timing.Now(clock).Sub(start) >= o.Budget }
	}
	rep := startReporter(ctx, o.OnProgress, func() Progress { return j.progress(true) })
	var workers sync.WaitGroup
	for range o.Transactions {
		workers.Go(p.worker)
	}
	err = j.run(ctx, stop, p.page)
	p.qmu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.qmu.Unlock()
	workers.Wait()
	rep.finish()

	res := PurgeResult{Elapsed: time.Since(j.started), ChangedKeys: p.changedKeys, DeleteTransactions: p.deletes.Load(), Probes: j.probe}
	j.mu.Lock()
	c := j.state.Counts
	res.Listed, res.Deleted, res.Changed, res.Gone = c.Read, c.Written, c.Changed, c.Skipped-c.Changed
	res.Ranges, res.Complete = len(j.state.Ranges), j.state.Complete
	for _, r := range j.state.Ranges {
		if r.Done {
			res.RangesDone++
		}
	}
	j.mu.Unlock()
	res.Transactions = j.transactions() + res.DeleteTransactions + p.reads.Load()
	res.Pages = j.requests.Load()
	if j.meter != nil {
		d := j.meter.Snapshot().Sub(j.meterStart)
		res.Transactions = d.Service("table")
		res.Pages = d.Count("table", "QueryEntities")
	}
	return res, err
}

type purger struct {
	j *job
	o PurgeOptions
	w *tablekit.BulkWriter[tablekit.Entity]
	// accepted, when not nil, is called with each page page takes (tests).
	accepted func([]tablekit.Entity)
	deletes  atomic.Int64
	reads    atomic.Int64 // keys-only reads that settled unknown outcomes

	mu          sync.Mutex
	ranges      map[*rangeState]*rangePurge
	changedKeys []EntityKey

	// The transactions waiting to be sent, by partition: Transactions
	// workers take them from the partitions in turn, so that one
	// partition's pace (its Governor rate) does not hold up the others.
	// The listing runs ahead of the deletes by at most window entities.
	qmu    sync.Mutex
	cond   *sync.Cond
	parts  map[string]*partQueue
	ring   []*partQueue // partitions with transactions waiting, in turn
	queued int          // entities waiting or being deleted
	window int
	closed bool
}

// partQueue holds the transactions of one partition waiting to be sent.
type partQueue struct {
	pk     string
	chunks []*purgeChunk
}

// purgeChunk is one delete transaction of a listed page.
type purgeChunk struct {
	ctx      context.Context
	r        *rangeState
	rp       *rangePurge
	pg       *purgePage
	entities []tablekit.Entity
}

// rangePurge is the deleting state of one range.
type rangePurge struct {
	// carry is the start of a partition the range listed but did not
	// delete yet: fewer than 100 entities at the end of a page, kept to
	// fill a transaction with the next page.
	carry []tablekit.Entity
	// start is the continuation token of the page the first carried
	// entity came from: where the range resumes after a stop.
	start string
	// next is the continuation token of the last page listed, and ctx the
	// context it was listed with: when the listing stops there (the
	// budget), the carry is deleted and the range resumes at next.
	next string
	ctx  context.Context
	// pages are the pages whose transactions are under way, in listing
	// order; a page's progress is committed once it and every page before
	// it are done.
	pages []*purgePage
	// inflight counts the transactions queued or under way.
	inflight sync.WaitGroup
	// err is the first error of a transaction of the range.
	err error
}

// purgePage is a listed page whose delete transactions are under way.
type purgePage struct {
	resume string // where the range resumes once the page is done
	last   bool   // the range's last page
	left   int    // transactions not finished
	failed bool
}

// rangeOf returns the deleting state of r.
func (p *purger) rangeOf(r *rangeState) *rangePurge {
	p.mu.Lock()
	defer p.mu.Unlock()
	rp := p.ranges[r]
	if rp == nil {
		rp = &rangePurge{}
		p.ranges[r] = rp
	}
	return rp
}

// page queues the deletes of what a listing page holds (and the carry of
// the range) and returns without waiting for them, so that the next page
// is listed meanwhile, up to the window.
func (p *purger) page(ctx context.Context, r *rangeState, start string, page tablekit.Page[tablekit.Entity]) error {
	rp := p.rangeOf(r)
	p.mu.Lock()
	err := rp.err
	p.mu.Unlock()
	if err != nil {
		return err
	}
	if p.accepted != nil {
		p.accepted(page.Items)
	}
	items := append(rp.carry, page.Items...)
	old := len(rp.carry)
	last := page.Continuation == ""
	unordered := p.j.isUnordered()
	if unordered {
		// Results out of key order (Cosmos DB): a partition's entities
		// are not contiguous, and the next page may hold more of any of
		// them. Group the page's by partition and carry nothing over.
		slices.SortStableFunc(items, func(a, b tablekit.Entity) int { return strings.Compare(a.PartitionKey, b.PartitionKey) })
	}
	// Cut into partitions (contiguous in a listing in key order) and
	// those into transactions of 100; keep the last partition's tail
	// unless the range is done.
	var chunks [][]tablekit.Entity
	keep := 0
	for i := 0; i < len(items); {
		j := i
		for j < len(items) && items[j].PartitionKey == items[i].PartitionKey {
			j++
		}
		part := items[i:j]
		if j == len(items) && !last && !unordered {
			keep = len(part) % limits.TransactionActions
			part = part[:len(part)-keep]
		}
		for len(part) > 0 {
			n := min(len(part), limits.TransactionActions)
			chunks = append(chunks, part[:n])
			part = part[n:]
		}
		i = j
	}
	resume := page.Continuation
	if keep > 0 {
		if keep > len(items)-old {
			resume = rp.start // the tail still holds entities of an older page
		} else {
			resume = start
		}
	}
	rp.carry = append([]tablekit.Entity(nil), items[len(items)-keep:]...)
	rp.start, rp.next, rp.ctx = resume, page.Continuation, ctx
	pg := &purgePage{resume: resume, last: last, left: len(chunks)}
	// Listed counts as the page is listed, before any of its deletes: a
	// checkpoint saved at any moment then counts no more deleted, changed
	// or gone than listed. (A page listed again after a crash counts
	// again.)
	p.j.mu.Lock()
	r.Read += int64(len(page.Items))
	p.j.state.Counts.Read += int64(len(page.Items))
	p.j.mu.Unlock()
	p.mu.Lock()
	rp.pages = append(rp.pages, pg)
	if len(chunks) == 0 {
		p.settle(r, rp)
	}
	p.mu.Unlock()
	for _, ch := range chunks {
		if err := p.enqueue(&purgeChunk{ctx: ctx, r: r, rp: rp, pg: pg, entities: ch}); err != nil {
			// The page stays uncommitted: its entities are listed again
			// on resume.
			return err
		}
	}
	return nil
}

// enqueue queues a transaction once the window has room for it.
func (p *purger) enqueue(c *purgeChunk) error {
	stop := context.AfterFunc(c.ctx, func() {
		p.qmu.Lock()
		p.cond.Broadcast()
		p.qmu.Unlock()
	})
	defer stop()
	p.qmu.Lock()
	defer p.qmu.Unlock()
	for p.queued > 0 && p.queued+len(c.entities) > p.window && c.ctx.Err() == nil {
		p.cond.Wait()
	}
	if err := c.ctx.Err(); err != nil {
		return err
	}
	q := p.parts[c.entities[0].PartitionKey]
	if q == nil {
		q = &partQueue{pk: c.entities[0].PartitionKey}
		p.parts[q.pk] = q
	}
	if len(q.chunks) == 0 {
		p.ring = append(p.ring, q)
	}
	q.chunks = append(q.chunks, c)
	p.queued += len(c.entities)
	c.rp.inflight.Add(1)
	p.cond.Broadcast()
	return nil
}

// worker sends queued transactions, taking them from the partitions in
// turn, until the purge ends.
func (p *purger) worker() {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	for {
		for len(p.ring) == 0 && !p.closed {
			p.cond.Wait()
		}
		if len(p.ring) == 0 {
			return
		}
		q := p.ring[0]
		c := q.chunks[0]
		q.chunks = q.chunks[1:]
		p.ring = p.ring[1:]
		if len(q.chunks) > 0 {
			p.ring = append(p.ring, q) // the partition's turn comes again
		} else {
			delete(p.parts, q.pk)
		}
		p.qmu.Unlock()
		out, err := p.deleteChunk(c.ctx, c.entities)
		p.done(c.r, c.rp, c.pg, out, err)
		c.rp.inflight.Done()
		p.qmu.Lock()
		p.queued -= len(c.entities)
		p.cond.Broadcast()
	}
}

// done records the outcome of one transaction of page pg of range r.
func (p *purger) done(r *rangeState, rp *rangePurge, pg *purgePage, out outcome, err error) {
	// Record what was deleted even when the transaction failed: the range
	// does not move on, so its entities are listed again on resume.
	p.j.mu.Lock()
	p.j.state.Counts.Written += out.deleted
	p.j.state.Counts.Skipped += out.changed + out.gone
	p.j.state.Counts.Changed += out.changed
	p.j.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range out.changedKeys {
		if len(p.changedKeys) < maxReported {
			p.changedKeys = append(p.changedKeys, k)
		}
	}
	pg.left--
	if err != nil {
		pg.failed = true
		if rp.err == nil {
			rp.err = err
		}
	}
	p.settle(r, rp)
}

// settle commits the pages of r that are done, in order, up to the first
// that is not. The caller holds p.mu.
func (p *purger) settle(r *rangeState, rp *rangePurge) {
	for len(rp.pages) > 0 && rp.pages[0].left == 0 && !rp.pages[0].failed {
		pg := rp.pages[0]
		rp.pages = rp.pages[1:]
		p.j.commit(r, pg.resume, pg.last, 0, nil)
	}
}

// rangeEnd waits for the transactions of r still under way when its
// listing stops (at its end, at the budget, or on an error, listErr) and
// returns the first error one of them met. When the budget stopped the
// listing, the carry (the start of a partition whose transaction waited
// for the next page) is deleted in a transaction of its own, so that the
// range moves past the last page listed: without it, a budget of about
// one page would list the same page run after run and delete nothing.
func (p *purger) rangeEnd(r *rangeState, listErr error) error {
	rp := p.rangeOf(r)
	if listErr == nil && len(rp.carry) > 0 {
		pg := &purgePage{resume: rp.next, left: 1}
		p.mu.Lock()
		rp.pages = append(rp.pages, pg)
		p.mu.Unlock()
		// On failure (the context ended) the page stays uncommitted: the
		// carry is listed again on resume.
		if p.enqueue(&purgeChunk{ctx: rp.ctx, r: r, rp: rp, pg: pg, entities: rp.carry}) == nil {
			rp.carry = nil
		}
	}
	rp.inflight.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return rp.err
}

// outcome sums what delete transactions did.
type outcome struct {
	deleted, changed, gone int64
	changedKeys            []EntityKey
}

// deleteChunk deletes up to 100 entities of one partition in one
// transaction through the purge's BulkWriter: an entity the service
// refuses (changed: 412, gone: 404) is taken out and the rest sent again;
// a throttled transaction waits for its turn at the Governor and is sent
// again; a transaction whose outcome the BulkWriter cannot tell (its
// answer was lost, and the SDK's retry met the conflict the first try
// would cause) is settled by reading the partition (see settleDeletes).
func (p *purger) deleteChunk(ctx context.Context, chunk []tablekit.Entity) (outcome, error) {
	var out outcome
	actions := make([]tablekit.Action[tablekit.Entity], len(chunk))
	listed := make(map[string]azcore.ETag, len(chunk))
	for i, e := range chunk {
		etag := e.ETag
		if p.o.AnyETag || etag == "" {
			// No ETag in the listing (never seen from Azure or Azurite):
			// without one the delete could not be conditional.
			if !p.o.AnyETag {
				return out, fmt.Errorf("transfer: Purge: the listing gave no ETag for %q/%q; refusing an unconditional delete (set AnyETag to allow it)", e.PartitionKey, e.RowKey)
			}
			etag = azcore.ETagAny
		}
		listed[e.RowKey] = e.ETag
		actions[i] = tablekit.DeleteAction(tablekit.Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey}, etag)
	}
	// A transaction still throttled after the BulkWriter's tries (each
	// paced by the Governor, which slows down at every 503) goes again
	// after a pause, as the scan's retry policy says: a throttle asks a purge to slow
	// down, not to fail. So does what a settled transaction left to delete.
	retry := p.j.scan.Retry
	var first error
	for round := 1; ; round++ {
		res, err := p.w.Write(ctx, actions)
		p.deletes.Add(int64(res.Requests))
		out.deleted += int64(res.Succeeded)
		var throttled, unknownErr error
		first = nil
		var again, unknown []tablekit.Action[tablekit.Entity]
		for _, f := range res.Failed {
			var te *tablekit.TransactionError
			maybe := errors.Is(f.Err, tablekit.ErrOutcomeUnknown)
			own := errors.As(f.Err, &te) && !maybe
			switch {
			case own && errors.Is(f.Err, tablekit.ErrPreconditionFailed):
				v := actions[f.Index].Value()
				out.changed++
				out.changedKeys = append(out.changedKeys, EntityKey{v.PartitionKey, v.RowKey})
			case own && te.Code == "ResourceNotFound":
				out.gone++
			case maybe && ctx.Err() == nil:
				// Applied or not: one transaction (the BulkWriter gives an
				// unknown outcome to what is left of a chunk), all or none.
				unknown = append(unknown, actions[f.Index])
				unknownErr = f.Err
			case wire.IsThrottled(f.Err):
				again = append(again, actions[f.Index])
				throttled = f.Err
			case first == nil:
				first = f.Err
			}
		}
		if cerr := ctx.Err(); cerr != nil && len(res.Failed) > 0 {
			return out, cerr
		}
		if err != nil && !itemsFailed(res, err) && first == nil {
			first = err
		}
		if first != nil {
			break
		}
		if len(unknown) > 0 {
			s, left, err := p.settleDeletes(ctx, unknown, listed)
			if err != nil {
				return out, fmt.Errorf("transfer: Purge: settling a delete transaction whose outcome was unknown (%v): %w", unknownErr, err)
			}
			out.deleted += s.deleted
			out.changed += s.changed
			out.gone += s.gone
			out.changedKeys = append(out.changedKeys, s.changedKeys...)
			again = append(again, left...)
		}
		if len(again) == 0 {
			break
		}
		if round >= retry.MaxAttempts {
			first = cmp.Or(throttled, unknownErr)
			break
		}
		// A throttled transaction pauses; one that was not applied goes
		// again at once.
		if throttled != nil && !timing.Sleep(ctx, timing.Policy(retry).Delay(round+1)) {
			return out, ctx.Err()
		}
		actions = again
	}
	return out, first
}

// settleDeletes decides what became of the deletes of one transaction
// (actions, of one partition) whose outcome is unknown, by listing what
// the partition holds of their entities (keys only, one query over their
// RowKeys), and returns the deletes still to send. listed holds each
// entity's ETag as it was listed.
//
// A transaction is atomic. If an entity is still stored with the ETag it
// was listed with, the transaction was not applied (had it been, that
// version would be gone: a new write gets a new ETag): the entities now
// absent were deleted by someone else (gone), those stored with another
// ETag were written after listing (changed: left alone and named, unless
// AnyETag), and the rest are sent again. If none is, but some are absent,
// the transaction was applied: all its entities were deleted by the purge,
// and those stored now were written again after that (they are left alone,
// as any entity written after its listing). If every entity is stored with
// another ETag, it was not applied: they changed. The one history this
// cannot tell apart is a transaction not applied whose entities were
// all deleted or rewritten by other writers meanwhile, which it counts as
// deleted by the purge: Deleted+Gone stays exact, and so does Deleted when
// no other writer deletes in the scope.
func (p *purger) settleDeletes(ctx context.Context, actions []tablekit.Action[tablekit.Entity], listed map[string]azcore.ETag) (outcome, []tablekit.Action[tablekit.Entity], error) {
	var out outcome
	pk := actions[0].Value().PartitionKey
	lo, hi := actions[0].Value().RowKey, actions[0].Value().RowKey
	for _, a := range actions[1:] {
		if rk := a.Value().RowKey; compareKeys(rk, lo) < 0 {
			lo = rk
		} else if compareKeys(rk, hi) > 0 {
			hi = rk
		}
	}
	stored, err := p.storedETags(ctx, pk, lo, hi)
	if err != nil {
		return out, nil, err
	}
	unchanged, absent := 0, 0
	for _, a := range actions {
		etag, ok := stored[a.Value().RowKey]
		switch {
		case !ok:
			absent++
		case etag == listed[a.Value().RowKey]:
			unchanged++
		}
	}
	if unchanged == 0 && absent > 0 {
		out.deleted = int64(len(actions))
		return out, nil, nil
	}
	var left []tablekit.Action[tablekit.Entity]
	for _, a := range actions {
		etag, ok := stored[a.Value().RowKey]
		switch {
		case !ok:
			out.gone++
		case etag == listed[a.Value().RowKey] || p.o.AnyETag:
			left = append(left, a)
		default:
			out.changed++
			out.changedKeys = append(out.changedKeys, EntityKey{pk, a.Value().RowKey})
		}
	}
	return out, left, nil
}

// storedETags lists, keys only, the entities of partition pk whose RowKeys
// are from lo to hi, and returns their ETags by RowKey. A page the service
// throttled or did not answer is read again as the scan's retry policy says.
func (p *purger) storedETags(ctx context.Context, pk, lo, hi string) (map[string]azcore.ETag, error) {
	f := tablekit.And(tablekit.PartitionEq(pk), tablekit.Where("RowKey ge ? and RowKey le ?", lo, hi))
	out := map[string]azcore.ETag{}
	opts := &tablekit.QueryOptions{Select: keysOnly, Reserved: true}
	for {
		var page tablekit.Page[tablekit.Entity]
		var err error
		for range timing.Policy(p.j.scan.Retry).Attempts(ctx) {
			p.reads.Add(1)
			page, err = p.j.t.QueryPage(ctx, f, opts)
			var rq *tablekit.RequestError
			if err == nil || !(wire.IsThrottled(err) || errors.As(err, &rq)) || ctx.Err() != nil {
				break
			}
		}
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return nil, err
		}
		for _, e := range page.Items {
			out[e.RowKey] = e.ETag
		}
		if page.Continuation == "" {
			return out, nil
		}
		opts.Continuation = page.Continuation
	}
}
