package transfer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/timing"
)

// scanOptions is how a job reads its scope: [Options]' Concurrency,
// Boundaries, MaxProbes and PageSize, and the retry of its page reads.
type scanOptions struct {
	Concurrency int
	Boundaries  []string
	MaxProbes   int
	PageSize    int
	Retry       tablekit.RetryPolicy
}

func (o *scanOptions) withDefaults(op string) (scanOptions, error) {
	s := scanOptions{}
	if o != nil {
		s = *o
	}
	if s.Concurrency < 0 || s.Concurrency > maxConcurrency {
		return s, validation(op, fmt.Sprintf("Concurrency is %d; it must be 0 (default 16) to %d", s.Concurrency, maxConcurrency))
	}
	if s.Concurrency == 0 {
		s.Concurrency = 16
	}
	if s.MaxProbes > maxProbes {
		return s, validation(op, fmt.Sprintf("MaxProbes is %d; it must be at most %d (negative: none, 0: default)", s.MaxProbes, maxProbes))
	}
	if s.MaxProbes == 0 {
		s.MaxProbes = 4 * s.Concurrency
	}
	if s.PageSize < 0 || s.PageSize > limits.PageSize {
		return s, validation(op, fmt.Sprintf("PageSize is %d; it must be 0 (default 1000) to %d", s.PageSize, limits.PageSize))
	}
	s.Retry = tablekit.RetryPolicy(timing.Policy(s.Retry).WithDefaults(timing.Policy(tablekit.RetryPolicy(timing.Throttle))))
	return s, nil
}

// Bounds of the options: larger values would only start more goroutines
// (Concurrency, PurgeOptions.Transactions) or send more probes than any
// table needs, and overflow the arithmetic built on them.
const (
	maxConcurrency = 1024
	maxProbes      = 1_000_000
)

// keysOnly is the projection of key listings: $select=PartitionKey,RowKey.
var keysOnly = []string{"PartitionKey", "RowKey"}

// rangeState is the progress of one range, as saved in a checkpoint.
type rangeState struct {
	keyRange
	// Token resumes the range's query; "" before the first page.
	Token string `json:"token,omitempty"`
	Done  bool   `json:"done,omitempty"`
	// Cap, when set, ends the range before To: the rest was split off
	// into a range of its own while this one ran. The filter (and so the
	// token) keeps To; entities at or after Cap are left to the other
	// range.
	Cap string `json:"cap,omitempty"`
	// Read counts the entities read in this range (over all runs).
	Read int64 `json:"read,omitempty"`

	// Pos is the last PartitionKey received in this range (saved with
	// it): a split of the range falls after it.
	Pos string `json:"pos,omitempty"`

	// Tally is count's open tally at the range's token: the entities
	// counted so far of each partition the range has met and not closed.
	// Where results come in key order it holds at most the partition the
	// range was in; where they do not (Cosmos DB), every partition the
	// range has met, closed when the range is done.
	Tally map[string]int64 `json:"tally,omitempty"`
	// TallyPK and TallyN are the open tally as checkpoints written before
	// Tally kept it; load moves them into Tally.
	TallyPK string `json:"tallyPK,omitempty"`
	TallyN  int64  `json:"tallyN,omitempty"`

	// Run-time state, under job.mu.
	running   bool
	held      bool // stopped for this run by its page function (errHold)
	splitting bool
	stuck     *string // Pos at which a split found nothing to split off
}

// isStuck reports whether a split found nothing to split off at the
// range's current position.
func (r *rangeState) isStuck() bool { return r.stuck != nil && *r.stuck == r.Pos }

// end returns the exclusive end of what r still covers ("": the table's
// end).
func (r *rangeState) end() string {
	if r.Cap != "" {
		return r.Cap
	}
	return r.To
}

// counts are the totals of a job, over all its runs.
type counts struct {
	Read    int64 `json:"read"`
	Written int64 `json:"written"`
	Failed  int64 `json:"failed,omitempty"`
	Skipped int64 `json:"skipped,omitempty"`
	Changed int64 `json:"changed,omitempty"` // purge: among Skipped, those written after listing
	// Verified counts, among Written, entities a resumed insert copy found
	// stored as the source has them.
	Verified int64 `json:"verified,omitempty"`
}

