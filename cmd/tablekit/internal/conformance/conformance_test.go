package conformance_test

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/cmd/tablekit/internal/conformance"
)

// tableNames lists the tables of the account cs names.
func tableNames(t *testing.T, cs string) []string {
	t.Helper()
	svc, err := aztables.NewServiceClientFromConnectionString(cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for pager := svc.NewListTablesPager(nil); pager.More(); {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page.Tables {
			names = append(names, *p.Name)
		}
	}
	slices.Sort(names)
	return names
}

// outcomes are the outcomes expected of each endpoint, by behaviour; a
// behaviour not listed must be as expected.
var outcomes = map[string]map[string]conformance.Outcome{
	// Azurite is lenient where Azure is strict, and shapes its answers
	// its own way.
	"azurite": {
		"Edm.Int64 beyond int64":        conformance.Differs,
		"transaction across partitions": conformance.Differs,
		"continuation":                  conformance.Differs,
		"SAS PartitionKey/RowKey range": conformance.Differs,
		"error codes":                   conformance.Differs,
		"entity over 1 MiB":             conformance.Differs,
		"table name in another case":    conformance.Differs,
	},
	// The front answers as Table storage but for the table names'
	// case, which it cannot change (the path is signed).
	"front": {
		"table name in another case": conformance.Differs,
	},
	// The front in Cosmos mode answers as Cosmos DB; the order probe does
	// not apply (no order is promised), and Azurite underneath refuses a
	// property over 64 KiB, which Cosmos DB stores.
	"front-cosmos": {
		"result order":         conformance.NotApplicable,
		"property over 64 KiB": conformance.Differs,
	},
}

// TestConformance runs the probes against Azurite, the front in Azure
// mode and the front in Cosmos mode: each run ends, stays within its
// bound, leaves nothing behind, and finds what FIDELITY.md says. With
// CONFORMANCE_OUT set to a folder, the three reports are written there
// (FIDELITY.md quotes them).
func TestConformance(t *testing.T) {
	srv := azurite.StartForTest(t, nil)
	for _, c := range []struct {
		name  string
		front *azurite.FrontOptions
	}{
		{"azurite", nil},
		{"front", &azurite.FrontOptions{}},
		{"front-cosmos", &azurite.FrontOptions{Cosmos: true, Seed: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := srv.ConnectionString()
			if c.front != nil {
				f, err := azurite.NewFront(t.Context(), srv.Direct(), c.front)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
				cs = f.ConnectionString()
			}
			before := tableNames(t, cs)
			var seen []string
			rep, err := conformance.Run(t.Context(), cs, &conformance.Options{
				Cosmos:   c.front != nil && c.front.Cosmos,
				OnResult: func(r conformance.Result) { seen = append(seen, r.Behaviour) },
			})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			rep.WriteTo(&out)
			t.Logf("tablekit conformance against %s:\n%s", c.name, out.String())
			if dir := os.Getenv("CONFORMANCE_OUT"); dir != "" {
				if err := os.WriteFile(dir+"/"+c.name+".txt", out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if !rep.Deleted || rep.Requests == 0 || rep.Requests > rep.Bound || rep.Bound != conformance.Bound() {
				t.Errorf("deleted %v, %d requests, bound %d (Bound() %d)", rep.Deleted, rep.Requests, rep.Bound, conformance.Bound())
			}
			if after := tableNames(t, cs); !slices.Equal(before, after) {
				t.Errorf("tables before %v, after %v", before, after)
			}
			if len(rep.Results) != len(seen) || len(seen) < 15 {
				t.Errorf("%d results, %d reported as they came", len(rep.Results), len(seen))
			}
			for _, r := range rep.Results {
				want, listed := outcomes[c.name][r.Behaviour]
				if !listed {
					want = conformance.AsExpected
				}
				if r.Outcome != want {
					t.Errorf("%s: %s, want %s", r.Behaviour, r, want)
				}
				if r.Outcome != conformance.AsExpected && r.Detail == "" {
					t.Errorf("%s: %s without a word of why", r.Behaviour, r.Outcome)
				}
			}
			if !strings.Contains(out.String(), "cost: ") {
				t.Errorf("the report has no cost line:\n%s", out.String())
			}
		})
	}
}

// TestRunRefusesTableSAS: a table SAS cannot create the probe's table.
func TestRunRefusesTableSAS(t *testing.T) {
	_, err := conformance.Run(context.Background(), "https://acct.table.core.windows.net/mytable?sv=2019-02-02&sig=x", nil)
	if err == nil || !strings.Contains(err.Error(), "account SAS URL") {
		t.Fatalf("error %v", err)
	}
}
