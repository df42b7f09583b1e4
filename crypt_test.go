package tablekit_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keyring"
)

// patient has encrypted fields of several types next to plain ones.
type patient struct {
	Ward      string      `table:",pk"`
	ID        string      `table:",rk"`
	ETag      azcore.ETag `table:",etag"`
	Name      string      // plain: filterable
	SSN       string      `table:"SSN,encrypt"`
	Born      time.Time   `table:"Born,encrypt"`
	Weight    float64     `table:"Weight,encrypt"`
	Allergies []string    `table:"Allergies,json,encrypt"`
	Scan      []byte      `table:"Scan,omitempty,encrypt"`
}

func newRing(t *testing.T, id string) *keyring.KeyRing {
	t.Helper()
	ring := new(keyring.KeyRing)
	if err := ring.Add(id, keyring.GenerateKey()); err != nil {
		t.Fatal(err)
	}
	return ring
}

// rawProps reads an entity with plain aztables, as anyone with the account
// key (but not the encryption keys) would.
func rawProps(t *testing.T, client *aztables.Client, pk, rk string) (map[string]any, []byte) {
	t.Helper()
	resp, err := client.GetEntity(context.Background(), pk, rk, nil)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(resp.Value, &m); err != nil {
		t.Fatal(err)
	}
	return m, resp.Value
}

// rawBinary returns a binary property of a raw entity, decoded.
func rawBinary(t *testing.T, m map[string]any, name string) []byte {
	t.Helper()
	if m[name+"@odata.type"] != "Edm.Binary" {
		t.Fatalf("%s is stored as %v, not Edm.Binary", name, m[name+"@odata.type"])
	}
	b, err := base64.StdEncoding.DecodeString(m[name].(string))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// putRaw writes entity JSON with plain aztables (upsert, replace).
func putRaw(t *testing.T, client *aztables.Client, m map[string]any) {
	t.Helper()
	for k := range m {
		if strings.HasPrefix(k, "odata.") || k == "Timestamp" {
			delete(m, k)
		}
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.UpsertEntity(context.Background(), data, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
		t.Fatal(err)
	}
}

func TestEncryptionStructRoundTripAndRawView(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tableName := testenv.CreateTable(t, acct)
	client := acct.Tables().NewClient(tableName)
	ring := newRing(t, "k1")
	tbl, err := tablekit.OpenTable[patient](acct, tableName, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: ring}})
	if err != nil {
		t.Fatal(err)
	}
	in := patient{Ward: "W1", ID: "001", Name: "Ada", SSN: "078-05-1120", Born: time.Date(1815, 12, 10, 0, 0, 0, 100, time.UTC),
		Weight: 60.0, Allergies: []string{"penicillin"}, Scan: []byte("MRI-bytes")}
	etag, err := tbl.Insert(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	in.ETag = etag
	got, err := tbl.Get(ctx, "W1", "001")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("Get:\n got %+v\nwant %+v", got, in)
	}
	// Query (by a plain property) and projection of an encrypted one.
	n := 0
	for p, err := range tbl.Query(ctx, tablekit.Where("PartitionKey eq ? and Name eq ?", "W1", "Ada"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p, in) {
			t.Fatalf("Query: %+v", p)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("query found %d", n)
	}
	sel, err := tablekit.Collect(tbl.Query(ctx, tablekit.PointQuery("W1", "001"), &tablekit.QueryOptions{Select: []string{"SSN"}}), 1)
	if err != nil || len(sel) != 1 || sel[0].SSN != in.SSN || sel[0].Name != "" {
		t.Fatalf("projection: %+v %v", sel, err)
	}

	// What the service (and anyone with only the account key) sees.
	m, raw := rawProps(t, client, "W1", "001")
	for _, secret := range []string{"078-05-1120", "penicillin", "1815", "MRI-bytes", base64.StdEncoding.EncodeToString([]byte("MRI-bytes"))} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("raw entity shows %q: %s", secret, raw)
		}
	}
	if m["Name"] != "Ada" {
		t.Errorf("plain property: %v", m["Name"])
	}
	for _, name := range []string{"SSN", "Born", "Weight", "Allergies", "Scan"} {
		if id, err := tablekit.CiphertextKeyID(rawBinary(t, m, name)); err != nil || id != "k1" {
			t.Errorf("%s: key id %q, %v", name, id, err)
		}
	}
	// Encrypting twice gives different ciphertexts (fresh nonces).
	if _, err := tbl.Upsert(ctx, in); err != nil {
		t.Fatal(err)
	}
	m2, _ := rawProps(t, client, "W1", "001")
	if m2["SSN"] == m["SSN"] {
		t.Error("the same value encrypted twice gave the same ciphertext")
	}

	// Filters on encrypted properties are refused before sending.
	for _, err := range tbl.Query(ctx, tablekit.Where("SSN eq ?", in.SSN), nil) {
		if !errors.Is(err, tablekit.ErrInvalidInput) || !strings.Contains(err.Error(), `"SSN"`) {
			t.Fatalf("filter on SSN: %v", err)
		}
		break
	}
	// A table without encryption refuses a struct tagged encrypt.
	if _, err := tablekit.OpenTable[patient](acct, tableName, nil); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Fatalf("no Encryption: %v", err)
	}
}

