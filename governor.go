package tablekit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/internal/wire"
)

// GovernorOptions configures a [Governor]. A nil *GovernorOptions means
// defaults.
type GovernorOptions struct {
	// PartitionRate is the most entities per second the Governor lets
	// through to one partition (default 2,000, Azure's target). It is a ceiling:
	// the Governor starts there and backs off when the service throttles.
	PartitionRate float64
	// AccountRate is the most requests per second the Governor lets
	// through to the account (default 20,000, Azure's target).
	AccountRate float64
	// HotPartition is the fraction of PartitionRate at which the Governor
	// warns, once a minute per partition, that a partition is hot: written
	// at that rate or more, by any writer of the Accounts that share the
	// Governor (the prepend/append anti-pattern shows so at run time).
	// 0 means 0.8; a negative value never warns.
	HotPartition float64
	// Logger receives a warning when a partition is throttled or hot, and
	// when it is back at full rate (nil: slog.Default() at the time of
	// logging). The Governor an Account makes logs to Options.Logger.
	Logger *slog.Logger
	// Clock tells the time (nil: time.Now).
	Clock func() time.Time
}

// Governor paces writes so that they stay within what the service
// serves: the scalability targets of a partition and of an account
// (Azure's: 2,000 entities/s per partition, 20,000 requests/s per
// account), and warns of a hot partition (see GovernorOptions). Each
// partition and the account have a rate, as in a token bucket; a write
// waits for its turn and reports how it went. When the service throttles
// (503 ServerBusy, 500 OperationTimedOut, 429), the rate that was exceeded
// is cut (by 15%, at most once per cool-down); every write that gets
// through raises it again by a little, back up to its ceiling: additive
// increase, multiplicative decrease, so that a writer settles just under
// what the service allows rather than oscillating between half and all of
// it.
//
// Every write of a Table reports to its Account's Governor
// ([Options].Governor); BulkWriters and the pattern packages' bulk paths
// wait for their turn at it, and [Governor.Do] paces writes of your own.
// One Governor can serve several Accounts of one process, which then share
// one budget. The zero Governor is ready to use, with Azure's targets; a
// Governor is safe for concurrent use.
type Governor struct {
	opts   GovernorOptions
	logger *slog.Logger

	mu      sync.Mutex
	account *pacer
	parts   map[partKey]*pacer
}

// NewGovernor returns a Governor with the given ceilings.
func NewGovernor(opts *GovernorOptions) *Governor {
	g := &Governor{}
	if opts != nil {
		g.opts = *opts
	}
	g.logger = g.opts.Logger
	g.init()
	return g
}

// init applies the defaults to the options of a Governor not made by
// NewGovernor (the zero Governor, whose defaults are Azure's), once. The
// caller holds mu, or is NewGovernor.
func (g *Governor) init() {
	if g.account != nil {
		return
	}
	if g.opts.PartitionRate <= 0 {
		g.opts.PartitionRate = limits.PartitionTarget
	}
	if g.opts.AccountRate <= 0 {
		g.opts.AccountRate = limits.AccountTarget
	}
	if g.opts.HotPartition == 0 {
		g.opts.HotPartition = 0.8
	}
	g.parts = map[partKey]*pacer{}
	g.account = newPacer(g.opts.AccountRate)
}

// log returns the Governor's logger: GovernorOptions.Logger, else
// slog.Default() at the time of logging.
func (g *Governor) log() *slog.Logger {
	if g.logger != nil {
		return g.logger
	}
	return slog.Default()
}

// pacer is the rate of one partition or of the account: a virtual clock
// that hands out send times spaced by cost/rate, and the AIMD state; for a
// partition also the rate it is written at, by any writer.
type pacer struct {
	ceiling   float64   // the most units per second
	rate      float64   // the current units per second
	next      time.Time // when the next unit may go
	cutAt     time.Time // when the rate was last cut
	throttled bool      // cut since it was last at its ceiling
	inflight  int

	written   float64   // entities per second written, as of writtenAt
	writtenAt time.Time // when written was last updated
	warnedAt  time.Time // when the partition was last called hot
}

// hotWindow is the time constant of a partition's moving write rate.
const hotWindow = time.Second

// writtenRate returns the partition's write rate at now, decayed since
// it was last updated.
func (p *pacer) writtenRate(now time.Time) float64 {
	if p.written == 0 {
		return 0
	}
	return p.written * math.Exp(-now.Sub(p.writtenAt).Seconds()/hotWindow.Seconds())
}

