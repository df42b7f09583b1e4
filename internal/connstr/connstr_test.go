package connstr

import (
	"strings"
	"testing"
)

// The parser's rules are tested through tablekit.Open (account_test.go) and
// sas.NewSigner; these are the secrets it keeps out of messages.
func TestRedact(t *testing.T) {
	if got := RedactURL("http://h/p?sv=1&sig=abc%2B%3D"); strings.Contains(got, "abc") || !strings.Contains(got, "sig=REDACTED") {
		t.Errorf("RedactURL: %s", got)
	}
	if got := RedactURL("http://h/p?sv=1"); got != "http://h/p?sv=1" {
		t.Errorf("RedactURL without sig: %s", got)
	}
	if got := RedactText(`Get "http://h/p?sv=1&sig=abc": refused`); strings.Contains(got, "abc") {
		t.Errorf("RedactText: %s", got)
	}
	cs, err := Parse("AccountName=acct;AccountKey=" + DevAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.Redact("bad key " + DevAccountKey + " at x"); strings.Contains(got, DevAccountKey) || !strings.Contains(got, "REDACTED") {
		t.Errorf("Redact: %s", got)
	}
	sas, err := Parse("TableEndpoint=https://a.table.core.windows.net;QueueEndpoint=https://a.queue.core.windows.net;BlobEndpoint=https://a.blob.core.windows.net;SharedAccessSignature=?sv=1&sig=c2VjcmV0")
	if err != nil {
		t.Fatal(err)
	}
	if sas.SAS != "sv=1&sig=c2VjcmV0" || sas.AccountName != "a" || sas.AccountKey != "" {
		t.Fatalf("%+v", sas)
	}
	if got := sas.Redact("token sv=1&sig=c2VjcmV0 refused"); strings.Contains(got, "c2VjcmV0") {
		t.Errorf("Redact: %s", got)
	}
	for _, bad := range []string{"AccountName=a;AccountKey=" + DevAccountKey[:10] + "!", DevAccountKey, "AccountKey=" + DevAccountKey} {
		if _, err := Parse(bad); err == nil || strings.Contains(err.Error(), DevAccountKey[:10]) {
			t.Errorf("Parse(%.20q…): %v", bad, err)
		}
	}
}
