package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/wire"
)

// serviceError makes the SDK's error for a service answer of status and code.
func serviceError(status int, code string) error {
	req, _ := http.NewRequest("GET", "http://127.0.0.1:1/devstoreaccount1/t", nil)
	resp := &http.Response{StatusCode: status, Header: http.Header{"X-Ms-Error-Code": {code}},
		Body: http.NoBody, Request: req}
	return runtime.NewResponseError(resp)
}

type unknownErr struct{}

func (unknownErr) Error() string        { return "tablekit: outcome unknown" }
func (unknownErr) OutcomeUnknown() bool { return true }

func TestOutcomeOf(t *testing.T) {
	cases := []struct {
		err  error
		want chaos.Outcome
	}{
		{nil, chaos.OK},
		{context.Canceled, chaos.Unknown},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), chaos.Unknown},
		{&chaos.FaultError{Kind: chaos.AnswerLost, Err: syscall.ECONNRESET}, chaos.Unknown},
		{wire.Wrap("Get", "", "", "", serviceError(404, "ResourceNotFound")), chaos.Failed},
		{wire.Wrap("Insert", "", "", "", serviceError(409, "EntityAlreadyExists")), chaos.Failed},
		{wire.Wrap("Get", "", "", "", serviceError(503, "ServerBusy")), chaos.Failed},
		{wire.Wrap("Get", "", "", "", serviceError(500, "OperationTimedOut")), chaos.Unknown},
		{serviceError(504, ""), chaos.Unknown},
		{&tablekit.TransactionError{Index: 3, Code: "EntityAlreadyExists", Err: serviceError(202, "")}, chaos.Failed},
		{&tablekit.ValidationError{Err: tablekit.ErrTooLarge}, chaos.Failed},
		{&tablekit.DecodeError{Op: "Get", Property: "SSN", Err: tablekit.ErrDecrypt}, chaos.Failed},
		{errors.New("malformed HTTP response"), chaos.Unknown},
		{fmt.Errorf("wrapped: %w", unknownErr{}), chaos.Unknown},
	}
	for _, c := range cases {
		if got := chaos.OutcomeOf(c.err); got != c.want {
			t.Errorf("OutcomeOf(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if s := chaos.Outcome(0).String(); s != "Outcome(0)" {
		t.Errorf("zero Outcome prints %q", s)
	}
}

// set is a register write: the state becomes op.Value.
func set(_ int, op chaos.Op) (int, bool) { return op.Value.(int), true }

func TestReachable(t *testing.T) {
	ops := []chaos.Op{
		{Value: 1, Outcome: chaos.OK},
		{Value: 2, Outcome: chaos.Unknown},
		{Value: 3, Outcome: chaos.Failed},
		{Value: 4, Outcome: chaos.Unknown},
	}
	if got := chaos.Reachable(0, ops, set); !slices.Equal(got, []int{1, 4, 2}) {
		t.Errorf("register: %v, want [1 4 2]", got)
	}
	// An acknowledged write after the unknowns decides the state.
	ops = append(ops, chaos.Op{Value: 5, Outcome: chaos.OK})
	if got := chaos.Reachable(0, ops, set); !slices.Equal(got, []int{5}) {
		t.Errorf("register: %v, want [5]", got)
	}
	// A counter: 3 acknowledged increments and 2 unknown ones give 3..5.
	add := func(n int, op chaos.Op) (int, bool) { return n + 1, true }
	incs := []chaos.Op{{Outcome: chaos.OK}, {Outcome: chaos.Unknown}, {Outcome: chaos.OK}, {Outcome: chaos.Unknown}, {Outcome: chaos.OK}}
	got := chaos.Reachable(0, incs, add)
	slices.Sort(got)
	if !slices.Equal(got, []int{3, 4, 5}) {
		t.Errorf("counter: %v, want [3 4 5]", got)
	}
	// Inserts: an acknowledged insert of an existing entity explains nothing.
	insert := func(exists bool, op chaos.Op) (bool, bool) { return true, !exists }
	if got := chaos.Reachable(false, []chaos.Op{{Outcome: chaos.OK}, {Outcome: chaos.OK}}, insert); len(got) != 0 {
		t.Errorf("two acknowledged inserts: %v, want none", got)
	}
	if got := chaos.Reachable(false, []chaos.Op{{Outcome: chaos.Unknown}, {Outcome: chaos.OK}}, insert); !slices.Equal(got, []bool{true}) {
		t.Errorf("unknown then acknowledged insert: %v, want [true]", got)
	}
}

func TestRunWritersAndHistory(t *testing.T) {
	ctx := context.Background()
	run := func(seed int64) (*chaos.History, []int64) {
		draws := make([]int64, 4)
		h, err := chaos.RunWriters(ctx, seed, 4, func(ctx context.Context, w *chaos.Writer) error {
			draws[w.Index] = w.Rand.Int64()
			for i := range 5 {
				key := fmt.Sprintf("w%d/k%d", w.Index, i%2)
				w.Do(ctx, "Set", key, i, func(ctx context.Context) (any, error) {
					if i == 3 {
						return nil, context.DeadlineExceeded
					}
					return i * 10, nil
				})
			}
			if w.Index == 2 {
				return errors.New("broken")
			}
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), "writer 2: broken") {
			t.Errorf("RunWriters error = %v", err)
		}
		return h, draws
	}
	h, draws := run(7)
	_, again := run(7)
	_, other := run(8)
	if !slices.Equal(draws, again) || slices.Equal(draws, other) || draws[0] == draws[1] {
		t.Errorf("writer draws: seed 7 %v and %v, seed 8 %v", draws, again, other)
	}
	if h.Len() != 20 || h.Count(chaos.OK) != 16 || h.Count(chaos.Unknown) != 4 {
		t.Fatalf("history: %v", h)
	}
	if s := h.String(); s != "20 ops: 16 ok, 0 failed, 4 unknown" {
		t.Errorf("String() = %q", s)
	}
	byKey := h.ByKey()
	if len(byKey) != 8 {
		t.Fatalf("%d keys", len(byKey))
	}
	for key, ops := range byKey {
		for i, op := range ops {
			if i > 0 && op.Seq <= ops[i-1].Seq {
				t.Errorf("%s: ops out of order: %v then %v", key, ops[i-1], op)
			}
			if op.Key != key || op.End.Before(op.Start) {
				t.Errorf("%s: %v", key, op)
			}
		}
	}
	op := byKey["w1/k1"][1] // i == 3
	if op.Writer != 1 || op.Seq != 3 || op.Outcome != chaos.Unknown || op.Result != nil ||
		op.String() != `w1#3 Set "w1/k1" value=3 -> unknown: context deadline exceeded` {
		t.Errorf("op = %v", op)
	}
}

func TestOutcomeOfRefusedInput(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("tablekit: filter: %w", tablekit.ErrInvalidInput),
		fmt.Errorf("x: %w", tablekit.ErrInvalidKey),
		fmt.Errorf("x: %w", tablekit.ErrTooLarge),
	} {
		if got := chaos.OutcomeOf(err); got != chaos.Failed {
			t.Errorf("OutcomeOf(%v) = %v, want failed", err, got)
		}
	}
}
