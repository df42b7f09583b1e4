package transfer

import (
	"context"
	"time"

	"github.com/tablekit/tablekit"
)

// PurgeWithClock is Purge with clock measuring the Budget (tests).
func PurgeWithClock(ctx context.Context, t *tablekit.Table[tablekit.Entity], opts *PurgeOptions, clock func() time.Time) (PurgeResult, error) {
	return purge(ctx, t, opts, clock)
}
