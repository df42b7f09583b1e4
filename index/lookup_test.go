package index_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testenv"
)

// inflight counts the point reads of one table's entities that are under
// way at once. The first read after arm waits (up to a few seconds) for a
// second one to start, so reads made one after another show 1 and reads
// made at once show more, whatever the timing.
type inflight struct {
	table  string
	mu     sync.Mutex
	armed  bool
	waited bool
	n      int
	max    int
	other  chan struct{}
	once   sync.Once
}

func newInflight() *inflight { return &inflight{other: make(chan struct{})} }

func (p *inflight) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	p.mu.Lock()
	match := p.armed && raw.Method == http.MethodGet && strings.Contains(raw.URL.Path, "/"+p.table+"(PartitionKey=")
	first := false
	if match {
		p.n++
		p.max = max(p.max, p.n)
		first = !p.waited
		p.waited = true
		if p.n > 1 {
			p.once.Do(func() { close(p.other) })
		}
	}
	p.mu.Unlock()
	if !match {
		return req.Next()
	}
	if first {
		select {
		case <-p.other:
		case <-time.After(3 * time.Second):
		}
	}
	defer func() {
		p.mu.Lock()
		p.n--
		p.mu.Unlock()
	}()
	return req.Next()
}

func (p *inflight) arm(table string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.table, p.armed, p.waited, p.n, p.max = table, true, false, 0, 0
}

func (p *inflight) peak() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.max
}

// List-index lookups read the listed entities concurrently, bounded, and
// yield them in the list's order: Intra.By (option 2) and Inter.By
// (options 1 and 3).
func TestListLookupsConcurrent(t *testing.T) {
	ctx := testCtx(t)
	p := newInflight()
	acct := testenv.Account(t, &tablekit.Options{PerRetryPolicies: []policy.Policy{p}})
	name := newTable(t, acct)
	intra, err := index.NewIntra(mustNewTable[Employee](t, acct, name), lastNameList(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 40 {
		e := Employee{Department: "Sales", ID: fmt.Sprintf("%06d", 40-i), LastName: "Jones"}
		if _, err := intra.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
		want = append(want, e.ID)
	}
	slices.Sort(want)
	p.arm(name)
	start := time.Now()
	equal(t, "Intra.By over a List index", collect(t, intra.By(ctx, "Sales", "lastname", "Jones")), want)
	t.Logf("Intra.By of 40 entities: %v", time.Since(start))
	if n := p.peak(); n < 2 {
		t.Errorf("Intra.By read at most %d entity at once, want several", n)
	}
	// Breaking out of the loop early stops the lookup.
	for e, err := range intra.By(ctx, "Sales", "lastname", "Jones") {
		if err != nil || e.ID != want[0] {
			t.Errorf("first entity = %s, %v", e.ID, err)
		}
		break
	}

	r := newInterRigWith(t, &interRig{lastNameOnly: true})
	r.acct = acct
	staffTable := mustNewTable[Employee](t, acct, r.employees)
	lists, err := index.NewEntityList(mustNewTable[tablekit.Entity](t, acct, r.lists), nil)
	if err != nil {
		t.Fatal(err)
	}
	inter, err := index.NewInter(staffTable, []index.InterIndex[Employee]{{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: lists}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want = want[:0]
	for i := range 30 {
		e := Employee{Department: "Sales", ID: fmt.Sprintf("%06d", 30-i), LastName: "Jones"}
		if _, err := inter.Upsert(ctx, e); err != nil {
			t.Fatal(err)
		}
		want = append(want, e.ID)
	}
	slices.Sort(want)
	p.arm(r.employees)
	start = time.Now()
	equal(t, "Inter.By over a List index", collect(t, inter.By(ctx, "Sales", "lastname", "Jones")), want)
	t.Logf("Inter.By of 30 entities: %v", time.Since(start))
	if n := p.peak(); n < 2 {
		t.Errorf("Inter.By read at most %d entity at once, want several", n)
	}
}

// spanRecorder is a tracing.Provider that records spans, their parents
// (found through the context, as OpenTelemetry finds them), attributes and
// status.
type spanRecorder struct {
	mu    sync.Mutex
	spans []*recordedSpan
}

type recordedSpan struct {
	name   string
	parent *recordedSpan
	attrs  map[string]any
	ended  bool
	failed bool
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
			return context.WithValue(ctx, spanKey{}, s), tracing.NewSpan(tracing.SpanImpl{
				End: func() {
					r.mu.Lock()
					s.ended = true
					r.mu.Unlock()
				},
				SetStatus: func(code tracing.SpanStatus, _ string) {
					r.mu.Lock()
					s.failed = code == tracing.SpanStatusError
					r.mu.Unlock()
				},
			})
		}, nil)
	}, nil)
}

