package tablekit_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	azlog "github.com/Azure/azure-sdk-for-go/sdk/azcore/log"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keyring"
	"github.com/tablekit/tablekit/sas"
)

// TestNoSecretsInErrorsOrLogs drives the encryption and SAS code through
// successes and failures (bad input, a tampered ciphertext, a missing key,
// a forged SAS, an unreachable endpoint) with the SDK's log routed to slog
// and every error logged the way an application would, then searches all of
// it for the account key, the SAS signatures and the encryption keys.
func TestNoSecretsInErrorsOrLogs(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	azlog.SetListener(func(ev azlog.Event, msg string) { slog.Debug(msg, "azcore", string(ev)) })
	t.Cleanup(func() { slog.SetDefault(prev); azlog.SetListener(nil) })

	var texts []string
	record := func(op string, err error) {
		if err == nil {
			return
		}
		texts = append(texts, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))
		var re *azcore.ResponseError
		if errors.As(err, &re) {
			texts = append(texts, re.Error())
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			texts = append(texts, ue.URL)
		}
		slog.Error(op+" failed", "err", err)
	}

	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{Logging: policy.LogOptions{IncludeBody: true}}})
	name := testenv.CreateTable(t, acct)
	client := acct.Tables().NewClient(name)

	// Secrets to look for.
	var accountKey string
	for _, part := range strings.Split(testenv.ConnectionString(t), ";") {
		if v, ok := strings.CutPrefix(part, "AccountKey="); ok {
			accountKey = v
		}
	}
	if accountKey == "" {
		t.Fatal("no AccountKey in the connection string")
	}
	secrets := map[string]string{"account key": accountKey}
	addSig := func(what, sasURL string) {
		u, err := url.Parse(sasURL)
		if err != nil {
			t.Fatal(err)
		}
		if sig := u.Query().Get("sig"); sig != "" {
			secrets[what+" signature"] = sig
		}
	}
	k1, k2 := keyring.GenerateKey(), keyring.GenerateKey()
	for i, k := range [][]byte{k1, k2} {
		secrets[fmt.Sprintf("key %d (base64)", i+1)] = base64.StdEncoding.EncodeToString(k)
		secrets[fmt.Sprintf("key %d (hex)", i+1)] = hex.EncodeToString(k)
		secrets[fmt.Sprintf("key %d (raw)", i+1)] = string(k)
	}

	// Encryption: success, tampering, a missing key, a wrong key.
	ring := new(keyring.KeyRing)
	ring.Add("k1", k1)
	slog.Info("key ring", "ring", ring)
	texts = append(texts, fmt.Sprintf("%v %+v %#v", ring, ring, ring))
	tbl, err := tablekit.OpenTable[patient](acct, name, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: ring}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Insert(ctx, patient{Ward: "W", ID: "1", SSN: "123-45-6789"}); err != nil {
		t.Fatal(err)
	}
	m, _ := rawProps(t, client, "W", "1")
	ct := rawBinary(t, m, "SSN")
	ct[len(ct)-1] ^= 1
	m["SSN"] = base64.StdEncoding.EncodeToString(ct)
	putRaw(t, client, m)
	_, err = tbl.Get(ctx, "W", "1")
	record("get tampered", err)
	other := new(keyring.KeyRing)
	other.Add("k2", k2)
	tbl2, _ := tablekit.OpenTable[patient](acct, name, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: other}})
	_, err = tbl2.Get(ctx, "W", "1")
	record("get missing key", err)
	wrong := new(keyring.KeyRing)
	wrong.Add("k1", k2)
	tbl3, _ := tablekit.OpenTable[patient](acct, name, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: wrong}})
	if _, err := tbl.Upsert(ctx, patient{Ward: "W", ID: "1", SSN: "x"}); err != nil {
		t.Fatal(err)
	}
	_, err = tbl3.Get(ctx, "W", "1")
	record("get wrong key", err)
	record("add bad key", ring.Add("k1", k2))
	record("add short key", ring.Add("k3", k2[:31]))

	// SAS: good tokens used, bad input, a forged signature, an unreachable
	// endpoint, an expired token.
	signer, err := sas.NewSigner(testenv.ConnectionString(t))
	if err != nil {
		t.Fatal(err)
	}
	slog.Info("signer", "signer", signer)
	texts = append(texts, fmt.Sprintf("%v %+v %#v", signer, signer, signer))
	sasURL, err := signer.TableURL(name, sas.Permissions{Read: true}, time.Now().Add(time.Hour),
		&sas.Options{StartPartitionKey: "W", EndPartitionKey: "W"})
	if err != nil {
		t.Fatal(err)
	}
	addSig("table", sasURL)
	ro, err := sas.OpenTable[patient](sasURL, &tablekit.Options{ClientOptions: azcore.ClientOptions{Logging: policy.LogOptions{IncludeBody: true}}},
		&tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: ring}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Get(ctx, "W", "1"); err != nil {
		t.Fatal(err)
	}
	_, err = ro.Insert(ctx, patient{Ward: "W", ID: "2"})
	record("insert read-only", err)
	ctrURL, err := signer.ContainerURL("somecontainer", sas.Permissions{Read: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	addSig("container", ctrURL)
	blobURL, err := signer.BlobURL("somecontainer", "b", sas.Permissions{Read: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	addSig("blob", blobURL)
	cc, err := sas.OpenContainer(ctrURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cc.NewBlobClient("missing").DownloadStream(ctx, nil)
	record("download missing", err)

	u, _ := url.Parse(sasURL)
	q := u.Query()
	q.Set("sig", base64.StdEncoding.EncodeToString(k2)) // a forged signature
	u.RawQuery = q.Encode()
	forged, err := sas.OpenTable[tablekit.Entity](u.String(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = forged.Get(ctx, "W", "1")
	record("get forged", err)
	if err == nil {
		t.Fatal("a forged signature was accepted")
	}

	down, _ := url.Parse(sasURL)
	down.Host = "127.0.0.1:1"
	unreachable, err := sas.OpenTable[tablekit.Entity](down.String(), &tablekit.Options{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = unreachable.Get(ctx, "W", "1")
	record("get unreachable", err)
	if err == nil {
		t.Fatal("no error from a closed port")
	}
	_, err = sas.OpenTable[patient](strings.Replace(sasURL, "?", "x?", 1)+"&se=2001-01-01T00:00:00Z", nil, nil)
	record("open expired", err)
	_, err = sas.OpenTable[patient]("::"+sasURL, nil, nil)
	record("open malformed", err)
	_, err = sas.OpenQueue(strings.Replace(sasURL, "/"+name, "/BAD_name", 1), nil)
	record("open bad queue", err)
	_, err = sas.OpenQueue(strings.Replace(sasURL, "/"+name, "/q-x", 1), &tablekit.Options{ClientOptions: azcore.ClientOptions{PerCallPolicies: []policy.Policy{nil}}})
	record("open refused options", err)
	_, err = signer.TableURL(name, sas.Permissions{}, time.Now().Add(time.Hour), nil)
	record("sign no perms", err)
	_, err = signer.QueueURL("q-x", sas.Permissions{Add: true, Delete: true}, time.Now().Add(time.Hour), nil)
	record("sign queue", err)

	if len(secrets) < 8 || logs.Len() == 0 || len(texts) < 20 {
		t.Fatalf("the test did not exercise enough: %d secrets, %d log bytes, %d texts", len(secrets), logs.Len(), len(texts))
	}
	haystacks := append(texts, logs.String())
	for what, secret := range secrets {
		forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret)}
		for _, h := range haystacks {
			for _, f := range forms {
				if strings.Contains(h, f) {
					t.Errorf("the %s appears in: %.300s", what, h)
				}
			}
		}
	}
	t.Logf("searched %d error texts and %d bytes of slog output for %d secrets", len(texts), logs.Len(), len(secrets))
}
