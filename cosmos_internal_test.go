package tablekit

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/testkit/replay"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// TestCosmosSignalsInRecordings: what tablekit reads as Cosmos DB's in an
// answer (wire.ShowsCosmos) is in Cosmos DB's recorded answers (every error,
// every continuation token, a new table's answer) and in none of Table
// storage's: an Account with ServiceAuto never takes Table storage for
// Cosmos DB on what the live services answer.
func TestCosmosSignalsInRecordings(t *testing.T) {
	var files []string
	err := filepath.WalkDir(replay.Dir(), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) < 50 {
		t.Fatalf("%d recordings, %v", len(files), err)
	}
	var cosmosShown, cosmosErrors, storageEntries int
	for _, f := range files {
		rec, err := replay.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		cosmos := strings.Contains(filepath.Base(f), "cosmos")
		for i, e := range rec.Entries {
			req := &http.Request{Method: e.Method, URL: e.URL, Header: e.RequestHeader}
			resp := &http.Response{StatusCode: e.Status, Header: e.ResponseHeader, Body: io.NopCloser(bytes.NewReader(e.ResponseBody)), Request: req}
			what := wire.ShowsCosmos(req, resp)
			name := filepath.Base(f)
			switch {
			case !cosmos:
				storageEntries++
				if what != "" {
					t.Errorf("%s entry %d (%s %s, %d): a Table storage answer taken for Cosmos DB's: %s", name, i, e.Method, e.URL.Path, e.Status, what)
				}
			case e.Status >= 400:
				cosmosErrors++
				if what == "" {
					t.Errorf("%s entry %d (%d): Cosmos DB's error answer not recognised: %s", name, i, e.Status, e.ResponseBody)
				}
			case e.ResponseHeader.Get("x-ms-continuation-NextPartitionKey") != "" && what == "":
				t.Errorf("%s entry %d: Cosmos DB's continuation token %q not recognised", name, i, e.ResponseHeader.Get("x-ms-continuation-NextPartitionKey"))
			}
			if cosmos && what != "" {
				cosmosShown++
			}
			if b, err := io.ReadAll(resp.Body); err != nil || !bytes.Equal(b, e.ResponseBody) {
				t.Errorf("%s entry %d: the body read for the check is not left to the caller whole", name, i)
			}
		}
	}
	t.Logf("%d files: %d Cosmos DB answers recognised (%d errors), %d Table storage answers none", len(files), cosmosShown, cosmosErrors, storageEntries)
	if cosmosErrors < 5 || storageEntries < 100 {
		t.Errorf("%d Cosmos DB errors and %d Table storage answers: the recordings were not read", cosmosErrors, storageEntries)
	}
}

// TestCompareKeyBytes: the order check of a page compares keys as
// keys.Compare does (UTF-16 code units), also around U+E000 and outside
// the Basic Multilingual Plane, where code point order differs.
func TestCompareKeyBytes(t *testing.T) {
	ks := []string{"", "a", "b", "ab", "é", "\ue000", "\uffff", "\U00010000", "\U0001F600", "x\ue000", "x\U0001F600", "日本", "z"}
	sign := func(c int) int { return max(-1, min(1, c)) }
	for _, a := range ks {
		for _, b := range ks {
			if got, want := sign(compareKeyBytes([]byte(a), []byte(b))), sign(keys.Compare(a, b)); got != want {
				t.Errorf("compareKeyBytes(%q, %q) = %d, keys.Compare %d", a, b, got, want)
			}
		}
	}
}

// TestRawKeys reads the keys of entity JSON as the services write it:
// after metadata, escaped, or in any member order.
func TestRawKeys(t *testing.T) {
	for obj, want := range map[string][2]string{
		`{"odata.etag":"W/\"datetime'x'\"","PartitionKey":"p\/1","RowKey":"r\u00e9","N":1}`: {"p/1", "ré"},
		`{"N":1.5,"B":true,"Z":null,"RowKey":"r","PartitionKey":""}`:                        {"", "r"},
	} {
		pk, rk, ok := codec.RawKeys([]byte(obj))
		if !ok || string(pk) != want[0] || string(rk) != want[1] {
			t.Errorf("codec.RawKeys(%s) = %q, %q, %v; want %q, %q", obj, pk, rk, ok, want[0], want[1])
		}
	}
	for _, obj := range []string{`{"PartitionKey":"p"}`, `{"RowKey":"r"}`, `not json`, `{}`} {
		if _, _, ok := codec.RawKeys([]byte(obj)); ok {
			t.Errorf("codec.RawKeys(%s) found both keys", obj)
		}
	}
	if !inKeyOrder([][]byte{[]byte(`{"PartitionKey":"a","RowKey":"2"}`), []byte(`{"PartitionKey":"b","RowKey":"1"}`)}) ||
		inKeyOrder([][]byte{[]byte(`{"PartitionKey":"a","RowKey":"2"}`), []byte(`{"PartitionKey":"a","RowKey":"1"}`)}) {
		t.Error("inKeyOrder does not tell key order")
	}
}