func TestEncryptionEntityRoundTrip(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tableName := testenv.CreateTable(t, acct)
	client := acct.Tables().NewClient(tableName)
	enc := &tablekit.Encryption{Keys: newRing(t, "k1"), Properties: []string{"Card", "Limit", "Ratio", "Flag", "Uid"}}
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, tableName, &tablekit.TableOptions{Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]any{"Card": "4111 1111 1111 1111", "Limit": int64(1 << 40), "Ratio": 2.0, "Flag": true,
		"Uid": tablekit.GUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, "Owner": "Bob"}
	if _, err := tbl.Insert(ctx, tablekit.Entity{PartitionKey: "c", RowKey: "1", Properties: props}); err != nil {
		t.Fatal(err)
	}
	got, err := tbl.Get(ctx, "c", "1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Properties, props) {
		t.Fatalf("got %#v\nwant %#v", got.Properties, props)
	}
	_, raw := rawProps(t, client, "c", "1")
	if strings.Contains(string(raw), "4111") {
		t.Fatalf("plaintext in %s", raw)
	}
	// The same Encryption serves a struct table over the same data when
	// the struct tags the same properties.
	type card struct {
		PK    string `table:",pk"`
		RK    string `table:",rk"`
		Card  string `table:"Card,encrypt"`
		Limit int64  `table:"Limit,encrypt"`
		Owner string
	}
	st, err := tablekit.OpenTable[card](acct, tableName, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: enc.Keys, Properties: []string{"Card"}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.Get(ctx, "c", "1")
	if err != nil || c.Card != props["Card"] || c.Limit != 1<<40 || c.Owner != "Bob" {
		t.Fatalf("struct view: %+v %v", c, err)
	}
}

func TestEncryptionCopiedCiphertextFails(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tableName := testenv.CreateTable(t, acct)
	client := acct.Tables().NewClient(tableName)
	tbl, err := tablekit.OpenTable[patient](acct, tableName, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: newRing(t, "k1")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Insert(ctx, patient{Ward: "W1", ID: "victim", SSN: "111-11-1111", Allergies: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Insert(ctx, patient{Ward: "W1", ID: "attacker", SSN: "999-99-9999"}); err != nil {
		t.Fatal(err)
	}
	victim, _ := rawProps(t, client, "W1", "victim")
	attacker, _ := rawProps(t, client, "W1", "attacker")

	// The victim's SSN ciphertext pasted into the attacker's row.
	attacker["SSN"] = victim["SSN"]
	putRaw(t, client, attacker)
	_, err = tbl.Get(ctx, "W1", "attacker")
	var de *tablekit.DecodeError
	if !errors.Is(err, tablekit.ErrDecrypt) || !errors.As(err, &de) || de.Op != "Get" || de.Property != "SSN" || de.Entity != tableName+":W1/attacker" ||
		!strings.HasPrefix(err.Error(), `tablekit: Get: cannot decrypt entity "`+tableName+`:W1/attacker" property "SSN": `) {
		t.Fatalf("copied to another row: %v", err)
	}
	if errors.As(err, new(*tablekit.ValidationError)) {
		t.Fatalf("a read-side failure is a ValidationError (input refused before sending): %v", err)
	}
	if !strings.Contains(err.Error(), "copied from another entity or property") || strings.Contains(err.Error(), "111-11") {
		t.Fatalf("unclear or leaky error: %v", err)
	}
	t.Logf("copied to another row: %v", err)

	// The victim's SSN ciphertext moved into its own Allergies property
	// (same row, another property).
	victim["Allergies"] = victim["SSN"]
	putRaw(t, client, victim)
	_, err = tbl.Get(ctx, "W1", "victim")
	if !errors.Is(err, tablekit.ErrDecrypt) || !errors.As(err, &de) || de.Property != "Allergies" {
		t.Fatalf("copied to another property: %v", err)
	}
	// Queries report it too.
	for _, err := range tbl.Query(ctx, tablekit.PartitionEq("W1"), nil) {
		if !errors.Is(err, tablekit.ErrDecrypt) {
			t.Fatalf("query: %v", err)
		}
		break
	}
}

func TestEncryptionTamperedByteFails(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tableName := testenv.CreateTable(t, acct)
	client := acct.Tables().NewClient(tableName)
	tbl, err := tablekit.OpenTable[patient](acct, tableName, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: newRing(t, "k1")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Insert(ctx, patient{Ward: "W", ID: "1", SSN: "123-45-6789"}); err != nil {
		t.Fatal(err)
	}
	m, _ := rawProps(t, client, "W", "1")
	ct := rawBinary(t, m, "SSN")
	// One byte in the ciphertext body, the nonce, and the key id.
	for _, i := range []int{len(ct) - 20, 8, 5} {
		bad := append([]byte(nil), ct...)
		bad[i] ^= 0x01
		m["SSN"] = base64.StdEncoding.EncodeToString(bad)
		putRaw(t, client, m)
		_, err := tbl.Get(ctx, "W", "1")
		if !errors.Is(err, tablekit.ErrDecrypt) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	// A plain value where ciphertext belongs (written by another client).
	m["SSN"] = "123-45-6789"
	delete(m, "SSN@odata.type")
	putRaw(t, client, m)
	_, err = tbl.Get(ctx, "W", "1")
	if !errors.Is(err, tablekit.ErrDecrypt) || strings.Contains(err.Error(), "123-45") {
		t.Fatalf("plain value: %v", err)
	}
}

func TestEncryptionKeyRotation(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tableName := testenv.CreateTable(t, acct)
	client := acct.Tables().NewClient(tableName)
	ring := newRing(t, "k1")
	tbl, err := tablekit.OpenTable[patient](acct, tableName, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: ring}})
	if err != nil {
		t.Fatal(err)
	}
	keyOf := func(rk string) string {
		m, _ := rawProps(t, client, "W", rk)
		id, err := tablekit.CiphertextKeyID(rawBinary(t, m, "SSN"))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	if _, err := tbl.Insert(ctx, patient{Ward: "W", ID: "old", SSN: "written with k1"}); err != nil {
		t.Fatal(err)
	}
	if err := ring.Rotate("k2", keyring.GenerateKey()); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Insert(ctx, patient{Ward: "W", ID: "new", SSN: "written with k2"}); err != nil {
		t.Fatal(err)
	}
	if keyOf("old") != "k1" || keyOf("new") != "k2" {
		t.Fatalf("key ids: old %s, new %s", keyOf("old"), keyOf("new"))
	}
	for rk, want := range map[string]string{"old": "written with k1", "new": "written with k2"} {
		p, err := tbl.Get(ctx, "W", rk)
		if err != nil || p.SSN != want {
			t.Fatalf("%s: %q %v", rk, p.SSN, err)
		}
	}
	// Rewriting moves a row to the current key.
	old, _ := tbl.Get(ctx, "W", "old")
	if _, err := tbl.Update(ctx, old, old.ETag); err != nil {
		t.Fatal(err)
	}
	if keyOf("old") != "k2" {
		t.Fatalf("after rewrite: %s", keyOf("old"))
	}
	// With every row on k2, k1 can go; a fresh reader without k1 reads all.
	if err := ring.Remove("k1"); err != nil {
		t.Fatal(err)
	}
	fresh, _ := tablekit.OpenTable[patient](acct, tableName, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: ring}})
	for p, err := range fresh.Query(ctx, tablekit.PartitionEq("W"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p.SSN, "written with") {
			t.Fatalf("%+v", p)
		}
	}
	// A row still on a removed key fails clearly.
	k1 := new(keyring.KeyRing)
	k1.Add("k1", keyring.GenerateKey())
	w1, _ := tablekit.OpenTable[patient](acct, tableName, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: k1}})
	if _, err := w1.Insert(ctx, patient{Ward: "W", ID: "stale", SSN: "x"}); err != nil {
		t.Fatal(err)
	}
	_, err = fresh.Get(ctx, "W", "stale")
	if !errors.Is(err, tablekit.ErrKeyNotFound) || !errors.Is(err, tablekit.ErrDecrypt) || !strings.Contains(err.Error(), `"k1"`) {
		t.Fatalf("removed key: %v", err)
	}
}

func TestEncryptionMergeAndTransaction(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tableName := testenv.CreateTable(t, acct)
	enc := &tablekit.Encryption{Keys: newRing(t, "k1"), Properties: []string{"A", "B"}}
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, tableName, &tablekit.TableOptions{Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	e := func(rk string, props map[string]any) tablekit.Entity {
		return tablekit.Entity{PartitionKey: "p", RowKey: rk, Properties: props}
	}
	if _, err := tbl.Transaction(ctx,
		tablekit.InsertAction(e("1", map[string]any{"A": "a1", "B": "b1"})),
		tablekit.InsertAction(e("2", map[string]any{"A": "a2", "B": "b2"})),
	); err != nil {
		t.Fatal(err)
	}
	// Merge only A: B, encrypted earlier, still decrypts.
	if _, err := tbl.Merge(ctx, e("1", map[string]any{"A": "a1-new"}), ""); err != nil {
		t.Fatal(err)
	}
	got, err := tbl.Get(ctx, "p", "1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Properties, map[string]any{"A": "a1-new", "B": "b1"}) {
		t.Fatalf("after merge: %v", got.Properties)
	}
	res, err := tbl.BulkWriter(nil).Merge(ctx, []tablekit.Entity{e("2", map[string]any{"B": "b2-new"})})
	if err != nil {
		t.Fatal(err, res)
	}
	got, err = tbl.Get(ctx, "p", "2")
	if err != nil || !reflect.DeepEqual(got.Properties, map[string]any{"A": "a2", "B": "b2-new"}) {
		t.Fatalf("after bulk merge: %v %v", got.Properties, err)
	}
}

// TestEncryptionThroughTheEntitiesView: ToEntity gives a T's properties in
// plaintext, the table's Entities view encrypts the ones T's tags name when
// it writes them and decrypts them when it reads, and FromEntity gives the
// T back: what pattern packages that store a T's properties elsewhere
// build on.
func TestEncryptionThroughTheEntitiesView(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tableName := testenv.CreateTable(t, acct)
	client := acct.Tables().NewClient(tableName)
	tbl, err := tablekit.OpenTable[patient](acct, tableName, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: newRing(t, "k1")}})
	if err != nil {
		t.Fatal(err)
	}
	in := patient{Ward: "W1", ID: "002", Name: "Bea", SSN: "078-05-1121", Born: time.Date(1900, 1, 2, 3, 4, 5, 600, time.UTC),
		Weight: 70.5, Allergies: []string{"pollen"}}
	e, err := tbl.ToEntity(in)
	if err != nil {
		t.Fatal(err)
	}
	if e.Properties["SSN"] != "078-05-1121" || e.Properties["Weight"] != 70.5 {
		t.Fatalf("ToEntity: %v, want plaintext properties", e.Properties)
	}
	if _, err := tbl.AsEntities().Insert(ctx, e); err != nil {
		t.Fatal(err)
	}
	raw, _ := rawProps(t, client, "W1", "002")
	if ct := rawBinary(t, raw, "SSN"); bytes.Contains(ct, []byte("078-05-1121")) {
		t.Fatal("the Entities view stored SSN in clear")
	}
	typed, err := tbl.Get(ctx, "W1", "002")
	if err != nil || typed.SSN != in.SSN || !typed.Born.Equal(in.Born) || typed.Weight != in.Weight {
		t.Fatalf("typed read of what the Entities view wrote: %+v, %v", typed, err)
	}
	back, err := tbl.AsEntities().Get(ctx, "W1", "002")
	if err != nil || back.Properties["SSN"] != in.SSN {
		t.Fatalf("Entities view read: %v, %v", back.Properties, err)
	}
	out, err := tbl.FromEntity(back)
	if err != nil || out.SSN != in.SSN || out.Name != in.Name || out.Allergies[0] != "pollen" || out.ETag == "" {
		t.Fatalf("FromEntity: %+v, %v", out, err)
	}
	// A plain conversion still refuses the encrypted fields: it would
	// leave them in clear with nothing to encrypt them.
	if _, err := tablekit.ToEntity(in); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("EncodeEntity of a struct with encrypt fields: %v", err)
	}
}
