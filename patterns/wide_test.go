package patterns_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/patterns"
)

// wideProps returns n properties P000.. of every EDM type.
func wideProps(n int) map[string]any {
	props := make(map[string]any, n)
	base := time.Date(2025, 3, 14, 15, 9, 26, 535897900, time.UTC)
	for i := range n {
		name := fmt.Sprintf("P%03d", i)
		switch i % 8 {
		case 0:
			props[name] = fmt.Sprintf("value %d with 'quotes' and ünïcode", i)
		case 1:
			props[name] = int32(i)
		case 2:
			props[name] = int64(i) << 40
		case 3:
			props[name] = float64(i) // a whole-number double stays a double
		case 4:
			props[name] = i%16 == 4
		case 5:
			props[name] = base.Add(time.Duration(i) * time.Hour)
		case 6:
			props[name] = tablekit.GUID{byte(i), byte(i >> 8), 1, 2, 3}
		case 7:
			props[name] = bytes.Repeat([]byte{byte(i)}, 1+i%50)
		}
	}
	return props
}

func equalProps(t *testing.T, got, want map[string]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d properties, want %d", len(got), len(want))
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Fatalf("property %s missing", name)
		}
		if wt, ok := w.(time.Time); ok {
			if gt, ok := g.(time.Time); !ok || !gt.Equal(wt) {
				t.Fatalf("property %s = %#v, want %v", name, g, wt)
			}
			continue
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("property %s = %#v (%T), want %#v (%T)", name, g, g, w, w)
		}
	}
}

// etags returns the ETag of every physical entity by RowKey.
func etags(t *testing.T, ents []tablekit.Entity) map[string]string {
	m := map[string]string{}
	for _, e := range ents {
		m[e.RowKey] = string(e.ETag)
	}
	return m
}

