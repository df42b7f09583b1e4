package tablekit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/wire"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func TestGovernorBacksOffAndLogs(t *testing.T) {
	var logs bytes.Buffer
	g := tablekit.NewGovernor(&tablekit.GovernorOptions{PartitionRate: 1000, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	busy := wire.Wrap("Transaction", "", "", "", &azcore.ResponseError{StatusCode: http.StatusServiceUnavailable, ErrorCode: "ServerBusy"})
	if !wire.IsThrottled(busy) || wire.IsThrottled(errors.New("other")) || wire.IsThrottled(nil) {
		t.Fatal("IsThrottled is wrong")
	}
	if err := tablekit.GovernorWait(ctx, g, "T", "hot", 10); err != nil {
		t.Fatal(err)
	}
	tablekit.GovernorDone(g, "T", "hot", 10, busy)
	if r := tablekit.GovernorRate(g, "T", "hot"); r != 850 {
		t.Errorf("rate after a throttle = %v, want 850", r)
	}
	if r := tablekit.GovernorRate(g, "T", "cold"); r != 1000 {
		t.Errorf("an untouched partition's rate = %v, want 1000", r)
	}
	if r := tablekit.GovernorRate(g, "U", "hot"); r != 1000 {
		t.Errorf("partition hot of another table = %v, want 1000: partitions are per table", r)
	}
	if !strings.Contains(logs.String(), "table=T partition=hot") || !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("no warning naming the partition: %q", logs.String())
	}
	// A cancelled context ends the wait and releases the reservation.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for range 3 {
		if err := tablekit.GovernorWait(cctx, g, "T", "hot", 1000); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		} else if err == nil {
			tablekit.GovernorDone(g, "T", "hot", 1000, nil)
		}
	}
}

// busyBatchOnce answers the first entity group transaction with 503
// ServerBusy, as Azure's front end does, and sends everything else on.
type busyBatchOnce struct{ fired atomic.Bool }

func (b *busyBatchOnce) Do(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/$batch") && b.fired.CompareAndSwap(false, true) {
		return serverBusy(req), nil
	}
	return http.DefaultClient.Do(req)
}

// serverBusy is Azure's 503 ServerBusy answer to req.
func serverBusy(req *http.Request) *http.Response {
	body := `{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"The server is busy."}}}`
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Server Busy", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}, "X-Ms-Error-Code": {"ServerBusy"}},
		Body:    io.NopCloser(strings.NewReader(body)),
		Request: req}
}

// TestTablesShareTheAccountsGovernor: BulkWriters without a Governor of
// their own use their Table's, which for tables opened through an Account
// is the Account's: a throttle met by one writer slows the partition for
// the next writer and for other tables of the account.
func TestTablesShareTheAccountsGovernor(t *testing.T) {
	ctx := testCtx(t)
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{Transport: &busyBatchOnce{}, Retry: policy.RetryOptions{RetryDelay: time.Millisecond, MaxRetryDelay: 10 * time.Millisecond}}, Logger: slog.New(slog.DiscardHandler)})
	name := testenv.TableName(t)
	tbl, err := tablekit.OpenTable[wireItem](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := tablekit.OpenTable[tablekit.Entity](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Account().Governor() != acct.Governor() || other.Account().Governor() != acct.Governor() || other.AsEntities().Account().Governor() != acct.Governor() {
		t.Fatal("tables opened through one Account do not share its Governor")
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.DeleteTable(ctx) })

	items := make([]wireItem, 10)
	for i := range items {
		items[i] = wireItem{PK: "p", RK: fmt.Sprint(i), N: i}
	}
	res, err := tbl.BulkWriter(nil).Upsert(ctx, items)
	if err != nil || res.Succeeded != len(items) {
		t.Fatalf("bulk upsert after one 503: %+v, %v", res, err)
	}
	if r := acct.Governor().Rate(name, "p"); r >= limits.PartitionTarget {
		t.Errorf("the Account's Governor lets partition p through at %v/s after a 503, want less than %v", r, float64(limits.PartitionTarget))
	}
	if other.Account().Governor().Rate(other.Name(), "p") != acct.Governor().Rate(name, "p") {
		t.Error("another table of the account does not see the cut")
	}
}

// busyInsertOnce answers the first entity insert with 503 ServerBusy and
// sends everything else on, so the SDK's retry of it succeeds.
type busyInsertOnce struct{ fired atomic.Bool }

func (b *busyInsertOnce) Do(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && !strings.HasSuffix(req.URL.Path, "/Tables") && !strings.HasSuffix(req.URL.Path, "/$batch") && b.fired.CompareAndSwap(false, true) {
		return serverBusy(req), nil
	}
	return http.DefaultClient.Do(req)
}

// TestGovernorDoHearsEveryThrottledTry: a write run through Governor.Do
// whose first try is throttled and whose SDK retry succeeds still slows
// the partition down: the Governor hears the throttled try as it happens,
// not only the write's final (successful) outcome.
func TestGovernorDoHearsEveryThrottledTry(t *testing.T) {
	ctx := testCtx(t)
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{Transport: &busyInsertOnce{}, Retry: policy.RetryOptions{RetryDelay: time.Millisecond, MaxRetryDelay: 10 * time.Millisecond}}, Logger: slog.New(slog.DiscardHandler)})
	tbl, err := tablekit.OpenTable[wireItem](acct, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.DeleteTable(ctx) })
	gov := tbl.Account().Governor()
	err = gov.Do(ctx, tbl.Name(), "p", 1, func(ctx context.Context) error {
		_, err := tbl.Insert(ctx, wireItem{PK: "p", RK: "r", N: 1})
		return err
	})
	if err != nil {
		t.Fatalf("insert retried by the SDK after one 503: %v", err)
	}
	if r := tablekit.GovernorRate(gov, tbl.Name(), "p"); r >= limits.PartitionTarget {
		t.Errorf("after a throttled try, partition p runs at %v/s, want less than %v", r, float64(limits.PartitionTarget))
	}
}