// jobState is what a checkpoint holds.
type jobState struct {
	Version  int           `json:"version"`
	Op       string        `json:"op"`
	Table    string        `json:"table"`
	Scope    string        `json:"scope"`
	Started  time.Time     `json:"started"`
	Ranges   []*rangeState `json:"ranges"`
	Offset   int64         `json:"offset,omitempty"`
	Counts   counts        `json:"counts"`
	Complete bool          `json:"complete,omitempty"`
	Trailer  bool          `json:"trailer,omitempty"` // export: the trailer is written
	Probes   int64         `json:"probes,omitempty"`
	// Count: the partitions counted whole, and what deleting them takes.
	Partitions int64 `json:"partitions,omitempty"`
	DeleteTx   int64 `json:"deleteTx,omitempty"`
}

const stateVersion = 1

// job is the machinery shared by export, copy, purge and count: ranges
// read in parallel, progress, checkpoints.
type job struct {
	op    string
	t     *tablekit.Table[tablekit.Entity]
	scope Scope
	scan  scanOptions
	sel   []string

	meter      *tablekit.Meter
	meterStart tablekit.MeterSnapshot
	requests   atomic.Int64 // own count when there is no Meter

	cp      Checkpoint
	cpEvery time.Duration
	// beforeSave runs under mu before a checkpoint is taken (export flushes
	// its output).
	beforeSave func() error
	// rangeEnd, when set, runs when the reading of a range stops, however
	// it stops (err is the reading's error: nil at the range's end or when
	// stop said so), and may return an error of work the page function
	// left running (purge waits there for its delete transactions).
	rangeEnd func(r *rangeState, err error) error
	// persist, when set, returns the state to save in place of the state
	// itself (count leaves out open tallies too large to save); it runs
	// under mu and must not change s.
	persist func(s *jobState) *jobState

	started time.Time
	total   int64 // expected entities, -1 unknown
	splits  bool  // idle readers split running ranges (where results are in key order)
	// unordered is set when the service does not return results in key
	// order (Azure Cosmos DB for Table): see "Cosmos DB" in the package
	// documentation. Read it with isUnordered: an Account may find out
	// from the job's own answers.
	unordered atomic.Bool
	// reliedOnOrder is set when the job took a page for one in key order
	// in a way that depends on it (ended a range at a split's Cap; count
	// closed a partition's tally before the range's end): should the
	// service turn out not to keep key order after all, the job fails
	// (see orderLost).
	reliedOnOrder atomic.Bool

	// resumed is true when the state was loaded from the checkpoint.
	resumed bool

	mu       sync.Mutex
	state    jobState
	base     counts // counts at the start of this run (resumed totals)
	probe    int64  // probes sent in this run
	reserved int64  // probes that splits under way may still send
}

// jobConfig is what the public options of an operation give a job.
type jobConfig struct {
	op         string
	t          *tablekit.Table[tablekit.Entity]
	scope      Scope
	scan       *scanOptions
	sel        []string
	checkpoint Checkpoint
	every      time.Duration
	resume     bool
}

// newJob validates the configuration and plans the ranges: from the
// checkpoint when resuming, else by splitting the scope.
func newJob(ctx context.Context, c jobConfig) (*job, error) {
	if c.t == nil {
		return nil, validation(c.op, "nil table")
	}
	if err := c.scope.validate(c.op); err != nil {
		return nil, err
	}
	scan, err := c.scan.withDefaults(c.op)
	if err != nil {
		return nil, err
	}
	if c.resume && c.checkpoint == nil {
		return nil, validation(c.op, "Resume needs a Checkpoint")
	}
	j := &job{
		op: c.op, t: c.t, scan: scan, sel: c.sel,
		meter: c.t.Account().Meter(), cp: c.checkpoint, cpEvery: c.every, started: time.Now(), total: -1,
	}
	if j.cpEvery <= 0 {
		j.cpEvery = 5 * time.Second
	}
	// A running range is split only where results come in key order: a
	// page then says that the range is done below its last key. Where they
	// do not, a range's query must be read to its end whatever is split
	// off, so the scope is cut into more ranges before reading instead
	// (see isUnordered).
	j.splits = scan.Concurrency > 1 && scan.MaxProbes > 0 && scan.Boundaries == nil && c.scope.Partition == nil
	if j.meter != nil {
		j.meterStart = j.meter.Snapshot()
	}
	j.state = jobState{Version: stateVersion, Op: c.op, Table: c.t.Name(), Started: j.started.UTC()}
	j.scope = c.scope.at(j.state.Started)
	if err := j.scope.Filter.Err(); err != nil {
		return nil, err
	}
	j.state.Scope = j.scope.describe()
	if c.resume {
		ok, err := j.load(ctx, c.scope)
		if err != nil {
			return nil, err
		}
		if ok {
			return j, nil
		}
	}
	if err := j.plan(ctx); err != nil {
		return nil, err
	}
	return j, nil
}

