package azurite_test

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/azurite"
)

// TestFrontAnswersNoSecret: when the front cannot reach its target, its
// 502 answer says so without the request's SAS signature, in every mode
// (passed on, Cosmos DB, Azure's paging), in the body and the headers.
func TestFrontAnswersNoSecret(t *testing.T) {
	t.Parallel()
	// A target that refuses connections: a port that was free a moment
	// ago.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := "http://" + l.Addr().String() + "/devstoreaccount1"
	l.Close()

	const secret = "c2VjcmV0LXNpZ25hdHVyZQ"
	modes := map[string]*azurite.FrontOptions{
		"passed on": {},
		"cosmos":    {Cosmos: true, Seed: 1},
		"paging":    {Paging: true, Seed: 1},
	}
	for name, opts := range modes {
		t.Run(name, func(t *testing.T) {
			f, err := azurite.NewFront(ctxFor(t), azurite.Endpoints{Table: target, Queue: target, Blob: target}, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sas := url.Values{"sv": {"2019-02-02"}, "tn": {"orders"}, "sp": {"r"}, "se": {"2099-01-01T00:00:00Z"}, "sig": {secret}}
			ends := f.Endpoints()
			for _, u := range []string{
				ends.Table + "/orders()?$filter=" + url.QueryEscape("PartitionKey eq 'a'") + "&" + sas.Encode(),
				ends.Table + "/orders(PartitionKey='a',RowKey='b')?" + sas.Encode(),
				ends.Queue + "/jobs/messages?" + sas.Encode(),
				ends.Blob + "/files/a.txt?" + sas.Encode(),
			} {
				resp, err := http.Get(u)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusBadGateway {
					t.Errorf("%s: status %d, want 502", u, resp.StatusCode)
				}
				text := string(body)
				for k, vs := range resp.Header {
					text += "\n" + k + ": " + strings.Join(vs, ",")
				}
				if strings.Contains(text, secret) || strings.Contains(text, url.QueryEscape(secret)) {
					t.Errorf("%s: the answer carries the SAS signature:\n%s", u, text)
				}
				if !strings.Contains(string(body), "could not reach the target") {
					t.Errorf("%s: the answer does not say what failed:\n%s", u, body)
				}
			}
		})
	}
	// The error of a bad target does not echo a signature either.
	if _, err := azurite.NewFront(ctxFor(t), azurite.Endpoints{Table: "ftp://host/?sig=" + secret}, nil); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("bad target: %v", err)
	}
}
