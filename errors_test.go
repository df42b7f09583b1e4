package tablekit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
)

type opItem struct {
	PK string `table:",pk"`
	RK string `table:",rk"`
	N  int8   `table:"N"`
}

// TestRefusalsNameTheOperation: every input refused before sending comes
// back as a *ValidationError whose Op names the exported operation the
// caller used, and its message starts with it. Nothing here reaches a
// service: the account points at closed ports.
func TestRefusalsNameTheOperation(t *testing.T) {
	ctx := context.Background()
	acct, err := tablekit.Open("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"+
		"TableEndpoint=http://127.0.0.1:1/devstoreaccount1;QueueEndpoint=http://127.0.0.1:1/devstoreaccount1;BlobEndpoint=http://127.0.0.1:1/devstoreaccount1", nil)
	if err != nil {
		t.Fatal(err)
	}
	const tableName = "Items"
	tbl, err := tablekit.OpenTable[opItem](acct, tableName, nil)
	if err != nil {
		t.Fatal(err)
	}
	badKey := "a/b"
	cases := []struct {
		op   string
		call func() error
	}{
		{"OpenTable", func() error { _, err := tablekit.OpenTable[int](acct, tableName, nil); return err }},
		{"OpenTable", func() error { _, err := tablekit.OpenTable[opItem](nil, "Items", nil); return err }},
		{"OpenTable", func() error { _, err := tablekit.OpenTable[opItem](&tablekit.Account{}, "Items", nil); return err }},
		{"Get", func() error { _, err := tbl.Get(ctx, "p", badKey); return err }},
		{"Insert", func() error { _, err := tbl.Insert(ctx, opItem{PK: badKey, RK: "r"}); return err }},
		{"Upsert", func() error { _, err := tbl.Upsert(ctx, opItem{PK: "p", RK: badKey}); return err }},
		{"Update", func() error { _, err := tbl.Update(ctx, opItem{PK: "p", RK: "r"}, ""); return err }},
		{"Update", func() error {
			_, err := tbl.Update(ctx, opItem{PK: "p", RK: badKey}, azcore.ETagAny)
			return err
		}},
		{"Merge", func() error { _, err := tbl.Merge(ctx, opItem{PK: "p", RK: badKey}, ""); return err }},
		{"Merge", func() error {
			_, err := tbl.Merge(ctx, opItem{PK: "p", RK: badKey}, azcore.ETagAny)
			return err
		}},
		{"Delete", func() error { return tbl.Delete(ctx, "p", badKey, azcore.ETagAny) }},
		{"Delete", func() error { _, err := tbl.DeleteIfExists(ctx, "p", badKey); return err }},
		{"Transaction", func() error { _, err := tbl.Transaction(ctx); return err }},
		{"Transaction", func() error {
			_, err := tbl.Transaction(ctx, tablekit.InsertAction(opItem{PK: "p", RK: badKey}))
			return err
		}},
		{"BulkWriter.Write", func() error {
			res, _ := tbl.BulkWriter(nil).Write(ctx, []tablekit.Action[opItem]{tablekit.InsertAction(opItem{PK: "p", RK: badKey})})
			if len(res.Failed) != 1 {
				return nil
			}
			return res.Failed[0].Err
		}},
		{"Modify", func() error {
			_, err := tbl.Modify(ctx, "p", badKey, func(*opItem) error { return nil })
			return err
		}},
		{"QueryPage", func() error {
			_, err := tbl.QueryPage(ctx, tablekit.PartitionEq("p"), &tablekit.QueryOptions{PageSize: 5000})
			return err
		}},
		{"Query", func() error {
			for _, err := range tbl.Query(ctx, tablekit.PartitionEq("p"), &tablekit.QueryOptions{Limit: -1}) {
				return err
			}
			return nil
		}},
		{"Top", func() error { _, err := tbl.Top(ctx, tablekit.PartitionEq("p"), 0, nil); return err }},
		{"Count", func() error {
			strict, err := tablekit.OpenTable[opItem](acct, tableName, &tablekit.TableOptions{TableScans: tablekit.RefuseTableScans})
			if err != nil {
				return err
			}
			_, err = strict.Count(ctx, tablekit.Where("N gt ?", 1))
			return err
		}},
		{"QueryAs", func() error {
			for _, err := range tablekit.QueryAs[int](ctx, tbl, tablekit.PartitionEq("p"), nil) {
				return err
			}
			return nil
		}},
		{"ToEntity", func() error { _, err := tablekit.ToEntity(opItem{PK: badKey, RK: "r"}); return err }},
		{"Where", func() error { return tablekit.Where("PartitionKey eq ? and RowKey eq ?", "p").Err() }},
	}
	for _, c := range cases {
		err := c.call()
		var ve *tablekit.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: %v (%T), want a *ValidationError", c.op, err, err)
			continue
		}
		if ve.Op != c.op || !strings.HasPrefix(err.Error(), "tablekit: "+c.op+": ") {
			t.Errorf("%s: Op %q, message %q; want both to name %s", c.op, ve.Op, err, c.op)
		}
	}
}

// TestDecodeFailuresAreNotValidationErrors: a value that cannot be read
// into the caller's type is a *DecodeError naming the operation and the
// property, not a *ValidationError (which means input refused before
// sending).
func TestDecodeFailuresAreNotValidationErrors(t *testing.T) {
	e := tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"N": int32(300)}}
	_, err := tablekit.FromEntity[opItem](e)
	var de *tablekit.DecodeError
	if !errors.As(err, &de) || de.Op != "FromEntity" || de.Property != "N" || de.Entity != "p/r" {
		t.Fatalf("got %v (%T), want a *DecodeError of FromEntity about p/r property N", err, err)
	}
	if errors.As(err, new(*tablekit.ValidationError)) || errors.Is(err, tablekit.ErrDecrypt) {
		t.Errorf("%v: a decode failure matched ValidationError or ErrDecrypt", err)
	}
	if want := `tablekit: FromEntity: cannot read entity "p/r" property "N": `; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want it to start with %q", err, want)
	}
}
