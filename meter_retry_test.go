package tablekit_test

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// busyOnce answers the first insert into table it sees with 503 Server Busy, as
// Azure's front end does, and sends everything else on.
type busyOnce struct {
	table string
	fired atomic.Bool
}

func (b *busyOnce) Do(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/"+b.table) && b.fired.CompareAndSwap(false, true) {
		body := `{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"The server is busy."}}}`
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Server Busy", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:  http.Header{"Content-Type": {"application/json"}, "X-Ms-Error-Code": {"ServerBusy"}},
			Body:    io.NopCloser(strings.NewReader(body)),
			Request: req}, nil
	}
	return http.DefaultClient.Do(req)
}

// The Meter counts retries and throttled answers beside requests: an
// insert answered 503 once and retried by the SDK is 2 requests, 1 retry
// and 1 throttled.
func TestMeterCountsRetriesAndThrottling(t *testing.T) {
	ctx := testCtx(t)
	name := testenv.TableName(t)
	busy := &busyOnce{table: name}
	tacct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{Transport: busy, Retry: policy.RetryOptions{RetryDelay: time.Millisecond, MaxRetryDelay: 10 * time.Millisecond}}})
	tbl, err := tablekit.OpenTable[wireItem](tacct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.DeleteTable(ctx) })
	before := tacct.Meter().Snapshot()
	if _, err := tbl.Insert(ctx, wireItem{PK: "p", RK: "r", N: 1}); err != nil {
		t.Fatal(err)
	}
	d := tacct.Meter().Snapshot().Sub(before)
	if d.Count("table", "InsertEntity") != 2 || countOf(d, "table", "InsertEntity").Retries != 1 || countOf(d, "table", "InsertEntity").Throttled != 1 {
		t.Errorf("insert answered 503 once: %v, retries %d, throttled %d; want 2 requests, 1 retry, 1 throttled",
			d, countOf(d, "table", "InsertEntity").Retries, countOf(d, "table", "InsertEntity").Throttled)
	}
	want := []tablekit.MeterCount{{Service: "table", Operation: "InsertEntity", Requests: 2, Retries: 1, Throttled: 1}}
	if got := d.Counts(); len(got) != 1 || got[0] != want[0] {
		t.Errorf("Counts() = %+v, want %+v", got, want)
	}
	// A call that needed no retry counts none.
	before = tacct.Meter().Snapshot()
	if _, err := tbl.Get(ctx, "p", "r"); err != nil {
		t.Fatal(err)
	}
	if d := tacct.Meter().Snapshot().Sub(before); d.Count("table", "GetEntity") != 1 || countOf(d, "table", "GetEntity").Retries != 0 || countOf(d, "table", "GetEntity").Throttled != 0 {
		t.Errorf("plain read: %v, retries %d, throttled %d", d, countOf(d, "table", "GetEntity").Retries, countOf(d, "table", "GetEntity").Throttled)
	}
}

// countOf returns the count of one operation of service in s.
func countOf(s tablekit.MeterSnapshot, service, operation string) tablekit.MeterCount {
	for _, c := range s.Counts() {
		if c.Service == service && c.Operation == operation {
			return c
		}
	}
	return tablekit.MeterCount{Service: service, Operation: operation}
}
