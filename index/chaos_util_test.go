package index_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
)

// The model shared by the index chaos suites: each writer owns a few
// employees (their RowKeys name the writer), so the ops on one employee
// are ordered; the model runs per writer over the joint state of its
// employees, which lets it check what the writer was told about unique
// values too (each writer draws shared email values from a pool of its
// own, so only its own employees can hold them).

// empState is one employee in the model: absent, or the fields the
// indexes and the check look at.
type empState struct {
	Present            bool
	First, Last, Email string
	Age                int
}

// empOf is the model state of a stored employee.
func empOf(e Employee) empState {
	return empState{Present: true, First: e.FirstName, Last: e.LastName, Email: e.Email, Age: e.Age}
}

func (s empState) String() string {
	if !s.Present {
		return "absent"
	}
	return fmt.Sprintf("{%s %s %s age=%d}", s.First, s.Last, s.Email, s.Age)
}

// empOp is what one recorded op asked for, as the model applies it.
type empOp struct {
	Kind string // opInsert, opUpsert, opModify, opUpdate, opUpdateAny, opDelete, opDeleteIfExists, opGet, opByEmail
	Key  string // "pk/rk"
	PK   string
	V    empState // the value written (writes) or read (opGet)
	// Existed is what an acknowledged opDeleteIfExists reported.
	Existed bool
	// opByEmail: the value looked up and the keys of the writer's
	// employees the lookup returned.
	Email   string
	Holders []string
}

const (
	opInsert         = "Insert"
	opUpsert         = "Upsert"
	opModify         = "Modify"    // read-modify-write, creating a missing employee: as Upsert
	opUpdate         = "Update"    // conditional on the version just read
	opUpdateAny      = "UpdateAny" // Update with azcore.ETagAny
	opDelete         = "Delete"    // conditional on the version just read
	opDeleteIfExists = "DeleteIfExists"
	opGet            = "Get"
	opByEmail        = "ByEmail"
)

// empModel says what the pattern under test guarantees.
type empModel struct {
	// uniqueEmail: email is a unique index within a partition (SamePartition): a
	// write that gives a second employee of the partition the same email
	// fails with a *index.UniqueError.
	uniqueEmail bool
	// fences: a safety net fences the version a write that did not land
	// was conditional on (CrossPartition), so a conditional write made after an
	// op whose write may not have landed can meet a changed ETag.
	fences bool
}

// empStates is the joint state of one writer's employees (absent ones
// left out), keyed by "pk/rk".
type empStates map[string]empState

func (s empStates) key() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(s)) {
		fmt.Fprintf(&b, "%s=%v;", k, s[k])
	}
	return b.String()
}

// taken reports whether another employee of partition pk holds email.
func (s empStates) taken(key, pk, email string) bool {
	if email == "" {
		return false
	}
	for k, e := range s {
		if k != key && strings.HasPrefix(k, pk+"/") && e.Email == email {
			return true
		}
	}
	return false
}

// apply returns the state after op took effect, and whether it could
// have in state s.
func (m empModel) apply(s empStates, op empOp) (empStates, bool) {
	cur := s[op.Key]
	put := func() (empStates, bool) {
		if m.uniqueEmail && s.taken(op.Key, op.PK, op.V.Email) {
			return s, false
		}
		out := maps.Clone(s)
		out[op.Key] = op.V
		return out, true
	}
	switch op.Kind {
	case opInsert:
		if cur.Present {
			return s, false
		}
		return put()
	case opUpsert, opModify:
		return put()
	case opUpdate, opUpdateAny:
		if !cur.Present {
			return s, false
		}
		return put()
	case opDelete, opDeleteIfExists:
		if !cur.Present {
			// DeleteIfExists of a missing employee succeeds, and says
			// it did not exist.
			return s, op.Kind == opDeleteIfExists && !op.Existed
		}
		out := maps.Clone(s)
		delete(out, op.Key)
		return out, true
	}
	return s, false
}

// failureExplained reports whether a write failing with err is explained
// by state s; hint is set when the failure cannot be explained by any
// state (a failure kind the pattern never gives).
func (m empModel) failureExplained(s empStates, op empOp, rec chaos.Op, mayBeFenced bool) (ok bool, hint string) {
	cur := s[op.Key]
	err := rec.Err
	var ue *index.UniqueError
	var ce *index.ConflictError
	switch {
	case errors.As(err, &ue):
		return m.uniqueEmail && ue.Index == "email" && ue.Value == op.V.Email && s.taken(op.Key, op.PK, op.V.Email), ""
	case errors.As(err, &ce):
		return false, "a write kept losing races with its retries exhausted (the defaults must carry this load)"
	case throttledByFaults(rec):
		return true, ""
	case errors.Is(err, tablekit.ErrAlreadyExists):
		return op.Kind == opInsert && cur.Present, ""
	case errors.Is(err, tablekit.ErrNotFound):
		return (op.Kind == opDelete || op.Kind == opUpdate || op.Kind == opUpdateAny) && !cur.Present, ""
	case errors.Is(err, tablekit.ErrPreconditionFailed):
		// The writer read the version just before and owns the entity:
		// only a safety net's fence can have moved its ETag.
		return m.fences && mayBeFenced && (op.Kind == opUpdate || op.Kind == opDelete), ""
	}
	return false, "an unexpected failure"
}

// read narrows s by what a read op saw; false when s disagrees.
func (m empModel) read(s empStates, op empOp) bool {
	switch op.Kind {
	case opGet:
		return s[op.Key] == op.V
	case opByEmail:
		var holders []string
		for k, e := range s {
			if strings.HasPrefix(k, op.PK+"/") && e.Email == op.Email {
				holders = append(holders, k)
			}
		}
		slices.Sort(holders)
		return slices.Equal(holders, op.Holders)
	}
	return true
}

