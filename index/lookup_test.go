package index_test

import (
	"fmt"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/spantest"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
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
// yield them in the list's order: SamePartition.By (option 2) and CrossPartition.By
// (options 1 and 3).
func TestListLookupsConcurrent(t *testing.T) {
	ctx := testCtx(t)
	p := newInflight()
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{p}}})
	name := newTable(t, acct)
	intra, err := index.NewSamePartition(mustNewTable[Employee](t, acct, name), lastNameList(), nil)
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
	equal(t, "SamePartition.By over a List index", collect(t, intra.By(ctx, "Sales", "lastname", "Jones")), want)
	t.Logf("SamePartition.By of 40 entities: %v", time.Since(start))
	if n := p.peak(); n < 2 {
		t.Errorf("SamePartition.By read at most %d entity at once, want several", n)
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
	lists := mustNewTable[tablekit.Entity](t, acct, r.lists)
	inter, err := index.NewCrossPartition(staffTable, []index.Index[Employee]{{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: true, Table: lists}}, nil)
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
	equal(t, "CrossPartition.By over a List index", collect(t, inter.By(ctx, "Sales", "lastname", "Jones")), want)
	t.Logf("CrossPartition.By of 30 entities: %v", time.Since(start))
	if n := p.peak(); n < 2 {
		t.Errorf("CrossPartition.By read at most %d entity at once, want several", n)
	}
}

// named returns the spans rec recorded called name, and the paths of all
// its spans, from one snapshot.
func named(rec *spantest.Recorder, name string) ([]*spantest.Span, string) {
	var out []*spantest.Span
	var paths []string
	for _, s := range rec.Spans() {
		paths = append(paths, s.Path())
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out, strings.Join(paths, "\n")
}

// The index upkeep is traced: SamePartition.Write around each SamePartition write's
// transaction, CrossPartition.Sync around each sync, with the table and keys as
// attributes, as parents of tablekit's and the SDK's spans; a failed write
// ends its span with an error status.
func TestIndexSpans(t *testing.T) {
	ctx := testCtx(t)
	rec := &spantest.Recorder{}
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{TracingProvider: rec.Provider()}})
	name := newTable(t, acct)
	ix, err := index.NewSamePartition(mustNewTable[Employee](t, acct, name), employeeIndexes(), nil)
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
	spans, paths := named(rec, "SamePartition.Write")
	if len(spans) != 2 {
		t.Fatalf("%d SamePartition.Write spans, want 2:\n%s", len(spans), paths)
	}
	for i, s := range spans {
		if s.Parent != nil || !s.Ended() || s.Attrs["tablekit.table"] != name || s.Attrs["tablekit.partition_key"] != jon.Department || s.Attrs["tablekit.row_key"] != jon.ID {
			t.Errorf("SamePartition.Write span %s: ended %v, attributes %v", s.Path(), s.Ended(), s.Attrs)
		}
		if s.Failed() != (i == 1) {
			t.Errorf("SamePartition.Write span %d: error status %v, want %v", i, s.Failed(), i == 1)
		}
	}
	if !strings.Contains(paths, "SamePartition.Write > Table.Transaction > ") {
		t.Errorf("no transaction inside SamePartition.Write:\n%s", paths)
	}

	r := newInterRigWith(t, &interRig{lastNameOnly: true})
	lists := mustNewTable[tablekit.Entity](t, acct, r.lists)
	inter, err := index.NewCrossPartition(mustNewTable[Employee](t, acct, r.employees), []index.Index[Employee]{
		{Name: "email", Key: func(e Employee) string { return e.Email }},
		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: true, Table: lists},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inter.Upsert(ctx, jon); err != nil { // direct mode: the write, then Sync
		t.Fatal(err)
	}
	spans, paths = named(rec, "CrossPartition.Sync")
	if len(spans) != 1 {
		t.Fatalf("%d CrossPartition.Sync spans, want 1:\n%s", len(spans), paths)
	}
	s := spans[0]
	if !s.Ended() || s.Failed() || s.Attrs["tablekit.table"] != r.employees || s.Attrs["tablekit.partition_key"] != jon.Department || s.Attrs["tablekit.row_key"] != jon.ID {
		t.Errorf("CrossPartition.Sync span: ended %v, failed %v, attributes %v", s.Ended(), s.Failed(), s.Attrs)
	}
	children := 0
	for _, line := range strings.Split(paths, "\n") {
		if strings.HasPrefix(line, "CrossPartition.Sync > ") {
			children++
		}
	}
	if children < 5 { // reads, the sync record, the copy, the list
		t.Errorf("%d spans inside CrossPartition.Sync, want the requests of the sync:\n%s", children, paths)
	}
}