func TestWide600Properties(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	w, err := patterns.NewWide[tablekit.Entity](tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := wideProps(600)
	e := tablekit.Entity{PartitionKey: "meters", RowKey: "m17", Properties: want}

	before := acct.Meter().Snapshot()
	if _, err := w.Upsert(ctx, e); err != nil {
		t.Fatal(err)
	}
	cost := acct.Meter().Snapshot().Sub(before)
	if got := cost.Count("table", "Transaction"); got != 1 || cost.Total() != 2 {
		t.Fatalf("Upsert cost %v; want one read and one transaction", cost)
	}

	phys := rawEntities(t, ctx, tbl, tablekit.PartitionEq("meters"))
	if len(phys) != 3 {
		t.Fatalf("stored as %d physical entities, want 3", len(phys))
	}
	for i, p := range phys {
		want, _ := patterns.WidePartKey("m17", i)
		if p.RowKey != want {
			t.Fatalf("part %d has RowKey %q, want %q", i, p.RowKey, want)
		}
		if len(p.Properties) > limits.CustomProperties {
			t.Fatalf("part %d has %d properties", i, len(p.Properties))
		}
	}

	before = acct.Meter().Snapshot()
	got, err := w.Get(ctx, "meters", "m17")
	if err != nil {
		t.Fatal(err)
	}
	if cost := acct.Meter().Snapshot().Sub(before); cost.Total() != 1 || cost.Count("table", "QueryEntities") != 1 {
		t.Fatalf("Get cost %v; want one range query", cost)
	}
	if got.PartitionKey != "meters" || got.RowKey != "m17" {
		t.Fatalf("keys %q/%q", got.PartitionKey, got.RowKey)
	}
	equalProps(t, got.Properties, want)

	// Change one property: only its physical entity is rewritten, and
	// part 0, which holds the logical entity's version.
	before = acct.Meter().Snapshot()
	if _, err := w.Merge(ctx, tablekit.Entity{PartitionKey: "meters", RowKey: "m17", Properties: map[string]any{"P300": "changed"}}, ""); err != nil {
		t.Fatal(err)
	}
	cost = acct.Meter().Snapshot().Sub(before)
	if cost.Count("table", "Transaction") != 1 {
		t.Fatalf("Merge cost %v", cost)
	}
	after := rawEntities(t, ctx, tbl, tablekit.PartitionEq("meters"))
	old, now := etags(t, phys), etags(t, after)
	changed := 0
	part0, _ := patterns.WidePartKey("m17", 0)
	for rk, tag := range now {
		if old[rk] != tag {
			changed++
			holder := after[slicesIndex(after, rk)]
			if _, ok := holder.Properties["P300"]; !ok && rk != part0 {
				t.Fatalf("part %s changed but does not hold P300", rk)
			}
		}
	}
	if changed != 2 || old[part0] == now[part0] {
		t.Fatalf("%d physical entities changed, want 2: part 0 and the holder of P300", changed)
	}
	want["P300"] = "changed"
	got, err = w.Get(ctx, "meters", "m17")
	if err != nil {
		t.Fatal(err)
	}
	equalProps(t, got.Properties, want)

	// Merging the same value again writes nothing.
	before = acct.Meter().Snapshot()
	if _, err := w.Merge(ctx, tablekit.Entity{PartitionKey: "meters", RowKey: "m17", Properties: map[string]any{"P300": "changed", "P001": int32(1)}}, ""); err != nil {
		t.Fatal(err)
	}
	if cost := acct.Meter().Snapshot().Sub(before); cost.Count("table", "Transaction") != 0 {
		t.Fatalf("an unchanged merge wrote: %v", cost)
	}

	// Removing properties and shrinking: Upsert with 100 properties leaves one part.
	small := make(map[string]any)
	for name, v := range want {
		if name < "P100" {
			small[name] = v
		}
	}
	if _, err := w.Upsert(ctx, tablekit.Entity{PartitionKey: "meters", RowKey: "m17", Properties: small}); err != nil {
		t.Fatal(err)
	}
	if n, err := w.Parts(ctx, "meters", "m17"); err != nil || n != 1 {
		t.Fatalf("after shrinking: %d parts, %v", n, err)
	}
	got, err = w.Get(ctx, "meters", "m17")
	if err != nil {
		t.Fatal(err)
	}
	equalProps(t, got.Properties, small)

	// Insert refuses an existing logical entity.
	if _, err := w.Insert(ctx, e); !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Fatalf("Insert over an existing entity: %v", err)
	}

	ok, err := w.DeleteIfExists(ctx, "meters", "m17")
	if err != nil || !ok {
		t.Fatalf("Delete: %v, %v", ok, err)
	}
	if _, err := w.Get(ctx, "meters", "m17"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if n := len(rawEntities(t, ctx, tbl, tablekit.Filter{})); n != 0 {
		t.Fatalf("%d physical entities left", n)
	}
}

func slicesIndex(ents []tablekit.Entity, rk string) int {
	for i, e := range ents {
		if e.RowKey == rk {
			return i
		}
	}
	return -1
}

func TestWideTooLarge(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	w, err := patterns.NewWide[tablekit.Entity](tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 80 values of 60 KiB: about 4.8 MB of data, 6.4 MB of request.
	props := map[string]any{}
	for i := range 80 {
		props[fmt.Sprintf("B%02d", i)] = bytes.Repeat([]byte{byte(i)}, 60*1024)
	}
	before := acct.Meter().Snapshot()
	_, err = w.Insert(ctx, tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: props})
	var ve *tablekit.ValidationError
	if !errors.Is(err, tablekit.ErrTooLarge) || !errors.As(err, &ve) || !strings.Contains(ve.Limit, "transaction") {
		t.Fatalf("got %v; want a ValidationError about one transaction", err)
	}
	if cost := acct.Meter().Snapshot().Sub(before); cost.Total() != 0 {
		t.Fatalf("sent %v", cost)
	}
	// 30,000 small properties need more than 100 parts.
	props = map[string]any{}
	for i := range 30000 {
		props[fmt.Sprintf("N%05d", i)] = int32(i)
	}
	_, err = w.Insert(ctx, tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: props})
	if !errors.Is(err, tablekit.ErrTooLarge) || !strings.Contains(err.Error(), "100") {
		t.Fatalf("got %v", err)
	}
}

// Year is a typed wide entity: a counter per day.
type Year struct {
	Meter string           `table:",pk"`
	Year  string           `table:",rk"`
	Unit  string           `table:"Unit"`
	Days  map[string]int64 `table:"-" wide:"D"`
}

