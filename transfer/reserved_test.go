package transfer_test

import (
	"bytes"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/transfer"
)

// TestReservedRowsTravel: tablekit's own rows in a user's partitions
// (RowKeys starting with "~coord~": idempotency records, fence rows),
// which plain reads leave out, are counted, exported, imported, copied and
// purged like any row: a backup holds everything.
func TestReservedRowsTravel(t *testing.T) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	src := newTable(t, acct)
	es := []tablekit.Entity{
		{PartitionKey: "p", RowKey: "a", Properties: map[string]any{"V": int32(1)}},
		{PartitionKey: "p", RowKey: "~coord~fence", Properties: map[string]any{"Term": int64(3)}},
		{PartitionKey: "p", RowKey: "~coord~key~k1", Properties: map[string]any{"Stamp": "s"}},
		{PartitionKey: "q", RowKey: "~coord~key~k2", Properties: map[string]any{"Stamp": "t"}},
	}
	seed(t, src, es)
	if n, err := src.Count(ctx, tablekit.Filter{}); err != nil || n != 1 {
		t.Fatalf("Table.Count: %d, %v; want the user's row alone", n, err)
	}
	c, err := transfer.Count(ctx, src, nil)
	if err != nil || c.Entities != int64(len(es)) {
		t.Errorf("transfer.Count: %+v, %v; want %d", c, err, len(es))
	}
	var buf bytes.Buffer
	res, err := transfer.Export(ctx, src, &buf, nil)
	if err != nil || res.Entities != int64(len(es)) {
		t.Fatalf("export: %+v, %v; want %d entities", res, err, len(es))
	}
	dst := newTable(t, acct)
	if ires, err := transfer.Import(ctx, dst, bytes.NewReader(buf.Bytes()), transfer.Insert, nil); err != nil || ires.Written != int64(len(es)) {
		t.Fatalf("import: %+v, %v", ires, err)
	}
	sameEntities(t, keyed(es), readAll(t, dst))
	cp := newTable(t, acct)
	if cres, err := transfer.Copy(ctx, src, cp, transfer.Insert, nil); err != nil || cres.Written != int64(len(es)) {
		t.Fatalf("copy: %+v, %v", cres, err)
	}
	sameEntities(t, keyed(es), readAll(t, cp))
	if pres, err := transfer.Purge(ctx, cp, nil); err != nil || pres.Deleted != int64(len(es)) {
		t.Errorf("purge: %+v, %v; want %d deleted", pres, err, len(es))
	}
	if got := readAll(t, cp); len(got) != 0 {
		t.Errorf("%d rows left after the purge", len(got))
	}
}
