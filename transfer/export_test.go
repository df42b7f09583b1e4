package transfer

import (
	"context"
	"io"
	"time"

	"github.com/tablekit/tablekit"
)

// PurgeWithClock is Purge with clock measuring the Budget (tests).
func PurgeWithClock(ctx context.Context, t *tablekit.Table[tablekit.Entity], opts *PurgeOptions, clock func() time.Time) (PurgeResult, error) {
	return purge(ctx, t, opts, clock, nil)
}

// PurgeObserved is Purge calling accepted with each page the purge takes
// to delete, as it takes it (after a split range cut it at its new end):
// what the purge listed, where a tap of the service's answers also sees
// pages cut short and answers lost on the way (tests).
func PurgeObserved(ctx context.Context, t *tablekit.Table[tablekit.Entity], opts *PurgeOptions, accepted func([]tablekit.Entity)) (PurgeResult, error) {
	return purge(ctx, t, opts, nil, accepted)
}

// CopyWithBulk is Copy writing with a BulkWriter of bulk's options (tests).
func CopyWithBulk(ctx context.Context, src, dst *tablekit.Table[tablekit.Entity], mode Mode, opts *Options, bulk *tablekit.BulkOptions) (CopyResult, error) {
	return copyTable(ctx, src, dst, mode, opts, bulk)
}

// ImportWithBulk is Import writing with a BulkWriter of bulk's options
// (tests).
func ImportWithBulk(ctx context.Context, t *tablekit.Table[tablekit.Entity], r io.Reader, mode Mode, opts *ImportOptions, bulk *tablekit.BulkOptions) (ImportResult, error) {
	return importStream(ctx, t, r, mode, opts, bulk)
}
