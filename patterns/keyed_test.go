package patterns_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

// hire is the guide's heterogeneous transaction: add an employee and
// count it in the department, conditional on the department's version.
func hire(dept Department, id string) []tablekit.Action[any] {
	dept.EmployeeCount++
	return []tablekit.Action[any]{
		tablekit.InsertAction[any](Employee{Department: dept.Name, Key: id, Name: "E" + id}),
		tablekit.UpdateAction[any](dept, dept.ETag),
	}
}

func department(t *testing.T, m *patterns.Mixed) Department {
	t.Helper()
	v, err := m.Get(testContext(t), "Sales", "Sales")
	if err != nil {
		t.Fatal(err)
	}
	return v.(Department)
}

// TestMixedKeyed: a keyed transaction repeated with its key is not applied
// again and returns empty ETags and a nil error; it costs the unkeyed
// one's transaction; keyed verbs are one-action transactions; the records
// are not entities to Query.
func TestMixedKeyed(t *testing.T) {
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	m, err := patterns.NewMixed(tbl, newRegistry(t, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Insert(ctx, Department{Name: "Sales", Key: "Sales"}); err != nil {
		t.Fatal(err)
	}
	cost := func(fn func()) tablekit.MeterSnapshot {
		before := acct.Meter().Snapshot()
		fn()
		return acct.Meter().Snapshot().Sub(before)
	}

	var etags []azcore.ETag
	dept0 := department(t, m)
	keyed := cost(func() { etags, err = m.WithKey("hire-1").Transaction(ctx, hire(department(t, m), "1")...) })
	if err != nil || len(etags) != 2 || etags[0] == "" || etags[1] == "" {
		t.Fatalf("keyed transaction: %q, %v", etags, err)
	}
	unkeyed := cost(func() { _, err = m.Transaction(ctx, hire(department(t, m), "2")...) })
	if err != nil {
		t.Fatal(err)
	}
	if keyed.Total() != unkeyed.Total() || keyed.Count("table", "Transaction") != 1 {
		t.Errorf("keyed transaction cost %v, unkeyed %v: want the same, 1 transaction (and the read of the department)", keyed, unkeyed)
	}
	// The repeat, the same actions (their ETag stale by now, which the
	// fingerprint leaves out), is a replay.
	replay := cost(func() { etags, err = m.WithKey("hire-1").Transaction(ctx, hire(dept0, "1")...) })
	if err != nil || len(etags) != 2 || etags[0] != "" || etags[1] != "" {
		t.Errorf("repeated keyed transaction: %q, %v; want a replay: 2 empty ETags, nil error", etags, err)
	}
	if replay.Count("table", "Transaction") != 1 || replay.Count("table", "GetEntity") != 1 {
		t.Errorf("a replay cost %v, want the refused transaction and the read of the record", replay)
	}
	// Recomputed from the department as it is now (its ETag valid, so that
	// without the key it would apply), it is another write: the key was
	// reused, and nothing is written.
	_, err = m.WithKey("hire-1").Transaction(ctx, hire(department(t, m), "1b")...)
	if !errors.Is(err, coord.ErrKeyReused) {
		t.Errorf("the key with other actions: %v, want coord.ErrKeyReused", err)
	}
	if d := department(t, m); d.EmployeeCount != 2 {
		t.Errorf("EmployeeCount %d after a keyed hire repeated and an unkeyed one, want 2", d.EmployeeCount)
	}
	if _, err := m.Get(ctx, "Sales", "1b"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("the replayed transaction's employee is stored: %v", err)
	}

	// A refused action's index counts the caller's actions.
	_, err = m.WithKey("hire-dup").Transaction(ctx, hire(department(t, m), "1")...)
	var te *tablekit.TransactionError
	if !errors.As(err, &te) || te.Index != 0 || !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Errorf("keyed transaction inserting an existing employee: %v, want a TransactionError at index 0", err)
	}

	// Keyed verbs: one-action transactions, each not applied again.
	k := m.WithKey("ins-3")
	if etag, err := k.Insert(ctx, Employee{Department: "Sales", Key: "3", Name: "C"}); err != nil || etag == "" {
		t.Fatalf("keyed Insert: %q, %v", etag, err)
	}
	if err := m.Delete(ctx, "Sales", "3", azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	if etag, err := k.Insert(ctx, Employee{Department: "Sales", Key: "3", Name: "C"}); err != nil || etag != "" {
		t.Errorf("repeated keyed Insert: %q, %v", etag, err)
	}
	if _, err := m.Get(ctx, "Sales", "3"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("the repeated keyed Insert inserted again: %v", err)
	}
	if existed, err := m.WithKey("die").DeleteIfExists(ctx, "Sales", "3"); err != nil || existed {
		t.Errorf("keyed DeleteIfExists of nothing: %v, %v", existed, err)
	}
	if _, err := m.Insert(ctx, Employee{Department: "Sales", Key: "3"}); err != nil {
		t.Fatal(err)
	}
	if existed, err := m.WithKey("die").DeleteIfExists(ctx, "Sales", "3"); err != nil || existed {
		t.Errorf("repeated keyed DeleteIfExists: %v, %v", existed, err)
	}
	if _, err := m.Get(ctx, "Sales", "3"); err != nil {
		t.Errorf("the repeated keyed DeleteIfExists deleted: %v", err)
	}
	if existed, err := m.WithKey("die2").DeleteIfExists(ctx, "Sales", "3"); err != nil || !existed {
		t.Errorf("keyed DeleteIfExists: %v, %v", existed, err)
	}

	// Records are in the partition, and not entities to Query.
	records := 0
	for _, err := range m.Query(ctx, tablekit.RowKeyPrefix("Sales", coord.ReservedPrefix), nil) {
		if err != nil {
			t.Fatal(err)
		}
		records++
	}
	var all []string
	for v, err := range m.Query(ctx, tablekit.PartitionEq("Sales"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, fmt.Sprintf("%T", v))
	}
	raw := 0
	for _, err := range tbl.Query(ctx, tablekit.RowKeyPrefix("Sales", coord.ReservedPrefix), &tablekit.QueryOptions{Reserved: true}) {
		if err != nil {
			t.Fatal(err)
		}
		raw++
	}
	if records != 0 || raw == 0 || len(all) != 3 {
		t.Errorf("Query returned %d records (of %d stored) and %v, want no record and the department and 2 employees", records, raw, all)
	}
	// Limit counts entities, not the records skipped: a row after the
	// records in key order is still found.
	if _, err := m.Insert(ctx, tablekit.Entity{PartitionKey: "Sales", RowKey: "é"}); err != nil {
		t.Fatal(err)
	}
	var after []string
	for v, err := range m.Query(ctx, tablekit.Where("PartitionKey eq ? and RowKey ge ?", "Sales", "~"), &tablekit.QueryOptions{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		after = append(after, v.(tablekit.Entity).RowKey)
	}
	if len(after) != 1 || after[0] != "é" {
		t.Errorf("Query after the records with Limit 1: %q, want the entity \u00e9", after)
	}
}

// TestMixedKeyedRefusals: bad input is refused before anything is sent;
// the zero Mixed's WithKey refuses every call (TestZeroValuesNeverPanic
// calls all its methods).
func TestMixedKeyedRefusals(t *testing.T) {
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	m, err := patterns.NewMixed(entityTable(t, acct), newRegistry(t, false))
	if err != nil {
		t.Fatal(err)
	}
	before := acct.Meter().Snapshot()
	emp := func(pk, rk string) tablekit.Action[any] {
		return tablekit.UpsertAction[any](Employee{Department: pk, Key: rk})
	}
	for what, c := range map[string]struct {
		err error
		fn  func() error
	}{
		"empty key":      {tablekit.ErrInvalidInput, func() error { _, err := m.WithKey("").Transaction(ctx, emp("p", "1")); return err }},
		"bad key":        {tablekit.ErrInvalidKey, func() error { _, err := m.WithKey("a#b").Upsert(ctx, Employee{Department: "p", Key: "1"}); return err }},
		"two partitions": {tablekit.ErrInvalidInput, func() error { _, err := m.WithKey("k").Transaction(ctx, emp("p", "1"), emp("q", "1")); return err }},
		"reserved": {tablekit.ErrInvalidKey, func() error {
			_, err := m.WithKey("k").Transaction(ctx, emp("p", coord.ReservedPrefix+"x"))
			return err
		}},
		"no actions": {tablekit.ErrInvalidInput, func() error { _, err := m.WithKey("k").Transaction(ctx); return err }},
		"101 actions": {tablekit.ErrTooLarge, func() error {
			acts := make([]tablekit.Action[any], 100)
			for i := range acts {
				acts[i] = emp("p", fmt.Sprint(i))
			}
			_, err := m.WithKey("k").Transaction(ctx, acts...)
			return err
		}},
	} {
		if err := c.fn(); !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %v", what, err, c.err)
		} else {
			t.Logf("%s: %v", what, err)
		}
	}
	if c := acct.Meter().Snapshot().Sub(before); c.Total() != 0 {
		t.Errorf("refused writes sent %v", c)
	}
}

// TestMixedKeyedAnswerLost: every transaction's first answers are lost
// (the service applied them); a keyed transaction settles by reading its
// record (1 read) and is applied once, with a nil error and empty ETags;
// the unkeyed control ends in ErrOutcomeUnknown.
func TestMixedKeyedAnswerLost(t *testing.T) {
	ctx := testContext(t)
	inj, err := chaos.New(1, &chaos.Config{AnswerLost: 1, Operations: []string{"Transaction"}, MaxConsecutive: 3})
	if err != nil {
		t.Fatal(err)
	}
	acct := inj.Account(t, nil)
	m, err := patterns.NewMixed(entityTable(t, acct), newRegistry(t, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Insert(ctx, Department{Name: "Sales", Key: "Sales"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Transaction(ctx, hire(department(t, m), "0")...); !errors.Is(err, tablekit.ErrOutcomeUnknown) {
		t.Fatalf("unkeyed transaction with a lost answer: %v, want ErrOutcomeUnknown (else this test shows nothing)", err)
	}
	for i := 1; i <= 3; i++ {
		d := department(t, m)
		before := acct.Meter().Snapshot()
		etags, err := m.WithKey(fmt.Sprint("hire-", i)).Transaction(ctx, hire(d, fmt.Sprint(i))...)
		c := acct.Meter().Snapshot().Sub(before)
		if err != nil || len(etags) != 2 || etags[0] != "" {
			t.Errorf("keyed transaction %d, answer lost: %q, %v; want applied: nil error, empty ETags", i, etags, err)
		}
		if c.Count("table", "GetEntity") != 1 {
			t.Errorf("settling cost %v, want 1 read", c)
		}
		if got := department(t, m).EmployeeCount; got != d.EmployeeCount+1 {
			t.Errorf("EmployeeCount %d after keyed hire %d, want %d", got, i, d.EmployeeCount+1)
		}
	}
	if etag, err := m.WithKey("ins").Upsert(ctx, Employee{Department: "Sales", Key: "9"}); err != nil || etag != "" {
		t.Errorf("keyed Upsert, answer lost: %q, %v", etag, err)
	}
}

// Tally is a wide counter: N, and a wide map of notes.
type Tally struct {
	Meter string            `table:",pk"`
	ID    string            `table:",rk"`
	N     int64             `table:"N"`
	Unit  string            `table:"Unit"`
	Notes map[string]string `table:"-" wide:"Note"`
	ETag  azcore.ETag       `table:",etag"`
}

func bump(v *Tally) error {
	v.N++
	if v.Notes == nil {
		v.Notes = map[string]string{}
	}
	v.Notes[fmt.Sprint(v.N)] = "seen"
	return nil
}

// TestWideKeyed: each verb of a WithKey copy of a Wide, repeated with its
// key, is not applied again and says so with a nil error and an empty
// version; a keyed Modify costs the unkeyed one's; bad input is refused
// before anything is sent.
func TestWideKeyed(t *testing.T) {
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	w, err := patterns.NewWide(typed[Tally](t, entityTable(t, acct)), nil)
	if err != nil {
		t.Fatal(err)
	}
	cost := func(fn func()) tablekit.MeterSnapshot {
		before := acct.Meter().Snapshot()
		fn()
		return acct.Meter().Snapshot().Sub(before)
	}
	get := func(id string) (Tally, bool) {
		v, err := w.Get(ctx, "m", id)
		if errors.Is(err, tablekit.ErrNotFound) {
			return Tally{}, false
		}
		if err != nil {
			t.Fatal(err)
		}
		return v, true
	}

	// Insert, repeated after a delete: the documented limitation of a
	// retried insert around a concurrent delete does not apply.
	if etag, err := w.WithKey("ins").Insert(ctx, Tally{Meter: "m", ID: "a", N: 1}); err != nil || etag == "" {
		t.Fatalf("keyed Insert: %q, %v", etag, err)
	}
	if err := w.Delete(ctx, "m", "a", azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	if etag, err := w.WithKey("ins").Insert(ctx, Tally{Meter: "m", ID: "a", N: 1}); err != nil || etag != "" {
		t.Errorf("repeated keyed Insert: %q, %v", etag, err)
	}
	if _, ok := get("a"); ok {
		t.Error("the repeated keyed Insert inserted again")
	}

	// Upsert, Update, Merge: a repeat with the same value (at a stale
	// version) changes nothing; with another value it is refused as a
	// reuse of the key (coord.ErrKeyReused), and changes nothing either.
	if _, err := w.WithKey("ups").Upsert(ctx, Tally{Meter: "m", ID: "b", N: 1, Unit: "u1"}); err != nil {
		t.Fatal(err)
	}
	if etag, err := w.WithKey("ups").Upsert(ctx, Tally{Meter: "m", ID: "b", N: 1, Unit: "u1"}); err != nil || etag != "" {
		t.Errorf("repeated keyed Upsert: %q, %v", etag, err)
	}
	if _, err := w.WithKey("ups").Upsert(ctx, Tally{Meter: "m", ID: "b", N: 9, Unit: "u9"}); !errors.Is(err, coord.ErrKeyReused) {
		t.Errorf("keyed Upsert of another value: %v, want coord.ErrKeyReused", err)
	}
	cur, _ := get("b")
	if _, err := w.WithKey("upd").Update(ctx, Tally{Meter: "m", ID: "b", N: 2, Unit: "u2"}, cur.ETag); err != nil {
		t.Fatal(err)
	}
	if etag, err := w.WithKey("upd").Update(ctx, Tally{Meter: "m", ID: "b", N: 2, Unit: "u2"}, cur.ETag); err != nil || etag != "" {
		t.Errorf("repeated keyed Update (stale version): %q, %v", etag, err)
	}
	if _, err := w.WithKey("upd").Update(ctx, Tally{Meter: "m", ID: "b", N: 7, Unit: "u7"}, cur.ETag); !errors.Is(err, coord.ErrKeyReused) {
		t.Errorf("keyed Update of another value (stale version): %v, want coord.ErrKeyReused", err)
	}
	cur, _ = get("b")
	if _, err := w.WithKey("mrg").Merge(ctx, Tally{Meter: "m", ID: "b", N: 3, Unit: "u3"}, cur.ETag); err != nil {
		t.Fatal(err)
	}
	if etag, err := w.WithKey("mrg").Merge(ctx, Tally{Meter: "m", ID: "b", N: 3, Unit: "u3"}, cur.ETag); err != nil || etag != "" {
		t.Errorf("repeated keyed Merge (stale version): %q, %v", etag, err)
	}
	if _, err := w.WithKey("mrg").Merge(ctx, Tally{Meter: "m", ID: "b", N: 8, Unit: "u8"}, cur.ETag); !errors.Is(err, coord.ErrKeyReused) {
		t.Errorf("keyed Merge of another value (stale version): %v, want coord.ErrKeyReused", err)
	}
	if v, _ := get("b"); v.N != 3 || v.Unit != "u3" {
		t.Errorf("after the repeats: %+v, want N 3, Unit u3", v)
	}
	if _, err := w.WithKey("upd2").Update(ctx, Tally{Meter: "m", ID: "b"}, cur.ETag); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Errorf("keyed Update with a stale version and a new key: %v, want ErrPreconditionFailed", err)
	}

	// Modify: an increment repeated with its key leaves +1; the repeat
	// returns the stored entity. Same cost as unkeyed.
	var got Tally
	keyed := cost(func() { got, err = w.WithKey("mod").Modify(ctx, "m", "c", bump) })
	if err != nil || got.N != 1 || got.ETag == "" {
		t.Fatalf("keyed Modify: %+v, %v", got, err)
	}
	unkeyed := cost(func() { _, err = w.Modify(ctx, "m", "d", bump) })
	if err != nil {
		t.Fatal(err)
	}
	if keyed.Total() != unkeyed.Total() || keyed.Count("table", "Transaction") != 1 {
		t.Errorf("keyed Modify cost %v, unkeyed %v: want the same", keyed, unkeyed)
	}
	got, err = w.WithKey("mod").Modify(ctx, "m", "c", bump)
	if stored, _ := get("c"); err != nil || got.N != 1 || stored.N != 1 || got.ETag != stored.ETag {
		t.Errorf("repeated keyed Modify: %+v, %v; stored %+v", got, err, stored)
	}

	// Delete and DeleteIfExists: the repeat after the entity came back
	// leaves it.
	if err := w.WithKey("del").Delete(ctx, "m", "c", azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Insert(ctx, Tally{Meter: "m", ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := w.WithKey("del").Delete(ctx, "m", "c", azcore.ETagAny); err != nil {
		t.Errorf("repeated keyed Delete: %v", err)
	}
	if existed, err := w.WithKey("die").DeleteIfExists(ctx, "m", "e"); err != nil || existed {
		t.Errorf("keyed DeleteIfExists of nothing: %v, %v", existed, err)
	}
	if _, err := w.Insert(ctx, Tally{Meter: "m", ID: "e"}); err != nil {
		t.Fatal(err)
	}
	if existed, err := w.WithKey("die").DeleteIfExists(ctx, "m", "e"); err != nil || existed {
		t.Errorf("repeated keyed DeleteIfExists: %v, %v", existed, err)
	}
	for _, id := range []string{"c", "e"} {
		if _, ok := get(id); !ok {
			t.Errorf("%s: deleted by a repeat", id)
		}
	}

	// Refused before anything is sent.
	refused := cost(func() {
		if _, err := w.WithKey("").Upsert(ctx, Tally{Meter: "m", ID: "x"}); !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("empty key: %v", err)
		}
		if _, err := w.WithKey("a/b").Modify(ctx, "m", "x", bump); !errors.Is(err, tablekit.ErrInvalidKey) {
			t.Errorf("bad key: %v", err)
		}
		if _, err := w.WithKey("k").Insert(ctx, Tally{Meter: "m", ID: coord.ReservedPrefix + "x"}); !errors.Is(err, tablekit.ErrInvalidKey) {
			t.Errorf("reserved RowKey: %v", err)
		}
	})
	if refused.Total() != 0 {
		t.Errorf("refused writes sent %v", refused)
	}

	// 100 properties, one per part: 100 physical entities fill a
	// transaction, and the record would be its 101st action.
	narrow, err := patterns.NewWide(entityTable(t, acct), &patterns.WideOptions{PropertiesPerPart: 1})
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]any{}
	for i := range 100 {
		props[fmt.Sprintf("P%03d", i)] = int32(i)
	}
	wide := tablekit.Entity{PartitionKey: "m", RowKey: "w", Properties: props}
	refused = cost(func() {
		if _, err := narrow.WithKey("k").Insert(ctx, wide); !errors.Is(err, tablekit.ErrTooLarge) || !strings.Contains(err.Error(), "100 actions") {
			t.Errorf("keyed insert of 100 parts: %v, want ErrTooLarge naming the 100 actions", err)
		} else {
			t.Log(err)
		}
	})
	if refused.Total() != 0 {
		t.Errorf("the refused write sent %v", refused)
	}
	if _, err := narrow.Insert(ctx, wide); err != nil {
		t.Errorf("unkeyed insert of 100 parts: %v", err)
	}
}

// TestWideKeyedAnswerLost: every transaction's first answers are lost
// (the service applied them); keyed Modify increments settle by their
// records and are applied once each, with a nil error and no version.
func TestWideKeyedAnswerLost(t *testing.T) {
	ctx := testContext(t)
	inj, err := chaos.New(1, &chaos.Config{AnswerLost: 1, Operations: []string{"Transaction"}, MaxConsecutive: 3})
	if err != nil {
		t.Fatal(err)
	}
	acct := inj.Account(t, nil)
	w, err := patterns.NewWide(typed[Tally](t, entityTable(t, acct)), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		got, err := w.WithKey(fmt.Sprint("mod-", i)).Modify(ctx, "m", "a", bump)
		if err != nil || got.N != int64(i) || got.ETag != "" {
			t.Errorf("keyed Modify %d, answer lost: %+v, %v; want N %d, no version", i, got, err, i)
		}
	}
	if etag, err := w.WithKey("ins").Insert(ctx, Tally{Meter: "m", ID: "b"}); err != nil || etag != "" {
		t.Errorf("keyed Insert, answer lost: %q, %v", etag, err)
	}
	inj.SetEnabled(false)
	if v, err := w.Get(ctx, "m", "a"); err != nil || v.N != 3 {
		t.Errorf("after 3 keyed increments with lost answers: %+v, %v; want N 3", v, err)
	}
}
