// Command wideentities shows the wide entities pattern: a logical entity
// with more properties than one entity may have (252), a Go struct whose
// map field holds a year of daily readings, stored as several physical
// entities of one partition, written in one entity group transaction and
// read with one range query.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/wideentities
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/patterns"
)

// Readings is a meter's readings over a period, one property per reading:
// the map's entries are stored as properties R + key (R001 ... R365 for a
// year of daily readings), more than one entity may have. patterns.Wide
// spreads them over as many physical entities as they need.
type Readings struct {
	Meter  string           `table:",pk"`
	Period string           `table:",rk"`
	Unit   string           `table:"Unit"`
	Values map[string]int64 `table:"-" wide:"R"`
	ETag   azcore.ETag      `table:",etag"` // the version: part 0's ETag
}

func main() {
	ctx := context.Background()
	conn, stop, err := azurite.EnvOrStart(ctx, nil)
	if err == nil {
		var acct *tablekit.Account
		if acct, err = tablekit.Open(conn, nil); err == nil {
			err = run(ctx, acct, os.Stdout)
			fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
		}
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wideentities:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a table of its own, uses it, and deletes it.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	tbl, err := tablekit.OpenTable[Readings](acct, "Meters"+rand.Text()[:8], nil)
	if err != nil {
		return err
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer tbl.DeleteTable(context.WithoutCancel(ctx))
	// The application's typed table; Wide stores through it (its
	// property-bag view, with its encryption, if any).
	w, err := patterns.NewWide(tbl, nil)
	if err != nil {
		return err
	}
	meter := acct.Meter()
	fmt.Fprintln(out, "an entity holds at most 252 custom properties; Wide splits a logical entity over up to 100 physical entities of one partition, 250 properties each")
	y := Readings{Meter: "meter17", Period: "2025", Unit: "kWh", Values: map[string]int64{}}
	for d := 1; d <= 365; d++ {
		y.Values[fmt.Sprintf("%03d", d)] = int64(d % 40)
	}
	before := meter.Snapshot()
	if _, err := w.Insert(ctx, y); err != nil {
		return err
	}
	fmt.Fprintf(out, "Insert of meter17/2025, Unit and 365 daily readings (366 properties), in one entity group transaction: %s\n", cost(meter.Snapshot().Sub(before)))

	// The physical entities, as the table's property-bag view sees them:
	// RowKeys (RowKey, part number), so that one range query reads them
	// all. Wide keeps its bookkeeping in _wide and _wideParts.
	for e, err := range tbl.AsEntities().Query(ctx, tablekit.PartitionEq("meter17"), nil) {
		if err != nil {
			return err
		}
		_, stamp := e.Properties["_wide"]
		fmt.Fprintf(out, "  physical entity RowKey %q: %d properties, Wide's bookkeeping included: %t\n", e.RowKey, len(e.Properties), stamp)
	}

	before = meter.Snapshot()
	got, err := w.Get(ctx, "meter17", "2025")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Get reassembled %d readings, unit %s: %s\n", len(got.Values), got.Unit, cost(meter.Snapshot().Sub(before)))

	// A write sends part 0 (it holds the version every write is
	// conditional on) and the parts whose properties change, no others.
	// Merge writes the properties v has (Unit, one reading) and keeps the
	// others; etag "" means insert or merge.
	before = meter.Snapshot()
	change := Readings{Meter: "meter17", Period: "2025", Unit: "kWh", Values: map[string]int64{"001": -1}}
	if _, err := w.Merge(ctx, change, ""); err != nil {
		return err
	}
	fmt.Fprintf(out, "Merge of R001 (held by part 0) read the parts and rewrote part 0: %s\n", cost(meter.Snapshot().Sub(before)))

	before = meter.Snapshot()
	stored, err := w.Modify(ctx, "meter17", "2025", func(v *Readings) error {
		v.Values["300"] += 5
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Modify of R300 (held by part 1): now %d, rewrote parts 0 and 1: %s\n", stored.Values["300"], cost(meter.Snapshot().Sub(before)))

	// The version of a logical entity is part 0's ETag: Modify returned
	// the new one from the transaction's answer, without reading again.
	// Update with it succeeds only if nobody wrote the entity since.
	stored.Unit = "MWh"
	before = meter.Snapshot()
	etag, err := w.Update(ctx, stored, stored.ETag)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Update conditional on the version Modify returned: %s\n", cost(meter.Snapshot().Sub(before)))

	before = meter.Snapshot()
	if err := w.Delete(ctx, "meter17", "2025", etag); err != nil {
		return err
	}
	fmt.Fprintf(out, "Delete of that version removed every part in one transaction: %s\n", cost(meter.Snapshot().Sub(before)))
	return nil
}

// cost states what a step cost in storage transactions, by operation.
func cost(s tablekit.MeterSnapshot) string {
	var ops []string
	for _, c := range s.Counts() {
		ops = append(ops, fmt.Sprintf("%s=%d", c.Operation, c.Requests))
	}
	return fmt.Sprintf("%d transaction%s (%s)", s.Total(), map[bool]string{true: "s"}[s.Total() != 1], strings.Join(ops, " "))
}
