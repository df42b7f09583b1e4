package tablekit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/spantest"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func TestTablekitSpansParentTheSDKs(t *testing.T) {
	rec := &spantest.Recorder{}
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{TracingProvider: rec.Provider()}})
	name := tableNameOf(t, acct)
	tbl, err := tablekit.OpenTable[wireItem](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := tbl.Transaction(ctx, tablekit.InsertAction(wireItem{PK: "p", RK: "1"})); err != nil {
		t.Fatal(err)
	}
	items := make([]wireItem, 150)
	for i := range items {
		items[i] = wireItem{PK: fmt.Sprint("q", i%2), RK: fmt.Sprint(i)}
	}
	if _, err := tbl.BulkWriter(nil).Upsert(ctx, items); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(rec.Paths(), "\n")
	for _, want := range []string{
		"Table.Transaction > Tables.Transaction > HTTP POST",
		"BulkWriter.Write > BulkWriter.Chunk > Tables.Transaction > HTTP POST",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no span path %q in:\n%s", want, got)
		}
	}
	chunks := 0
	for _, s := range rec.Spans() {
		if !s.Ended() {
			t.Errorf("span %s not ended", s.Path())
		}
		if s.Name == "BulkWriter.Chunk" {
			chunks++
			if s.Attrs["tablekit.table"] != name || s.Attrs["tablekit.actions"] == nil {
				t.Errorf("chunk span attributes %v", s.Attrs)
			}
		}
	}
	if chunks != 2 { // 75 entities in each of two partitions: one chunk each
		t.Errorf("%d chunk spans, want 2", chunks)
	}
}
