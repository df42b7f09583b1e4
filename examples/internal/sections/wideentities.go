package sections

import (
	"context"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/patterns"
)

// WideEntities shows the wide entities pattern: a logical entity with more
// properties than one entity may have, split over physical entities of one
// partition and written in one entity group transaction.
func WideEntities() demo.Section {
	return demo.Section{
		Name:        "wideentities",
		Description: "wide entities: 600 properties over 3 physical entities, one transaction per write, one query per read",
		Run:         runWideEntities,
	}
}

// weYear is a typed wide entity: a meter's reading for every day of a year.
type weYear struct {
	Meter string           `table:",pk"`
	Year  string           `table:",rk"`
	Unit  string           `table:"Unit"`
	Days  map[string]int64 `table:"-" wide:"D"` // D001 ... D365
	ETag  azcore.ETag      `table:",etag"`      // the version: part 0's ETag
}

// patEntityTable creates a table of property bags for a section and
// registers its deletion.
func patEntityTable(ctx context.Context, env *demo.Env, base string) (*tablekit.Table[tablekit.Entity], error) {
	return patTable[tablekit.Entity](ctx, env, base)
}

// patTable creates a table of T for a section and registers its deletion:
// the application's typed table, which the patterns take as it is.
func patTable[T any](ctx context.Context, env *demo.Env, base string) (*tablekit.Table[T], error) {
	tbl, err := tablekit.OpenTable[T](env.Account, env.TableName(base), nil)
	if err != nil {
		return nil, err
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		return nil, err
	}
	env.Defer(func(ctx context.Context) error { return tbl.DeleteTable(ctx) })
	return tbl, nil
}

func runWideEntities(ctx context.Context, env *demo.Env) error {
	tbl, err := patEntityTable(ctx, env, "WideEntities")
	if err != nil {
		return err
	}
	meter := env.Account.Meter()
	w, err := patterns.NewWide[tablekit.Entity](tbl, nil)
	if err != nil {
		return err
	}
	env.Say("an entity may have at most 252 custom properties; a logical entity with more is split over several physical entities of one partition")

	e := tablekit.Entity{PartitionKey: "stats", RowKey: "emp000223", Properties: map[string]any{}}
	for i := range 600 {
		e.Properties[fmt.Sprintf("Msg%03d", i)] = int64(i)
	}
	before := meter.Snapshot()
	if _, err := w.Upsert(ctx, e); err != nil {
		return err
	}
	env.Say("Upsert of a 600-property entity (read the parts, write them in one transaction): %v", meter.Snapshot().Sub(before))
	n := 0
	for p, err := range tbl.Query(ctx, tablekit.PartitionEq("stats"), &tablekit.QueryOptions{Select: []string{"Msg000"}}) {
		if err != nil {
			return err
		}
		env.Say("  physical entity RowKey %q", p.RowKey)
		n++
	}
	if n != 3 {
		return fmt.Errorf("stored as %d physical entities, want 3", n)
	}
	env.Say("the parts' RowKeys are the compound key (RowKey, part number), so one range query reads them all, and one transaction writes them all: readers never see half an update")

	before = meter.Snapshot()
	got, err := w.Get(ctx, "stats", "emp000223")
	if err != nil {
		return err
	}
	env.Say("Get reassembled %d properties: %v", len(got.Properties), meter.Snapshot().Sub(before))
	if len(got.Properties) != 600 || got.Properties["Msg599"] != int64(599) {
		return fmt.Errorf("read back %d properties", len(got.Properties))
	}

	before = meter.Snapshot()
	if _, err := w.Merge(ctx, "stats", "emp000223", map[string]any{"Msg400": int64(-1)}); err != nil {
		return err
	}
	env.Say("Merge of one property reads the parts and rewrites the one holding it and part 0, which holds the version every write is conditional on: %v", meter.Snapshot().Sub(before))

	// The application's typed table, as it has it: Wide stores through
	// its property-bag view.
	years, err := tablekit.OpenTable[weYear](env.Account, tbl.Name(), nil)
	if err != nil {
		return err
	}
	y, err := patterns.NewWide(years, nil)
	if err != nil {
		return err
	}
	year := weYear{Meter: "meter17", Year: "2025", Unit: "kWh", Days: map[string]int64{}}
	for d := 1; d <= 365; d++ {
		year.Days[fmt.Sprintf("%03d", d)] = int64(d % 40)
	}
	before = meter.Snapshot()
	if _, err := y.Insert(ctx, year); err != nil {
		return err
	}
	insertCost := meter.Snapshot().Sub(before)
	parts, err := y.Parts(ctx, "meter17", "2025")
	if err != nil {
		return err
	}
	env.Say("a typed struct with a map field tagged wide:\"D\" stores 365 daily readings as D001..D365: %d physical entities, inserted in %v", parts, insertCost)
	before = meter.Snapshot()
	stored, err := y.Modify(ctx, "meter17", "2025", func(v *weYear) error { v.Days["300"] += 5; return nil })
	if err != nil {
		return err
	}
	env.Say("Modify of day 300 (read, change, write the changed part and part 0): day 300 = %d, %v", stored.Days["300"], meter.Snapshot().Sub(before))
	env.Say("the version of a logical entity is part 0's ETag: Modify returned it from the transaction's answer, no read after the write")

	stale := stored.ETag
	stored.Unit = "MWh"
	before = meter.Snapshot()
	if _, err := y.Update(ctx, stored, stored.ETag); err != nil {
		return err
	}
	env.Say("Update conditional on that version: %v", meter.Snapshot().Sub(before))
	stored.Unit = "GWh"
	_, err = y.Update(ctx, stored, stale)
	if !errors.Is(err, tablekit.ErrPreconditionFailed) {
		return fmt.Errorf("an Update with a stale version: %v", err)
	}
	back, err := y.Get(ctx, "meter17", "2025")
	if err != nil {
		return err
	}
	env.Say("the same Update with the version it replaced is refused (ErrPreconditionFailed) and writes nothing: Get reads unit %s, day 300 = %d", back.Unit, back.Days["300"])
	if back.Unit != "MWh" || back.ETag == stale {
		return fmt.Errorf("after a refused Update: unit %s", back.Unit)
	}

	huge := tablekit.Entity{PartitionKey: "stats", RowKey: "huge", Properties: map[string]any{}}
	for i := range 30000 {
		huge.Properties[fmt.Sprintf("N%05d", i)] = int32(i)
	}
	_, err = w.Insert(ctx, huge)
	if !errors.Is(err, tablekit.ErrTooLarge) {
		return fmt.Errorf("a 30,000-property entity: %v", err)
	}
	env.Say("past what one transaction can hold (100 entities, 4 MiB), nothing is sent: %v", err)
	return nil
}
