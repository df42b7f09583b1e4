package sections

import (
	"context"
	"errors"
	"fmt"

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
}

// patEntityTable creates a table of property bags for a section and
// registers its deletion.
func patEntityTable(ctx context.Context, env *demo.Env, base string) (*tablekit.Table[tablekit.Entity], error) {
	tbl, err := tablekit.OpenTable[tablekit.Entity](env.Account, env.TableName(base), nil)
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
	if err := w.Put(ctx, e); err != nil {
		return err
	}
	env.Say("Put of a 600-property entity: %v", meter.Snapshot().Sub(before))
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
	if err := w.Merge(ctx, "stats", "emp000223", map[string]any{"Msg400": int64(-1)}); err != nil {
		return err
	}
	env.Say("Merge of one property reads the parts and rewrites the one holding it and part 0, which holds the version every write is conditional on: %v", meter.Snapshot().Sub(before))

	y, err := patterns.NewWide[weYear](tbl, nil)
	if err != nil {
		return err
	}
	year := weYear{Meter: "meter17", Year: "2025", Unit: "kWh", Days: map[string]int64{}}
	for d := 1; d <= 365; d++ {
		year.Days[fmt.Sprintf("%03d", d)] = int64(d % 40)
	}
	if err := y.Insert(ctx, year); err != nil {
		return err
	}
	parts, err := y.Parts(ctx, "meter17", "2025")
	if err != nil {
		return err
	}
	env.Say("a typed struct with a map field tagged wide:\"D\" stores 365 daily readings as D001..D365: %d physical entities", parts)
	before = meter.Snapshot()
	if err := y.Update(ctx, "meter17", "2025", func(v *weYear) error { v.Days["300"] += 5; return nil }); err != nil {
		return err
	}
	back, err := y.Get(ctx, "meter17", "2025")
	if err != nil {
		return err
	}
	env.Say("Update of day 300 (read, change, write the changed part and part 0) and Get: day 300 = %d, %v", back.Days["300"], meter.Snapshot().Sub(before))

	huge := tablekit.Entity{PartitionKey: "stats", RowKey: "huge", Properties: map[string]any{}}
	for i := range 30000 {
		huge.Properties[fmt.Sprintf("N%05d", i)] = int32(i)
	}
	err = w.Insert(ctx, huge)
	if !errors.Is(err, tablekit.ErrTooLarge) {
		return fmt.Errorf("a 30,000-property entity: %v", err)
	}
	env.Say("past what one transaction can hold (100 entities, 4 MiB), nothing is sent: %v", err)
	return nil
}
