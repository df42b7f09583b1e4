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

// CopyWithBulk is Copy writing with a BulkWriter of bulk's options (tests).
func CopyWithBulk(ctx context.Context, src, dst *tablekit.Table[tablekit.Entity], mode Mode, opts *Options, bulk *tablekit.BulkOptions) (CopyResult, error) {
	return copyTable(ctx, src, dst, mode, opts, bulk)
}
