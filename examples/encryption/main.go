// Command encryption shows client-side property encryption: sensitive
// properties leave the process as AES-256-GCM ciphertext bound to their
// entity and property, filters on them are refused, merges work, and keys
// rotate.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/encryption
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

// encrypted names Patient's encrypted properties, for the views of the
// table as a property bag.
var encrypted = []string{"SSN", "Diagnosis"}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "encryption:", err)
		os.Exit(1)
	}
	acct, err := tablekit.Open(conn, nil)
	if err == nil {
		err = run(ctx, acct, os.Stdout)
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "encryption:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a table of its own, uses it, and deletes it.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	// The keys live outside the storage account (in a real deployment, in
	// Key Vault or a secret store); a KeyRing holds them by id.
	ring := new(keyring.KeyRing)
	if err := ring.Add("2025-q1", keyring.GenerateKey()); err != nil {
		return err
	}
	name := "Patients" + rand.Text()[:8]
	patients, err := tablekit.OpenTable[Patient](acct, name, &tablekit.TableOptions{
		Encryption: &tablekit.Encryption{Keys: ring},
	})
	if err != nil {
		return err
	}
	if err := patients.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer patients.DeleteTable(context.WithoutCancel(ctx))
	meter := acct.Meter()
	fmt.Fprintf(out, "SSN and Diagnosis are tagged `table:\",encrypt\"`; the keys come from a key ring: current %q, ids %v\n", ring.Current(), ring.IDs())

	ada := Patient{Ward: "Cardio", ID: "p001", Name: "Ada", SSN: "078-05-1120", Diagnosis: "arrhythmia"}
	bob := Patient{Ward: "Cardio", ID: "p002", Name: "Bob", SSN: "219-09-9999", Diagnosis: "none"}
	before := meter.Snapshot()
	for _, p := range []Patient{ada, bob} {
		if _, err := patients.Insert(ctx, p); err != nil {
			return err
		}
	}
	got, err := patients.Get(ctx, "Cardio", "p001")
	if err != nil {
		return err
	}
	if got.SSN != ada.SSN || got.Diagnosis != ada.Diagnosis {
		return fmt.Errorf("read back SSN %q, diagnosis %q", got.SSN, got.Diagnosis)
	}
	fmt.Fprintf(out, "inserted 2 patients and read one back: %s, SSN %s, diagnosis %q (%d transactions, the 2 inserts and the read: encryption adds none)\n",
		got.Name, got.SSN, got.Diagnosis, meter.Snapshot().Sub(before).Total())

	// The same table opened without keys shows what the service, a backup
	// or anyone with the account key sees: an Edm.Binary value ([]byte).
	raw, err := tablekit.OpenTable[tablekit.Entity](acct, name, nil)
	if err != nil {
		return err
	}
	adaRaw, err := raw.Get(ctx, "Cardio", "p001")
	if err != nil {
		return err
	}
	ct, ok := adaRaw.Properties["SSN"].([]byte)
	if !ok {
		return fmt.Errorf("the stored SSN is a %T, want []byte (Edm.Binary)", adaRaw.Properties["SSN"])
	}
	for p, plain := range map[string]string{"SSN": ada.SSN, "Diagnosis": ada.Diagnosis} {
		if b, ok := adaRaw.Properties[p].([]byte); !ok || bytes.Contains(b, []byte(plain)) {
			return fmt.Errorf("the stored %s is not ciphertext: %T", p, adaRaw.Properties[p])
		}
	}
	keyID, err := tablekit.CiphertextKeyID(ct)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "read without keys, SSN is Edm.Binary, %d bytes (header naming key %q, nonce, ciphertext, tag), no plaintext; Name is still %q\n",
		len(ct), keyID, adaRaw.Properties["Name"])

	// A ciphertext is bound to its PartitionKey, RowKey and property name:
	// someone with write access who pastes Ada's SSN into Bob's row does not
	// get it read back as Bob's.
	bobRaw, err := raw.Get(ctx, "Cardio", "p002")
	if err != nil {
		return err
	}
	bobRaw.Properties["SSN"] = ct
	if _, err := raw.Upsert(ctx, bobRaw); err != nil {
		return err
	}
	_, err = patients.Get(ctx, "Cardio", "p002")
	if !errors.Is(err, tablekit.ErrDecrypt) {
		return fmt.Errorf("a ciphertext moved to another row: want ErrDecrypt, got %v", err)
	}
	if strings.Contains(err.Error(), ada.SSN) {
		return errors.New("the decryption error shows the plaintext")
	}
	fmt.Fprintf(out, "Ada's SSN ciphertext pasted into Bob's row does not decrypt (ErrDecrypt): %v\n", err)
	if _, err := patients.Upsert(ctx, bob); err != nil { // repair Bob's row
		return err
	}

	// The service cannot compare ciphertext, so filters on an encrypted
	// property are refused before anything is sent.
	before = meter.Snapshot()
	_, err = patients.Top(ctx, tablekit.Where("SSN eq ?", ada.SSN), 1, nil)
	if !errors.Is(err, tablekit.ErrInvalidInput) {
		return fmt.Errorf("a filter on an encrypted property: want ErrInvalidInput, got %v", err)
	}
	fmt.Fprintf(out, "filtering on SSN is refused (ErrInvalidInput), %d transactions: %v\n", meter.Snapshot().Sub(before).Total(), err)

	// Rotation: a new current key for new writes. Every value names the key
	// that sealed it, so values under the old key decrypt while the ring
	// still holds it.
	if err := ring.Rotate("2025-q2", keyring.GenerateKey()); err != nil {
		return err
	}
	carol := Patient{Ward: "Cardio", ID: "p003", Name: "Carol", SSN: "536-90-4399", Diagnosis: "angina"}
	if _, err := patients.Insert(ctx, carol); err != nil {
		return err
	}

	// A merge writes only the properties it carries. Each property is
	// sealed on its own, so Ada's SSN, sealed under the old key, stays
	// readable next to a Diagnosis sealed under the new one. (A struct
	// carries all its fields: merge one property through a property-bag
	// view that knows which properties to encrypt.)
	bag, err := tablekit.OpenTable[tablekit.Entity](acct, name, &tablekit.TableOptions{
		Encryption: &tablekit.Encryption{Keys: ring, Properties: encrypted},
	})
	if err != nil {
		return err
	}
	if _, err := bag.Merge(ctx, tablekit.Entity{PartitionKey: "Cardio", RowKey: "p001",
		Properties: map[string]any{"Diagnosis": "arrhythmia, treated"}}, ""); err != nil {
		return err
	}
	got, err = patients.Get(ctx, "Cardio", "p001")
	if err != nil {
		return err
	}
	if got.Diagnosis != "arrhythmia, treated" || got.SSN != ada.SSN {
		return fmt.Errorf("after the merge: diagnosis %q, SSN %q", got.Diagnosis, got.SSN)
	}
	fmt.Fprintf(out, "rotated to 2025-q2, then merged only Ada's Diagnosis (as a property bag): now %q, and her SSN written earlier still decrypts: %s\n", got.Diagnosis, got.SSN)

	// Before the old key can go, every encrypted property of every row must
	// be sealed under the current key: check them all, not just one
	// property, since a merge moves only the properties it writes.
	sealed, err := keyIDs(ctx, raw, "Cardio")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "key ids per row: %s\n", sealed)
	rewritten := 0
	for _, r := range sealed {
		if r.allUnder(ring.Current()) {
			continue
		}
		// Rewriting a row seals all its encrypted properties under the
		// current key. The ETag guards against a concurrent writer (the
		// update then fails with ErrPreconditionFailed: scan again).
		p, err := patients.Get(ctx, "Cardio", r.rowKey)
		if err != nil {
			return err
		}
		if _, err := patients.Update(ctx, p, p.ETag); err != nil {
			return err
		}
		rewritten++
	}
	if sealed, err = keyIDs(ctx, raw, "Cardio"); err != nil {
		return err
	}
	for _, r := range sealed {
		if !r.allUnder(ring.Current()) {
			return fmt.Errorf("after the rewrite, row %s still has %s", r.rowKey, r)
		}
	}
	if err := ring.Remove("2025-q1"); err != nil {
		return err
	}
	fmt.Fprintf(out, "rewrote the %d rows with a property under the old key; key ids now %s; 2025-q1 removed from the ring\n", rewritten, sealed)

	all, err := patients.Top(ctx, tablekit.PartitionEq("Cardio"), 10, nil)
	if err != nil {
		return err
	}
	want := []Patient{{Name: "Ada", SSN: ada.SSN, Diagnosis: "arrhythmia, treated"}, {Name: "Bob", SSN: bob.SSN, Diagnosis: bob.Diagnosis}, carol}
	if len(all) != len(want) {
		return fmt.Errorf("read %d patients, want %d", len(all), len(want))
	}
	for i, p := range all {
		if p.Name != want[i].Name || p.SSN != want[i].SSN || p.Diagnosis != want[i].Diagnosis {
			return fmt.Errorf("patient %s reads back as %s, SSN %s, diagnosis %q", p.ID, p.Name, p.SSN, p.Diagnosis)
		}
	}
	fmt.Fprintf(out, "all %d patients read back intact without the old key\n", len(all))
	return nil
}

