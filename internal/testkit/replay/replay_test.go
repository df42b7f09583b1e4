package replay

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// allRecordings returns the paths of every recording under Dir.
func allRecordings(t *testing.T) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(Dir(), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".json") {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 50 {
		t.Fatalf("found %d recordings under %s, want the corpus (55)", len(paths), Dir())
	}
	return paths
}

// TestCorpusReads loads every recording and reads every entity body and
// $batch body in it: the normaliser and the multipart readers understand
// the whole corpus, and a recorded request compares equal to itself.
func TestCorpusReads(t *testing.T) {
	for _, p := range allRecordings(t) {
		rec, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Entries) == 0 {
			t.Errorf("%s: no entries", p)
		}
		for i, e := range rec.Entries {
			req := EntryRequest(e)
			if d := CompareRequest(req, req); d != "" {
				t.Errorf("%s entry %d: differs from itself: %s", p, i, d)
			}
			ct := e.ResponseHeader.Get("Content-Type")
			switch {
			case strings.HasPrefix(ct, "multipart/"):
				rs, err := BatchResponses(ct, e.ResponseBody)
				if err != nil || len(rs) == 0 {
					t.Errorf("%s entry %d: batch answer: %d parts, %v", p, i, len(rs), err)
				}
			case e.Status >= 400:
				if ErrorCode(e.ResponseBody) == "" {
					t.Errorf("%s entry %d: error answer without an OData error code", p, i)
				}
			case len(e.ResponseBody) > 0 && !IsTableAdmin(e.URL) && e.Method == http.MethodGet && !strings.Contains(string(e.ResponseBody), `"value"`):
				if _, err := Normalize(e.ResponseBody); err != nil {
					t.Errorf("%s entry %d: entity: %v", p, i, err)
				}
			}
		}
	}
}

func TestNormalize(t *testing.T) {
	got, err := Normalize([]byte(`{"odata.etag":"x","PartitionKey":"p","RowKey":"r","Timestamp":"2024-01-01T00:00:00Z",
		"A":1,"B":1.0,"C":9223372036854775808000,"D":"s","E":true,"F@odata.type":"Edm.Int64","F":"9223372036854775808",
		"G@odata.type":"Edm.Double","G":"NaN","H@odata.type":"Edm.DateTime","H":"2013-08-02T17:37:43.0090000Z",
		"I@odata.type":"Edm.Double","I":5,"J":null}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Property{
		"PartitionKey": {"Edm.String", "p"}, "RowKey": {"Edm.String", "r"},
		"A": {"Edm.Int32", "1"}, "B": {"Edm.Double", "1"}, "C": {"Edm.Double", "9.223372036854776e+21"},
		"D": {"Edm.String", "s"}, "E": {"Edm.Boolean", "true"}, "F": {"Edm.Int64", "9223372036854775808"},
		"G": {"Edm.Double", "NaN"}, "H": {"Edm.DateTime", "2013-08-02T17:37:43.009Z"}, "I": {"Edm.Double", "5"},
	}
	if d := DiffEntities(want, got); d != "" {
		t.Error(d)
	}
}

// TestCosmosBatchAnswer reads the recorded Cosmos DB batch failure: its
// part headers end in bare LF, its inner status line in CRLF.
func TestCosmosBatchAnswer(t *testing.T) {
	rec, err := Load("aztables-go/TestBatchError/TestBatchError_cosmos.json")
	if err != nil {
		t.Fatal(err)
	}
	e := rec.Entries[2]
	rs, err := BatchResponses(e.ResponseHeader.Get("Content-Type"), e.ResponseBody)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Status != 409 || !rs[0].PartHeaderLF || ErrorCode(rs[0].Body) != "EntityAlreadyExists" ||
		rs[0].Header.Get("Content-Type") != "application/json;odata=fullmetadata" {
		t.Fatalf("%+v", rs)
	}
	if m := ErrorMessage(rs[0].Body); m != "2:The specified entity already exists.\n\nRequestID:948f2b05-ed83-4f03-bd63-cdd124a1919e\n" {
		t.Errorf("message %q", m)
	}
}
