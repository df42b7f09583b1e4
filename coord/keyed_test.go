package coord_test

import (
	"math"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/coord"
	"github.com/tablekit/tablekit/keyring"
)

// TestFingerprints: a fingerprint covers verbs, keys, property names,
// types and values, whatever the order of a map; not ETags, nor the values
// of properties the table encrypts; and the kinds (a caller's text, actions,
// a pattern's write) never collide.
func TestFingerprints(t *testing.T) {
	acct, err := tablekit.Open("UseDevelopmentStorage=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := tablekit.OpenTable[tablekit.Entity](acct, "plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	ring := new(keyring.KeyRing)
	if err := ring.Add("k1", keyring.GenerateKey()); err != nil {
		t.Fatal(err)
	}
	secret, err := tablekit.OpenTable[tablekit.Entity](acct, "secret", &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: ring, Properties: []string{"Card"}}})
	if err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	ent := func(props map[string]any) tablekit.Entity {
		return tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: props}
	}
	base := map[string]any{"S": "x", "I": int64(1), "D": 1.5, "T": when, "B": true, "Card": "4111"}
	fp := func(tbl *tablekit.Table[tablekit.Entity], acts ...tablekit.Action[tablekit.Entity]) string {
		return coord.FingerprintActions(tbl, acts)
	}
	a := fp(plain, tablekit.UpsertAction(ent(base)))
	same := map[string]string{
		"the same":                 fp(plain, tablekit.UpsertAction(ent(map[string]any{"Card": "4111", "B": true, "T": when, "D": 1.5, "I": int64(1), "S": "x"}))),
		"another ETag":             fp(plain, tablekit.UpsertAction(tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: base, ETag: azcore.ETag("W/\"x\"")})),
		"the time in another zone": fp(plain, tablekit.UpsertAction(ent(map[string]any{"S": "x", "I": int64(1), "D": 1.5, "T": when.In(time.FixedZone("X", 3600)), "B": true, "Card": "4111"}))),
	}
	for what, got := range same {
		if got != a {
			t.Errorf("%s: another fingerprint", what)
		}
	}
	differ := map[string]string{
		"another verb":         fp(plain, tablekit.MergeAction(ent(base), "")),
		"another RowKey":       fp(plain, tablekit.UpsertAction(tablekit.Entity{PartitionKey: "p", RowKey: "r2", Properties: base})),
		"another value":        fp(plain, tablekit.UpsertAction(ent(map[string]any{"S": "y", "I": int64(1), "D": 1.5, "T": when, "B": true, "Card": "4111"}))),
		"another type":         fp(plain, tablekit.UpsertAction(ent(map[string]any{"S": "x", "I": int32(1), "D": 1.5, "T": when, "B": true, "Card": "4111"}))),
		"-0":                   fp(plain, tablekit.UpsertAction(ent(map[string]any{"S": "x", "I": int64(1), "D": math.Copysign(0, -1), "T": when, "B": true, "Card": "4111"}))),
		"a property less":      fp(plain, tablekit.UpsertAction(ent(map[string]any{"S": "x", "I": int64(1), "D": 1.5, "T": when, "B": true}))),
		"another card, plain":  fp(plain, tablekit.UpsertAction(ent(map[string]any{"S": "x", "I": int64(1), "D": 1.5, "T": when, "B": true, "Card": "5500"}))),
		"two actions":          fp(plain, tablekit.UpsertAction(ent(base)), tablekit.DeleteAction(tablekit.Entity{PartitionKey: "p", RowKey: "q"}, azcore.ETagAny)),
		"a caller's text":      coord.Fingerprint("x"),
		"a pattern's write":    coord.FingerprintWrite(plain, "patterns.Wide.Upsert", ent(base)),
		"another pattern's op": coord.FingerprintWrite(plain, "patterns.Wide.Merge", ent(base)),
	}
	seen := map[string]string{a: "the first"}
	for what, got := range differ {
		if other, ok := seen[got]; ok {
			t.Errorf("%s: the fingerprint of %s", what, other)
		}
		seen[got] = what
	}
	// An encrypted property's value is left out: the record holds nothing
	// derived from a secret.
	if fp(secret, tablekit.UpsertAction(ent(base))) != fp(secret, tablekit.UpsertAction(ent(map[string]any{"S": "x", "I": int64(1), "D": 1.5, "T": when, "B": true, "Card": "5500"}))) {
		t.Error("the fingerprint depends on an encrypted property's value")
	}
	x1, x2 := coord.Fingerprint("x"), coord.Fingerprint("x")
	if x1 != x2 || len(coord.Fingerprint("")) != 64 {
		t.Error("Fingerprint is not a stable hex SHA-256 of its text")
	}
}
