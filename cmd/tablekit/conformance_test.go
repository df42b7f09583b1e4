package main_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/azurite"
)

// listTables lists the tables of the account cs names.
func listTables(t *testing.T, cs string) []string {
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

// TestConformanceCommand runs "tablekit conformance" against Azurite, the
// front in Azure mode and the front in Cosmos mode, and with an account
// SAS URL: one line per behaviour, the cost line, nothing left behind,
// exit 4 when a behaviour differs. With CONFORMANCE_OUT set to a folder,
// the outputs are written there (FIDELITY.md quotes them).
func TestConformanceCommand(t *testing.T) {
	bin := build(t)
	srv := azurite.StartForTest(t, nil)
	front := func(o *azurite.FrontOptions) string {
		f, err := azurite.NewFront(t.Context(), srv.Direct(), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f.ConnectionString()
	}
	azureFront := front(&azurite.FrontOptions{})
	azureEndpoint := ""
	for _, kv := range strings.Split(azureFront, ";") {
		if v, ok := strings.CutPrefix(kv, "TableEndpoint="); ok {
			azureEndpoint = v
		}
	}
	for _, c := range []struct {
		name    string
		cs      string // the account, listed before and after
		args    []string
		differs []string // the behaviours that differ
	}{
		{"azurite", srv.ConnectionString(), []string{"--connection-string", srv.ConnectionString()}, []string{
			"Edm.Int64 beyond int64", "transaction across partitions", "continuation", "SAS PartitionKey/RowKey range",
			"error codes", "entity over 1 MiB", "table name in another case"}},
		{"front", azureFront, []string{"--connection-string", azureFront}, []string{"table name in another case"}},
		{"front-cosmos", "", []string{"--cosmos"}, []string{"property over 64 KiB"}},
		{"front-sas", azureFront, []string{"--sas-url", accountSAS(t, azureEndpoint)}, []string{"table name in another case"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := c.cs
			if c.name == "front-cosmos" {
				cs = front(&azurite.FrontOptions{Cosmos: true, Seed: 1})
				c.args = append(c.args, "--connection-string", cs)
			}
			before := listTables(t, cs)
			cl := &cli{t: t, bin: bin, cs: "", dir: t.TempDir()}
			out, errOut, code := cl.run(append([]string{"conformance"}, c.args...)...)
			t.Logf("tablekit conformance (%s):\n%s%s", c.name, out, errOut)
			if dir := os.Getenv("CONFORMANCE_OUT"); dir != "" {
				if err := os.WriteFile(filepath.Join(dir, "cli-"+c.name+".txt"), []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if code != 4 {
				t.Fatalf("exit %d, want 4 (some behaviours differ)", code)
			}
			if strings.Contains(out+errOut, "sig=") || strings.Contains(out+errOut, azurite.AccountKey) {
				t.Fatal("the output shows a secret")
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 17 || !strings.HasPrefix(lines[0], "tablekit conformance: ") || !strings.HasPrefix(lines[16], "cost: ") || !strings.Contains(lines[16], " deleted") {
				t.Fatalf("%d lines:\n%s", len(lines), out)
			}
			var differs []string
			for _, l := range lines[1:16] {
				if name, _, ok := strings.Cut(l, " differs"); ok {
					differs = append(differs, strings.TrimSpace(name))
				}
			}
			if !slices.Equal(differs, c.differs) {
				t.Errorf("differs in %q, want %q", differs, c.differs)
			}
			if c.name == "front-sas" && !strings.Contains(out, "SAS PartitionKey/RowKey range") || c.name == "front-sas" && !strings.Contains(out, "not applicable: signing a SAS needs the account key") {
				t.Errorf("the SAS probe with a SAS URL:\n%s", out)
			}
			if after := listTables(t, cs); !slices.Equal(before, after) {
				t.Errorf("tables before %v, after %v", before, after)
			}
		})
	}
	t.Run("usage", func(t *testing.T) {
		cl := &cli{t: t, bin: bin, dir: t.TempDir()}
		if _, _, code := cl.run("conformance", "--connection-string", azureFront, "--sas-url", "https://a.table.core.windows.net/?sig=x"); code != 2 {
			t.Errorf("both accounts: exit %d, want 2", code)
		}
		// A table SAS URL cannot be right: a usage error, nothing sent.
		if _, errOut, code := cl.run("conformance", "--sas-url", "https://a.table.core.windows.net/t1?sv=1&sig=x"); code != 2 || !strings.Contains(errOut, "account SAS URL") {
			t.Errorf("a table SAS URL: exit %d, %s", code, errOut)
		}
	})
}

// accountSAS returns an account SAS URL of the front's table endpoint
// that may create and delete tables and entities, over http too.
func accountSAS(t *testing.T, endpoint string) string {
	t.Helper()
	cred, err := aztables.NewSharedKeyCredential(azurite.AccountName, azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	q, err := aztables.AccountSASSignatureValues{
		Protocol: aztables.SASProtocolHTTPSandHTTP, StartTime: time.Now().Add(-5 * time.Minute).UTC(), ExpiryTime: time.Now().Add(time.Hour).UTC(),
		Permissions:   aztables.AccountSASPermissions{Read: true, Write: true, Delete: true, List: true, Add: true, Create: true, Update: true}.String(),
		Services:      "t",
		ResourceTypes: aztables.AccountSASResourceTypes{Service: true, Container: true, Object: true}.String(),
	}.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	return endpoint + "/?" + q.Encode()
}
