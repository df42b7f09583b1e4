package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results the pattern promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	acct := testenv.Account(t, nil)
	if err := run(context.Background(), acct, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := []string{
		"signed a token for alice: sp=rau spk=alice epk=alice st=",
		"the client added an order with the token and listed her partition: 2 orders",
		"the token allows update (done) but not delete (403)",
		"the same token without spk/epk in its query is refused (403)",
		"upload-only container token (sp=cw ",
		"reading it with that token is refused (403)",
		`a read-only link to that one blob, fetched with plain net/http: "scones 6.00"`,
	}
	if testenv.EnforcesSASRanges() {
		want = append(want, "reading bob's order with alice's token: refused by the service (403)")
	} else {
		want = append(want, "reading bob's order with alice's token succeeded: this account (Azurite, over http) does not enforce")
	}
	if strings.HasPrefix(acct.Queues().URL(), "http:") {
		want = append(want, "queue tokens need an HTTPS queue endpoint, which this account lacks")
	} else {
		want = append(want, "a producer with an add-only queue token (sp=a ", "receiving with it is refused (403)")
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("narration lacks %q:\n%s", w, out.String())
		}
	}
	if regexp.MustCompile(`sig=[^…]`).MatchString(out.String()) {
		t.Errorf("narration shows a signature:\n%s", out.String())
	}
}
