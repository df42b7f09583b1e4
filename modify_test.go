package tablekit_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// TestModifyConcurrentIncrements: separate Tables (as separate processes
// would have) increment one counter through Modify; no increment is lost.
func TestModifyConcurrentIncrements(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	name := tableNameOf(t, acct)
	const writers, each = 10, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for range writers {
		tbl, err := tablekit.OpenTable[wireItem](testenv.Account(t, nil), name, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for range each {
				if _, err := tbl.Modify(ctx, "p", "counter", func(v *wireItem) error { v.N++; return nil }); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Modify: %v", err)
	}
	tbl, _ := tablekit.OpenTable[wireItem](acct, name, nil)
	got, err := tbl.Get(ctx, "p", "counter")
	if err != nil || got.N != writers*each {
		t.Fatalf("counter = %d (%v), want %d", got.N, err, writers*each)
	}

	// fn's error aborts and nothing is written; changing keys is refused.
	stop := errors.New("stop")
	if _, err := tbl.Modify(ctx, "p", "counter", func(v *wireItem) error { v.N = -1; return stop }); !errors.Is(err, stop) {
		t.Errorf("fn error: %v", err)
	}
	if _, err := tbl.Modify(ctx, "p", "counter", func(v *wireItem) error { v.RK = "other"; return nil }); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("key change: %v", err)
	}
	if got, _ := tbl.Get(ctx, "p", "counter"); got.N != writers*each {
		t.Errorf("an aborted Modify wrote: %+v", got)
	}
	// A missing entity is created.
	v, err := tbl.Modify(ctx, "p", "new", func(v *wireItem) error { v.Tag = "created"; return nil })
	if err != nil || v.Tag != "created" || v.PK != "p" {
		t.Errorf("Modify of a missing entity: %+v, %v", v, err)
	}
}
