package chaos_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// A chaos test in small: one writer inserts an entity while the Injector
// loses the answer of the first InsertEntity. The SDK retries and meets
// the entity the first try stored; tablekit reports an error matching
// ErrOutcomeUnknown rather than EntityAlreadyExists, since a broken
// connection does not say whether the first try was applied. The history
// records the op as unknown, and the invariant check allows both states.
//
// A real chaos test wraps this in chaos.Run(t, func(t *testing.T, seed
// int64) {...}), opens the account with inj.Account(t, nil), runs
// chaos.Size(8, 16) writers and reports with chaos.Violations.
func Example() {
	ctx := context.Background()
	cs, err := testenv.SharedConnectionString()
	if err != nil {
		panic(err)
	}
	inj, err := chaos.New(1, &chaos.Config{AnswerLost: 1, Operations: []string{"InsertEntity"}, MaxConsecutive: 1})
	if err != nil {
		panic(err)
	}
	acct, err := inj.Open(cs, nil)
	if err != nil {
		panic(err)
	}
	type Item struct {
		PK string `table:",pk"`
		RK string `table:",rk"`
		N  int    `table:"N"`
	}
	tbl, err := tablekit.OpenTable[Item](acct, "ChaosExample"+rand.Text()[:8], nil)
	if err != nil {
		panic(err)
	}
	if err := tbl.CreateIfNotExists(chaos.NoFaults(ctx)); err != nil {
		panic(err)
	}
	defer tbl.DeleteTable(chaos.NoFaults(ctx))

	h, err := chaos.RunWriters(ctx, inj.Seed(), 1, func(ctx context.Context, w *chaos.Writer) error {
		w.Do(ctx, "Insert", "p/r", 7, func(ctx context.Context) (any, error) {
			_, err := tbl.Insert(ctx, Item{PK: "p", RK: "r", N: 7})
			return nil, err
		})
		return nil
	})
	if err != nil {
		panic(err)
	}
	ops := h.Ops()
	fmt.Println(h)
	fmt.Println("told outcome unknown:", errors.Is(ops[0].Err, tablekit.ErrOutcomeUnknown),
		"told already exists:", errors.Is(ops[0].Err, tablekit.ErrAlreadyExists), "answer lost:", ops[0].AnswerLost())

	// The invariant: the stored value is one the history allows, the
	// unknown insert applied or not.
	allowed := chaos.Reachable(0, ops, func(n int, op chaos.Op) (int, bool) { return op.Value.(int), n == 0 })
	stored, err := tbl.Get(chaos.NoFaults(ctx), "p", "r")
	var v chaos.Violations
	if err != nil {
		v.Addf("p/r: %v", err)
	} else if !containsInt(allowed, stored.N) {
		v.Addf("p/r: stored %d, allowed %v", stored.N, allowed)
	}
	fmt.Println("allowed:", allowed, "stored:", stored.N, "violations:", v.Len())
	fmt.Println(inj.Stats().ByKind())
	// Output:
	// 1 ops: 0 ok, 0 failed, 1 unknown
	// told outcome unknown: true told already exists: false answer lost: true
	// allowed: [0 7] stored: 7 violations: 0
	// reset=0 answer-lost=1 server-busy=0 timeout-before=0 timeout-after=0 delay=0
}

func containsInt(s []int, n int) bool {
	for _, x := range s {
		if x == n {
			return true
		}
	}
	return false
}
