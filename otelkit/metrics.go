package otelkit

import (
	"context"
	"errors"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/feed"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ScopeName is the instrumentation scope of the metrics this package
// registers.
const ScopeName = "github.com/tablekit/tablekit/otelkit"

// Metric names and attribute keys.
const (
	// MetricRequests counts storage requests answered by the service
	// (each try counts: storage bills per try), by service and operation.
	MetricRequests = "tablekit.requests"
	// MetricRetries counts the requests that were retries of a call.
	MetricRetries = "tablekit.retries"
	// MetricThrottled counts the answers 503 Server Busy and 429.
	MetricThrottled = "tablekit.throttled"
	// MetricWorkerMessages counts an archive Worker's messages by outcome.
	MetricWorkerMessages = "tablekit.worker.messages"
	// MetricWorkerQueueAge is how long the messages of an archive Worker's
	// latest dequeue had waited in the queue, in seconds (the oldest of
	// them; 0 once the worker found the queue empty): its lag behind the
	// queue (archive.Stats.QueueAge).
	MetricWorkerQueueAge = "tablekit.worker.queue_age"
	// MetricWorkerConcurrency is how many handlers an archive Worker lets
	// run at once now: its Concurrency option, or fewer while throttled
	// handlers make it back off (archive.Stats.Concurrency).
	MetricWorkerConcurrency = "tablekit.worker.concurrency"
	// MetricFeedLag is, by subscription of a feed Relay, how long ago a
	// round last caught the subscription up, in seconds: every event
	// appended before then has reached its view, and it keeps growing
	// while the relay is stalled (feed.RelayStats.Lag). Only the leading
	// relay reports it.
	MetricFeedLag = "tablekit.feed.lag"

	// AttrService is "table", "queue" or "blob".
	AttrService = "tablekit.service"
	// AttrOperation is the REST operation ("InsertEntity", "Transaction",
	// "GetMessages", ...), as tablekit.Meter names it.
	AttrOperation = "tablekit.operation"
	// AttrOutcome is what happened to a worker's messages: received,
	// succeeded, failed (throttled: those of them that failed throttled),
	// poisoned, renewed, lost or abandoned (see archive.Stats).
	AttrOutcome = "tablekit.outcome"
	// AttrQueue is the worker's queue (OpenTelemetry's messaging
	// convention).
	AttrQueue = "messaging.destination.name"
	// AttrSubscription is a feed subscription's name
	// (feed.Subscription.Name).
	AttrSubscription = "tablekit.subscription"
)

// RegisterMeter reports m's counts through mp as three asynchronous
// counters (MetricRequests, MetricRetries, MetricThrottled) with the
// attributes AttrService and AttrOperation, plus attrs. The counts are read
// from m at each collection. Unregister the returned Registration to stop.
func RegisterMeter(mp metric.MeterProvider, m *tablekit.Meter, attrs ...attribute.KeyValue) (metric.Registration, error) {
	if mp == nil || m == nil {
		return nil, errors.New("otelkit.RegisterMeter: nil MeterProvider or Meter")
	}
	meter := mp.Meter(ScopeName)
	requests, err1 := meter.Int64ObservableCounter(MetricRequests, metric.WithUnit("{request}"), metric.WithDescription("Storage requests answered by the service (each try counts)."))
	retries, err2 := meter.Int64ObservableCounter(MetricRetries, metric.WithUnit("{request}"), metric.WithDescription("Storage requests that were retries of a call."))
	throttled, err3 := meter.Int64ObservableCounter(MetricThrottled, metric.WithUnit("{request}"), metric.WithDescription("Storage requests answered 503 Server Busy or 429."))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, c := range m.Snapshot().Counts() {
			set := metric.WithAttributes(append([]attribute.KeyValue{attribute.String(AttrService, c.Service), attribute.String(AttrOperation, c.Operation)}, attrs...)...)
			o.ObserveInt64(requests, c.Requests, set)
			o.ObserveInt64(retries, c.Retries, set)
			o.ObserveInt64(throttled, c.Throttled, set)
		}
		return nil
	}, requests, retries, throttled)
}

// RegisterWorker reports w's figures (archive.Stats) through mp, with the
// attribute AttrQueue plus attrs, read from w at each collection: its
// message counts as the asynchronous counter MetricWorkerMessages (with
// AttrOutcome), how long messages waited in the queue as the gauge
// MetricWorkerQueueAge (seconds), and its current concurrency as the
// gauge MetricWorkerConcurrency. Unregister the returned Registration to
// stop.
func RegisterWorker(mp metric.MeterProvider, w *archive.Worker, attrs ...attribute.KeyValue) (metric.Registration, error) {
	if mp == nil || w == nil {
		return nil, errors.New("otelkit.RegisterWorker: nil MeterProvider or Worker")
	}
	meter := mp.Meter(ScopeName)
	messages, err1 := meter.Int64ObservableCounter(MetricWorkerMessages, metric.WithUnit("{message}"), metric.WithDescription("Messages an archive Worker handled, by outcome."))
	age, err2 := meter.Float64ObservableGauge(MetricWorkerQueueAge, metric.WithUnit("s"), metric.WithDescription("How long the messages of an archive Worker's latest dequeue had waited in the queue (0 once it found the queue empty)."))
	limit, err3 := meter.Int64ObservableGauge(MetricWorkerConcurrency, metric.WithUnit("{handler}"), metric.WithDescription("Handlers an archive Worker lets run at once (fewer while the service throttles them)."))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	queue := append([]attribute.KeyValue{attribute.String(AttrQueue, w.Name())}, attrs...)
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := w.Stats()
		for _, c := range []struct {
			outcome string
			n       int64
		}{{"received", s.Received}, {"succeeded", s.Succeeded}, {"failed", s.Failed}, {"throttled", s.Throttled}, {"poisoned", s.Poisoned}, {"renewed", s.Renewed}, {"lost", s.Lost}, {"abandoned", s.Abandoned}} {
			o.ObserveInt64(messages, c.n, metric.WithAttributes(append([]attribute.KeyValue{attribute.String(AttrOutcome, c.outcome)}, queue...)...))
		}
		o.ObserveFloat64(age, s.QueueAge.Seconds(), metric.WithAttributes(queue...))
		o.ObserveInt64(limit, int64(s.Concurrency), metric.WithAttributes(queue...))
		return nil
	}, messages, age, limit)
}

// RegisterRelay reports r's lag (feed.RelayStats.Lag) through mp as the
// gauge MetricFeedLag (seconds), one point per subscription with the
// attribute AttrSubscription plus attrs, read from r at each collection.
// A relay that does not lead reports no point: alert on the series'
// absence as well as on its value (see the feed package doc, "Lag").
// Unregister the returned Registration to stop.
func RegisterRelay(mp metric.MeterProvider, r *feed.Relay, attrs ...attribute.KeyValue) (metric.Registration, error) {
	if mp == nil || r == nil {
		return nil, errors.New("otelkit.RegisterRelay: nil MeterProvider or Relay")
	}
	meter := mp.Meter(ScopeName)
	lag, err := meter.Float64ObservableGauge(MetricFeedLag, metric.WithUnit("s"), metric.WithDescription("How long ago a feed relay's round last caught the subscription up: every event appended before then has reached it."))
	if err != nil {
		return nil, err
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for name, d := range r.Stats().Lag {
			o.ObserveFloat64(lag, d.Seconds(), metric.WithAttributes(append([]attribute.KeyValue{attribute.String(AttrSubscription, name)}, attrs...)...))
		}
		return nil
	}, lag)
}