func (s *recordedSpan) path() string {
	var names []string
	for ; s != nil; s = s.parent {
		names = append([]string{s.name}, names...)
	}
	return strings.Join(names, " > ")
}

// named returns the recorded spans called name, and the paths of all
// spans.
func (r *spanRecorder) named(name string) ([]recordedSpan, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recordedSpan
	var paths []string
	for _, s := range r.spans {
		paths = append(paths, s.path())
		if s.name == name {
			out = append(out, *s)
		}
	}
	return out, strings.Join(paths, "\n")
}

// The index upkeep is traced: Intra.Write around each Intra write's
// transaction, Inter.Sync around each sync, with the table and keys as
// attributes, as parents of tablekit's and the SDK's spans; a failed write
// ends its span with an error status.
func TestIndexSpans(t *testing.T) {
	ctx := testCtx(t)
	rec := &spanRecorder{}
	acct := testenv.Account(t, &tablekit.Options{TracingProvider: rec.provider()})
	name := newTable(t, acct)
	ix, err := index.NewIntra(mustNewTable[Employee](t, acct, name), employeeIndexes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	jon := staff()[0]
	if _, err := ix.Insert(ctx, jon); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Insert(ctx, jon); err == nil {
		t.Fatal("a second Insert succeeded")
	}
	spans, paths := rec.named("Intra.Write")
	if len(spans) != 2 {
		t.Fatalf("%d Intra.Write spans, want 2:\n%s", len(spans), paths)
	}
	for i, s := range spans {
		if s.parent != nil || !s.ended || s.attrs["tablekit.table"] != name || s.attrs["tablekit.partition_key"] != jon.Department || s.attrs["tablekit.row_key"] != jon.ID {
			t.Errorf("Intra.Write span %s: ended %v, attributes %v", s.path(), s.ended, s.attrs)
		}
		if s.failed != (i == 1) {
			t.Errorf("Intra.Write span %d: error status %v, want %v", i, s.failed, i == 1)
		}
	}
	if !strings.Contains(paths, "Intra.Write > Table.Transaction > ") {
		t.Errorf("no transaction inside Intra.Write:\n%s", paths)
	}

	r := newInterRigWith(t, &interRig{lastNameOnly: true})
	lists, err := index.NewEntityList(mustNewTable[tablekit.Entity](t, acct, r.lists), nil)
	if err != nil {
		t.Fatal(err)
	}
	inter, err := index.NewInter(mustNewTable[Employee](t, acct, r.employees), []index.InterIndex[Employee]{
		{Name: "email", Key: func(e Employee) string { return e.Email }},
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: lists},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inter.Upsert(ctx, jon); err != nil { // direct mode: the write, then Sync
		t.Fatal(err)
	}
	spans, paths = rec.named("Inter.Sync")
	if len(spans) != 1 {
		t.Fatalf("%d Inter.Sync spans, want 1:\n%s", len(spans), paths)
	}
	s := spans[0]
	if !s.ended || s.failed || s.attrs["tablekit.table"] != r.employees || s.attrs["tablekit.partition_key"] != jon.Department || s.attrs["tablekit.row_key"] != jon.ID {
		t.Errorf("Inter.Sync span: ended %v, failed %v, attributes %v", s.ended, s.failed, s.attrs)
	}
	children := 0
	for _, line := range strings.Split(paths, "\n") {
		if strings.HasPrefix(line, "Inter.Sync > ") {
			children++
		}
	}
	if children < 5 { // reads, the sync record, the copy, the list
		t.Errorf("%d spans inside Inter.Sync, want the requests of the sync:\n%s", children, paths)
	}
}
