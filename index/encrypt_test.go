package index_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keyring"
)

// SecretEmployee has a field the table encrypts on the client.
type SecretEmployee struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	Email      string `table:"Email"`
	SSN        string `table:"SSN,encrypt"`
}

func encryption(t *testing.T, props ...string) *tablekit.Encryption {
	t.Helper()
	ring := new(keyring.KeyRing)
	if err := ring.Rotate("k1", keyring.GenerateKey()); err != nil {
		t.Fatal(err)
	}
	return &tablekit.Encryption{Keys: ring, Properties: props}
}

// property returns the Key function of an index on an Entity's string
// property.
func property(name string) func(e tablekit.Entity) string {
	return func(e tablekit.Entity) string { s, _ := e.Properties[name].(string); return s }
}

// Indexes work on a table with client-side encryption, through its
// property-bag view: the entity and every copy keep the encrypted
// properties encrypted (each under its own keys), lookups decrypt them,
// and an index whose value is derived from an encrypted property is
// refused, since keys are stored in clear. A struct type with encrypted
// fields works the same way (Table.ToEntity gives the view the plaintext
// to encrypt).
func TestIndexesOnEncryptedTable(t *testing.T) {
	ctx := testCtx(t)
	acct := testenv.Account(t, nil)
	enc := encryption(t)
	name, copiesName := newTable(t, acct), newTable(t, acct)
	secret, err := tablekit.OpenTable[SecretEmployee](acct, name, &tablekit.TableOptions{Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	raw := mustNewTable[tablekit.Entity](t, acct, name) // no encryption: what the service stores

	// A struct type with an encrypted field: the entity and its copies
	// hold SSN encrypted, a lookup gives it back decrypted, and an index
	// derived from SSN is refused.
	typed, err := index.NewSamePartition(secret, []index.Index[SecretEmployee]{{Name: "email", Key: func(e SecretEmployee) string { return e.Email }, Unique: true}}, nil)
	if err != nil {
		t.Fatalf("NewSamePartition on a struct with an encrypted field: %v", err)
	}
	if _, err := typed.Insert(ctx, SecretEmployee{Department: "Ops", ID: "000401", Email: "cy@contoso.com", SSN: "111-22-3333"}); err != nil {
		t.Fatal(err)
	}
	if got, err := typed.Find(ctx, "Ops", "email", "cy@contoso.com"); err != nil || got.SSN != "111-22-3333" || got.ID != "000401" {
		t.Fatalf("typed Find = %+v, %v; want the decrypted SSN", got, err)
	}
	for e, err := range raw.Query(ctx, tablekit.PartitionEq("Ops"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := e.Properties["SSN"].([]byte); !ok {
			t.Errorf("typed write: row %s holds SSN %T %v, want ciphertext", e.RowKey, e.Properties["SSN"], e.Properties["SSN"])
		}
	}
	bySecret, err := index.NewSamePartition(secret, []index.Index[SecretEmployee]{{Name: "ssn", Key: func(e SecretEmployee) string { return e.SSN }}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bySecret.Insert(ctx, SecretEmployee{Department: "Ops", ID: "000402", Email: "di@contoso.com", SSN: "444-55-6666"})
	var sve *tablekit.ValidationError
	if !errors.As(err, &sve) || sve.Property != "SSN" || strings.Contains(err.Error(), "444-55-6666") {
		t.Errorf("a typed index on an encrypted field: %v, want a refusal naming SSN (not its value)", err)
	}
	if _, err := index.NewCrossPartition(secret, []index.Index[SecretEmployee]{{Name: "email", Key: func(e SecretEmployee) string { return e.Email }}}, nil); err != nil {
		t.Errorf("NewCrossPartition on a struct with an encrypted field: %v", err)
	}

	// SamePartition over the property-bag view.
	ix, err := index.NewSamePartition(secret.AsEntities(), []index.Index[tablekit.Entity]{
		{Name: "email", Key: property("Email"), Unique: true},
	}, nil)
	if err != nil {
		t.Fatalf("NewSamePartition on an encrypted table: %v", err)
	}
	ana := tablekit.Entity{PartitionKey: "Sales", RowKey: "000301", Properties: map[string]any{"Email": "ana@contoso.com", "SSN": "123-45-6789"}}
	if _, err := ix.Insert(ctx, ana); err != nil {
		t.Fatal(err)
	}
	found, err := ix.Find(ctx, "Sales", "email", "ana@contoso.com")
	if err != nil || found.Properties["SSN"] != "123-45-6789" || found.RowKey != "000301" {
		t.Fatalf("Find = %+v, %v; want the decrypted SSN", found, err)
	}
	// The typed table reads the entity the index wrote.
	if got, err := secret.Get(ctx, "Sales", "000301"); err != nil || got.SSN != "123-45-6789" || got.Email != "ana@contoso.com" {
		t.Errorf("typed Get = %+v, %v", got, err)
	}
	// The service holds ciphertext in the entity and in its copy.
	for e, err := range raw.Query(ctx, tablekit.PartitionEq("Sales"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := e.Properties["SSN"].([]byte); !ok {
			t.Errorf("row %s holds SSN %T %v, want ciphertext", e.RowKey, e.Properties["SSN"], e.Properties["SSN"])
		}
	}
	found.Properties["Email"] = "ana.b@contoso.com"
	if _, err := ix.Update(ctx, found, found.ETag); err != nil {
		t.Fatalf("Update with the ETag of a Find: %v", err)
	}
	if got, err := ix.Find(ctx, "Sales", "email", "ana.b@contoso.com"); err != nil || got.Properties["SSN"] != "123-45-6789" {
		t.Errorf("Find after Update = %+v, %v", got, err)
	}

	// An index on the encrypted property is refused before anything is
	// sent.
	bySSN, err := index.NewSamePartition(secret.AsEntities(), []index.Index[tablekit.Entity]{
		{Name: "ssn", Key: func(e tablekit.Entity) string { return "x" + property("SSN")(e) }},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	bob := tablekit.Entity{PartitionKey: "Sales", RowKey: "000302", Properties: map[string]any{"Email": "bob@contoso.com", "SSN": "987-65-4321"}}
	before := acct.Meter().Snapshot()
	_, err = bySSN.Insert(ctx, bob)
	var ve *tablekit.ValidationError
	if !errors.As(err, &ve) || ve.Op != "index.SamePartition.Insert" || ve.Property != "SSN" || strings.Contains(err.Error(), "987-65-4321") {
		t.Errorf("an index on an encrypted property: %v, want a refusal naming SSN (not its value)", err)
	}
	if cost := acct.Meter().Snapshot().Sub(before); cost.Total() != 0 {
		t.Errorf("the refused write sent %v", cost)
	}

	// CrossPartition: a copy table must encrypt what the copies hold.
	plain := mustNewTable[tablekit.Entity](t, acct, copiesName)
	_, err = index.NewCrossPartition(secret.AsEntities(), []index.Index[tablekit.Entity]{{Name: "email", Key: property("Email"), Table: plain}}, nil)
	if !errors.As(err, &ve) || ve.Op != "index.NewCrossPartition" || ve.Property != "SSN" || !strings.Contains(err.Error(), "plaintext") {
		t.Errorf("NewCrossPartition with copies in a table that does not encrypt SSN: %v", err)
	}
	// A projection without SSN needs no encryption.
	if _, err := index.NewCrossPartition(secret.AsEntities(), []index.Index[tablekit.Entity]{{Name: "email", Key: property("Email"), Table: plain, Properties: []string{"Email"}}}, nil); err != nil {
		t.Errorf("NewCrossPartition with copies projected without SSN: %v", err)
	}
	copies, err := tablekit.OpenTable[tablekit.Entity](acct, copiesName, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: enc.Keys, Properties: []string{"SSN"}}})
	if err != nil {
		t.Fatal(err)
	}
	inter, err := index.NewCrossPartition(secret.AsEntities(), []index.Index[tablekit.Entity]{{Name: "email", Key: property("Email"), Table: copies}}, nil)
	if err != nil {
		t.Fatalf("NewCrossPartition on an encrypted table: %v", err)
	}
	if _, err := inter.Upsert(ctx, bob); err != nil {
		t.Fatal(err)
	}
	got, err := inter.Find(ctx, "Sales", "email", "bob@contoso.com")
	if err != nil || got.Properties["SSN"] != "987-65-4321" || got.ETag == "" {
		t.Fatalf("CrossPartition.Find = %+v, %v; want the decrypted SSN and an ETag", got, err)
	}
	n := 0
	for e, err := range plain.Query(ctx, tablekit.Filter{}, &tablekit.QueryOptions{AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if _, ok := e.Properties["SSN"].([]byte); !ok {
			t.Errorf("copy %s/%s holds SSN %T, want ciphertext", e.PartitionKey, e.RowKey, e.Properties["SSN"])
		}
	}
	if n != 1 {
		t.Errorf("%d copies, want 1", n)
	}
	bySSNInter, err := index.NewCrossPartition(secret.AsEntities(), []index.Index[tablekit.Entity]{{Name: "ssn", Key: property("SSN"), Table: copies}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bySSNInter.Upsert(ctx, bob); !errors.As(err, &ve) || ve.Op != "index.CrossPartition.Upsert" || ve.Property != "SSN" {
		t.Errorf("a CrossPartition index on an encrypted property: %v, want a refusal naming SSN", err)
	}
}
