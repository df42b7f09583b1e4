package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Writer is one of the concurrent writers of [RunWriters]. Each writer
// has its own index, seed and random source; a Writer is not safe for
// concurrent use (give each goroutine its own).
type Writer struct {
	// Index is the writer's number, 0 to n-1.
	Index int
	// Seed is derived from the run's seed and Index: the same run seed
	// gives each writer the same Seed.
	Seed int64
	// Rand is a random source seeded with Seed; draw the writer's choices
	// (keys, values, actions) from it so that a seed replays them.
	Rand *rand.Rand

	history *History
	seq     int
}

// NewWriter returns writer index of a run with seed that records into h.
// [RunWriters] makes its writers with it; use it for a writer of your own.
func NewWriter(seed int64, index int, h *History) *Writer {
	s := writerSeed(seed, index)
	return &Writer{Index: index, Seed: s, Rand: rand.New(rand.NewPCG(uint64(s), uint64(index))), history: h}
}

// writerSeed mixes seed and index (splitmix64's finaliser).
func writerSeed(seed int64, index int) int64 {
	z := uint64(seed) + uint64(index+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64(z ^ (z >> 31))
}

// Do runs call as the writer's next operation and records it: name, key
// and value as given, the result and error call returns, the outcome
// [OutcomeOf] gives, the start and end times, and the faults injected
// into the requests made with the ctx call receives. It returns the
// recorded Op, so the writer can act on the outcome.
func (w *Writer) Do(ctx context.Context, name, key string, value any, call func(ctx context.Context) (any, error)) Op {
	tr := &tracker{}
	op := Op{Name: name, Key: key, Value: value, Start: time.Now()}
	op.Result, op.Err = call(withTracker(ctx, tr))
	op.End = time.Now()
	op.Outcome = OutcomeOf(op.Err)
	op.Faults = tr.list()
	return w.Record(op)
}

// Record records an op the writer ran itself: it sets op.Writer and
// op.Seq, adds op to the history and returns it.
func (w *Writer) Record(op Op) Op {
	op.Writer = w.Index
	op.Seq = w.seq
	w.seq++
	if w.history != nil {
		w.history.Add(op)
	}
	return op
}

// RunWriters runs n writers at once, writer i calling fn with
// NewWriter(seed, i, h), and waits for all of them. It returns the history
// of their ops and the errors the writers returned (a writer returns an
// error for a broken test, not for an operation that failed: that goes in
// the history), joined and named by writer.
func RunWriters(ctx context.Context, seed int64, n int, fn func(ctx context.Context, w *Writer) error) (*History, error) {
	h := &History{}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		w := NewWriter(seed, i, h)
		wg.Go(func() {
			if err := fn(ctx, w); err != nil {
				errs[i] = fmt.Errorf("writer %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	return h, errors.Join(errs...)
}