// maxStates bounds the states the check follows per writer; reads keep it
// far below (each read of an employee settles it).
const maxStates = 1 << 14

// check checks each writer's history against the stored employees: what
// each writer was told must be explained by one in-order application of
// its acknowledged ops and some of its unknown ones, and the stored state
// of its employees must be one the history allows. owner maps a stored
// employee's key to its writer.
func (m empModel) check(h *chaos.History, stored map[string]empState, owner func(key string) int, v *chaos.Violations) {
	byWriter := map[int][]chaos.Op{}
	for _, op := range h.Ops() {
		if _, ok := op.Value.(*empOp); ok {
			byWriter[op.Writer] = append(byWriter[op.Writer], op)
		}
	}
	mine := map[int]empStates{}
	for k, s := range stored {
		w := owner(k)
		if mine[w] == nil {
			mine[w] = empStates{}
		}
		mine[w][k] = s
	}
	for w, ops := range byWriter {
		slices.SortFunc(ops, func(a, b chaos.Op) int { return a.Seq - b.Seq })
		states := []empStates{{}}
		notOK := map[string]bool{} // employees with an earlier write not acknowledged
		for _, op := range ops {
			mo := *op.Value.(*empOp)
			var next []empStates
			seen := map[string]bool{}
			keep := func(s empStates) {
				if k := s.key(); !seen[k] {
					seen[k] = true
					next = append(next, s)
				}
			}
			if mo.Kind == opGet || mo.Kind == opByEmail {
				if op.Outcome != chaos.OK && !(mo.Kind == opGet && errors.Is(op.Err, tablekit.ErrNotFound)) {
					continue // a read that failed tells nothing
				}
				for _, s := range states {
					if m.read(s, mo) {
						keep(s)
					}
				}
				if len(next) == 0 {
					v.Addf("writer %d: %s saw what no state its history allows holds (%d candidates, e.g. %v)", w, op, len(states), states[0].key())
					continue
				}
				states = next
				continue
			}
			hint := ""
			for _, s := range states {
				switch op.Outcome {
				case chaos.OK:
					if n, ok := m.apply(s, mo); ok {
						keep(n)
					}
				case chaos.Failed:
					ok, h := m.failureExplained(s, mo, op, notOK[mo.Key])
					if ok {
						keep(s)
					}
					hint = h
				default:
					keep(s)
					if n, ok := m.apply(s, mo); ok {
						keep(n)
					}
				}
			}
			if op.Outcome != chaos.OK {
				notOK[mo.Key] = true
			}
			if len(next) == 0 {
				what := "acknowledged"
				if op.Outcome == chaos.Failed {
					what = "refused"
				}
				if hint != "" {
					hint = ": " + hint
				}
				v.Addf("writer %d: %s was %s, but no state its history allows explains that%s (%d candidates, e.g. %v)", w, op, what, hint, len(states), states[0].key())
				continue
			}
			if len(next) > maxStates {
				v.Addf("writer %d: more than %d states to follow after %s; the check gave up on this writer", w, maxStates, op)
				states = nil
				break
			}
			states = next
		}
		if states == nil {
			continue
		}
		got := mine[w]
		if got == nil {
			got = empStates{}
		}
		if !slices.ContainsFunc(states, func(s empStates) bool { return s.key() == got.key() }) {
			v.Addf("writer %d: stored %v is not a state its history allows (%d candidates, e.g. %v)", w, got.key(), len(states), states[0].key())
		}
		delete(mine, w)
	}
	for w, got := range mine {
		v.Addf("employees %v stored, but writer %d wrote none", got.key(), w)
	}
}

// throttledByFaults reports whether op failed because its requests met
// injected 503 ServerBusy answers on every try the SDK made: requests that
// identical ones from other writers share an identity with can meet more
// faults in a row than chaos.Config.MaxConsecutive (see the chaos package
// doc), and then the SDK's retries run out.
func throttledByFaults(op chaos.Op) bool {
	return errors.Is(op.Err, tablekit.ErrThrottled) && slices.Contains(op.Faults, chaos.ServerBusy)
}

// ownerOf returns the writer that owns an employee: its RowKey begins with
// "w<NN>-".
func ownerOf(key string) int {
	_, rk, _ := strings.Cut(key, "/")
	var w int
	if _, err := fmt.Sscanf(rk, "w%02d-", &w); err != nil {
		return -1
	}
	return w
}

// reasons sorts the errors of the ops that did not succeed, for the log.
func reasons(h *chaos.History, outcome chaos.Outcome) map[string]int {
	out := map[string]int{}
	for _, op := range h.Ops() {
		if op.Outcome == outcome {
			out[reason(op.Name, op.Err)]++
		}
	}
	return out
}

func reason(name string, err error) string {
	var ue *index.UniqueError
	var ce *index.ConflictError
	var te *tablekit.TransactionError
	var se *tablekit.ServiceError
	var re *tablekit.RequestError
	switch {
	case errors.As(err, &ue):
		return name + ": unique value taken"
	case errors.As(err, &ce):
		return name + ": retries exhausted"
	case errors.As(err, &te):
		s := name + ": transaction " + te.Code
		if errors.Is(err, tablekit.ErrOutcomeUnknown) {
			s += " after a lost answer"
		}
		return s
	case errors.As(err, &se):
		s := name + ": " + se.Code
		if errors.Is(err, tablekit.ErrOutcomeUnknown) {
			s += " after a lost answer"
		}
		return s
	case errors.As(err, &re):
		return name + ": no answer"
	case errors.Is(err, tablekit.ErrNotFound):
		return name + ": not found"
	}
	return fmt.Sprintf("%s: %T", name, err)
}