func newPacer(ceiling float64) *pacer { return &pacer{ceiling: ceiling, rate: ceiling} }

// burst is how far ahead of the clock a pacer's schedule may have fallen
// behind: idle time is credited up to this, no more.
const governorBurst = 100 * time.Millisecond

// reserve books cost units and returns when they may go.
func (p *pacer) reserve(now time.Time, cost float64) time.Time {
	if earliest := now.Add(-governorBurst); p.next.Before(earliest) {
		p.next = earliest
	}
	at := p.next
	p.next = p.next.Add(time.Duration(cost / p.rate * float64(time.Second)))
	p.inflight++
	return at
}

// governorCooldown is the least time between two cuts of one rate: the
// writes in flight when the service throttled report it too.
const governorCooldown = 250 * time.Millisecond

// cut lowers the rate after the service throttled, unless it was cut
// within the cool-down; it reports whether it did.
func (p *pacer) cut(now time.Time, cost float64) bool {
	if now.Sub(p.cutAt) < governorCooldown {
		return false
	}
	p.cutAt = now
	p.rate = max(p.rate*0.85, p.ceiling/1000)
	p.throttled = true
	// What was booked at the old rate is spread out at the new one.
	p.next = now.Add(time.Duration(float64(max(p.inflight, 1)) * cost / p.rate * float64(time.Second)))
	return true
}

// grow raises the rate after cost units got through, and reports whether
// it is back at its ceiling after a cut.
func (p *pacer) grow(cost float64) bool {
	if p.rate < p.ceiling {
		// Additive increase: about 2% of the ceiling per second of
		// writes at the current rate.
		p.rate = min(p.ceiling, p.rate+0.02*p.ceiling*cost/p.rate)
	}
	if p.throttled && p.rate >= p.ceiling {
		p.throttled = false
		return true
	}
	return false
}

// partKey identifies a partition: its table and PartitionKey.
type partKey struct{ table, pk string }

// wait blocks until a request writing entities entities to partition pk
// of table may be sent, or ctx ends (then it returns ctx's error). Every
// wait that returns nil must be followed by a done.
func (g *Governor) wait(ctx context.Context, table, pk string, entities int) error {
	now := timing.Now(g.opts.Clock)
	key := partKey{table, pk}
	g.mu.Lock()
	g.init()
	p := g.parts[key]
	if p == nil {
		p = newPacer(g.opts.PartitionRate)
		g.parts[key] = p
	}
	at := p.reserve(now, float64(entities))
	if a := g.account.reserve(now, 1); a.After(at) {
		at = a
	}
	g.mu.Unlock()
	if d := at.Sub(now); d > 0 && !timing.Sleep(ctx, d) {
		g.done(table, pk, entities, ctx.Err())
		return ctx.Err()
	}
	return nil
}

// throttled tells the Governor that a try of a request to partition pk of
// table was throttled (err), as soon as it happens, also when the SDK is
// about to retry it: the rates it exceeded are cut at once.
func (g *Governor) throttled(table, pk string, entities int, err error) {
	now := timing.Now(g.opts.Clock)
	g.mu.Lock()
	g.init()
	var cut bool
	var rate float64
	if p := g.parts[partKey{table, pk}]; p != nil {
		cut, rate = p.cut(now, float64(entities)), p.rate
	}
	if accountBusy(err) {
		g.account.cut(now, 1)
	}
	g.mu.Unlock()
	if cut {
		g.log().Warn("tablekit: partition throttled; slowing down", "table", table, "partition", pk, "entities_per_second", int(rate), "error", err)
	}
}

// done reports the outcome of a request wait let through: err is its
// error, or nil. A throttling error slows the partition down (see
// throttled); a request that got through lets the rates grow back.
func (g *Governor) done(table, pk string, entities int, err error) {
	if wire.IsThrottled(err) {
		g.throttled(table, pk, entities, err)
	}
	now := timing.Now(g.opts.Clock)
	key := partKey{table, pk}
	g.mu.Lock()
	g.init()
	p := g.parts[key]
	recovered := false
	var rate float64
	if p != nil {
		p.inflight--
		if err == nil {
			recovered = p.grow(float64(entities))
		}
		rate = p.rate
		if p.inflight == 0 && !p.throttled && now.Sub(p.next) > time.Minute && p.writtenRate(now) < 1 {
			delete(g.parts, key) // idle at full rate: forget it
		}
	}
	g.account.inflight--
	if err == nil {
		g.account.grow(1)
	}
	g.mu.Unlock()
	if recovered {
		g.log().Info("tablekit: partition back at full rate", "table", table, "partition", pk, "entities_per_second", int(rate))
	}
}

