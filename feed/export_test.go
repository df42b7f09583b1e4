package feed

import (
	"context"
	"time"

	"github.com/tablekit/tablekit/stream"
)

// Mark marks stream id dirty with target, as Append does before it
// appends: the tests' way to set a mark whose append has not landed.
func Mark(ctx context.Context, f *Feed, id stream.ID, target int64) error {
	return f.mark(ctx, id, target)
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
