package otelkit_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/feed"
	"github.com/tablekit/tablekit/otelkit"
	"github.com/tablekit/tablekit/stream"
	"github.com/tablekit/tablekit/tablekittest"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// A feed relay's lag read through an OpenTelemetry reader, with a real
// relay (Run, by lease) and real appends: none before it leads; the lag
// of a subscription stuck on an event keeps growing with the clock, one
// that keeps up stays below it; none once Run has returned.
func TestRelayMetrics(t *testing.T) {
	ctx := testCtx(t)
	acct := tablekittest.Account(t, nil)
	reg := &tablekit.Registry{}
	if err := tablekit.Register[item](reg, "item", 1); err != nil {
		t.Fatal(err)
	}
	store, err := stream.NewStore(tablekittest.OpenTable[tablekit.Entity](t, acct, nil), reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ft := tablekittest.OpenTable[tablekit.Entity](t, acct, nil)
	f, err := feed.New(store, ft, nil)
	if err != nil {
		t.Fatal(err)
	}
	good, bad := stream.ID{PartitionKey: "good"}, stream.ID{PartitionKey: "bad"}
	var handled, failures atomic.Int64
	relay, err := f.NewRelay([]feed.Subscription{
		{Name: "view", Handle: func(context.Context, feed.Change) error { handled.Add(1); return nil }},
		{Name: "stuck", Handle: func(_ context.Context, c feed.Change) error {
			if c.Stream == bad {
				failures.Add(1)
				return errors.New("cannot handle it")
			}
			return nil
		}},
	}, &feed.RelayOptions{Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	registration, err := otelkit.RegisterRelay(mp, relay, attribute.String("app", "test"))
	if err != nil {
		t.Fatal(err)
	}
	defer registration.Unregister()

	if got := collectLag(t, ctx, reader); len(got) != 0 {
		t.Errorf("before the relay runs: %v, want no points", got)
	}
	lease, err := coord.NewLease(ft, "lease", "relay", "me", nil)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- relay.Run(rctx, lease) }()

	if _, err := f.Append(ctx, good, 0, []stream.Event{{Data: item{N: 1}}}); err != nil {
		t.Fatal(err)
	}
	for handled.Load() < 1 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := f.Append(ctx, bad, 0, []stream.Event{{Data: item{N: 2}}}); err != nil {
		t.Fatal(err)
	}
	// Two failing rounds: the first began after "stuck"'s last good round,
	// and "view" was caught up by it.
	for failures.Load() < 2 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	before := relay.Stats().Lag["stuck"]
	first := collectLag(t, ctx, reader)
	after := relay.Stats().Lag["stuck"]
	if s := first["stuck"]; s < before.Seconds() || s > after.Seconds() {
		t.Errorf("stuck: %v s, want between Stats before (%v) and after (%v)", s, before, after)
	}
	if first["view"] >= first["stuck"] {
		t.Errorf("view %v s, stuck %v s: want view's lag below stuck's", first["view"], first["stuck"])
	}
	const pause = 300 * time.Millisecond
	time.Sleep(pause)
	second := collectLag(t, ctx, reader)
	if grew := second["stuck"] - first["stuck"]; grew < pause.Seconds() {
		t.Errorf("stuck grew by %v s in a pause of %v: want at least the pause", grew, pause)
	}
	if second["view"] >= second["stuck"] {
		t.Errorf("view %v s, stuck %v s: want view's lag below stuck's", second["view"], second["stuck"])
	}
	t.Logf("lags: %v, then %v", first, second)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
	if got := collectLag(t, ctx, reader); len(got) != 0 {
		t.Errorf("after Run returned: %v, want no points", got)
	}
}

// collectLag reads MetricFeedLag from reader by subscription. Every
// point must carry the registration's attribute.
func collectLag(t *testing.T, ctx context.Context, reader *sdkmetric.ManualReader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != otelkit.MetricFeedLag {
				t.Errorf("unexpected metric %s", m.Name)
				continue
			}
			if m.Unit != "s" {
				t.Errorf("%s in %q, want s", m.Name, m.Unit)
			}
			g, ok := m.Data.(metricdata.Gauge[float64])
			if !ok {
				t.Errorf("%s is a %T, want a float64 gauge", m.Name, m.Data)
				continue
			}
			for _, dp := range g.DataPoints {
				sub, _ := dp.Attributes.Value(otelkit.AttrSubscription)
				if app, _ := dp.Attributes.Value("app"); app.AsString() != "test" {
					t.Errorf("point without the registration's attribute: %v", dp.Attributes)
				}
				got[sub.AsString()] = dp.Value
			}
		}
	}
	return got
}
