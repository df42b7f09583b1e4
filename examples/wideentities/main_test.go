package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results the pattern promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"Insert of meter17/2025, Unit and 365 daily readings (366 properties), in one entity group transaction: 1 transaction (Transaction=1)",
		`physical entity RowKey "2025!000": 252 properties, Wide's bookkeeping included: true`, // R001..R250, _wide, _wideParts
		`physical entity RowKey "2025!001": 117 properties, Wide's bookkeeping included: true`, // R251..R365, Unit, _wide
		"Get reassembled 365 readings, unit kWh: 1 transaction (QueryEntities=1)",
		"Merge of R001 (held by part 0) read the parts and rewrote part 0: 2 transactions (QueryEntities=1 Transaction=1)",
		"Modify of R300 (held by part 1): now 25, rewrote parts 0 and 1: 2 transactions (QueryEntities=1 Transaction=1)",
		"Update conditional on the version Modify returned: 2 transactions (QueryEntities=1 Transaction=1)",
		"Delete of that version removed every part in one transaction: 2 transactions (QueryEntities=1 Transaction=1)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}

// TestWritesAndRefusals: a write rewrites part 0 and the parts whose
// properties change, no others; an Update with a version it replaced is
// refused and writes nothing; Delete leaves no part; a logical entity
// more than one transaction can hold is refused before anything is sent.
func TestWritesAndRefusals(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tbl := testenv.OpenTable[Readings](t, acct, nil)
	w, err := patterns.NewWide(tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	etags := func() map[string]azcore.ETag {
		m := map[string]azcore.ETag{}
		for e, err := range tbl.AsEntities().Query(ctx, tablekit.PartitionEq("meter17"), nil) {
			if err != nil {
				t.Fatal(err)
			}
			m[e.RowKey] = e.ETag
		}
		return m
	}
	rewritten := func(before, after map[string]azcore.ETag) []string {
		var keys []string
		for k, e := range after {
			if before[k] != e {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		return keys
	}
	y := Readings{Meter: "meter17", Period: "2025", Unit: "kWh", Values: map[string]int64{}}
	for d := 1; d <= 365; d++ {
		y.Values[fmt.Sprintf("%03d", d)] = int64(d % 40)
	}
	if _, err := w.Insert(ctx, y); err != nil {
		t.Fatal(err)
	}
	v0 := etags()
	if _, err := w.Merge(ctx, Readings{Meter: "meter17", Period: "2025", Unit: "kWh", Values: map[string]int64{"001": -1}}, ""); err != nil {
		t.Fatal(err)
	}
	v1 := etags()
	if got := rewritten(v0, v1); !slices.Equal(got, []string{"2025!000"}) {
		t.Fatalf("a merge of part 0's reading rewrote %v", got)
	}
	stored, err := w.Modify(ctx, "meter17", "2025", func(v *Readings) error { v.Values["300"] += 5; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got := rewritten(v1, etags()); !slices.Equal(got, []string{"2025!000", "2025!001"}) {
		t.Fatalf("a change of part 1's reading rewrote %v", got)
	}
	stale := stored.ETag
	stored.Unit = "MWh"
	etag, err := w.Update(ctx, stored, stale)
	if err != nil {
		t.Fatal(err)
	}
	stored.Unit = "GWh"
	if _, err := w.Update(ctx, stored, stale); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Fatalf("an Update with a stale version: want ErrPreconditionFailed, got %v", err)
	}
	back, err := w.Get(ctx, "meter17", "2025")
	if err != nil || back.Unit != "MWh" || back.ETag != etag || back.Values["300"] != 25 || back.Values["001"] != -1 {
		t.Fatalf("after a refused Update: unit %s, version %s (Update returned %s), %v", back.Unit, back.ETag, etag, err)
	}
	if err := w.Delete(ctx, "meter17", "2025", back.ETag); err != nil {
		t.Fatal(err)
	}
	if left := etags(); len(left) != 0 {
		t.Fatalf("parts left after Delete: %v", left)
	}

	// Three years of hourly readings: 26,280 properties, more than 100
	// parts of 250 hold.
	hourly := Readings{Meter: "meter17", Period: "2023-2025-hourly", Unit: "kWh", Values: map[string]int64{}}
	for h := range 3 * 365 * 24 {
		hourly.Values[fmt.Sprintf("%05d", h)] = int64(h % 7)
	}
	before := acct.Meter().Snapshot()
	if _, err := w.Insert(ctx, hourly); !errors.Is(err, tablekit.ErrTooLarge) || !strings.HasPrefix(err.Error(), "patterns: Wide.Insert: ") {
		t.Fatalf("a 26,280-property entity: want ErrTooLarge, got %v", err)
	}
	if sent := acct.Meter().Snapshot().Sub(before).Total(); sent != 0 {
		t.Fatalf("a refused Insert sent %d requests", sent)
	}
}
