package tablekit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// hmacSign is the signature the service computes: base64(HMAC-SHA256(key,
// string-to-sign)).
func hmacSign(key, stringToSign string) string {
	k, _ := base64.StdEncoding.DecodeString(key)
	h := hmac.New(sha256.New, k)
	h.Write([]byte(stringToSign))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// The fixed vectors follow the Table service SAS format (version 2018-11-09
// and later): sp, st, se, /table/<account>/<lowercase table>, si, sip, spr,
// sv, spk, srk, epk, erk joined by "\n". The signatures were computed
// independently (Python's hmac) with the Azurite development key.
var tableSASVectors = []struct {
	v    tableSASValues
	sts  string
	sig  string
	name string
}{
	{
		name: "range",
		v: tableSASValues{permissions: "raud", start: "2025-01-01T00:00:00Z", expiry: "2030-01-02T03:04:05Z",
			table: "Customers", protocol: "https", version: "2019-02-02",
			startPK: "Jeff", startRK: "0001", endPK: "Jeff", endRK: "0099"},
		sts: "raud\n2025-01-01T00:00:00Z\n2030-01-02T03:04:05Z\n/table/devstoreaccount1/customers\n\n\nhttps\n2019-02-02\nJeff\n0001\nJeff\n0099",
		sig: "z6aXbvlnL88wVggQN3AzEql7TtfidcgnVfI0XOJN/3s=",
	},
	{
		name: "whole table",
		v:    tableSASValues{permissions: "r", expiry: "2030-01-02T03:04:05Z", table: "orders", version: "2019-02-02"},
		sts:  "r\n\n2030-01-02T03:04:05Z\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\n\n\n\n",
		sig:  "E9GsR/udqc51+hRtluBMaIAViaVRHquxi/MyWS3wZoA=",
	},
}

func TestTableSASStringToSign(t *testing.T) {
	cred, err := aztables.NewSharedKeyCredential(devAccountName, devAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tableSASVectors {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.v.stringToSign(devAccountName); got != tc.sts {
				t.Fatalf("string-to-sign\n got %q\nwant %q", got, tc.sts)
			}
			if got := hmacSign(devAccountKey, tc.sts); got != tc.sig {
				t.Fatalf("HMAC = %s, want %s", got, tc.sig)
			}
			got, err := tc.v.signWithCredential(cred)
			if err != nil || got != tc.sig {
				t.Fatalf("signWithCredential = %s, %v; want %s", got, err, tc.sig)
			}
			q, err := url.ParseQuery(tc.v.query(got))
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string]string{"sv": tc.v.version, "tn": tc.v.table, "sp": tc.v.permissions,
				"st": tc.v.start, "se": tc.v.expiry, "spr": tc.v.protocol, "spk": tc.v.startPK, "srk": tc.v.startRK,
				"epk": tc.v.endPK, "erk": tc.v.endRK, "sig": tc.sig} {
				if q.Get(name) != want || q.Has(name) != (want != "") {
					t.Errorf("query %s = %q (present %v), want %q", name, q.Get(name), q.Has(name), want)
				}
			}
		})
	}
	if aztables.SASVersion != tableSASVersion {
		t.Errorf("aztables.SASVersion is %s, tablekit signs %s: re-check the string-to-sign format", aztables.SASVersion, tableSASVersion)
	}
}

// The SDK's signer (used because it holds the key) signs exactly our
// string-to-sign, for any field values.
func TestTableSASSignerAgrees(t *testing.T) {
	cred, err := aztables.NewSharedKeyCredential(devAccountName, devAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		const chars = "abcXYZ019 -_.'é€😀"
		rs := []rune(chars)
		n := r.IntN(6)
		var b strings.Builder
		for range n {
			b.WriteRune(rs[r.IntN(len(rs))])
		}
		return b.String()
	}
	for i := range 300 {
		v := tableSASValues{
			permissions: []string{"r", "a", "ra", "raud", "ud"}[r.IntN(5)],
			expiry:      time.Unix(int64(2e9+r.IntN(1e8)), 0).UTC().Format(sasTimeFormat),
			table:       "Tbl" + fmt.Sprint(i),
			protocol:    []string{"", "https", "https,http"}[r.IntN(3)],
			version:     tableSASVersion,
			startPK:     word(), startRK: word(), endPK: word(), endRK: word(),
		}
		if r.IntN(2) == 0 {
			v.start = time.Unix(int64(1.7e9+r.IntN(1e8)), 0).UTC().Format(sasTimeFormat)
		}
		got, err := v.signWithCredential(cred)
		if err != nil {
			t.Fatal(err)
		}
		if want := hmacSign(devAccountKey, v.stringToSign(devAccountName)); got != want {
			t.Fatalf("%+v: SDK signature %s, HMAC of our string-to-sign %s", v, got, want)
		}
	}
}