// isUnordered reports whether the service does not return results in key
// order: the table's Account is in Cosmos DB mode, known when the job
// started or found out since from an answer (tablekit.ServiceAuto). Every
// answer that shows Cosmos DB does so before the job sees its entities
// (a continuation token in Cosmos DB's shape, a page out of key order), so
// a page is handled as unordered whenever it could tell; a page handled
// as ordered before is a range's only page, in key order, for which both
// ways agree.
func (j *job) isUnordered() bool {
	if j.unordered.Load() {
		return true
	}
	if j.t.Account().Service() == tablekit.ServiceCosmosDB {
		j.unordered.Store(true)
		return true
	}
	return false
}

// orderLost returns the error of a job that relied on key order (see
// reliedOnOrder) on a service that turned out not to keep it: an Account
// with tablekit.ServiceAuto behind something that hides Cosmos DB's
// continuation tokens, whose first pages happened to be in key order. The
// job's results may be wrong; its Account now knows, and a run started
// again (without Resume) reads as on Cosmos DB.
func (j *job) orderLost() error {
	if !j.reliedOnOrder.Load() || !j.isUnordered() {
		return nil
	}
	return &tablekit.ValidationError{Op: "transfer." + opName(j.op), Entity: j.t.Name(),
		Detail: "the service answered as Azure Cosmos DB for Table, which does not keep key order, after the job had relied on it: run the job again, from the start (the Account knows now), or open the Account with tablekit.ServiceCosmosDB",
		Err:    tablekit.ErrUnsupported}
}

// opName names a job's operation as its function: "export" is "Export".
func opName(op string) string {
	if op == "" {
		return op
	}
	return strings.ToUpper(op[:1]) + op[1:]
}

// load reads the checkpoint and checks that it belongs to this job, whose
// scope is scope as the caller gave it: a cutoff it sets (OlderThan) is
// taken from the start of the job's first run.
func (j *job) load(ctx context.Context, scope Scope) (bool, error) {
	data, err := j.cp.Load(ctx)
	if err != nil || data == nil {
		return false, err
	}
	var s jobState
	if err := json.Unmarshal(data, &s); err != nil {
		return false, fmt.Errorf("%w: %v", ErrCorruptCheckpoint, err)
	}
	resumed := scope.at(s.Started)
	want := resumed.describe()
	switch {
	case s.Version != stateVersion:
		return false, fmt.Errorf("%w: state version %d, want %d", ErrCorruptCheckpoint, s.Version, stateVersion)
	case s.Op != j.op:
		return false, fmt.Errorf("%w: it is the checkpoint of a %s, not a %s", ErrCorruptCheckpoint, s.Op, j.op)
	case s.Table != j.state.Table:
		return false, fmt.Errorf("%w: it is for table %q, not %q", ErrCorruptCheckpoint, s.Table, j.state.Table)
	case resumed.Filter.Err() != nil:
		return false, fmt.Errorf("%w: its start time %v gives no cutoff: %v", ErrCorruptCheckpoint, s.Started, resumed.Filter.Err())
	case s.Scope != want:
		return false, fmt.Errorf("%w: it is for scope %q, not %q", ErrCorruptCheckpoint, s.Scope, want)
	case len(s.Ranges) == 0:
		return false, fmt.Errorf("%w: it has no ranges", ErrCorruptCheckpoint)
	}
	for _, r := range s.Ranges {
		if r == nil {
			return false, fmt.Errorf("%w: a range is null", ErrCorruptCheckpoint)
		}
	}
	j.state = s
	j.scope = resumed
	j.base = s.Counts
	j.resumed = true
	return true, nil
}

