package tablekit_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
)

func TestGovernorBacksOffAndLogs(t *testing.T) {
	var logs bytes.Buffer
	g := tablekit.NewGovernor(&tablekit.GovernorOptions{PartitionRate: 1000, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	busy := tablekit.WrapError("Transaction", &azcore.ResponseError{StatusCode: http.StatusServiceUnavailable, ErrorCode: "ServerBusy"})
	if !tablekit.IsThrottled(busy) || tablekit.IsThrottled(errors.New("other")) || tablekit.IsThrottled(nil) {
		t.Fatal("IsThrottled is wrong")
	}
	if err := g.Wait(ctx, "hot", 10); err != nil {
		t.Fatal(err)
	}
	g.Done("hot", 10, busy)
	if r := g.Rate("hot"); r != 850 {
		t.Errorf("rate after a throttle = %v, want 850", r)
	}
	if r := g.Rate("cold"); r != 1000 {
		t.Errorf("an untouched partition's rate = %v, want 1000", r)
	}
	if !strings.Contains(logs.String(), "partition=hot") || !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("no warning naming the partition: %q", logs.String())
	}
	// A cancelled context ends the wait and releases the reservation.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for range 3 {
		if err := g.Wait(cctx, "hot", 1000); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		} else if err == nil {
			g.Done("hot", 1000, nil)
		}
	}
}
