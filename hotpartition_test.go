package tablekit_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testenv"
)

// TestHotPartitionWarning: the Meter tracks each partition's write rate and
// the Account warns, once, when one nears its target (scaled down here so
// that one transaction of 100 entities reaches it).
func TestHotPartitionWarning(t *testing.T) {
	var logs bytes.Buffer
	acct := testenv.Account(t, &tablekit.Options{HotPartition: tablekit.HotPartitionWarning{
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
		Fraction: 100.0 / tablekit.PartitionTarget, // warn at 100 entities/s
	}})
	tbl, err := tablekit.OpenTable[wireItem](acct, testenv.CreateTable(t, acct), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var acts []tablekit.Action[wireItem]
	for i := range 100 {
		acts = append(acts, tablekit.UpsertAction(wireItem{PK: "hot", RK: fmt.Sprint(i)}))
	}
	if _, err := tbl.Transaction(ctx, acts...); err != nil {
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
	hot := acct.Meter().HotPartitions(1)
	if len(hot) == 0 || hot[0].PartitionKey != "hot" || hot[0].Table != tbl.Name() {
		t.Errorf("HotPartitions = %+v, want partition hot first", hot)
	}
}
