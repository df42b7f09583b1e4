package index_test

import (
	"context"
	"slices"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/index"
)

// On Cosmos DB, whose query results are in no key order even within a
// partition (the front's Cosmos mode), index range lookups still return
// their entities in index order: the index entries are read whole and
// sorted.
func TestCosmosIndexRanges(t *testing.T) {
	ctx := context.Background()
	srv := azurite.StartForTest(t, &azurite.Options{Front: &azurite.FrontOptions{Cosmos: &azurite.CosmosOptions{Seed: 11}}})
	acct, err := tablekit.Open(srv.ConnectionString(), &tablekit.Options{Cosmos: true})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := tablekit.OpenTable[Employee](acct, "cosmosindex", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	ix, err := index.NewIntra(tbl, employeeIndexes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var emails []string
	for _, e := range staff() {
		if err := ix.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
		if e.Department == "Sales" {
			emails = append(emails, e.Email)
		}
	}
	slices.Sort(emails)
	if len(emails) < 5 {
		t.Fatalf("the test data has %d Sales employees; the test needs several", len(emails))
	}
	var got []string
	for e, err := range ix.Range(ctx, "Sales", "email", "", "") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Email)
	}
	if !slices.Equal(got, emails) {
		t.Errorf("Range over the email index on Cosmos DB: %q, want %q", got, emails)
	}
	got = got[:0]
	for e, err := range ix.Prefix(ctx, "Sales", "email", emails[0][:1]) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Email)
	}
	var want []string
	for _, e := range emails {
		if e[0] == emails[0][0] {
			want = append(want, e)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("Prefix %q on Cosmos DB: %q, want %q", emails[0][:1], got, want)
	}
}
