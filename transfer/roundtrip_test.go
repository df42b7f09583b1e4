package transfer_test

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/transfer"
)

// TestExportImportRoundTrip: every EDM type, exported and imported into a
// fresh table, comes back identical, property by property with its type.
func TestExportImportRoundTrip(t *testing.T) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	src := newTable(t, acct)
	es := append(everyType(), seedEntities(200, 7)...)
	seed(t, src, es)
	want := readAll(t, src)
	sameEntities(t, keyed(es), want) // the service kept every value as written

	var buf bytes.Buffer
	res, err := transfer.Export(ctx, src, &buf, &transfer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Entities != int64(len(es)) {
		t.Fatalf("export: %+v, want complete with %d entities", res, len(es))
	}
	if res.Bytes != int64(buf.Len()) {
		t.Errorf("export reports %d bytes, wrote %d", res.Bytes, buf.Len())
	}

	for _, mode := range []transfer.Mode{transfer.Insert, transfer.Merge, transfer.Replace} {
		t.Run(mode.String(), func(t *testing.T) {
			dst := newTable(t, acct)
			ires, err := transfer.Import(ctx, dst, bytes.NewReader(buf.Bytes()), mode, &transfer.ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !ires.Complete || ires.Written != int64(len(es)) || ires.Failed != 0 {
				t.Fatalf("import: %+v", ires)
			}
			sameEntities(t, want, readAll(t, dst))
		})
	}
}

func keyed(es []tablekit.Entity) map[[2]string]tablekit.Entity {
	m := map[[2]string]tablekit.Entity{}
	for _, e := range es {
		m[[2]string{e.PartitionKey, e.RowKey}] = e
	}
	return m
}

func seedEntities(n, parts int) []tablekit.Entity {
	es := make([]tablekit.Entity, n)
	for i := range es {
		es[i] = tablekit.Entity{PartitionKey: string(rune('a'+i%parts)) + "-part", RowKey: string(rune('A'+i%26)) + string(rune('0'+i/26%10)) + string(rune('0'+i%10)),
			Properties: map[string]any{"I": int64(i), "D": float64(i), "S": "s"}}
	}
	// Make keys unique.
	seen := map[[2]string]bool{}
	out := es[:0]
	for _, e := range es {
		k := [2]string{e.PartitionKey, e.RowKey}
		if !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}

// TestImportReportsFailures: insert mode fails alone on existing entities
// and bad lines are reported with their line numbers.
func TestImportReportsFailures(t *testing.T) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	dst := newTable(t, acct)
	seed(t, dst, []tablekit.Entity{{PartitionKey: "p", RowKey: "exists", Properties: map[string]any{"V": int32(1)}}})
	stream := `{"tablekit":"export","version":1}
{"PartitionKey":"p","RowKey":"new","Properties":{"V":["Edm.Int32",2]}}
{"PartitionKey":"p","RowKey":"exists","Properties":{"V":["Edm.Int32",3]}}
{"PartitionKey":"p","RowKey":"bad","Properties":{"V":["Edm.Int64",3]}}
not json
{"tablekit":"end","entities":4}
`
	res, err := transfer.Import(ctx, dst, bytes.NewReader([]byte(stream)), transfer.Insert, nil)
	if !errors.Is(err, transfer.ErrFailures) {
		t.Fatalf("err = %v, want ErrFailures", err)
	}
	if res.Written != 1 || res.Failed != 3 || len(res.Failures) != 3 {
		t.Fatalf("result %+v", res)
	}
	lines := [3]int{res.Failures[0].Line, res.Failures[1].Line, res.Failures[2].Line}
	if lines != [3]int{3, 4, 5} {
		t.Errorf("failed lines %v, want 3, 4, 5", lines)
	}
	if !errors.Is(res.Failures[0].Err, tablekit.ErrAlreadyExists) {
		t.Errorf("line 3: %v, want ErrAlreadyExists", res.Failures[0].Err)
	}
	got := readAll(t, dst)
	if v := got[[2]string{"p", "exists"}].Properties["V"]; v != int32(1) {
		t.Errorf("existing entity changed: V = %v", v)
	}
}

// TestImportTruncated: a stream cut short is imported as far as it goes
// and reported.
func TestImportTruncated(t *testing.T) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	dst := newTable(t, acct)
	stream := `{"tablekit":"export","version":1}
{"PartitionKey":"p","RowKey":"a","Properties":{}}
{"PartitionKey":"p","RowKey":"b","Prope`
	res, err := transfer.Import(ctx, dst, bytes.NewReader([]byte(stream)), transfer.Insert, nil)
	if !errors.Is(err, transfer.ErrTruncated) || res.Written != 1 || res.Complete {
		t.Fatalf("res %+v, err %v; want 1 written and ErrTruncated", res, err)
	}
}

// TestCopyTables: copy across two tables of one account and across two
// Azurite instances keeps every entity and type.
func TestCopyTables(t *testing.T) {
	ctx := ctxFor(t)
	acct := testenv.Account(t, nil)
	src := newTable(t, acct)
	es := append(everyType(), seedEntities(300, 5)...)
	seed(t, src, es)
	want := readAll(t, src)

	t.Run("same account", func(t *testing.T) {
		dst := newTable(t, acct)
		res, err := transfer.Copy(ctx, src, dst, transfer.Replace, &transfer.Options{})
		if err != nil || !res.Complete || res.Written != int64(len(es)) {
			t.Fatalf("copy: %+v, %v", res, err)
		}
		sameEntities(t, want, readAll(t, dst))
	})
	t.Run("two Azurites", func(t *testing.T) {
		if os.Getenv(testenv.ConnectionStringEnv) != "" {
			t.Skip("AZURE_STORAGE_CONNECTION_STRING is set: the second account would be a second Azurite; run without it")
		}
		srv, err := azurite.Start(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := srv.Stop(); err != nil {
				t.Error(err)
			}
		})
		other, err := tablekit.Open(srv.ConnectionString(), nil)
		if err != nil {
			t.Fatal(err)
		}
		dst := newTable(t, other)
		res, err := transfer.Copy(ctx, src, dst, transfer.Insert, &transfer.Options{})
		if err != nil || !res.Complete || res.Written != int64(len(es)) {
			t.Fatalf("copy: %+v, %v", res, err)
		}
		if n := other.Meter().Snapshot().Count("table", "Transaction"); n == 0 {
			t.Error("the second account's Meter saw no transaction")
		}
		sameEntities(t, want, readAll(t, dst))
	})
}
