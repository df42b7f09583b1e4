package tablekit_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// TestHotPartitionWarning: the Governor tracks each partition's write rate,
// from every writer of the Accounts that share it, and warns once when one
// nears its target (scaled down here so that 120 entities reach it).
func TestHotPartitionWarning(t *testing.T) {
	var logs bytes.Buffer
	gov := tablekit.NewGovernor(&tablekit.GovernorOptions{
		Logger:       slog.New(slog.NewTextHandler(&logs, nil)),
		HotPartition: 100.0 / 2000, // warn at 100 entities/s
	})
	// Two Accounts, as two parts of a program would have, share the
	// Governor: their writes add up.
	acct := testenv.Account(t, &tablekit.Options{Governor: gov})
	other := testenv.Account(t, &tablekit.Options{Governor: gov})
	name := testenv.CreateTable(t, acct)
	tbl, err := tablekit.OpenTable[wireItem](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	tbl2, err := tablekit.OpenTable[wireItem](other, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var acts, acts2 []tablekit.Action[wireItem]
	for i := range 60 {
		acts = append(acts, tablekit.UpsertAction(wireItem{PK: "hot", RK: fmt.Sprint(i)}))
		acts2 = append(acts2, tablekit.UpsertAction(wireItem{PK: "hot", RK: fmt.Sprint(100 + i)}))
	}
	if _, err := tbl.Transaction(ctx, acts...); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); strings.Contains(out, "hot partition") {
		t.Fatalf("60 entities were called hot: %q", out)
	}
	if _, err := tbl2.Transaction(ctx, acts2...); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Transaction(ctx, acts...); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Merge(ctx, wireItem{PK: "cold", RK: "1"}, ""); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if strings.Count(out, "hot partition") != 1 || !strings.Contains(out, "partition=hot") || !strings.Contains(out, "table="+tbl.Name()) {
		t.Errorf("want one warning naming table and partition, got %q", out)
	}
	if strings.Contains(out, "partition=cold") {
		t.Errorf("a cold partition was reported: %q", out)
	}
}
