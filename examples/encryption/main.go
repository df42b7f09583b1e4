// Command encryption shows client-side property encryption: sensitive
// properties leave the process as AES-256-GCM ciphertext bound to their
// entity and property, filters on them are refused, merges work, and keys
// rotate.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed): go run ./examples/encryption
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/keyring"
)

// Patient is a record with two sensitive fields, tagged encrypt. Name is
// stored in plain text: the service can filter on it.
type Patient struct {
	Ward      string      `table:",pk"`
	ID        string      `table:",rk"`
	ETag      azcore.ETag `table:",etag"`
	Name      string
	SSN       string `table:"SSN,encrypt"`
	Diagnosis string `table:"Diagnosis,encrypt"`
}

// encrypted names Patient's encrypted properties, for property-bag views.
var encrypted = []string{"SSN", "Diagnosis"}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err == nil {
		var acct *tablekit.Account
		if acct, err = tablekit.Open(conn, nil); err == nil {
			err = run(ctx, acct, os.Stdout)
			fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
		}
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "encryption:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a table of its own, uses it, and deletes it.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	// The keys live outside the storage account (e.g. in Key Vault); a KeyRing holds them by id.
	ring := new(keyring.KeyRing)
	if err := ring.Add("2025-q1", keyring.GenerateKey()); err != nil {
		return err
	}
	name := "Patients" + rand.Text()[:8]
	patients, err := tablekit.OpenTable[Patient](acct, name, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: ring}})
	if err != nil {
		return err
	}
	if err := patients.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer patients.DeleteTable(context.WithoutCancel(ctx))
	fmt.Fprintf(out, "SSN and Diagnosis are tagged `table:\",encrypt\"`; the keys come from a key ring: current %q, ids %v\n", ring.Current(), ring.IDs())

	ada := Patient{Ward: "Cardio", ID: "p001", Name: "Ada", SSN: "078-05-1120", Diagnosis: "arrhythmia"}
	for _, p := range []Patient{ada, {Ward: "Cardio", ID: "p002", Name: "Bob", SSN: "219-09-9999", Diagnosis: "none"}} {
		if _, err := patients.Insert(ctx, p); err != nil {
			return err
		}
	}
	got, err := patients.Get(ctx, "Cardio", "p001")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "inserted 2 patients and read one back: %s, SSN %s, diagnosis %q\n", got.Name, got.SSN, got.Diagnosis)

	// The table opened without keys shows what the service or anyone with the
	// account key sees: Edm.Binary, bound to its PartitionKey, RowKey and name.
	raw, err := tablekit.OpenTable[tablekit.Entity](acct, name, nil)
	if err != nil {
		return err
	}
	adaRaw, err := raw.Get(ctx, "Cardio", "p001")
	if err != nil {
		return err
	}
	ct, _ := adaRaw.Properties["SSN"].([]byte)
	keyID, err := tablekit.CiphertextKeyID(ct)
	if err != nil {
		return err // not a ciphertext of tablekit's encryption
	}
	fmt.Fprintf(out, "read without keys, SSN is Edm.Binary, %d bytes (header naming key %q, nonce, ciphertext, tag), plaintext in it: %t; Name is still %q\n",
		len(ct), keyID, bytes.Contains(ct, []byte(ada.SSN)), adaRaw.Properties["Name"])

	// The service cannot compare ciphertext, so filters on an encrypted
	// property are refused before anything is sent.
	_, err = tablekit.Collect(patients.Query(ctx, tablekit.Where("SSN eq ?", ada.SSN), nil), 0)
	fmt.Fprintf(out, "filtering on SSN is refused (ErrInvalidInput: %t): %v\n", errors.Is(err, tablekit.ErrInvalidInput), err)

	// Rotation: a new current key for new writes. Every value names its key,
	// so values under the old key decrypt while the ring still holds it.
	if err := ring.Rotate("2025-q2", keyring.GenerateKey()); err != nil {
		return err
	}
	if _, err := patients.Insert(ctx, Patient{Ward: "Cardio", ID: "p003", Name: "Carol", SSN: "536-90-4399", Diagnosis: "angina"}); err != nil {
		return err
	}

	// A merge writes only the properties it carries, each sealed on its own
	// (a struct carries all its fields: merge one through a property bag):
	// Ada's SSN under the old key stays readable beside a new Diagnosis.
	bag, err := tablekit.OpenTable[tablekit.Entity](acct, name, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: ring, Properties: encrypted}})
	if err != nil {
		return err
	}
	if _, err := bag.Merge(ctx, tablekit.Entity{PartitionKey: "Cardio", RowKey: "p001", Properties: map[string]any{"Diagnosis": "arrhythmia, treated"}}, ""); err != nil {
		return err
	}
	if got, err = patients.Get(ctx, "Cardio", "p001"); err != nil {
		return err
	}
	fmt.Fprintf(out, "rotated to 2025-q2, then merged only Ada's Diagnosis (as a property bag): now %q, and her SSN written earlier still decrypts: %s\n", got.Diagnosis, got.SSN)

	// Before the old key can go, every encrypted property of every row must
	// be sealed under the current key (reseal, in reseal.go).
	before2, after, n, err := reseal(ctx, patients, raw, "Cardio", ring.Current())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "key ids per row: [%s]\n", strings.Join(before2, "; "))
	if err := ring.Remove("2025-q1"); err != nil {
		return err
	}
	fmt.Fprintf(out, "rewrote the %d rows with a property under the old key; key ids now [%s]; 2025-q1 removed from the ring\n", n, strings.Join(after, "; "))

	all, err := tablekit.Collect(patients.Query(ctx, tablekit.PartitionEq("Cardio"), &tablekit.QueryOptions{KeyOrder: true}), 10)
	for _, p := range all {
		fmt.Fprintf(out, "read back without the old key: %s %s %s %q\n", p.ID, p.Name, p.SSN, p.Diagnosis)
	}
	return err
}
