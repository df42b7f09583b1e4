package patterns

import (
	"context"
	"time"
)

// What the tests of package patterns_test check beyond the exported API:
// the physical layout of wide and large entities.

// WidePartKey is widePartKey.
func WidePartKey(rk string, part int) (string, error) { return widePartKey(rk, part) }

// The bookkeeping properties and limits of Wide.
const (
	WideStampProperty     = wideStampProperty
	WideManifestProperty  = wideManifestProperty
	MaxWideParts          = maxWideParts
	MaxWidePartProperties = maxPartProperties
)

// Parts returns the number of physical entities the logical entity spans
// now (0 when it does not exist): one range query, repeated as Get's.
func (w *Wide[T]) Parts(ctx context.Context, pk, rk string) (int, error) {
	parts, err := w.readVersion(ctx, pk, rk)
	return len(parts), err
}

// BlobRef is blobRef.
type BlobRef = blobRef

// The defaults of LargeOptions.
const (
	DefaultRefProperty = defaultRefProperty
	DefaultLargeGrace  = defaultLargeGrace
)

// Refs returns the blob references of an entity, by property name: one
// point query.
func (l *Large[T]) Refs(ctx context.Context, pk, rk string) (map[string]BlobRef, error) {
	refs, _, err := l.readRefs(ctx, pk, rk)
	return refs, err
}

// Partitions returns the timeline's PartitionKeys, one per shard.
func (s *Timeline[T]) Partitions() []string { return append([]string(nil), s.pks...) }

// Start, Add, Stamp and Parse are what a Period does.
func (p Period) Start(t time.Time) time.Time           { return p.p.start(t) }
func (p Period) Add(start time.Time, n int) time.Time  { return p.p.add(start, n) }
func (p Period) Stamp(start time.Time) string          { return p.p.stamp(start) }
func (p Period) Parse(stamp string) (time.Time, error) { return p.p.parse(stamp) }

// Name returns the name of the table of the period holding t.
func (p *PeriodTables[T]) Name(t time.Time) string { return p.name(t) }