func TestTableSASURLChecks(t *testing.T) {
	acct, err := Open("UseDevelopmentStorage=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	u, err := acct.TableSASURL("Customers", TablePermissions{Read: true, Update: true}, future,
		&TableSASOptions{StartPartitionKey: "o'k", StartRowKey: "a&b=c", EndPartitionKey: "o'k", EndRowKey: "z z"})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	if parsed.Path != "/devstoreaccount1/Customers" {
		t.Errorf("path %q", parsed.Path)
	}
	q := parsed.Query()
	for name, want := range map[string]string{"sp": "ru", "tn": "Customers", "sv": tableSASVersion, "spk": "o'k", "srk": "a&b=c", "epk": "o'k", "erk": "z z", "se": future.UTC().Format(sasTimeFormat)} {
		if q.Get(name) != want {
			t.Errorf("%s = %q, want %q", name, q.Get(name), want)
		}
	}
	if q.Has("spr") || q.Has("st") {
		t.Errorf("http endpoint token has spr or st: %v", q)
	}
	v, _ := acct.tableSASValues("Customers", TablePermissions{Read: true, Update: true}, future,
		&TableSASOptions{StartPartitionKey: "o'k", StartRowKey: "a&b=c", EndPartitionKey: "o'k", EndRowKey: "z z"})
	if want := hmacSign(devAccountKey, v.stringToSign(devAccountName)); q.Get("sig") != want {
		t.Errorf("sig %s, want %s", q.Get("sig"), want)
	}

	for _, tc := range []struct {
		table  string
		perms  TablePermissions
		expiry time.Time
		opts   *TableSASOptions
		want   string
		is     error
	}{
		{"1bad", TablePermissions{Read: true}, future, nil, "table name", ErrInvalidKey},
		{"Good", TablePermissions{}, future, nil, "no permissions", ErrInvalidInput},
		{"Good", TablePermissions{Read: true}, time.Time{}, nil, "expiry time is required", ErrInvalidInput},
		{"Good", TablePermissions{Read: true}, time.Now().Add(-time.Minute), nil, "not in the future", ErrInvalidInput},
		{"Good", TablePermissions{Read: true}, future, &TableSASOptions{Start: future.Add(time.Minute)}, "not after the start", ErrInvalidInput},
		{"Good", TablePermissions{Read: true}, future, &TableSASOptions{StartRowKey: "a"}, "needs StartPartitionKey", ErrInvalidInput},
		{"Good", TablePermissions{Read: true}, future, &TableSASOptions{EndRowKey: "a"}, "needs EndPartitionKey", ErrInvalidInput},
		{"Good", TablePermissions{Read: true}, future, &TableSASOptions{StartPartitionKey: "b", EndPartitionKey: "a"}, "range is empty", ErrInvalidInput},
		{"Good", TablePermissions{Read: true}, future, &TableSASOptions{StartPartitionKey: "a", StartRowKey: "2", EndPartitionKey: "a", EndRowKey: "1"}, "range is empty", ErrInvalidInput},
		{"Good", TablePermissions{Read: true}, future, &TableSASOptions{StartPartitionKey: "a/b"}, "StartPartitionKey", ErrInvalidKey},
	} {
		_, err := acct.TableSASURL(tc.table, tc.perms, tc.expiry, tc.opts)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v %+v: got %v, want %q", tc.table, tc.perms, tc.opts, err, tc.want)
		}
	}
}

func TestParseSASURL(t *testing.T) {
	future := time.Now().Add(time.Hour).UTC().Format(sasTimeFormat)
	past := time.Now().Add(-time.Hour).UTC().Format(sasTimeFormat)
	const secret = "c2VjcmV0LXNpZ25hdHVyZQ%3D%3D"
	good := "http://127.0.0.1:10002/devstoreaccount1/Orders?sv=2019-02-02&tn=Orders&sp=r&se=" + future + "&sig=" + secret
	p, err := parseSASURL("table", good)
	if err != nil {
		t.Fatal(err)
	}
	if p.endpoint != "http://127.0.0.1:10002/devstoreaccount1" || p.resource != "Orders" || p.account != "devstoreaccount1" {
		t.Fatalf("%+v", p)
	}
	for _, bad := range []struct{ url, want string }{
		{"ftp://x/y?sig=" + secret + "&sv=1", "absolute http"},
		{"http://127.0.0.1:10002/devstoreaccount1/Orders", "no SAS token"},
		{"http://127.0.0.1:10002/devstoreaccount1/Orders?sig=" + secret, "signed version"},
		{"http://127.0.0.1:10002/?sv=1&sig=" + secret, "does not name"},
		{"http://127.0.0.1:10002/devstoreaccount1/Orders?sv=1&se=" + past + "&sig=" + secret, "expired"},
		{"http://h/%zz?sig=" + secret, "not a valid URL"},
	} {
		_, err := parseSASURL("table", bad.url)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: got %v, want %q", bad.url, err, bad.want)
			continue
		}
		if strings.Contains(err.Error(), "c2VjcmV0") {
			t.Errorf("error shows the signature: %v", err)
		}
	}
	_, err = OpenTableSAS[Entity](strings.Replace(good, "tn=Orders", "tn=Other", 1), nil)
	if err == nil || !strings.Contains(err.Error(), `for table "Other"`) {
		t.Errorf("tn mismatch: %v", err)
	}
	if got := redactURL("http://h/p?sv=1&sig=abc%2B%3D"); strings.Contains(got, "abc") || !strings.Contains(got, "sig=REDACTED") {
		t.Errorf("redactURL: %s", got)
	}
}
