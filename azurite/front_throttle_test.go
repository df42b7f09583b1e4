package azurite_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/azurite"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func (env *frontEnv) testThrottle(t *testing.T) {
	ctx := ctxFor(t)
	// The table is created before the throttled fronts exist.
	tableClient(t, env.srv.ConnectionString(), "throttled")

	t.Run("partition", func(t *testing.T) {
		clock := newFakeClock()
		f := env.newFront(t, &azurite.FrontOptions{Throttle: azurite.WithClock(&azurite.ThrottleOptions{PartitionRate: 10, AccountRate: 1000}, clock.now)})
		c := serviceClient(t, f.ConnectionString()).NewClient("throttled")
		insert := func(pk string, i int) error {
			_, err := c.UpsertEntity(ctx, entity(pk, fmt.Sprint(i), nil), nil)
			return err
		}
		for i := range 10 {
			if err := insert("hot", i); err != nil {
				t.Fatalf("write %d of 10 within the partition's burst: %v", i, err)
			}
		}
		re := wantError(t, "11th write in the same second", insert("hot", 10), http.StatusServiceUnavailable, "ServerBusy")
		body, _ := runtime.Payload(re.RawResponse)
		if !strings.HasPrefix(string(body), `{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"The server is busy.`) {
			t.Fatalf("503 body: %s", body)
		}
		if err := insert("cold", 0); err != nil {
			t.Fatalf("another partition is not throttled: %v", err)
		}
		_, err := c.GetEntity(ctx, "hot", "0", nil)
		wantError(t, "a point read in the hot partition", err, http.StatusServiceUnavailable, "ServerBusy")
		if n := count(t, c, "PartitionKey eq 'hot'"); n != 10 {
			t.Fatalf("queries take no partition tokens, and the throttled write was not stored: %d entities", n)
		}

		clock.advance(100 * time.Millisecond) // one token
		if err := insert("hot", 11); err != nil {
			t.Fatalf("after the bucket refilled one token: %v", err)
		}
		wantError(t, "the next write", insert("hot", 12), http.StatusServiceUnavailable, "ServerBusy")

		// A batch of 20 takes 20 tokens: more than the bucket holds, so it
		// passes only when the bucket is full, and leaves it in debt.
		clock.advance(time.Second)
		var batch []aztables.TransactionAction
		for i := range 20 {
			batch = append(batch, aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertMerge, Entity: entity("hot", fmt.Sprint("b", i), nil)})
		}
		if _, err := c.SubmitTransaction(ctx, batch, nil); err != nil {
			t.Fatalf("batch of 20 on a full bucket: %v", err)
		}
		clock.advance(time.Second) // 10 tokens earned back: the bucket is at 0
		wantError(t, "write a second after a batch of 20", insert("hot", 13), http.StatusServiceUnavailable, "ServerBusy")
		clock.advance(100 * time.Millisecond)
		if err := insert("hot", 14); err != nil {
			t.Fatalf("write once the debt is paid: %v", err)
		}

		s := f.Stats()
		if s.ThrottledPartition != 4 || s.ThrottledAccount != 0 || s.Throttled != 4 {
			t.Fatalf("stats: %+v", s)
		}
	})

	t.Run("account", func(t *testing.T) {
		clock := newFakeClock()
		f := env.newFront(t, &azurite.FrontOptions{Throttle: azurite.WithClock(&azurite.ThrottleOptions{AccountRate: 3, PartitionRate: -1}, clock.now)})
		q := noRetryQueue(t, f.ConnectionString()).NewQueueClient("throttled-account")
		if _, err := q.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if _, err := q.EnqueueMessage(ctx, "m", nil); err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
		}
		_, err := q.EnqueueMessage(ctx, "m", nil)
		re := wantError(t, "4th request in a second", err, http.StatusServiceUnavailable, "ServerBusy")
		body, _ := runtime.Payload(re.RawResponse)
		if !strings.HasPrefix(string(body), `<?xml version="1.0" encoding="utf-8"?><Error><Code>ServerBusy</Code><Message>Operations per second is over the account limit.`) {
			t.Fatalf("queue 503 body: %s", body)
		}
		// The account's bucket is shared by every service, and a batch
		// takes one token from it however large.
		c := serviceClient(t, f.ConnectionString()).NewClient("throttled")
		_, err = c.GetEntity(ctx, "x", "y", nil)
		wantError(t, "table request on an exhausted account", err, http.StatusServiceUnavailable, "ServerBusy")
		clock.advance(time.Second)
		for i := range 3 {
			if _, err := c.SubmitTransaction(ctx, adds(fmt.Sprint("acct", i), 50, nil), nil); err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
		}
		_, err = c.SubmitTransaction(ctx, adds("acct9", 1, nil), nil)
		wantError(t, "4th batch", err, http.StatusServiceUnavailable, "ServerBusy")
		if s := f.Stats(); s.ThrottledAccount != 3 || s.ThrottledPartition != 0 {
			t.Fatalf("stats: %+v", s)
		}
	})

	t.Run("rates", func(t *testing.T) {
		for _, tc := range []struct {
			o          azurite.ThrottleOptions
			part, acct float64
		}{
			{azurite.ThrottleOptions{}, 2000, 20000},
			{azurite.ThrottleOptions{PartitionRate: 7}, 7, 20000},
			{azurite.ThrottleOptions{AccountRate: -1}, 2000, -1},
		} {
			if p, a := azurite.Rates(&tc.o); p != tc.part || a != tc.acct {
				t.Errorf("%+v: rates %v, %v; want %v, %v", tc.o, p, a, tc.part, tc.acct)
			}
		}
	})
}

func noRetryQueue(t *testing.T, cs string) *azqueue.ServiceClient {
	t.Helper()
	opts := &azqueue.ClientOptions{}
	opts.Retry.MaxRetries = -1
	svc, err := azqueue.NewServiceClientFromConnectionString(cs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func (env *frontEnv) testLatency(t *testing.T) {
	ctx := ctxFor(t)
	const latency = 40 * time.Millisecond
	f := env.newFront(t, &azurite.FrontOptions{Latency: latency})
	c := tableClient(t, f.ConnectionString(), "latency")
	for i := range 3 {
		start := time.Now()
		if _, err := c.UpsertEntity(ctx, entity("p", fmt.Sprint(i), nil), nil); err != nil {
			t.Fatal(err)
		}
		// A lower bound only: the front waits before it forwards.
		if d := time.Since(start); d < latency {
			t.Fatalf("request %d took %v, less than the front's latency %v", i, d, latency)
		}
	}
	if s := f.Stats(); s.Requests != 4 {
		t.Fatalf("stats: %+v (want 4 requests: create table and 3 writes)", s)
	}
}
