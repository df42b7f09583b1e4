package sections

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/examples/internal/demo"
)

// Encryption shows client-side property encryption: sensitive properties
// leave the process as AES-256-GCM ciphertext bound to their entity and
// property, filters on them are refused, merges work, and keys rotate.
func Encryption() demo.Section {
	return demo.Section{
		Name:        "encryption",
		Description: "client-side property encryption: ciphertext at rest, bound to its row, merges and key rotation",
		Run:         runEncryption,
	}
}

// encPatient is a record with two sensitive fields.
type encPatient struct {
	Ward      string      `table:",pk"`
	ID        string      `table:",rk"`
	ETag      azcore.ETag `table:",etag"`
	Name      string      // plain: the service can filter on it
	SSN       string      `table:"SSN,encrypt"`
	Diagnosis string      `table:"Diagnosis,encrypt"`
}

func runEncryption(ctx context.Context, env *demo.Env) error {
	name := env.TableName("Patients")
	ring := tablekit.NewKeyRing()
	if err := ring.Add("2025-q1", tablekit.GenerateKey()); err != nil {
		return err
	}
	patients, err := tablekit.OpenTable[encPatient](env.Account, name, &tablekit.TableOptions{
		Encryption: &tablekit.Encryption{Keys: ring},
	})
	if err != nil {
		return err
	}
	if err := patients.CreateIfNotExists(ctx); err != nil {
		return err
	}
	env.Defer(func(ctx context.Context) error { return patients.DeleteTable(ctx) })
	env.Say("table %s: SSN and Diagnosis are tagged `table:\",encrypt\"`; keys come from a %v", name, ring)

	ada := encPatient{Ward: "Cardio", ID: "p001", Name: "Ada", SSN: "078-05-1120", Diagnosis: "arrhythmia"}
	bob := encPatient{Ward: "Cardio", ID: "p002", Name: "Bob", SSN: "219-09-9999", Diagnosis: "none"}
	for _, p := range []encPatient{ada, bob} {
		if _, err := patients.Insert(ctx, p); err != nil {
			return err
		}
	}
	got, err := patients.Get(ctx, "Cardio", "p001", nil)
	if err != nil {
		return err
	}
	env.Say("read back through tablekit: %s, SSN %s, diagnosis %q", got.Name, got.SSN, got.Diagnosis)

	// What the service, a backup, or anyone with only the account key sees.
	raw := env.Account.Table(name)
	stored, err := encRawEntity(ctx, raw, "Cardio", "p001")
	if err != nil {
		return err
	}
	ct, err := base64.StdEncoding.DecodeString(stored["SSN"].(string))
	if err != nil {
		return err
	}
	keyID, err := tablekit.CiphertextKeyID(ct)
	if err != nil {
		return err
	}
	env.Say("read with plain aztables, SSN is %s %s... (%d bytes: header naming key %q, nonce, ciphertext, tag); Name is still %q",
		stored["SSN@odata.type"], stored["SSN"].(string)[:16], len(ct), keyID, stored["Name"])
	if strings.Contains(fmt.Sprint(stored), ada.SSN) {
		return errors.New("the stored entity contains the plaintext SSN")
	}

	// A ciphertext is bound to its PartitionKey, RowKey and property name.
	bobRaw, err := encRawEntity(ctx, raw, "Cardio", "p002")
	if err != nil {
		return err
	}
	bobRaw["SSN"] = stored["SSN"] // paste Ada's SSN ciphertext into Bob's row
	if err := encPutRawEntity(ctx, raw, bobRaw); err != nil {
		return err
	}
	_, err = patients.Get(ctx, "Cardio", "p002", nil)
	if !errors.Is(err, tablekit.ErrDecrypt) {
		return fmt.Errorf("a ciphertext moved to another row decrypted: %v", err)
	}
	env.Say("Ada's SSN ciphertext pasted into Bob's row does not decrypt:\n       %v", err)
	if _, err := patients.Upsert(ctx, bob, tablekit.Replace); err != nil { // repair Bob's row
		return err
	}

	// The service cannot compare ciphertext: such filters are refused.
	_, err = patients.Top(ctx, tablekit.Where("SSN eq ?", ada.SSN), 1, nil)
	if !errors.Is(err, tablekit.ErrInvalidInput) {
		return fmt.Errorf("a filter on an encrypted property was not refused: %v", err)
	}
	env.Say("filtering on SSN is refused before sending: %v", err)

	// Merge: each property is sealed on its own, so a partial update keeps
	// the other encrypted properties readable.
	entities, err := tablekit.OpenTable[tablekit.Entity](env.Account, name, &tablekit.TableOptions{
		Encryption: &tablekit.Encryption{Keys: ring, Properties: []string{"SSN", "Diagnosis"}},
	})
	if err != nil {
		return err
	}
	if _, err := entities.Upsert(ctx, tablekit.Entity{PartitionKey: "Cardio", RowKey: "p001",
		Properties: map[string]any{"Diagnosis": "arrhythmia, treated"}}, tablekit.Merge); err != nil {
		return err
	}
	got, err = patients.Get(ctx, "Cardio", "p001", nil)
	if err != nil {
		return err
	}
	env.Say("merged only Diagnosis (as a property bag): now %q, and the SSN written earlier still decrypts: %s", got.Diagnosis, got.SSN)

	// Rotation: a new current key for new writes; old values keep their key
	// id and decrypt as long as the ring has that key.
	if err := ring.Rotate("2025-q2", tablekit.GenerateKey()); err != nil {
		return err
	}
	carol := encPatient{Ward: "Cardio", ID: "p003", Name: "Carol", SSN: "536-90-4399", Diagnosis: "angina"}
	if _, err := patients.Insert(ctx, carol); err != nil {
		return err
	}
	ids, err := encKeyIDs(ctx, raw, "Cardio")
	if err != nil {
		return err
	}
	env.Say("rotated to 2025-q2; SSN key ids per row: %v", ids)
	stale := 0
	for p, err := range patients.Query(ctx, tablekit.PartitionEq("Cardio"), nil) {
		if err != nil {
			return err
		}
		if ids[p.ID] != ring.Current() {
			// Rewriting re-encrypts with the current key.
			if _, err := patients.Update(ctx, p, tablekit.Replace, p.ETag); err != nil {
				return err
			}
			stale++
		}
	}
	if ids, err = encKeyIDs(ctx, raw, "Cardio"); err != nil {
		return err
	}
	if err := ring.Remove("2025-q1"); err != nil {
		return err
	}
	env.Say("rewrote %d rows still on the old key; key ids now %v; 2025-q1 removed from the ring", stale, ids)
	all, err := patients.Top(ctx, tablekit.PartitionEq("Cardio"), 10, nil)
	if err != nil {
		return err
	}
	env.Say("all %d patients still read back without the old key", len(all))
	return nil
}

