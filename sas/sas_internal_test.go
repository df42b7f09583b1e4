package sas

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/connstr"
)

const (
	devAccountName = connstr.DevAccountName
	devAccountKey  = connstr.DevAccountKey
)

// sdkSignature returns the signature aztables' SASSignatureValues.Sign
// computes for v: the reference the tests hold ours to (it signs the same
// string; it only leaves the range out of the query string).
func sdkSignature(t *testing.T, v tableValues) string {
	t.Helper()
	cred, err := aztables.NewSharedKeyCredential(devAccountName, devAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	sv := aztables.SASSignatureValues{
		Version:           v.version,
		Protocol:          aztables.SASProtocol(v.protocol),
		Permissions:       v.permissions,
		Identifier:        v.identifier,
		TableName:         v.table,
		StartPartitionKey: v.startPK,
		StartRowKey:       v.startRK,
		EndPartitionKey:   v.endPK,
		EndRowKey:         v.endRK,
	}
	if v.start != "" {
		if sv.StartTime, err = time.Parse(timeFormat, v.start); err != nil {
			t.Fatal(err)
		}
	}
	if sv.ExpiryTime, err = time.Parse(timeFormat, v.expiry); err != nil {
		t.Fatal(err)
	}
	enc, err := sv.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	q, err := url.ParseQuery(enc)
	if err != nil || q.Get("sig") == "" {
		t.Fatalf("aztables token %q: %v", enc, err)
	}
	return q.Get("sig")
}

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
	v    tableValues
	sts  string
	sig  string
	name string
}{
	{
		name: "range",
		v: tableValues{permissions: "raud", start: "2025-01-01T00:00:00Z", expiry: "2030-01-02T03:04:05Z",
			table: "Customers", protocol: "https", version: "2019-02-02",
			startPK: "Jeff", startRK: "0001", endPK: "Jeff", endRK: "0099"},
		sts: "raud\n2025-01-01T00:00:00Z\n2030-01-02T03:04:05Z\n/table/devstoreaccount1/customers\n\n\nhttps\n2019-02-02\nJeff\n0001\nJeff\n0099",
		sig: "z6aXbvlnL88wVggQN3AzEql7TtfidcgnVfI0XOJN/3s=",
	},
	{
		name: "whole table",
		v:    tableValues{permissions: "r", expiry: "2030-01-02T03:04:05Z", table: "orders", version: "2019-02-02"},
		sts:  "r\n\n2030-01-02T03:04:05Z\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\n\n\n\n",
		sig:  "E9GsR/udqc51+hRtluBMaIAViaVRHquxi/MyWS3wZoA=",
	},
}