// rowKeys is the key id of each encrypted property of one row.
type rowKeys struct {
	rowKey string
	ids    []string // in the order of encrypted
}

func (r rowKeys) String() string {
	parts := []string{r.rowKey}
	for i, p := range encrypted {
		parts = append(parts, p+"="+r.ids[i])
	}
	return strings.Join(parts, " ")
}

// allUnder reports whether every encrypted property of the row is sealed
// under the key id.
func (r rowKeys) allUnder(id string) bool {
	for _, got := range r.ids {
		if got != id {
			return false
		}
	}
	return true
}

// sealedRows lists rowKeys for printing.
type sealedRows []rowKeys

func (s sealedRows) String() string {
	parts := make([]string, len(s))
	for i, r := range s {
		parts[i] = r.String()
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// keyIDs reads a partition through a view without keys, reading only the
// encrypted properties, and returns the id of the key that sealed each of
// them. It decrypts nothing.
func keyIDs(ctx context.Context, raw *tablekit.Table[tablekit.Entity], pk string) (sealedRows, error) {
	var rows sealedRows
	for e, err := range raw.Query(ctx, tablekit.PartitionEq(pk), &tablekit.QueryOptions{Select: encrypted}) {
		if err != nil {
			return nil, err
		}
		r := rowKeys{rowKey: e.RowKey}
		for _, p := range encrypted {
			ct, _ := e.Properties[p].([]byte)
			id, err := tablekit.CiphertextKeyID(ct)
			if err != nil {
				return nil, fmt.Errorf("row %s, %s: %w", e.RowKey, p, err)
			}
			r.ids = append(r.ids, id)
		}
		rows = append(rows, r)
	}
	return rows, nil
}
