package tablekit_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testenv"
)

// spanRecorder is a tracing.Provider that records spans and their parents,
// found through the context as OpenTelemetry finds them.
type spanRecorder struct {
	mu    sync.Mutex
	spans []*recordedSpan
}

type recordedSpan struct {
	name   string
	parent *recordedSpan
	attrs  map[string]any
	ended  bool
}

type spanKey struct{}

func (r *spanRecorder) provider() tracing.Provider {
	return tracing.NewProvider(func(name, version string) tracing.Tracer {
		return tracing.NewTracer(func(ctx context.Context, spanName string, o *tracing.SpanOptions) (context.Context, tracing.Span) {
			s := &recordedSpan{name: spanName, attrs: map[string]any{}}
			s.parent, _ = ctx.Value(spanKey{}).(*recordedSpan)
			if o != nil {
				for _, a := range o.Attributes {
					s.attrs[a.Key] = a.Value
				}
			}
			r.mu.Lock()
			r.spans = append(r.spans, s)
			r.mu.Unlock()
			return context.WithValue(ctx, spanKey{}, s), tracing.NewSpan(tracing.SpanImpl{End: func() {
				r.mu.Lock()
				s.ended = true
				r.mu.Unlock()
			}})
		}, nil)
	}, nil)
}

// path returns the names from the root span down to s.
func (s *recordedSpan) path() string {
	var names []string
	for ; s != nil; s = s.parent {
		names = append([]string{s.name}, names...)
	}
	return strings.Join(names, " > ")
}

func (r *spanRecorder) paths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.spans {
		out = append(out, s.path())
	}
	return out
}

func TestTablekitSpansParentTheSDKs(t *testing.T) {
	rec := &spanRecorder{}
	acct := testenv.Account(t, &tablekit.Options{TracingProvider: rec.provider()})
	name := tableNameOf(t, acct)
	tbl, err := tablekit.OpenTable[wireItem](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := tbl.Transaction(ctx, tablekit.InsertAction(wireItem{PK: "p", RK: "1"})); err != nil {
		t.Fatal(err)
	}
	items := make([]wireItem, 150)
	for i := range items {
		items[i] = wireItem{PK: fmt.Sprint("q", i%2), RK: fmt.Sprint(i)}
	}
	if _, err := tbl.BulkWriter(nil).Upsert(ctx, items); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(rec.paths(), "\n")
	for _, want := range []string{
		"Table.Transaction > Client.SubmitTransaction > HTTP POST",
		"BulkWriter.Write > BulkWriter.Chunk > Client.SubmitTransaction > HTTP POST",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no span path %q in:\n%s", want, got)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	chunks := 0
	for _, s := range rec.spans {
		if !s.ended {
			t.Errorf("span %s not ended", s.path())
		}
		if s.name == "BulkWriter.Chunk" {
			chunks++
			if s.attrs["tablekit.table"] != name || s.attrs["tablekit.actions"] == nil {
				t.Errorf("chunk span attributes %v", s.attrs)
			}
		}
	}
	if chunks != 2 { // 75 entities in each of two partitions: one chunk each
		t.Errorf("%d chunk spans, want 2", chunks)
	}
}
