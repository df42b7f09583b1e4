package tablekit_test

import (
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
)

// etagOf is the ETag ToEntity keeps of v.
func etagOf[T any](t *testing.T, table *tablekit.Table[T], v T) azcore.ETag {
	t.Helper()
	e, err := table.ToEntity(v)
	if err != nil {
		t.Fatal(err)
	}
	return e.ETag
}

// ETagOf (ToEntity's ETag) and Encrypted need no service: they read the value and
// the table's configuration.
func TestETagOfAndEncryptedProperties(t *testing.T) {
	acct, err := tablekit.Open("UseDevelopmentStorage=true", nil) // nothing is sent
	if err != nil {
		t.Fatal(err)
	}
	const tableName = "Patients"
	ring := newRing(t, "k1")
	pt, err := tablekit.OpenTable[patient](acct, tableName, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: ring}})
	if err != nil {
		t.Fatal(err)
	}
	if got := etagOf(t, pt, patient{ETag: "W/\"1\""}); got != "W/\"1\"" {
		t.Errorf("ETagOf(patient) = %q", got)
	}
	if got, want := pt.Encrypted(), []string{"Allergies", "Born", "SSN", "Scan", "Weight"}; !slices.Equal(got, want) {
		t.Errorf("EncryptedProperties = %v, want %v", got, want)
	}

	et, err := tablekit.OpenTable[tablekit.Entity](acct, tableName, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: ring, Properties: []string{"SSN"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := etagOf(t, et, tablekit.Entity{ETag: azcore.ETag("x")}); got != "x" {
		t.Errorf("ETagOf(Entity) = %q", got)
	}
	if got := et.Encrypted(); !slices.Equal(got, []string{"SSN"}) {
		t.Errorf("EncryptedProperties = %v, want [SSN]", got)
	}

	type plain struct {
		PK string `table:",pk"`
		RK string `table:",rk"`
	}
	p, err := tablekit.OpenTable[plain](acct, tableName, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := etagOf(t, p, plain{}); got != "" {
		t.Errorf("ETagOf without an etag field = %q", got)
	}
	if got := p.Encrypted(); got != nil {
		t.Errorf("EncryptedProperties without encryption = %v", got)
	}
}