func TestTableSASStringToSign(t *testing.T) {
	for _, tc := range tableSASVectors {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.v.stringToSign(devAccountName); got != tc.sts {
				t.Fatalf("string-to-sign\n got %q\nwant %q", got, tc.sts)
			}
			if got := hmacSign(devAccountKey, tc.sts); got != tc.sig {
				t.Fatalf("HMAC = %s, want %s", got, tc.sig)
			}
			got := tc.v.sign(devAccountKey, devAccountName)
			if got != tc.sig {
				t.Fatalf("sign = %s; want %s", got, tc.sig)
			}
			if sdk := sdkSignature(t, tc.v); sdk != tc.sig {
				t.Fatalf("aztables signs %s; want %s", sdk, tc.sig)
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

// aztables' signer, the reference, signs exactly our string-to-sign, for
// any field values.
func TestTableSASSignerAgrees(t *testing.T) {
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
		v := tableValues{
			permissions: []string{"r", "a", "ra", "raud", "ud"}[r.IntN(5)],
			expiry:      time.Unix(int64(2e9+r.IntN(1e8)), 0).UTC().Format(timeFormat),
			table:       "Tbl" + fmt.Sprint(i),
			protocol:    []string{"", "https", "https,http"}[r.IntN(3)],
			version:     tableSASVersion,
			startPK:     word(), startRK: word(), endPK: word(), endRK: word(),
		}
		if r.IntN(2) == 0 {
			v.start = time.Unix(int64(1.7e9+r.IntN(1e8)), 0).UTC().Format(timeFormat)
		}
		got := v.sign(devAccountKey, devAccountName)
		if want := sdkSignature(t, v); got != want {
			t.Fatalf("%+v: our signature %s, aztables' %s", v, got, want)
		}
	}
}

func TestTableURLChecks(t *testing.T) {
	signer, err := NewSigner("UseDevelopmentStorage=true")
	if err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	rangeOpts := &Options{StartPartitionKey: "o'k", StartRowKey: "a&b=c", EndPartitionKey: "o'k", EndRowKey: "z z"}
	u, err := signer.TableURL("Customers", Permissions{Read: true, Update: true}, future, rangeOpts)
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
	for name, want := range map[string]string{"sp": "ru", "tn": "Customers", "sv": tableSASVersion, "spk": "o'k", "srk": "a&b=c", "epk": "o'k", "erk": "z z", "se": future.UTC().Format(timeFormat)} {
		if q.Get(name) != want {
			t.Errorf("%s = %q, want %q", name, q.Get(name), want)
		}
	}
	if q.Has("spr") || q.Has("st") {
		t.Errorf("http endpoint token has spr or st: %v", q)
	}
	v, err := signer.tableValues("TableURL", "Customers", Permissions{Read: true, Update: true}, future, rangeOpts)
	if err != nil {
		t.Fatal(err)
	}
	if want := hmacSign(devAccountKey, v.stringToSign(devAccountName)); q.Get("sig") != want {
		t.Errorf("sig %s, want %s", q.Get("sig"), want)
	}

	// An https endpoint: the token is for HTTPS only.
	https, err := NewSigner("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + devAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	hu, err := https.TableURL("Customers", Permissions{Read: true}, future, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := url.Parse(hu); p.Host != "acct.table.core.windows.net" || p.Query().Get("spr") != "https" {
		t.Errorf("https token: %s", hu)
	}

	for _, tc := range []struct {
		table  string
		perms  Permissions
		expiry time.Time
		opts   *Options
		want   string
		is     error
	}{
		{"1bad", Permissions{Read: true}, future, nil, "table name", tablekit.ErrInvalidKey},
		{"Good", Permissions{}, future, nil, "no permissions", tablekit.ErrInvalidInput},
		{"Good", Permissions{Read: true, Process: true, List: true}, future, nil, "a table SAS cannot grant Process, List", tablekit.ErrInvalidInput},
		{"Good", Permissions{Read: true}, time.Time{}, nil, "expiry time is required", tablekit.ErrInvalidInput},
		{"Good", Permissions{Read: true}, time.Now().Add(-time.Minute), nil, "not in the future", tablekit.ErrInvalidInput},
		{"Good", Permissions{Read: true}, future, &Options{Start: future.Add(time.Minute)}, "not after the start", tablekit.ErrInvalidInput},
		{"Good", Permissions{Read: true}, future, &Options{StartRowKey: "a"}, "needs StartPartitionKey", tablekit.ErrInvalidInput},
		{"Good", Permissions{Read: true}, future, &Options{EndRowKey: "a"}, "needs EndPartitionKey", tablekit.ErrInvalidInput},
		{"Good", Permissions{Read: true}, future, &Options{StartPartitionKey: "b", EndPartitionKey: "a"}, "range is empty", tablekit.ErrInvalidInput},
		{"Good", Permissions{Read: true}, future, &Options{StartPartitionKey: "a", StartRowKey: "2", EndPartitionKey: "a", EndRowKey: "1"}, "range is empty", tablekit.ErrInvalidInput},
		{"Good", Permissions{Read: true}, future, &Options{StartPartitionKey: "a/b"}, "StartPartitionKey", tablekit.ErrInvalidKey},
	} {
		_, err := signer.TableURL(tc.table, tc.perms, tc.expiry, tc.opts)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "sas: Signer.TableURL: ") {
			t.Errorf("%s %+v %+v: got %v, want %q", tc.table, tc.perms, tc.opts, err, tc.want)
		}
	}
}

// Queue, container and blob tokens: the permissions each allows, the
// options they refuse, and the SDK's canonical permission order.
func TestOtherURLChecks(t *testing.T) {
	signer, err := NewSigner("UseDevelopmentStorage=true")
	if err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	all := Permissions{Read: true, Add: true, Update: true, Delete: true, Process: true, Create: true, Write: true, List: true}
	for _, tc := range []struct {
		name string
		sign func(Permissions, *Options) (string, error)
		ok   Permissions
		sp   string // the permissions of ok, as signed
		path string
		bad  string // what all is refused for
	}{
		{"queue", func(p Permissions, o *Options) (string, error) { return signer.QueueURL("orders", p, future, o) },
			Permissions{Read: true, Add: true, Update: true, Process: true}, "raup", "/devstoreaccount1/orders", "Delete, Create, Write, List"},
		{"container", func(p Permissions, o *Options) (string, error) {
			return signer.ContainerURL("uploads", p, future, o)
		}, Permissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true}, "racwdl", "/devstoreaccount1/uploads", "Update, Process"},
		{"blob", func(p Permissions, o *Options) (string, error) {
			return signer.BlobURL("uploads", "in/a b.txt", p, future, o)
		}, Permissions{Read: true, Add: true, Create: true, Write: true, Delete: true}, "racwd", "/devstoreaccount1/uploads/in/a b.txt", "List applies to containers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := tc.sign(tc.ok, &Options{Start: time.Now().Add(-time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			p, err := url.Parse(u)
			if err != nil {
				t.Fatal(err)
			}
			if p.Path != tc.path || p.Query().Get("sp") != tc.sp || p.Query().Get("sig") == "" || p.Query().Get("st") == "" || p.Query().Has("spr") {
				t.Errorf("%s", u)
			}
			if _, err := tc.sign(all, nil); !errors.Is(err, tablekit.ErrInvalidInput) || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("all permissions: %v, want %q", err, tc.bad)
			}
			if _, err := tc.sign(Permissions{}, nil); !errors.Is(err, tablekit.ErrInvalidInput) || !strings.Contains(err.Error(), "no permissions") {
				t.Errorf("no permissions: %v", err)
			}
			if _, err := tc.sign(Permissions{Read: true}, &Options{StartPartitionKey: "a"}); !errors.Is(err, tablekit.ErrInvalidInput) || !strings.Contains(err.Error(), "table tokens only") {
				t.Errorf("key range: %v", err)
			}
		})
	}
	if _, err := signer.BlobURL("uploads", "", Permissions{Read: true}, future, nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("empty blob name: %v", err)
	}
	if _, err := signer.QueueURL("Bad_Queue", Permissions{Read: true}, future, nil); !errors.Is(err, tablekit.ErrInvalidKey) || !strings.HasPrefix(err.Error(), "sas: Signer.QueueURL: ") {
		t.Errorf("bad queue name: %v", err)
	}
}

