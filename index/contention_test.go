package index_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/internal/timing"
)

// Contention from separate processes on one id list, with the default
// retry policy: contendedWriters writers, each with its own SamePartition,
// EntityList or BlobList (no shared in-process lock, as in separate
// processes), add contendedAdds ids each to the one list. No add may fail,
// and the list must hold every id.
const contendedWriters, contendedAdds = 30, 10

// contend runs add for every writer and id, all writers at once, and
// fails the test if any add failed.
func contend(t *testing.T, add func(w, i int) error) {
	t.Helper()
	var failed atomic.Int64
	var first sync.Once
	var firstErr error
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range contendedWriters {
		wg.Go(func() {
			<-start
			for i := range contendedAdds {
				if err := add(w, i); err != nil {
					failed.Add(1)
					first.Do(func() { firstErr = err })
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d adds by %d separate writers failed with the default retry policy; first: %v", n, contendedWriters*contendedAdds, contendedWriters, firstErr)
	}
}

func wantContendedIDs(pk func(w int) string) []index.ID {
	var want []index.ID
	for w := range contendedWriters {
		for i := range contendedAdds {
			want = append(want, index.ID{PartitionKey: pk(w), RowKey: fmt.Sprintf("%03d-%03d", w, i)})
		}
	}
	return want
}

func checkIDs(t *testing.T, got, want []index.ID, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	have := map[index.ID]bool{}
	for _, id := range got {
		have[id] = true
	}
	missing := 0
	for _, id := range want {
		if !have[id] {
			missing++
		}
	}
	if missing > 0 || len(got) != len(want) {
		t.Errorf("the list holds %d ids, want %d (%d missing)", len(got), len(want), missing)
	}
}

// Option 2: one index entity in the employees' partition, changed in the
// same transaction as each employee, by 30 separate SamePartition values.
func TestIntraListContentionDefaults(t *testing.T) {
	ctx := testCtx(t)
	f := newIntraOn(t, latencyAccount(t), lastNameList(), nil)
	procs := make([]*index.SamePartition[Employee], contendedWriters)
	for w := range procs {
		ix, err := index.NewSamePartition(mustTable[Employee](t, f), lastNameList(), nil)
		if err != nil {
			t.Fatal(err)
		}
		procs[w] = ix
	}
	before := f.acct.Meter().Snapshot()
	contend(t, func(w, i int) error {
		id := fmt.Sprintf("%03d-%03d", w, i)
		_, err := procs[w].Insert(ctx, Employee{Department: "Sales", ID: id, FirstName: "J", LastName: "Jones", Email: id + "@contoso.com"})
		return err
	})
	cost := f.acct.Meter().Snapshot().Sub(before)
	t.Logf("%d inserts: %d transactions", contendedWriters*contendedAdds, cost.Count("table", "Transaction"))
	got, err := f.ix.IDs(ctx, "Sales", "lastname", "Jones")
	checkIDs(t, got, wantContendedIDs(func(int) string { return "Sales" }), err)
}

// Option 3: one index entity in a table of its own, by 30 separate
// EntityList values.
func TestEntityListContentionDefaults(t *testing.T) {
	ctx := testCtx(t)
	acct := latencyAccount(t)
	name := newTable(t, acct)
	lists := make([]*index.EntityList, contendedWriters)
	for w := range lists {
		l, err := index.NewEntityList(mustNewTable[tablekit.Entity](t, acct, name), nil)
		if err != nil {
			t.Fatal(err)
		}
		lists[w] = l
	}
	key := index.ListKey{Index: "lastname", Value: "Jones"}
	pk := func(w int) string { return fmt.Sprintf("D%02d", w%4) }
	contend(t, func(w, i int) error {
		return lists[w].Add(ctx, key, index.ID{PartitionKey: pk(w), RowKey: fmt.Sprintf("%03d-%03d", w, i)})
	})
	got, err := lists[0].IDs(ctx, key)
	checkIDs(t, got, wantContendedIDs(pk), err)
}

// Option 1: one blob, by 30 separate BlobList values.
func TestBlobListContentionDefaults(t *testing.T) {
	ctx := testCtx(t)
	acct := latencyAccount(t)
	c := testenv.NewContainer(t, acct)
	lists := make([]*index.BlobList, contendedWriters)
	for w := range lists {
		l, err := index.NewBlobList(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		lists[w] = l
	}
	key := index.ListKey{Index: "lastname", Value: "Jones"}
	pk := func(w int) string { return fmt.Sprintf("D%02d", w%4) }
	contend(t, func(w, i int) error {
		return lists[w].Add(context.Background(), key, index.ID{PartitionKey: pk(w), RowKey: fmt.Sprintf("%03d-%03d", w, i)})
	})
	got, err := lists[0].IDs(ctx, key)
	checkIDs(t, got, wantContendedIDs(pk), err)
}

// latencyPolicy delays every request by d before sending it: the round
// trip of a storage account in another building, which widens the window
// between a writer's read and its conditional write as a real network does.
type latencyPolicy struct{ d time.Duration }

func (p latencyPolicy) Do(req *policy.Request) (*http.Response, error) {
	if !timing.Sleep(req.Raw().Context(), p.d) {
		return nil, req.Raw().Context().Err()
	}
	return req.Next()
}

func latencyAccount(t *testing.T) *tablekit.Account {
	return testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{latencyPolicy{5 * time.Millisecond}}}})
}

// A bad Retry option is refused by the constructor, naming it.
func TestRetryOptionChecked(t *testing.T) {
	acct := testenv.Account(t, nil)
	tbl, err := tablekit.OpenTable[Employee](acct, "Unused", nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := tablekit.RetryPolicy{MaxAttempts: -1}
	check := func(op string, err error) {
		t.Helper()
		var ve *tablekit.ValidationError
		if !errors.As(err, &ve) || ve.Op != op || !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("%s with MaxAttempts -1: %v, want a ValidationError of %s", op, err, op)
		}
	}
	_, err = index.NewSamePartition(tbl, lastNameList(), &index.SamePartitionOptions{Retry: bad})
	check("index.NewSamePartition", err)
	_, err = index.NewCrossPartition(tbl, []index.Index[Employee]{{Name: "email", Key: func(e Employee) string { return e.Email }}}, &index.CrossPartitionOptions{Retry: bad})
	check("index.NewCrossPartition", err)
}
