package index_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// Tally is a counter with a unique label and a bucket (a List index), so
// that a write's transaction holds several rows besides the record.
type Tally struct {
	Group  string      `table:",pk"`
	ID     string      `table:",rk"`
	N      int         `table:"N"`
	Label  string      `table:"Label"`
	Bucket string      `table:"Bucket"`
	ETag   azcore.ETag `table:",etag"`
}

func tallyIndexes() []index.Index[Tally] {
	return []index.Index[Tally]{
		{Name: "label", Key: func(v Tally) string { return v.Label }, Unique: true},
		{Name: "bucket", Key: func(v Tally) string { return v.Bucket }, List: true},
	}
}

type tallyFixture struct {
	acct *tablekit.Account
	ix   *index.SamePartition[Tally]
	raw  *tablekit.Table[tablekit.Entity]
}

func newTallies(t *testing.T, acct *tablekit.Account, indexes []index.Index[Tally]) *tallyFixture {
	t.Helper()
	name := testenv.CreateTable(t, acct)
	tbl, err := tablekit.OpenTable[Tally](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := index.NewSamePartition(tbl, indexes, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tablekit.OpenTable[tablekit.Entity](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &tallyFixture{acct: acct, ix: ix, raw: raw}
}

func tally(id string, n int) Tally {
	return Tally{Group: "g", ID: id, N: n, Label: "label-" + id, Bucket: "b" + strconv.Itoa(n%2)}
}

// cost returns what fn cost in storage transactions.
func cost(t *testing.T, acct *tablekit.Account, fn func()) tablekit.MeterSnapshot {
	t.Helper()
	before := acct.Meter().Snapshot()
	fn()
	return acct.Meter().Snapshot().Sub(before)
}

func (f *tallyFixture) stored(t *testing.T, ctx context.Context, id string) (Tally, bool) {
	t.Helper()
	v, err := f.ix.Get(ctx, "g", id)
	if errors.Is(err, tablekit.ErrNotFound) {
		return Tally{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return v, true
}

// TestSamePartitionKeyed: each verb of a WithKey copy, repeated with its
// key, is not applied again and says so with a nil error and an empty
// ETag; a keyed write costs what the unkeyed one does; the records are
// invisible to the index's reads.
func TestSamePartitionKeyed(t *testing.T) {
	ctx := testCtx(t)
	f := newTallies(t, testenv.Account(t, nil), tallyIndexes())
	ix := f.ix
	same := func(what string, keyed, unkeyed tablekit.MeterSnapshot) {
		t.Helper()
		if keyed.Total() != unkeyed.Total() || keyed.Count("table", "Transaction") != unkeyed.Count("table", "Transaction") {
			t.Errorf("%s: keyed cost %v, unkeyed %v: want the same", what, keyed, unkeyed)
		}
	}

	// Insert: the repeat after a delete does not insert again.
	var etag azcore.ETag
	var err error
	keyed := cost(t, f.acct, func() { etag, err = ix.WithKey("ins").Insert(ctx, tally("a", 1)) })
	if err != nil || etag == "" {
		t.Fatalf("keyed insert: %q, %v", etag, err)
	}
	unkeyed := cost(t, f.acct, func() { _, err = ix.Insert(ctx, tally("b", 1)) })
	if err != nil {
		t.Fatal(err)
	}
	same("Insert", keyed, unkeyed)
	if err := ix.Delete(ctx, "g", "a", azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	if etag, err := ix.WithKey("ins").Insert(ctx, tally("a", 1)); err != nil || etag != "" {
		t.Errorf("repeated keyed insert: %q, %v; want a replay (nil error, empty ETag)", etag, err)
	}
	if _, ok := f.stored(t, ctx, "a"); ok {
		t.Error("the repeated keyed insert inserted again")
	}

	// Upsert: the repeat changes nothing; with another value it is a
	// reuse of the key, refused, and changes nothing either.
	keyed = cost(t, f.acct, func() { _, err = ix.WithKey("ups").Upsert(ctx, tally("b", 2)) })
	if err != nil {
		t.Fatal(err)
	}
	unkeyed = cost(t, f.acct, func() { _, err = ix.Upsert(ctx, tally("b", 3)) })
	if err != nil {
		t.Fatal(err)
	}
	same("Upsert", keyed, unkeyed)
	if etag, err := ix.WithKey("ups").Upsert(ctx, tally("b", 2)); err != nil || etag != "" {
		t.Errorf("repeated keyed upsert: %q, %v", etag, err)
	}
	if _, err := ix.WithKey("ups").Upsert(ctx, tally("b", 7)); !errors.Is(err, coord.ErrKeyReused) {
		t.Errorf("keyed upsert of another value: %v, want coord.ErrKeyReused", err)
	}
	// The record keeps the fingerprint of the value written, not of the
	// actions derived from it: the repeat of the same value, planned from
	// what is stored now (another bucket, so other List entity actions),
	// is still a replay.
	if _, err := ix.WithKey("ups-x").Upsert(ctx, tally("x", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Upsert(ctx, tally("x", 2)); err != nil {
		t.Fatal(err)
	}
	if etag, err := ix.WithKey("ups-x").Upsert(ctx, tally("x", 1)); err != nil || etag != "" {
		t.Errorf("repeated keyed upsert, planned from another stored version: %q, %v; want a replay", etag, err)
	}
	if v, _ := f.stored(t, ctx, "x"); v.N != 2 {
		t.Errorf("after the replay N = %d, want 2", v.N)
	}
	if v, _ := f.stored(t, ctx, "b"); v.N != 3 {
		t.Errorf("after the repeated keyed upsert N = %d, want 3", v.N)
	}

	// Update: the repeat, with an ETag stale by now, is a replay, not a
	// precondition failure.
	cur, _ := f.stored(t, ctx, "b")
	keyed = cost(t, f.acct, func() { _, err = ix.WithKey("upd").Update(ctx, tally("b", 4), cur.ETag) })
	if err != nil {
		t.Fatal(err)
	}
	cur, _ = f.stored(t, ctx, "b")
	unkeyed = cost(t, f.acct, func() { _, err = ix.Update(ctx, tally("b", 5), cur.ETag) })
	if err != nil {
		t.Fatal(err)
	}
	same("Update", keyed, unkeyed)
	if etag, err := ix.WithKey("upd").Update(ctx, tally("b", 4), cur.ETag); err != nil || etag != "" {
		t.Errorf("repeated keyed update: %q, %v", etag, err)
	}
	if v, _ := f.stored(t, ctx, "b"); v.N != 5 {
		t.Errorf("after the repeated keyed update N = %d, want 5", v.N)
	}

	// Modify: an increment repeated with its key leaves +1, and the
	// repeat returns the entity as stored (1 read more).
	inc := func(v *Tally) error {
		v.N++
		v.Label, v.Bucket = "label-"+v.ID, "b"+strconv.Itoa(v.N%2)
		return nil
	}
	var got Tally
	keyed = cost(t, f.acct, func() { got, err = ix.WithKey("mod").Modify(ctx, "g", "c", inc) })
	if err != nil || got.N != 1 || got.ETag == "" {
		t.Fatalf("keyed modify: %+v, %v", got, err)
	}
	unkeyed = cost(t, f.acct, func() { _, err = ix.Modify(ctx, "g", "d", inc) })
	if err != nil {
		t.Fatal(err)
	}
	same("Modify (insert)", keyed, unkeyed)
	keyed = cost(t, f.acct, func() { got, err = ix.WithKey("mod2").Modify(ctx, "g", "c", inc) })
	if err != nil || got.N != 2 {
		t.Fatalf("keyed modify: %+v, %v", got, err)
	}
	unkeyed = cost(t, f.acct, func() { _, err = ix.Modify(ctx, "g", "d", inc) })
	if err != nil {
		t.Fatal(err)
	}
	same("Modify (update)", keyed, unkeyed)
	replay := cost(t, f.acct, func() { got, err = ix.WithKey("mod2").Modify(ctx, "g", "c", inc) })
	stored, _ := f.stored(t, ctx, "c")
	if err != nil || got.N != 2 || stored.N != 2 || got.ETag != stored.ETag {
		t.Errorf("repeated keyed modify: %+v, %v; stored %+v: want N 2 and the stored entity", got, err, stored)
	}
	if replay.Count("table", "GetEntity") != keyed.Count("table", "GetEntity")+2 || replay.Count("table", "Transaction") != 1 {
		t.Errorf("a replayed Modify cost %v, want the refused transaction and 2 reads more than the write (%v): the record's, the entity's", replay, keyed)
	}

	// Delete: the repeat after the entity came back does not delete it.
	keyed = cost(t, f.acct, func() { err = ix.WithKey("del").Delete(ctx, "g", "c", azcore.ETagAny) })
	if err != nil {
		t.Fatal(err)
	}
	unkeyed = cost(t, f.acct, func() { err = ix.Delete(ctx, "g", "d", azcore.ETagAny) })
	if err != nil {
		t.Fatal(err)
	}
	same("Delete", keyed, unkeyed)
	if _, err := ix.Insert(ctx, tally("c", 9)); err != nil {
		t.Fatal(err)
	}
	if err := ix.WithKey("del").Delete(ctx, "g", "c", azcore.ETagAny); err != nil {
		t.Errorf("repeated keyed delete: %v", err)
	}
	if _, ok := f.stored(t, ctx, "c"); !ok {
		t.Error("the repeated keyed delete deleted the entity again")
	}

	// DeleteIfExists: a keyed one that finds nothing records its key.
	if existed, err := ix.WithKey("die").DeleteIfExists(ctx, "g", "e"); err != nil || existed {
		t.Fatalf("keyed DeleteIfExists of nothing: %v, %v", existed, err)
	}
	if _, err := ix.Insert(ctx, tally("e", 1)); err != nil {
		t.Fatal(err)
	}
	if existed, err := ix.WithKey("die").DeleteIfExists(ctx, "g", "e"); err != nil || existed {
		t.Errorf("repeated keyed DeleteIfExists: %v, %v", existed, err)
	}
	if _, ok := f.stored(t, ctx, "e"); !ok {
		t.Error("the repeated keyed DeleteIfExists deleted the entity")
	}

	checkRecordsInvisible(t, ctx, f, []string{"x", "b", "c", "e"})
}

// checkRecordsInvisible checks that the partition holds idempotency
// records and that none of the index's reads returns one.
func checkRecordsInvisible(t *testing.T, ctx context.Context, f *tallyFixture, want []string) {
	t.Helper()
	records := 0
	for e, err := range f.raw.Query(ctx, tablekit.RowKeyPrefix("g", coord.ReservedPrefix), &tablekit.QueryOptions{Reserved: true}) {
		if err != nil {
			t.Fatal(err)
		}
		records++
		_ = e
	}
	if records == 0 {
		t.Fatal("no idempotency records in the partition: the test shows nothing")
	}
	ids := func(seq func(func(Tally, error) bool)) []string {
		var out []string
		for v, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v.ID)
		}
		return out
	}
	equalSet := func(what string, got []string) {
		t.Helper()
		if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
			t.Errorf("%s: %v, want %v (the %d records are not entities)", what, got, want, records)
		}
	}
	equalSet("Query", ids(f.ix.Query(ctx, tablekit.PartitionEq("g"), nil)))
	equalSet("Query of all", ids(f.ix.Query(ctx, tablekit.Filter{}, nil)))
	equalSet("Range of label", ids(f.ix.Range(ctx, "g", "label", "", "")))
	equalSet("Prefix of label", ids(f.ix.Prefix(ctx, "g", "label", "")))
	var byBucket []string
	for _, b := range []string{"b0", "b1"} {
		byBucket = append(byBucket, ids(f.ix.By(ctx, "g", "bucket", b))...)
	}
	equalSet("By bucket", byBucket)
	equalSet("Range of bucket", ids(f.ix.Range(ctx, "g", "bucket", "", "")))
	if _, err := f.ix.Get(ctx, "g", coord.ReservedPrefix+"key~ins"); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("Get of a record: %v, want ErrInvalidKey (reserved RowKey)", err)
	}
}

// TestSamePartitionKeyedRefusals: bad keys, reserved RowKeys and a
// transaction the record would take over 100 actions are refused before
// anything is sent; a zero SamePartition's WithKey refuses every call.
func TestSamePartitionKeyedRefusals(t *testing.T) {
	ctx := testCtx(t)
	f := newTallies(t, testenv.Account(t, nil), tallyIndexes())
	c := cost(t, f.acct, func() {
		if _, err := f.ix.WithKey("").Insert(ctx, tally("a", 1)); !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("empty key: %v, want ErrInvalidInput", err)
		}
		if _, err := f.ix.WithKey("bad/key").Modify(ctx, "g", "a", func(*Tally) error { return nil }); !errors.Is(err, tablekit.ErrInvalidKey) {
			t.Errorf("key with '/': %v, want ErrInvalidKey", err)
		} else {
			t.Log(err)
		}
		if _, err := f.ix.WithKey("k").Insert(ctx, tally(coord.ReservedPrefix+"x", 1)); !errors.Is(err, tablekit.ErrInvalidKey) {
			t.Errorf("reserved RowKey: %v, want ErrInvalidKey", err)
		}
		if _, err := f.ix.Insert(ctx, tally(coord.ReservedPrefix+"x", 1)); !errors.Is(err, tablekit.ErrInvalidKey) {
			t.Errorf("reserved RowKey, unkeyed: %v, want ErrInvalidKey", err)
		}
	})
	if c.Total() != 0 {
		t.Errorf("refused writes sent %v", c)
	}

	// 99 indexes: the entity and its 99 copies fill a transaction; the
	// record would be the 101st action.
	var many []index.Index[Tally]
	for i := range 99 {
		many = append(many, index.Index[Tally]{Name: fmt.Sprintf("i%d", i), Key: func(v Tally) string { return v.ID }})
	}
	g := newTallies(t, f.acct, many)
	c = cost(t, f.acct, func() {
		_, err := g.ix.WithKey("k").Insert(ctx, tally("a", 1))
		if !errors.Is(err, tablekit.ErrTooLarge) {
			t.Errorf("keyed insert of 101 actions: %v, want ErrTooLarge", err)
		} else {
			t.Log(err)
		}
	})
	if c.Total() != 0 {
		t.Errorf("the refused write sent %v", c)
	}
	if _, err := g.ix.Insert(ctx, tally("a", 1)); err != nil {
		t.Errorf("unkeyed insert of 100 actions: %v", err)
	}
	if _, err := index.NewSamePartition(testenv.OpenTable[Tally](t, f.acct, nil), []index.Index[Tally]{{Name: coord.ReservedPrefix + "x", Key: func(v Tally) string { return v.ID }}}, nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("index name with the reserved prefix: %v", err)
	}

	// On Cosmos DB a RowKey holds 255 bytes: a longer key is refused
	// before the write's read is sent.
	cosmos := testenv.Account(t, &tablekit.Options{Service: tablekit.ServiceCosmosDB})
	ctbl, err := tablekit.OpenTable[Tally](cosmos, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	cix, err := index.NewSamePartition(ctbl, tallyIndexes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c = cost(t, cosmos, func() {
		long := strings.Repeat("k", 250)
		if _, err := cix.WithKey(long).Modify(ctx, "g", "a", increment); !errors.Is(err, tablekit.ErrInvalidKey) {
			t.Errorf("a 250-byte key on Cosmos DB: %v, want ErrInvalidKey", err)
		}
	})
	if c.Total() != 0 {
		t.Errorf("the refused write sent %v", c)
	}

	var zero index.SamePartition[Tally]
	z := zero.WithKey("k")
	if _, err := z.Insert(ctx, tally("a", 1)); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("zero SamePartition's WithKey: Insert %v", err)
	}
	if _, err := z.Modify(ctx, "g", "a", func(*Tally) error { return nil }); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("zero SamePartition's WithKey: Modify %v", err)
	}
	var nilIx *index.SamePartition[Tally]
	if err := nilIx.WithKey("k").Delete(ctx, "g", "a", azcore.ETagAny); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("nil SamePartition's WithKey: Delete %v", err)
	}
}

// TestSamePartitionKeyedAnswerLost: every transaction's first answer is
// lost (the service applied it); keyed writes settle by reading their
// record (1 read more) and are applied once, with a nil error and an
// empty ETag; the unkeyed control ends in ErrOutcomeUnknown.
func TestSamePartitionKeyedAnswerLost(t *testing.T) {
	ctx := testCtx(t)
	inj, err := chaos.New(1, &chaos.Config{AnswerLost: 1, Operations: []string{"Transaction"}, MaxConsecutive: 3})
	if err != nil {
		t.Fatal(err)
	}
	f := newTallies(t, inj.Account(t, nil), tallyIndexes())
	ix := f.ix
	inc := func(v *Tally) error {
		v.N++
		v.Label, v.Bucket = "label-"+v.ID, "b"+strconv.Itoa(v.N%2)
		return nil
	}
	if _, err := ix.Modify(ctx, "g", "control", inc); !errors.Is(err, tablekit.ErrOutcomeUnknown) {
		t.Fatalf("unkeyed Modify with a lost answer: %v, want ErrOutcomeUnknown (else this test shows nothing)", err)
	}
	settled := func(what string, c tablekit.MeterSnapshot, reads int64) {
		t.Helper()
		if c.Count("table", "GetEntity") != reads {
			t.Errorf("%s: cost %v, want %d reads (the write's and 1 that settles it)", what, c, reads)
		}
	}

	var etag azcore.ETag
	c := cost(t, f.acct, func() { etag, err = ix.WithKey("ins").Insert(ctx, tally("a", 1)) })
	if err != nil || etag != "" {
		t.Errorf("keyed insert, answer lost: %q, %v; want applied (nil error, empty ETag)", etag, err)
	}
	settled("Insert", c, 1+1) // the List index's entity, the record
	etag, err = ix.WithKey("ups").Upsert(ctx, tally("a", 2))
	if err != nil || etag != "" {
		t.Errorf("keyed upsert, answer lost: %q, %v", etag, err)
	}
	cur, _ := f.stored(t, ctx, "a")
	if cur.N != 2 {
		t.Errorf("after the keyed upsert N = %d, want 2", cur.N)
	}
	if _, err = ix.WithKey("upd").Update(ctx, tally("a", 3), cur.ETag); err != nil {
		t.Errorf("keyed update, answer lost: %v", err)
	}
	var got Tally
	for i := range 3 {
		c = cost(t, f.acct, func() { got, err = ix.WithKey(fmt.Sprintf("mod%d", i)).Modify(ctx, "g", "a", inc) })
		if err != nil || got.N != 4+i || got.ETag != "" {
			t.Errorf("keyed modify %d, answer lost: %+v, %v; want N %d, empty ETag", i, got, err, 4+i)
		}
		settled("Modify", c, 1+2+1) // the entity, the two List entities, the record
	}
	if v, _ := f.stored(t, ctx, "a"); v.N != 6 {
		t.Errorf("after 3 keyed increments with lost answers N = %d, want 6", v.N)
	}
	if err = ix.WithKey("del").Delete(ctx, "g", "a", azcore.ETagAny); err != nil {
		t.Errorf("keyed delete, answer lost: %v", err)
	}
	if _, ok := f.stored(t, ctx, "a"); ok {
		t.Error("the keyed delete was not applied")
	}
	inj.SetEnabled(false)
	checkRecordsInvisible(t, ctx, f, []string{"control"})
}
