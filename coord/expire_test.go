package coord_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/stream"
	"github.com/tablekit/tablekit/transfer"
)

// Session is a row that opted in to expiry: its Expires field is stored
// as coord.ExpiresProperty ("_expires").
type Session struct {
	User    string    `table:",pk"`
	ID      string    `table:",rk"`
	Expires time.Time `table:"_expires"`
}

func TestLiveAndSweep(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[Session](t, acct, nil)
	now := time.Now().UTC()
	var all []Session
	for i := range 250 {
		all = append(all, Session{User: fmt.Sprintf("u%d", i%3), ID: fmt.Sprintf("old%03d", i), Expires: now.Add(-time.Minute)})
	}
	for i := range 10 {
		all = append(all, Session{User: fmt.Sprintf("u%d", i%3), ID: fmt.Sprintf("new%03d", i), Expires: now.Add(time.Hour)})
	}
	if _, err := tbl.BulkWriter(nil).Upsert(ctx, all); err != nil {
		t.Fatal(err)
	}
	live, err := tablekit.Collect(tbl.Query(ctx, coord.Live(tablekit.PartitionEq("u0"), now), nil), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 4 {
		t.Errorf("Live read %d rows of u0, want the 4 unexpired", len(live))
	}
	ents := tbl.AsEntities()
	res, err := coord.Sweep(ctx, ents, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("swept: %+v", res)
	// 84, 83 and 83 expired rows in 3 partitions: one delete transaction
	// each (on Cosmos DB, one per partition in each page).
	cosmos := testenv.Service() == tablekit.ServiceCosmosDB
	if res.Deleted != 250 || res.Listed != 250 || !res.Complete || (res.DeleteTransactions != 3 && !cosmos) || res.DeleteTransactions > 3*res.Pages {
		t.Errorf("Sweep: %d listed, %d deleted in %d transactions, complete %v; want 250, 250, 3, true",
			res.Listed, res.Deleted, res.DeleteTransactions, res.Complete)
	}
	n, err := tbl.Count(ctx, tablekit.Filter{})
	if err != nil || n != 10 {
		t.Errorf("%d rows left (%v), want the 10 unexpired", n, err)
	}
	if _, err := coord.Sweep(ctx, nil, time.Now(), nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("Sweep(nil): %v", err)
	}
	if _, err := coord.Sweep(ctx, ents, time.Time{}, nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("Sweep at the zero time: %v", err)
	}
}

// TestSweepResumeKeepsItsNow: a sweep stopped by its Budget and resumed
// goes on over the rows expired at its first run's now, kept with its
// checkpoint, not at the now of the resuming call; a checkpoint that is not
// a sweep's is refused.
func TestSweepResumeKeepsItsNow(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[Session](t, acct, nil)
	first := time.Now().UTC()
	var rows []Session
	for i := range 300 {
		rows = append(rows, Session{User: "u", ID: fmt.Sprintf("old%03d", i), Expires: first.Add(-time.Minute)})
	}
	if _, err := tbl.BulkWriter(nil).Upsert(ctx, rows); err != nil {
		t.Fatal(err)
	}
	cp := transfer.NewFileCheckpoint(filepath.Join(t.TempDir(), "sweep.json"))
	opts := &transfer.PurgeOptions{Options: transfer.Options{PageSize: 100, JobOptions: transfer.JobOptions{Checkpoint: cp}}, Budget: time.Nanosecond}
	res, err := coord.Sweep(ctx, tbl.AsEntities(), first, opts)
	if err != nil || res.Complete {
		t.Fatalf("a sweep with a 1 ns budget: %+v, %v; want it stopped", res, err)
	}
	// Rows that expire after the first run's now, before the resuming call's.
	for i := range 20 {
		if _, err := tbl.Insert(ctx, Session{User: "u", ID: fmt.Sprintf("mid%03d", i), Expires: first.Add(time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	later := first.Add(time.Minute)
	opts.Budget, opts.Resume = 0, true
	res, err = coord.Sweep(ctx, tbl.AsEntities(), later, opts)
	if err != nil || !res.Complete || res.Deleted != 300 {
		t.Fatalf("the resumed sweep: %+v, %v; want complete with the 300 rows expired at its first now", res, err)
	}
	if n, err := tbl.Count(ctx, tablekit.Filter{}); err != nil || n != 20 {
		t.Fatalf("%d rows left after the resumed sweep (%v), want the 20 expiring after its first now", n, err)
	}
	res, err = coord.Sweep(ctx, tbl.AsEntities(), later, nil)
	if err != nil || res.Deleted != 20 {
		t.Errorf("a new sweep at the later now: %+v, %v; want the 20 deleted", res, err)
	}
	if err := cp.Save(ctx, []byte(`{"op":"purge"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := coord.Sweep(ctx, tbl.AsEntities(), later, opts); !errors.Is(err, transfer.ErrCorruptCheckpoint) {
		t.Errorf("resuming from a checkpoint that is not a sweep's: %v, want ErrCorruptCheckpoint", err)
	}
}

// TestSweepKeys: idempotency records expire after KeyTTL and are swept
// like any expiring row.
func TestSweepKeys(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[Session](t, acct, nil)
	w, err := coord.NewWriter(tbl, &coord.WriterOptions{KeyTTL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Transaction(ctx, coord.Write{Key: "k"}, tablekit.UpsertAction(Session{User: "u", ID: "s", Expires: time.Now().Add(time.Hour)})); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	res, err := coord.Sweep(ctx, tbl.AsEntities(), time.Now(), &transfer.PurgeOptions{Options: transfer.Options{
		Scope: transfer.Scope{Filter: tablekit.RowKeyPrefix("u", coord.ReservedPrefix)}}})
	if err != nil || res.Deleted != 1 {
		t.Fatalf("sweeping records: %+v, %v; want 1 deleted", res, err)
	}
	r, err := w.Transaction(ctx, coord.Write{Key: "k"}, tablekit.UpsertAction(Session{User: "u", ID: "s"}))
	if err != nil || r.Replayed {
		t.Errorf("after its record was swept, a key is new again: %+v, %v", r, err)
	}
}

// Coupon is an event whose type has a domain Expires (a coupon's end):
// nothing to do with expiry of the row.
type Coupon struct {
	PK      string    `table:",pk"`
	RK      string    `table:",rk"`
	Code    string    `table:"Code"`
	Expires time.Time `table:"Expires"`
}

// Token is a user row that opted in to expiry by coord.ExpiresProperty.
type Token struct {
	PK      string    `table:",pk"`
	RK      string    `table:",rk"`
	Expires time.Time `table:"_expires"`
}

// TestSweepOnlyWhatAskedToExpire: a partition holds a stream whose events
// carry a domain Expires in the past, a view row and an outbox-state-like
// row with a past Expires, coord's idempotency records (old ones with
// "Expires", new ones with "_expires"), and a user row that opted in to
// expiry ("_expires"). Sweep deletes the records and the opted-in row
// only; the stream still reads whole.
func TestSweepOnlyWhatAskedToExpire(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[tablekit.Entity](t, acct, nil)
	reg := &tablekit.Registry{}
	if err := tablekit.Register[Coupon](reg, "Coupon", 1); err != nil {
		t.Fatal(err)
	}
	s, err := stream.NewStore(tbl, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	past := time.Now().UTC().Add(-time.Hour)
	id := stream.ID{PartitionKey: "c1", Prefix: "coupons"}
	var evs []stream.Event
	for i := range 5 {
		evs = append(evs, stream.Event{Data: Coupon{Code: fmt.Sprintf("c%d", i), Expires: past}})
	}
	view := tablekit.Entity{PartitionKey: "c1", RowKey: "view", Properties: map[string]any{"Balance": int64(5), "Expires": past}}
	if _, err := s.Append(ctx, id, 0, evs, tablekit.UpsertAction(view)); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Insert(ctx, tablekit.Entity{PartitionKey: "c1", RowKey: "outbox~state", Properties: map[string]any{"Sent": int64(3), "Expires": past}}); err != nil {
		t.Fatal(err)
	}
	// An idempotency record as coord wrote them before "_expires".
	if _, err := tbl.Insert(ctx, tablekit.Entity{PartitionKey: "c1", RowKey: coord.ReservedPrefix + "key~old", Properties: map[string]any{"Stamp": "x", "Expires": past}}); err != nil {
		t.Fatal(err)
	}
	// Records written now, expired an hour later on a clock two hours back.
	w, err := coord.NewWriter(tbl, &coord.WriterOptions{Clock: func() time.Time { return time.Now().Add(-2 * time.Hour) }, KeyTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Transaction(ctx, coord.Write{Key: "new"}, tablekit.UpsertAction(tablekit.Entity{PartitionKey: "c1", RowKey: "other", Properties: map[string]any{"N": int64(1)}})); err != nil {
		t.Fatal(err)
	}
	tokens, err := tablekit.OpenTable[Token](acct, tbl.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Insert(ctx, Token{PK: "c1", RK: "token", Expires: past}); err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Insert(ctx, Token{PK: "c1", RK: "token-live", Expires: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}

	res, err := coord.Sweep(ctx, tbl, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 3 {
		t.Errorf("Sweep deleted %d rows, want 3 (the two records and the opted-in token)", res.Deleted)
	}
	left := map[string]bool{}
	for e, err := range tbl.Query(ctx, tablekit.PartitionEq("c1"), &tablekit.QueryOptions{Reserved: true}) {
		if err != nil {
			t.Fatal(err)
		}
		left[e.RowKey] = true
	}
	for _, rk := range []string{"view", "outbox~state", "other", "token-live", "coupons~ev~0000000001", "coupons~ev~0000000005", "coupons~head~0000000005"} {
		if !left[rk] {
			t.Errorf("Sweep deleted %s, which did not ask to expire", rk)
		}
	}
	for _, rk := range []string{coord.ReservedPrefix + "key~old", coord.ReservedPrefix + "key~new", "token"} {
		if left[rk] {
			t.Errorf("Sweep kept %s, expired", rk)
		}
	}
	n := 0
	for ev, err := range s.Forward(ctx, id, 1) {
		if err != nil {
			t.Fatalf("Forward after the sweep: %v", err)
		}
		n++
		if ev.Version != int64(n) {
			t.Fatalf("Forward read version %d at %d", ev.Version, n)
		}
	}
	if n != 5 {
		t.Errorf("Forward read %d events after the sweep, want 5", n)
	}
	live, err := tablekit.Collect(tokens.Query(ctx, coord.Live(tablekit.PartitionEq("c1"), time.Now()), nil), 0)
	if err != nil || len(live) != 1 || live[0].RK != "token-live" {
		t.Errorf("Live read %+v, %v; want token-live alone", live, err)
	}
	// The name is reserved: an event that would opt in to expiry (and be
	// swept out of its stream) is refused.
	if err := tablekit.Register[Token](reg, "Token", 1); err != nil {
		t.Fatal(err)
	}
	_, err = s.Append(ctx, id, 5, []stream.Event{{Data: Token{Expires: past}}})
	if !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("appending an event with %q: %v, want ErrInvalidInput", coord.ExpiresProperty, err)
	} else {
		t.Log(err)
	}
}
