package main

import (
	"strings"
	"testing"
)

// TestAccountID: a default checkpoint's name holds no secret of the
// connection string, is the same for the same account whatever its key
// or the order of the settings, and differs between accounts.
func TestAccountID(t *testing.T) {
	const (
		a  = "DefaultEndpointsProtocol=https;AccountName=one;AccountKey=c2VjcmV0;EndpointSuffix=core.windows.net"
		a2 = "AccountName=one; accountkey=b3RoZXI= ;EndpointSuffix=core.windows.net;DefaultEndpointsProtocol=https;"
		b  = "DefaultEndpointsProtocol=https;AccountName=two;AccountKey=c2VjcmV0;EndpointSuffix=core.windows.net"
		s  = "TableEndpoint=https://one.table.core.windows.net;SharedAccessSignature=sv=2019-02-02&sig=c2ln"
	)
	for _, cs := range []string{a, a2, b, s} {
		if id := accountID(cs); strings.Contains(id, "c2VjcmV0") || strings.Contains(id, "b3RoZXI") || strings.Contains(id, "sig=") {
			t.Errorf("accountID(%q) = %q: holds a secret", cs, id)
		}
	}
	if accountID(a) != accountID(a2) {
		t.Errorf("the same account: %q and %q", accountID(a), accountID(a2))
	}
	if accountID(a) == accountID(b) {
		t.Errorf("two accounts, one id: %q", accountID(a))
	}
	if !strings.Contains(accountID(s), "TableEndpoint=https://one.table.core.windows.net") {
		t.Errorf("accountID(%q) = %q: lost the endpoint", s, accountID(s))
	}
}
