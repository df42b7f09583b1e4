package feed

import (
	"context"
	"slices"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/stream"
)

// Mark writes a pending mark of stream id with target, as Append does
// before an append of one event: the tests' way to set a mark whose
// append has not landed.
func Mark(ctx context.Context, f *Feed, id stream.ID, target int64) error {
	_, err := f.mark(ctx, id, target, target, "")
	return err
}

// MarkLegacy marks stream id dirty with target as an earlier version of
// this package did: its directory row, with Dirty and Target.
func MarkLegacy(ctx context.Context, f *Feed, id stream.ID, target int64) error {
	pk, rk := f.dirKey(id)
	row := f.dirRow(pk, rk, id)
	row.Properties[propDirty], row.Properties[propTarget] = true, target
	_, err := f.t.Upsert(ctx, row)
	return err
}

// Marks returns the targets of the pending marks of every stream, in
// ascending order.
func Marks(ctx context.Context, f *Feed) (map[stream.ID][]int64, error) {
	marks := map[stream.ID][]int64{}
	for s := range f.shards {
		for e, err := range f.t.Query(ctx, tablekit.RowKeyRange(shardPK(s), pendingPrefix, pendingPrefix+"~"), nil) {
			if err != nil {
				return nil, err
			}
			t, _ := e.Properties[propTarget].(int64)
			id := streamOf(e)
			marks[id] = append(marks[id], t)
		}
	}
	for _, ts := range marks {
		slices.Sort(ts) // in key order on Table storage already; Cosmos DB keeps none
	}
	return marks, nil
}

// DirKey returns the keys of stream id's directory row.
func DirKey(f *Feed, id stream.ID) (pk, rk string) { return f.dirKey(id) }

// CheckpointKey returns the keys of subscription sub's checkpoint of
// stream id.
func CheckpointKey(sub string, id stream.ID) (pk, rk string) { return cpPrefix + sub, streamKey(id) }

// SetClock makes now the clock of r's lag figures (Relay.Stats).
func SetClock(r *Relay, now func() time.Time) {
	r.lagMu.Lock()
	defer r.lagMu.Unlock()
	r.now = now
}
