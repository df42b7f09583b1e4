// Package spantest records the spans a tracing.Provider is asked for, so
// tests can check them without importing OpenTelemetry.
package spantest

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
)

// Recorder records spans with their parents, found through the context
// as OpenTelemetry finds them. It is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	spans []*Span
}

// Span is one recorded span. Name, Parent and Attrs are set when the span
// starts and never change; Ended and Failed may change while it is read.
type Span struct {
	Name   string
	Parent *Span          // nil for a root span
	Attrs  map[string]any // the attributes it was started with
	ended  atomic.Bool
	failed atomic.Bool
}

type spanKey struct{}

// Provider returns a tracing.Provider whose spans r records.
func (r *Recorder) Provider() tracing.Provider {
	return tracing.NewProvider(func(name, version string) tracing.Tracer {
		return tracing.NewTracer(func(ctx context.Context, spanName string, o *tracing.SpanOptions) (context.Context, tracing.Span) {
			s := &Span{Name: spanName, Parent: FromContext(ctx), Attrs: map[string]any{}}
			if o != nil {
				for _, a := range o.Attributes {
					s.Attrs[a.Key] = a.Value
				}
			}
			r.mu.Lock()
			r.spans = append(r.spans, s)
			r.mu.Unlock()
			return context.WithValue(ctx, spanKey{}, s), tracing.NewSpan(tracing.SpanImpl{
				End: func() { s.ended.Store(true) },
				SetStatus: func(code tracing.SpanStatus, _ string) {
					if code == tracing.SpanStatusError {
						s.failed.Store(true)
					}
				},
			})
		}, nil)
	}, nil)
}

// Spans returns the spans recorded so far, in the order they started.
func (r *Recorder) Spans() []*Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Span(nil), r.spans...)
}

// Paths returns the Path of each span recorded so far, in start order.
func (r *Recorder) Paths() []string {
	var out []string
	for _, s := range r.Spans() {
		out = append(out, s.Path())
	}
	return out
}

// FromContext returns the recorded span ctx carries, or nil.
func FromContext(ctx context.Context) *Span {
	s, _ := ctx.Value(spanKey{}).(*Span)
	return s
}

// Ended reports whether s has ended.
func (s *Span) Ended() bool { return s.ended.Load() }

// Failed reports whether s's status was ever set to error.
func (s *Span) Failed() bool { return s.failed.Load() }

// Path returns the names from the root span down to s, joined by " > ";
// it is "" for a nil s.
func (s *Span) Path() string {
	var names []string
	for ; s != nil; s = s.Parent {
		names = append([]string{s.Name}, names...)
	}
	return strings.Join(names, " > ")
}