// Do runs write, a request writing entities entities to partition pk of
// table, at the Governor's pace: it waits for the partition's turn, runs
// write, and reports its outcome: a throttled write (an error matching
// [ErrThrottled], or the Azure SDK's error of a 503, a 429 or a 500
// OperationTimedOut) slows the partition down, one that got through lets
// its rate grow back. It returns write's error, or ctx's if it ended while
// waiting.
//
// Every throttled try of a write made through a [Table] is reported to
// the Table's Governor as it happens, also those the SDK then retries:
// when g is that Governor (for a Table opened through an Account, the
// Account's, by default), it learns of them before write returns.
func (g *Governor) Do(ctx context.Context, table, pk string, entities int, write func(ctx context.Context) error) error {
	switch {
	case g == nil:
		return &ValidationError{Op: "Governor.Do", Detail: "a nil *Governor (make one with NewGovernor, or use the zero Governor)", Err: ErrInvalidInput}
	case write == nil:
		return &ValidationError{Op: "Governor.Do", Property: "write", Detail: "nil write function", Err: ErrInvalidInput}
	}
	if err := g.wait(ctx, table, pk, entities); err != nil {
		return err
	}
	err := write(ctx)
	g.done(table, pk, entities, err)
	return err
}

// wrote records that a write of entities entities to partition pk of table
// got through (from any writer: every write of a Table reports here), and
// warns once a minute per partition when the partition's write rate is
// over the HotPartition fraction of its ceiling.
func (g *Governor) wrote(table, pk string, entities int) {
	now := timing.Now(g.opts.Clock)
	key := partKey{table, pk}
	g.mu.Lock()
	g.init()
	p := g.parts[key]
	if p == nil {
		if len(g.parts) >= governorMaxIdle {
			g.sweep(now)
		}
		p = newPacer(g.opts.PartitionRate)
		g.parts[key] = p
	}
	p.written = p.writtenRate(now) + float64(entities)/hotWindow.Seconds()
	p.writtenAt = now
	rate, hot := p.written, false
	if g.opts.HotPartition > 0 && rate >= g.opts.HotPartition*p.ceiling && now.Sub(p.warnedAt) >= time.Minute {
		p.warnedAt, hot = now, true
	}
	g.mu.Unlock()
	if hot {
		g.log().Warn("tablekit: hot partition: writes near the partition target (the prepend/append anti-pattern? spread them over more partitions, e.g. with keys.ShardedKey)",
			"table", table, "partition", pk, "entities_per_second", int(rate), "target", int(g.opts.PartitionRate))
	}
}

// governorMaxIdle is how many partitions the Governor keeps before it
// forgets those gone quiet.
const governorMaxIdle = 10_000

// sweep forgets the partitions that are at full rate, have nothing in
// flight and are written less than once a second. The caller holds mu.
func (g *Governor) sweep(now time.Time) {
	for key, p := range g.parts {
		if p.inflight == 0 && !p.throttled && p.writtenRate(now) < 1 && now.Sub(p.warnedAt) >= time.Minute {
			delete(g.parts, key)
		}
	}
}

// Rate returns the entities per second g now lets through to partition pk
// of table: its PartitionRate, less each cut since the service throttled
// that partition. A nil *Governor paces nothing: its rate is 0.
func (g *Governor) Rate(table, pk string) float64 {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	g.init()
	defer g.mu.Unlock()
	if p := g.parts[partKey{table, pk}]; p != nil {
		return p.rate
	}
	return g.opts.PartitionRate
}

// accountBusy reports whether a throttling error names the account rather
// than a partition: Azure's ServerBusy messages say "... is over the
// account limit" for the account's targets and "The server is busy" for a
// partition's.
func accountBusy(err error) bool {
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.RawResponse == nil {
		return false
	}
	body, _ := runtime.Payload(re.RawResponse)
	return bytes.Contains(body, []byte("account limit"))
}