// A Signer not made by NewSigner, and connection strings that cannot sign,
// give clear errors; a Signer shows no key however it is printed.
func TestSignerZeroAndPrinting(t *testing.T) {
	future := time.Now().Add(time.Hour)
	for _, s := range []*Signer{nil, {}} {
		_, err1 := s.TableURL("T1", Permissions{Read: true}, future, nil)
		_, err2 := s.QueueURL("q1", Permissions{Read: true}, future, nil)
		_, err3 := s.ContainerURL("c1", Permissions{Read: true}, future, nil)
		_, err4 := s.BlobURL("c1", "b", Permissions{Read: true}, future, nil)
		for _, err := range []error{err1, err2, err3, err4} {
			if !errors.Is(err, tablekit.ErrInvalidInput) || !strings.Contains(err.Error(), "use sas.NewSigner") {
				t.Errorf("%#v: %v", s, err)
			}
		}
	}
	for _, cs := range []string{"", "AccountName=a", "nonsense"} {
		if _, err := NewSigner(cs); !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("NewSigner(%q): %v", cs, err)
		}
	}
	s, err := NewSigner("UseDevelopmentStorage=true")
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("signer", "s", s, "v", *s)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("signer", "s", s)
	printed := fmt.Sprintf("%v %+v %#v", s, s, s) + logs.String()
	for _, secret := range []string{devAccountKey, devAccountKey[:20]} {
		if strings.Contains(printed, secret) {
			t.Fatalf("a printed Signer shows the key: %s", printed)
		}
	}
	if !strings.Contains(printed, devAccountName) {
		t.Errorf("a printed Signer does not name its account: %s", printed)
	}
}

func TestParseURL(t *testing.T) {
	future := time.Now().Add(time.Hour).UTC().Format(timeFormat)
	past := time.Now().Add(-time.Hour).UTC().Format(timeFormat)
	const secret = "c2VjcmV0LXNpZ25hdHVyZQ%3D%3D"
	good := "http://127.0.0.1:10002/devstoreaccount1/Orders?sv=2019-02-02&tn=Orders&sp=r&se=" + future + "&sig=" + secret
	p, err := parseURL("op", "table", good)
	if err != nil {
		t.Fatal(err)
	}
	if p.endpoint != "http://127.0.0.1:10002/devstoreaccount1" || p.resource != "Orders" {
		t.Fatalf("%+v", p)
	}
	for _, bad := range []struct{ url, want string }{
		{"ftp://x/y?sig=" + secret + "&sv=1", "absolute http"},
		{"http://127.0.0.1:10002/devstoreaccount1/Orders", "no SAS token"},
		{"http://127.0.0.1:10002/devstoreaccount1/Orders?sig=" + secret, "signed version"},
		{"http://127.0.0.1:10002/?sv=1&sig=" + secret, "does not name"},
		{"http://127.0.0.1:10002/devstoreaccount1/Orders?sv=1&se=" + past + "&sig=" + secret, "expired"},
		{"http://h/%zz?sig=" + secret, "not a valid URL"},
		{"http://h/a/T?sv=1;x=y&sig=" + secret, "not a valid query string"},
		{"http://h/a;b/T?sv=1&sig=" + secret, "must not contain ';'"},
	} {
		_, err := parseURL("op", "table", bad.url)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: got %v, want %q", bad.url, err, bad.want)
			continue
		}
		if strings.Contains(err.Error(), "c2VjcmV0") {
			t.Errorf("error shows the signature: %v", err)
		}
	}
	_, err = OpenTable[tablekit.Entity](strings.Replace(good, "tn=Orders", "tn=Other", 1), nil, nil)
	if err == nil || !strings.Contains(err.Error(), `for table "Other"`) {
		t.Errorf("tn mismatch: %v", err)
	}
	if _, err := OpenQueue(strings.Replace(good, "/Orders?", "/orders?", 1), &tablekit.Options{ClientOptions: azcore.ClientOptions{PerCallPolicies: []policy.Policy{nil}}}); !errors.Is(err, tablekit.ErrInvalidInput) || strings.Contains(err.Error(), "c2VjcmV0") {
		t.Errorf("refused options: %v", err)
	}
}