// encRawEntity reads an entity with plain aztables.
func encRawEntity(ctx context.Context, c *aztables.Client, pk, rk string) (map[string]any, error) {
	resp, err := c.GetEntity(ctx, pk, rk, nil)
	if err != nil {
		return nil, tablekit.WrapError("GetEntity", err)
	}
	var m map[string]any
	return m, json.Unmarshal(resp.Value, &m)
}

// encPutRawEntity writes an entity read with encRawEntity back with plain aztables.
func encPutRawEntity(ctx context.Context, c *aztables.Client, m map[string]any) error {
	for k := range m {
		if strings.HasPrefix(k, "odata.") || k == "Timestamp" {
			delete(m, k)
		}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = c.UpsertEntity(ctx, data, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
	return tablekit.WrapError("UpsertEntity", err)
}

// encKeyIDs returns the id of the key each row's SSN is encrypted with.
func encKeyIDs(ctx context.Context, c *aztables.Client, pk string) (map[string]string, error) {
	f, err := tablekit.PartitionEq(pk).Build()
	if err != nil {
		return nil, err
	}
	pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &f})
	ids := map[string]string{}
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, tablekit.WrapError("QueryEntities", err)
		}
		for _, data := range page.Entities {
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				return nil, err
			}
			ct, err := base64.StdEncoding.DecodeString(fmt.Sprint(m["SSN"]))
			if err != nil {
				return nil, err
			}
			id, err := tablekit.CiphertextKeyID(ct)
			if err != nil {
				return nil, err
			}
			ids[fmt.Sprint(m["RowKey"])] = id
		}
	}
	return ids, nil
}
