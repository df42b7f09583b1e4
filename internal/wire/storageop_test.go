package wire

import (
	"net/http"
	"net/url"
	"testing"
)

// The full table of cases is tablekit's TestClassify (meter_internal_test.go),
// which runs through the Meter; these check the package on its own.
func TestClassify(t *testing.T) {
	cases := []struct {
		service, method, path, query string
		want                         string
	}{
		{ServiceTable, "POST", "/$batch", "", "Transaction"},
		{ServiceTable, "POST", "/orders", "", "InsertEntity"},
		{ServiceTable, "PUT", "/orders(PartitionKey='p',RowKey='r')", "", "UpdateEntity"},
		{ServiceQueue, "GET", "/jobs/messages", "numofmessages=32", "GetMessages"},
		{ServiceQueue, "DELETE", "/jobs/messages/1", "popreceipt=x", "DeleteMessage"},
		{ServiceBlob, "PUT", "/logs/a.log", "comp=blocklist", "PutBlockList"},
		{ServiceBlob, "PUT", "/logs/a.log", "comp=block&blockid=AA", "PutBlock"},
		{"file", "GET", "/share", "", Other},
	}
	for _, c := range cases {
		q, err := url.ParseQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := Classify(c.service, c.method, c.path, q, http.Header{}); got != c.want {
			t.Errorf("Classify(%s, %s, %s?%s) = %s, want %s", c.service, c.method, c.path, c.query, got, c.want)
		}
	}
}
