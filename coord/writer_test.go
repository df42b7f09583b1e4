package coord_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

type Order struct {
	Shop  string      `table:",pk"`
	ID    string      `table:",rk"`
	Total int         `table:"Total"`
	ETag  azcore.ETag `table:",etag"`
}

func TestWriterFenced(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[Order](t, acct, nil)
	old, err := coord.NewWriter(tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := coord.NewWriter(tbl, nil)
	m := acct.Meter()

	before := m.Snapshot()
	if _, err := old.Transaction(ctx, coord.Write{Term: 1}, tablekit.InsertAction(Order{Shop: "s", ID: "1", Total: 1})); err != nil {
		t.Fatal(err)
	}
	if c := m.Snapshot().Sub(before); c.Count("table", "Transaction") != 1 || c.Total() != 2 {
		t.Errorf("first fenced write cost %v, want 1 read + 1 transaction", c)
	}
	before = m.Snapshot()
	r, err := old.Transaction(ctx, coord.Write{Term: 1}, tablekit.UpsertAction(Order{Shop: "s", ID: "2", Total: 2}))
	if err != nil || len(r.ETags) != 1 || r.ETags[0] == "" {
		t.Fatalf("second fenced write: %+v, %v", r, err)
	}
	if c := m.Snapshot().Sub(before); c.Total() != 1 {
		t.Errorf("fenced write with the fence cached cost %v, want 1 transaction", c)
	}
	// The new holder raises the fence; the old one's next write is refused
	// although its cache says the fence is at its term.
	if err := cur.Fence(ctx, "s", 2); err != nil {
		t.Fatal(err)
	}
	_, err = old.Transaction(ctx, coord.Write{Term: 1}, tablekit.UpsertAction(Order{Shop: "s", ID: "3", Total: 3}))
	if !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("stale write: %v, want ErrFenced", err)
	}
	t.Log(err)
	if _, err := tbl.Get(ctx, "s", "3"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("the refused write is stored: %v", err)
	}
	if err := old.Fence(ctx, "s", 1); !errors.Is(err, coord.ErrFenced) {
		t.Errorf("lowering the fence: %v, want ErrFenced", err)
	}
	if _, err := cur.Transaction(ctx, coord.Write{Term: 2}, tablekit.UpsertAction(Order{Shop: "s", ID: "3", Total: 3})); err != nil {
		t.Fatal(err)
	}
	// A refused action reports its index among the caller's actions.
	_, err = cur.Transaction(ctx, coord.Write{Term: 2, Key: "k"}, tablekit.UpsertAction(Order{Shop: "s", ID: "4"}), tablekit.InsertAction(Order{Shop: "s", ID: "1"}))
	var te *tablekit.TransactionError
	if !errors.As(err, &te) || te.Index != 1 || !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Errorf("refused action: %v, want a TransactionError at index 1", err)
	}
	if _, err := cur.Transaction(ctx, coord.Write{}, tablekit.UpsertAction(Order{Shop: "s", ID: "~coord~fence"})); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("write to a reserved RowKey: %v", err)
	}
}

func TestWriterKeyed(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[Order](t, acct, nil)
	w, _ := coord.NewWriter(tbl, nil)
	m := acct.Meter()

	before := m.Snapshot()
	r, err := w.Transaction(ctx, coord.Write{Key: "order-1"}, tablekit.InsertAction(Order{Shop: "s", ID: "1", Total: 5}))
	if err != nil || r.Replayed || len(r.ETags) != 1 {
		t.Fatalf("keyed insert: %+v, %v", r, err)
	}
	if c := m.Snapshot().Sub(before); c.Total() != 1 {
		t.Errorf("keyed write cost %v, want 1 transaction", c)
	}
	// Someone deletes the order; a retry with the same key must not insert it again.
	if err := tbl.Delete(ctx, "s", "1", azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	r, err = w.Transaction(ctx, coord.Write{Key: "order-1"}, tablekit.InsertAction(Order{Shop: "s", ID: "1", Total: 5}))
	if err != nil || !r.Replayed {
		t.Fatalf("retry with the same key: %+v, %v; want Replayed", r, err)
	}
	if _, err := tbl.Get(ctx, "s", "1"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("the replayed insert took effect again: %v", err)
	}
	// Without a Fingerprint the key stands for its actions: sent again with
	// others, it is refused (TestWriterKeyReused).
	_, err = w.Transaction(ctx, coord.Write{Key: "order-1"}, tablekit.InsertAction(Order{Shop: "s", ID: "2"}))
	if !errors.Is(err, coord.ErrKeyReused) {
		t.Errorf("key sent again with other actions: %v; want ErrKeyReused", err)
	}
	if _, err := w.Transaction(ctx, coord.Write{Key: "bad/key"}, tablekit.InsertAction(Order{Shop: "s", ID: "2"})); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("bad key: %v", err)
	} else {
		t.Log(err)
	}
}