// plan splits the scope into ranges.
func (j *job) plan(ctx context.Context) error {
	whole := keyRange{From: j.scope.From, To: j.scope.To}
	var bounds []string
	switch {
	case j.scope.Partition != nil:
	case j.scan.Boundaries != nil:
		var err error
		if bounds, err = checkBoundaries(j.op, whole, j.scan.Boundaries); err != nil {
			return err
		}
	case j.scan.Concurrency > 1 && j.scan.MaxProbes > 0:
		// Two ranges per reader, where idle readers split running ranges
		// later; four where they cannot (results out of key order, which
		// the sampler's first probe shows when it is not known yet).
		s := &sampler{t: j.t, scope: whole, concurrency: j.scan.Concurrency, budget: j.scan.MaxProbes, unordered: j.isUnordered(),
			unorderedTarget: 4 * j.scan.Concurrency}
		var err error
		bounds, err = s.sample(ctx, 2*j.scan.Concurrency)
		if len(bounds) > 0 {
			bounds = bounds[1:] // the first key starts the first range anyway
		}
		// Keys outside the scope cannot bound a range of it.
		bounds = slices.DeleteFunc(bounds, func(b string) bool { return b == whole.From || !whole.contains(b) })
		j.probe = s.probes.Load()
		j.requests.Add(j.probe)
		j.state.Probes += j.probe
		if err != nil {
			return err
		}
	}
	for _, r := range splitRange(whole, bounds) {
		j.state.Ranges = append(j.state.Ranges, &rangeState{keyRange: r})
	}
	return nil
}

// filterOf returns the filter of range r.
func (j *job) filterOf(r *rangeState) tablekit.Filter {
	if j.scope.Partition != nil {
		return j.scope.filter()
	}
	return tablekit.And(r.Filter(), j.scope.Filter)
}

// pageFunc handles one page of range r, read from the continuation token
// start. It records its progress with commit before it returns nil. It
// returns errHold, without committing, to stop the range at this page for
// the rest of the run.
type pageFunc func(ctx context.Context, r *rangeState, start string, page tablekit.Page[tablekit.Entity]) error

// errHold, returned by a page function, stops its range where it is, not
// done, while the other ranges go on: a resumed run reads the range again
// from the page (copy, when entities of the page failed for a passing
// reason).
var errHold = errors.New("transfer: range held back for a resumed run")

// run reads every range not done yet, Concurrency at a time, and calls fn
// for each page. It stops early, leaving the rest for a resumed run, when
// ctx ends or stop returns true; it stops at the first error fn or a read
// returns. Checkpoints are saved every cpEvery and at the end.
func (j *job) run(ctx context.Context, stop func() bool, fn pageFunc) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var pending []*rangeState
	for _, r := range j.state.Ranges {
		if !r.Done {
			pending = append(pending, r)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel(err) })
	}
	// Checkpoints now and then.
	cpDone := make(chan struct{})
	var cpWG sync.WaitGroup
	if j.cp != nil {
		cpWG.Go(func() {
			t := time.NewTicker(j.cpEvery)
			defer t.Stop()
			for {
				select {
				case <-cpDone:
					return
				case <-t.C:
					if err := j.save(context.WithoutCancel(ctx)); err != nil {
						fail(err)
						return
					}
				}
			}
		})
	}
	for range j.scan.Concurrency {
		wg.Go(func() {
			for {
				var r *rangeState
				if i := int(next.Add(1)) - 1; i < len(pending) {
					r = pending[i]
				} else if j.splits && !j.isUnordered() {
					// Nothing left to start: split the rest of a running
					// range, so that no reader idles while another has a
					// long way to go.
					for r == nil && j.busy() && (stop == nil || !stop()) && timing.Sleep(ctx, 50*time.Millisecond) && !j.isUnordered() {
						var err error
						if r, err = j.steal(ctx); err != nil {
							if ctx.Err() == nil {
								fail(err)
							}
							return
						}
					}
				}
				if r == nil || (stop != nil && stop()) {
					return
				}
				if err := j.runRange(ctx, r, stop, fn); err != nil {
					if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
						fail(err)
					}
					return
				}
			}
		})
	}
	wg.Wait()
	close(cpDone)
	cpWG.Wait()
	j.mu.Lock()
	j.state.Complete = true
	for _, r := range j.state.Ranges {
		if !r.Done {
			j.state.Complete = false
		}
	}
	j.mu.Unlock()
	if j.cp != nil {
		if err := j.save(context.WithoutCancel(ctx)); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		return firstErr
	}
	if err := j.orderLost(); err != nil {
		return err
	}
	if err := context.Cause(ctx); err != nil && !j.state.Complete {
		return err
	}
	return nil
}

