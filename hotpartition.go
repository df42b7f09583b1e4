package tablekit

import (
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// The Meter keeps, for every partition written through it, a moving
// estimate of its write rate in entities per second, so that the
// prepend/append anti-pattern (every write landing in one partition) shows
// at run time: an Account logs a warning when a partition's rate nears the
// partition target ([PartitionTarget], 2,000 entities/s).

// PartitionRate is a partition's recent write rate.
type PartitionRate struct {
	Table, PartitionKey string
	// EntitiesPerSecond is a moving average over about the last second.
	EntitiesPerSecond float64
}

// hotWindow is the time constant of the moving rate.
const hotWindow = time.Second

// hotTracker is the Meter's per-partition rate estimate.
type hotTracker struct {
	mu    sync.Mutex
	parts map[partitionID]*partitionRate
}

type partitionID struct{ table, pk string }

type partitionRate struct {
	rate   float64   // entities per second, at last
	last   time.Time // last update
	warned time.Time // last warning
}

// decayed returns r's rate at now.
func (r *partitionRate) decayed(now time.Time) float64 {
	return r.rate * math.Exp(-now.Sub(r.last).Seconds()/hotWindow.Seconds())
}

// add records n entities written to a partition at now and returns its
// rate, and whether to warn (the rate is over threshold and the last
// warning is a minute old).
func (h *hotTracker) add(id partitionID, n int, now time.Time, threshold float64) (float64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.parts == nil {
		h.parts = map[partitionID]*partitionRate{}
	}
	r := h.parts[id]
	if r == nil {
		if len(h.parts) >= 10_000 {
			h.sweep(now)
		}
		r = &partitionRate{last: now}
		h.parts[id] = r
	}
	r.rate = r.decayed(now) + float64(n)/hotWindow.Seconds()
	r.last = now
	if threshold > 0 && r.rate >= threshold && now.Sub(r.warned) >= time.Minute {
		r.warned = now
		return r.rate, true
	}
	return r.rate, false
}

// sweep forgets partitions that have gone quiet.
func (h *hotTracker) sweep(now time.Time) {
	for id, r := range h.parts {
		if r.decayed(now) < 1 && now.Sub(r.warned) >= time.Minute {
			delete(h.parts, id)
		}
	}
}

// HotPartitions returns the partitions written at min entities per second
// or more, busiest first.
func (m *Meter) HotPartitions(min float64) []PartitionRate {
	now := time.Now()
	m.hot.mu.Lock()
	defer m.hot.mu.Unlock()
	var out []PartitionRate
	for id, r := range m.hot.parts {
		if rate := r.decayed(now); rate >= min {
			out = append(out, PartitionRate{Table: id.table, PartitionKey: id.pk, EntitiesPerSecond: rate})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].EntitiesPerSecond > out[j].EntitiesPerSecond })
	return out
}

// HotPartitionWarning configures the warning an Account logs when a
// partition is written near its target.
type HotPartitionWarning struct {
	// Logger receives the warning (nil: slog.Default()).
	Logger *slog.Logger
	// Fraction of PartitionTarget at which to warn (0: 0.8; negative: never).
	Fraction float64
}

// noteWrite records a table write that got an answer, and warns once a
// minute per partition when its rate nears the target.
func (p *meterPolicy) noteWrite(req *policy.Request, op string, resp *http.Response) {
	if resp.StatusCode >= 300 {
		return
	}
	var id partitionID
	n := 1
	if ws := stateOf(req); ws != nil {
		// tablekit's own writes say which partition they write, and how
		// many entities (a transaction's body is not worth parsing again).
		id, n = partitionID{ws.table, ws.pk}, ws.entities
	} else if table, pk, ok := keysFromPath(p.resourcePath(req.Raw().URL)); ok {
		id = partitionID{table, pk}
	} else {
		return // an insert or transaction from outside tablekit: not worth parsing
	}
	threshold := 0.0
	if p.hot != nil && p.hot.Fraction >= 0 {
		threshold = PartitionTarget * 0.8
		if p.hot.Fraction > 0 {
			threshold = PartitionTarget * p.hot.Fraction
		}
	}
	rate, warn := p.meter.hot.add(id, n, time.Now(), threshold)
	if warn {
		logger := p.hot.Logger
		if logger == nil {
			logger = slog.Default()
		}
		logger.Warn("tablekit: hot partition: writes near the partition target (the prepend/append anti-pattern? spread them over more partitions, e.g. with keys.ShardedKey)",
			"table", id.table, "partition", id.pk, "entities_per_second", int(rate), "target", PartitionTarget, "operation", op)
	}
}

// keysFromPath reads the table and PartitionKey of an entity URL path
// such as "/Orders(PartitionKey='a”b',RowKey='1')".
func keysFromPath(path string) (table, pk string, ok bool) {
	path, err := url.PathUnescape(path)
	if err != nil {
		return "", "", false
	}
	path = strings.TrimPrefix(path, "/")
	table, rest, found := strings.Cut(path, "(PartitionKey='")
	if !found {
		return "", "", false
	}
	var b strings.Builder
	for i := 0; i < len(rest); i++ {
		if rest[i] == '\'' {
			if i+1 < len(rest) && rest[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return table, b.String(), true
		}
		b.WriteByte(rest[i])
	}
	return "", "", false
}