func TestWideTypedMap(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	w, err := patterns.NewWide(typed[Year](t, tbl), nil)
	if err != nil {
		t.Fatal(err)
	}
	y := Year{Meter: "m1", Year: "2025", Unit: "kWh", Days: map[string]int64{}}
	for d := 1; d <= 365; d++ {
		y.Days[fmt.Sprintf("%03d", d)] = int64(d * 10)
	}
	if _, err := w.Insert(ctx, y); err != nil {
		t.Fatal(err)
	}
	got, err := w.Get(ctx, "m1", "2025")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, y) {
		t.Fatalf("got %+v", got)
	}
	if n, _ := w.Parts(ctx, "m1", "2025"); n != 2 {
		t.Fatalf("%d parts, want 2 (366 properties)", n)
	}

	before := rawEntities(t, ctx, tbl, tablekit.Filter{})
	if _, err := w.Modify(ctx, "m1", "2025", func(v *Year) error {
		v.Days["300"]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	after := rawEntities(t, ctx, tbl, tablekit.Filter{})
	if before[0].ETag == after[0].ETag || before[1].ETag == after[1].ETag {
		t.Fatal("Modify of day 300 should rewrite the second part and part 0 (the version)")
	}
	y.Days["300"]++
	if got, _ := w.Get(ctx, "m1", "2025"); !reflect.DeepEqual(got, y) {
		t.Fatalf("after Modify: %+v", got.Days["300"])
	}
	if _, err := w.Modify(ctx, "m1", "2025", func(v *Year) error {
		delete(v.Days, "001")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	delete(y.Days, "001")
	if got, _ := w.Get(ctx, "m1", "2025"); !reflect.DeepEqual(got, y) {
		t.Fatalf("after removing day 001: %d days", len(got.Days))
	}

	type noDash struct {
		PK   string         `table:",pk"`
		RK   string         `table:",rk"`
		Days map[string]int `wide:"D"`
	}
	if nd, err := tablekit.OpenTable[noDash](acct, tbl.Name(), nil); err == nil {
		if _, err := patterns.NewWide(nd, nil); err == nil {
			t.Fatal("a wide field without table:\"-\" was accepted")
		}
	}
}

func TestWideConcurrentMerges(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	w, err := patterns.NewWide[tablekit.Entity](typed[tablekit.Entity](t, tbl, &tablekit.TableOptions{Retry: tablekit.RetryPolicy{MaxAttempts: 50}}), &patterns.WideOptions{PropertiesPerPart: 10})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 5 {
				if _, err := w.Merge(ctx, tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{fmt.Sprintf("G%dI%d", g, i): int64(g*10 + i)}}, ""); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := w.Get(ctx, "p", "r")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	for g := range 8 {
		for i := range 5 {
			want[fmt.Sprintf("G%dI%d", g, i)] = int64(g*10 + i)
		}
	}
	if !maps.EqualFunc(got.Properties, want, func(a, b any) bool { return a == b }) {
		t.Fatalf("got %v", got.Properties)
	}
	if n, _ := w.Parts(ctx, "p", "r"); n != 4 {
		t.Fatalf("%d parts, want 4 (40 properties, 10 per part)", n)
	}
}

func TestWideConcurrentPlacement(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	w, err := patterns.NewWide[tablekit.Entity](typed[tablekit.Entity](t, tbl, &tablekit.TableOptions{Retry: tablekit.RetryPolicy{MaxAttempts: 50}}), &patterns.WideOptions{PropertiesPerPart: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Upsert(ctx, tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"A": 1, "B": 2, "C": 3, "D": 4}}); err != nil {
		t.Fatal(err)
	}
	// Writers add the same new properties at once: each must end up in
	// exactly one physical entity.
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			if _, err := w.Merge(ctx, tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"X": int64(g), "Y": int64(g), "Z": int64(g)}}, ""); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for _, e := range rawEntities(t, ctx, tbl, tablekit.Filter{}) {
		for name := range e.Properties {
			seen[name]++
		}
	}
	for _, name := range []string{"A", "B", "C", "D", "X", "Y", "Z"} {
		if seen[name] != 1 {
			t.Errorf("property %s stored %d times", name, seen[name])
		}
	}
	got, err := w.Get(ctx, "p", "r")
	if err != nil {
		t.Fatal(err)
	}
	if got.Properties["X"] != got.Properties["Y"] || got.Properties["Y"] != got.Properties["Z"] {
		t.Errorf("X, Y and Z come from different writers: %v", got.Properties)
	}
}
