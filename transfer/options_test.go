package transfer_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/transfer"
)

// TestOptionsOutOfRange: options out of their range are refused before
// anything is sent, with an error that names the option and its range,
// never a crash. (An import with BatchSize 1,000,000,000 died of a fatal
// out-of-memory error; a Concurrency or Transactions that large started
// that many goroutines.)
func TestOptionsOutOfRange(t *testing.T) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	tbl := newTable(t, acct)
	seedMany(t, tbl, 2, 10)
	before := acct.Meter().Snapshot()
	stream := exportStream(t, nil, time.Now())
	for _, tc := range []struct {
		name, option string
		run          func() error
	}{
		{"import batch", "BatchSize", func() error {
			_, err := transfer.Import(ctx, tbl, bytes.NewReader(stream), transfer.Insert, &transfer.ImportOptions{BatchSize: 1_000_000_000})
			return err
		}},
		{"export concurrency", "Concurrency", func() error {
			_, err := transfer.Export(ctx, tbl, &bytes.Buffer{}, &transfer.Options{Concurrency: 1_000_000_000})
			return err
		}},
		{"count concurrency", "Concurrency", func() error {
			_, err := transfer.Count(ctx, tbl, &transfer.Options{Concurrency: math.MaxInt})
			return err
		}},
		{"copy probes", "MaxProbes", func() error {
			_, err := transfer.Copy(ctx, tbl, tbl, transfer.Insert, &transfer.Options{MaxProbes: math.MaxInt})
			return err
		}},
		{"purge transactions", "Transactions", func() error {
			_, err := transfer.Purge(ctx, tbl, &transfer.PurgeOptions{Transactions: 1_000_000_000})
			return err
		}},
		{"purge page size", "PageSize", func() error {
			_, err := transfer.Purge(ctx, tbl, &transfer.PurgeOptions{Options: transfer.Options{PageSize: 1001}})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if !errors.Is(err, tablekit.ErrInvalidInput) || !strings.Contains(err.Error(), tc.option) {
				t.Errorf("%v: want an error matching ErrInvalidInput that names %s", err, tc.option)
			}
		})
	}
	if _, err := transfer.NewTableCheckpoint(tbl, strings.Repeat("j", 513)); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("a job name of 513 characters: %v, want ErrInvalidKey", err)
	}
	if d := acct.Meter().Snapshot().Sub(before); d.Service("table") != 0 {
		t.Errorf("refused options sent %v", d)
	}
}