// runRange reads range r page by page.
func (j *job) runRange(ctx context.Context, r *rangeState, stop func() bool, fn pageFunc) error {
	err := j.readRange(ctx, r, stop, fn)
	if j.rangeEnd != nil {
		if e := j.rangeEnd(r, err); err == nil {
			err = e
		}
	}
	return err
}

// readRange reads range r page by page until its end, an error, or stop.
func (j *job) readRange(ctx context.Context, r *rangeState, stop func() bool, fn pageFunc) error {
	j.mu.Lock()
	token := r.Token
	r.running = true
	if r.Pos == "" {
		r.Pos = r.From
	}
	j.mu.Unlock()
	defer func() {
		j.mu.Lock()
		r.running = false
		j.mu.Unlock()
	}()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if stop != nil && stop() {
			return nil
		}
		page, err := j.readPage(ctx, r, token)
		if err != nil {
			return err
		}
		j.clip(r, &page)
		if err := j.orderLost(); err != nil {
			return err
		}
		if err := fn(ctx, r, token, page); err != nil {
			if errors.Is(err, errHold) {
				j.mu.Lock()
				r.held = true
				j.mu.Unlock()
				return nil
			}
			return err
		}
		if page.Continuation == "" {
			return nil
		}
		token = page.Continuation
	}
}

// clip drops from page what lies at or after r's Cap (split off to
// another range). Where results come in key order, the range ends at the
// first such entity, and clip records the last key received, below which
// no split may fall. Where they do not, the range reads on to the end of
// its query and only drops them: an entity below Cap may still come.
func (j *job) clip(r *rangeState, page *tablekit.Page[tablekit.Entity]) {
	j.mu.Lock()
	defer j.mu.Unlock()
	unordered := j.isUnordered()
	if r.Cap != "" {
		if unordered {
			page.Items = slices.DeleteFunc(page.Items, func(e tablekit.Entity) bool { return compareKeys(e.PartitionKey, r.Cap) >= 0 })
		} else {
			for i := range page.Items {
				if compareKeys(page.Items[i].PartitionKey, r.Cap) >= 0 {
					page.Items, page.Continuation = page.Items[:i], ""
					j.reliedOnOrder.Store(true)
					break
				}
			}
		}
	}
	if n := len(page.Items); n > 0 && !unordered {
		r.Pos = page.Items[n-1].PartitionKey
	}
}

// busy reports whether a range is still running that a split might take
// work from.
func (j *job) busy() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, r := range j.state.Ranges {
		if !r.Done && !r.held && !r.isStuck() {
			return true
		}
	}
	return false
}

// steal splits the rest of a running range in two and returns the second
// half as a new range, or nil when no running range can be split. It
// probes the rest of the range for PartitionKeys after the range's
// position and splits at the middle one found.
func (j *job) steal(ctx context.Context) (*rangeState, error) {
	for {
		j.mu.Lock()
		var victim *rangeState
		for _, r := range j.state.Ranges {
			if r.running && !r.splitting && !r.Done && !r.isStuck() && (victim == nil || r.Read > victim.Read) {
				victim = r
			}
		}
		if victim == nil {
			j.mu.Unlock()
			return nil, nil
		}
		// Probes never outnumber the pages this run has read by more than
		// MaxProbes; they are reserved under mu, so concurrent splits
		// keep to it.
		budget := min(4, j.requests.Load()-2*j.probe-j.reserved+int64(j.scan.MaxProbes))
		if budget <= 0 {
			j.mu.Unlock()
			return nil, nil // read more pages first
		}
		j.reserved += budget
		victim.splitting = true
		pos, end := victim.Pos, victim.end()
		j.mu.Unlock()

		// The smallest key after pos: keys hold no control characters.
		after := pos + " "
		var keys []string
		var err error
		var sent int64
		if end == "" || compareKeys(after, end) < 0 {
			s := &sampler{t: j.t, scope: keyRange{From: after, To: end}, concurrency: 4, budget: int(budget)}
			keys, err = s.sample(ctx, 3)
			sent = s.probes.Load()
			j.requests.Add(sent)
		}
		j.mu.Lock()
		j.reserved -= budget
		j.state.Probes += sent
		j.probe += sent
		victim.splitting = false
		if err != nil {
			j.mu.Unlock()
			return nil, err
		}
		if j.isUnordered() {
			// The probes (or a page meanwhile) showed that results are
			// not in key order: the victim may have read keys past any
			// split point already, which the new range would read again.
			j.mu.Unlock()
			return nil, nil
		}
		// The middle key the victim has not reached.
		var k string
		for i := len(keys) / 2; i < len(keys); i++ {
			if compareKeys(keys[i], victim.Pos) > 0 {
				k = keys[i]
				break
			}
		}
		if k == "" || victim.Done || (victim.end() != "" && compareKeys(k, victim.end()) >= 0) {
			victim.stuck = &pos // nothing to split off here; try another
			j.mu.Unlock()
			continue
		}
		r := &rangeState{keyRange: keyRange{From: k, To: victim.end()}}
		victim.Cap = k
		j.state.Ranges = append(j.state.Ranges, r)
		j.mu.Unlock()
		return r, nil
	}
}