// TestWriterKeyedAnswerLost: every transaction's answer is lost; keyed
// writes settle by reading their record (1 read more), fenced ones by the
// fence row.
func TestWriterKeyedAnswerLost(t *testing.T) {
	ctx := context.Background()
	inj, err := chaos.New(1, &chaos.Config{AnswerLost: 1, Operations: []string{"Transaction"}, MaxConsecutive: 3})
	if err != nil {
		t.Fatal(err)
	}
	acct := inj.Account(t, nil)
	tbl := testenv.OpenTable[Order](t, acct, nil)
	w, _ := coord.NewWriter(tbl, nil)

	// Unkeyed: the root cannot tell.
	_, err = tbl.Transaction(ctx, tablekit.InsertAction(Order{Shop: "s", ID: "0"}))
	if !errors.Is(err, tablekit.ErrOutcomeUnknown) {
		t.Fatalf("unkeyed insert with a lost answer: %v, want ErrOutcomeUnknown (else this test shows nothing)", err)
	}
	before := acct.Meter().Snapshot()
	r, err := w.Transaction(ctx, coord.Write{Key: "k1"}, tablekit.InsertAction(Order{Shop: "s", ID: "1"}))
	if err != nil || r.Replayed {
		t.Fatalf("keyed insert with a lost answer: %+v, %v; want applied", r, err)
	}
	c := acct.Meter().Snapshot().Sub(before)
	if c.Count("table", "GetEntity") != 1 {
		t.Errorf("settling cost %v, want 1 read more", c)
	}
	t.Logf("keyed insert, answer lost: %v", c)
	r, err = w.Transaction(ctx, coord.Write{Term: 1}, tablekit.InsertAction(Order{Shop: "s", ID: "2"}))
	if err != nil {
		t.Fatalf("fenced insert with a lost answer: %+v, %v; want applied", r, err)
	}
}

// TestWriterKeyedGivesUpKnowingNothingApplied: when every try of a keyed
// transaction fails before reaching the service, the Writer settles each
// by reading the key and finally reports that nothing was applied, not
// ErrOutcomeUnknown.
func TestWriterKeyedGivesUpKnowingNothingApplied(t *testing.T) {
	ctx := context.Background()
	inj, err := chaos.New(1, &chaos.Config{Reset: 1, Operations: []string{"Transaction"}, MaxConsecutive: 1000})
	if err != nil {
		t.Fatal(err)
	}
	acct := inj.Account(t, nil)
	tbl := testenv.OpenTable[Order](t, acct, nil)
	w, _ := coord.NewWriter(tbl, &coord.WriterOptions{Retry: tablekit.RetryPolicy{MaxAttempts: 2}})
	_, err = tbl.Transaction(ctx, tablekit.InsertAction(Order{Shop: "s", ID: "0"}))
	if !errors.Is(err, tablekit.ErrOutcomeUnknown) {
		t.Fatalf("unkeyed transaction whose every try was reset: %v, want ErrOutcomeUnknown (else this test shows nothing)", err)
	}
	_, err = w.Transaction(ctx, coord.Write{Key: "k"}, tablekit.InsertAction(Order{Shop: "s", ID: "1"}))
	if err == nil || errors.Is(err, tablekit.ErrOutcomeUnknown) {
		t.Fatalf("keyed transaction whose every try was reset: %v, want a known failure", err)
	}
	t.Log(err)
	inj.SetEnabled(false)
	if _, err := tbl.Get(ctx, "s", "1"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("reported not applied, but: %v", err)
	}
}

