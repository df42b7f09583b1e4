package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keyring"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results the pattern promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		`the keys come from a key ring: current "2025-q1", ids [2025-q1]`,
		`inserted 2 patients and read one back: Ada, SSN 078-05-1120, diagnosis "arrhythmia"`,
		`read without keys, SSN is Edm.Binary, `,
		`(header naming key "2025-q1", nonce, ciphertext, tag), plaintext in it: false; Name is still "Ada"`,
		"filtering on SSN is refused (ErrInvalidInput: true)",
		`merged only Ada's Diagnosis (as a property bag): now "arrhythmia, treated", and her SSN written earlier still decrypts: 078-05-1120`,
		"key ids per row: [p001 SSN=2025-q1 Diagnosis=2025-q2; p002 SSN=2025-q1 Diagnosis=2025-q1; p003 SSN=2025-q2 Diagnosis=2025-q2]",
		"rewrote the 2 rows with a property under the old key; key ids now [p001 SSN=2025-q2 Diagnosis=2025-q2; p002 SSN=2025-q2 Diagnosis=2025-q2; p003 SSN=2025-q2 Diagnosis=2025-q2]; 2025-q1 removed from the ring",
		"read back without the old key: p001 Ada 078-05-1120 \"arrhythmia, treated\"\n",
		"read back without the old key: p002 Bob 219-09-9999 \"none\"\n",
		"read back without the old key: p003 Carol 536-90-4399 \"angina\"\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}

// patientsTable opens an encrypted table of Patients with Ada and Bob in it,
// and the same table without keys.
func patientsTable(t *testing.T, acct *tablekit.Account) (patients *tablekit.Table[Patient], raw *tablekit.Table[tablekit.Entity]) {
	t.Helper()
	ctx := context.Background()
	ring := new(keyring.KeyRing)
	if err := ring.Add("k1", keyring.GenerateKey()); err != nil {
		t.Fatal(err)
	}
	name := testenv.TableName(t)
	patients, err := tablekit.OpenTable[Patient](acct, name, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: ring}})
	if err != nil {
		t.Fatal(err)
	}
	if err := patients.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { patients.DeleteTable(context.Background()) })
	for _, p := range []Patient{{Ward: "Cardio", ID: "p001", Name: "Ada", SSN: "078-05-1120", Diagnosis: "arrhythmia"}, {Ward: "Cardio", ID: "p002", Name: "Bob", SSN: "219-09-9999", Diagnosis: "none"}} {
		if _, err := patients.Insert(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if raw, err = tablekit.OpenTable[tablekit.Entity](acct, name, nil); err != nil {
		t.Fatal(err)
	}
	return patients, raw
}

// TestCiphertextBound: both encrypted properties are stored without their
// plaintext, and a ciphertext pasted into another row (by someone with
// write access) does not decrypt there; the error does not show the value.
func TestCiphertextBound(t *testing.T) {
	ctx := context.Background()
	patients, raw := patientsTable(t, testenv.Account(t, nil))
	ada, err := raw.Get(ctx, "Cardio", "p001")
	if err != nil {
		t.Fatal(err)
	}
	for p, plain := range map[string]string{"SSN": "078-05-1120", "Diagnosis": "arrhythmia"} {
		if b, ok := ada.Properties[p].([]byte); !ok || bytes.Contains(b, []byte(plain)) {
			t.Errorf("the stored %s is not ciphertext: %T", p, ada.Properties[p])
		}
	}
	bob, err := raw.Get(ctx, "Cardio", "p002")
	if err != nil {
		t.Fatal(err)
	}
	bob.Properties["SSN"] = ada.Properties["SSN"]
	if _, err := raw.Upsert(ctx, bob); err != nil {
		t.Fatal(err)
	}
	_, err = patients.Get(ctx, "Cardio", "p002")
	if !errors.Is(err, tablekit.ErrDecrypt) {
		t.Fatalf("a ciphertext moved to another row: want ErrDecrypt, got %v", err)
	}
	if strings.Contains(err.Error(), "078-05-1120") {
		t.Errorf("the decryption error shows the plaintext: %v", err)
	}
}

// TestCosts: encryption adds no request, and a filter on an encrypted
// property is refused without sending one.
func TestCosts(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	patients, _ := patientsTable(t, acct)
	before := acct.Meter().Snapshot()
	if _, err := patients.Insert(ctx, Patient{Ward: "Cardio", ID: "p003", Name: "Carol", SSN: "536-90-4399"}); err != nil {
		t.Fatal(err)
	}
	if _, err := patients.Get(ctx, "Cardio", "p003"); err != nil {
		t.Fatal(err)
	}
	if n := acct.Meter().Snapshot().Sub(before).Total(); n != 2 {
		t.Errorf("an encrypted insert and read: %d transactions, want 2", n)
	}
	before = acct.Meter().Snapshot()
	if _, err := tablekit.Collect(patients.Query(ctx, tablekit.Where("SSN eq ?", "536-90-4399"), nil), 0); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("a filter on an encrypted property: want ErrInvalidInput, got %v", err)
	}
	if n := acct.Meter().Snapshot().Sub(before).Total(); n != 0 {
		t.Errorf("the refused filter sent %d requests", n)
	}
}