// readPage reads the page of r at token, trying again as Retry says when
// the service throttles or does not answer.
func (j *job) readPage(ctx context.Context, r *rangeState, token string) (tablekit.Page[tablekit.Entity], error) {
	// Export, copy, purge and count read ranges of the table on purpose.
	opts := &tablekit.QueryOptions{PageSize: j.scan.PageSize, Select: j.sel, Continuation: token, AllowTableScan: true, Reserved: true}
	var page tablekit.Page[tablekit.Entity]
	var err error
	for range timing.Policy(j.scan.Retry).Attempts(ctx) {
		j.requests.Add(1)
		page, err = j.t.QueryPage(ctx, j.filterOf(r), opts)
		var rq *tablekit.RequestError
		if err == nil || !(errors.Is(err, tablekit.ErrThrottled) || errors.As(err, &rq)) || ctx.Err() != nil {
			break
		}
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return page, err
}

// commit records, under mu, that range r resumes at token (or is done),
// that read more entities were read, and runs update (which may change
// counts).
func (j *job) commit(r *rangeState, token string, done bool, read int64, update func(*jobState)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	r.Token = token
	r.Read += read
	j.state.Counts.Read += read
	r.Done = done
	if update != nil {
		update(&j.state)
	}
}

// save writes a checkpoint of the state as it is now.
func (j *job) save(ctx context.Context) error {
	j.mu.Lock()
	if j.beforeSave != nil {
		if err := j.beforeSave(); err != nil {
			j.mu.Unlock()
			return err
		}
	}
	state := &j.state
	if j.persist != nil {
		state = j.persist(state)
	}
	data, err := json.Marshal(state)
	j.mu.Unlock()
	if err != nil {
		return err
	}
	return j.cp.Save(ctx, data)
}

// transactions returns the storage transactions of this run so far.
func (j *job) transactions() int64 {
	if j.meter != nil {
		return j.meter.Snapshot().Sub(j.meterStart).Service("table")
	}
	return j.requests.Load()
}

// progress builds a report; rateOf picks the count the rate is of.
func (j *job) progress(rateOfWritten bool) Progress {
	j.mu.Lock()
	c := j.state.Counts
	p := Progress{Op: j.op, Read: c.Read, Written: c.Written, Failed: c.Failed, Skipped: c.Skipped, Bytes: j.state.Offset, Ranges: len(j.state.Ranges)}
	for _, r := range j.state.Ranges {
		if r.Done {
			p.RangesDone++
		}
	}
	j.mu.Unlock()
	p.Transactions = j.transactions()
	p.Elapsed = time.Since(j.started)
	count, done := c.Read-j.base.Read, c.Read
	if rateOfWritten {
		count, done = c.Written+c.Failed+c.Skipped-j.base.Written-j.base.Failed-j.base.Skipped, c.Written+c.Failed+c.Skipped
	}
	p.rate(count, done, j.total)
	return p
}

// complete reports whether every range is done.
func (j *job) complete() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.state.Complete
}

// itemsFailed reports whether err, the error of a BulkWriter's Write that
// gave res, says that some items failed (res.Failed lists them), rather
// than that its context ended before every item was tried (Write then
// returns the context's error itself) or that it refused the call.
func itemsFailed(res tablekit.BulkResult, err error) bool {
	return err != nil && len(res.Failed) > 0 && err != context.Canceled && err != context.DeadlineExceeded
}