// TestWriterKeyReused: a key repeated with the same content (ETags aside)
// is a replay; with other content it fails with ErrKeyReused and writes
// nothing; Fingerprint names the content instead of the actions, so that a
// repeat whose actions were recomputed from changed state still replays;
// a record written before fingerprints existed checks nothing.
func TestWriterKeyReused(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[Order](t, acct, nil)
	w, _ := coord.NewWriter(tbl, nil)
	m := acct.Meter()

	r, err := w.Transaction(ctx, coord.Write{Key: "k1"}, tablekit.InsertAction(Order{Shop: "s", ID: "1", Total: 5}))
	if err != nil || r.Replayed {
		t.Fatalf("keyed insert: %+v, %v", r, err)
	}
	// The same content with another ETag (a retry that read the row again).
	before := m.Snapshot()
	r, err = w.Transaction(ctx, coord.Write{Key: "k1"}, tablekit.InsertAction(Order{Shop: "s", ID: "1", Total: 5, ETag: "W/\"other\""}))
	if err != nil || !r.Replayed {
		t.Errorf("repeat with the same content: %+v, %v; want Replayed", r, err)
	}
	if c := m.Snapshot().Sub(before); c.Total() != 2 {
		t.Errorf("a replay cost %v, want the refused transaction and the read of the record", c)
	}
	_, err = w.Transaction(ctx, coord.Write{Key: "k1"}, tablekit.UpsertAction(Order{Shop: "s", ID: "1", Total: 6}))
	if !errors.Is(err, coord.ErrKeyReused) {
		t.Errorf("key reused with other content: %v, want ErrKeyReused", err)
	} else {
		t.Log(err)
	}
	_, err = w.Transaction(ctx, coord.Write{Key: "k1"}, tablekit.InsertAction(Order{Shop: "s", ID: "2", Total: 5}))
	if !errors.Is(err, coord.ErrKeyReused) {
		t.Errorf("key reused for another row: %v, want ErrKeyReused", err)
	}
	if o, err := tbl.Get(ctx, "s", "1"); err != nil || o.Total != 5 {
		t.Errorf("after the refused reuses: %+v, %v; want the first write's Total 5", o, err)
	}
	if _, err := tbl.Get(ctx, "s", "2"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("a refused reuse wrote its row: %v", err)
	}

	// Fingerprint names the intent: recomputed actions replay, another
	// intent with the key is refused.
	if _, err := w.Transaction(ctx, coord.Write{Key: "msg-7", Fingerprint: "msg-7 body"}, tablekit.UpsertAction(Order{Shop: "s", ID: "3", Total: 7})); err != nil {
		t.Fatal(err)
	}
	r, err = w.Transaction(ctx, coord.Write{Key: "msg-7", Fingerprint: "msg-7 body"}, tablekit.UpsertAction(Order{Shop: "s", ID: "3", Total: 8}))
	if err != nil || !r.Replayed {
		t.Errorf("recomputed actions with the same Fingerprint: %+v, %v; want Replayed", r, err)
	}
	if _, err := w.Transaction(ctx, coord.Write{Key: "msg-7", Fingerprint: "another body"}, tablekit.UpsertAction(Order{Shop: "s", ID: "3", Total: 7})); !errors.Is(err, coord.ErrKeyReused) {
		t.Errorf("another Fingerprint with the key: %v, want ErrKeyReused", err)
	}
	if o, _ := tbl.Get(ctx, "s", "3"); o.Total != 7 {
		t.Errorf("Total %d, want the first write's 7", o.Total)
	}

	// A record written before fingerprints: no check.
	if _, err := tbl.AsEntities().Insert(ctx, tablekit.Entity{PartitionKey: "s", RowKey: coord.ReservedPrefix + "key~legacy", Properties: map[string]any{"Stamp": "x", "Expires": time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	r, err = w.Transaction(ctx, coord.Write{Key: "legacy"}, tablekit.UpsertAction(Order{Shop: "s", ID: "4"}))
	if err != nil || !r.Replayed {
		t.Errorf("repeat of a key recorded without a fingerprint: %+v, %v; want Replayed", r, err)
	}
}

// TestReadsOfKeyedPartition: Count and Query over a partition written by
// keyed, fenced writes see the user's row alone, not the idempotency record
// and fence row beside it; QueryOptions.Reserved shows them.
func TestReadsOfKeyedPartition(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[Order](t, acct, nil)
	w, _ := coord.NewWriter(tbl, nil)
	if _, err := w.Transaction(ctx, coord.Write{Key: "order-1", Term: 1}, tablekit.InsertAction(Order{Shop: "s", ID: "1", Total: 5})); err != nil {
		t.Fatal(err)
	}
	if n, err := tbl.Count(ctx, tablekit.PartitionEq("s")); err != nil || n != 1 {
		t.Errorf("Count of the partition: %d, %v; want 1", n, err)
	}
	rows, err := tablekit.Collect(tbl.Query(ctx, tablekit.PartitionEq("s"), nil), 0)
	if err != nil || len(rows) != 1 || rows[0].ID != "1" {
		t.Errorf("Query of the partition: %+v, %v; want order 1 alone", rows, err)
	}
	all, err := tablekit.Collect(tbl.AsEntities().Query(ctx, tablekit.PartitionEq("s"), &tablekit.QueryOptions{Reserved: true}), 0)
	if err != nil || len(all) != 3 {
		t.Errorf("Query with Reserved: %d rows, %v; want 3 (the order, its record, the fence row)", len(all), err)
	}
}
