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
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
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
	if err != nil {
		fmt.Fprintln(os.Stderr, "wideentities:", err)
		os.Exit(1)
	}
	acct, err := tablekit.Open(conn, nil)
	if err == nil {
		err = run(ctx, acct, os.Stdout)
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "wideentities:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a table of its own, uses it, and deletes it.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	// The application's typed table; Wide stores through it (its
	// property-bag view, with its encryption and tracing, if any).
	tbl, err := tablekit.OpenTable[Readings](acct, "Meters"+rand.Text()[:8], nil)
	if err != nil {
		return err
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer tbl.DeleteTable(context.WithoutCancel(ctx))
	w, err := patterns.NewWide(tbl, nil)
	if err != nil {
		return err
	}
	meter := acct.Meter()
	fmt.Fprintf(out, "an entity holds at most %d custom properties; Wide splits a logical entity over up to %d physical entities of one partition, %d properties each\n",
		252, patterns.MaxWideParts, patterns.MaxWidePartProperties)

	year := Readings{Meter: "meter17", Period: "2025", Unit: "kWh", Values: map[string]int64{}}
	for d := 1; d <= 365; d++ {
		year.Values[fmt.Sprintf("%03d", d)] = int64(d % 40)
	}
	before := meter.Snapshot()
	if _, err := w.Insert(ctx, year); err != nil {
		return err
	}
	fmt.Fprintf(out, "Insert of meter17/2025, Unit and 365 daily readings (366 properties), in one entity group transaction: %s\n", cost(meter.Snapshot().Sub(before)))

	// The physical entities, as the table's property-bag view sees them.
	parts, err := physical(ctx, tbl, "meter17")
	if err != nil {
		return err
	}
	for _, p := range parts {
		fmt.Fprintf(out, "  physical entity RowKey %q: %d properties (%s) and Wide's bookkeeping (%s)\n", p.rowKey, len(p.props), summary(p.props), strings.Join(p.bookkeeping, ", "))
	}
	if len(parts) != 2 {
		return fmt.Errorf("stored as %d physical entities, want 2", len(parts))
	}
	fmt.Fprintln(out, "the parts' RowKeys are the compound key (RowKey, part number): one range query reads them all, one transaction writes them all, so readers never see half a write")

	before = meter.Snapshot()
	got, err := w.Get(ctx, "meter17", "2025")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Get reassembled %d readings, unit %s: %s\n", len(got.Values), got.Unit, cost(meter.Snapshot().Sub(before)))
	if len(got.Values) != 365 || got.Values["365"] != 365%40 || got.Unit != "kWh" {
		return fmt.Errorf("read back %d readings, R365 = %d, unit %q", len(got.Values), got.Values["365"], got.Unit)
	}

	// A write sends part 0 (it holds the version every write is
	// conditional on) and the parts whose properties change, no others.
	inPart0, inPart1 := parts[0].firstReading(), parts[1].firstReading()
	before = meter.Snapshot()
	if _, err := w.Merge(ctx, "meter17", "2025", map[string]any{w.PropertyName(inPart0): int64(-1)}); err != nil {
		return err
	}
	c := meter.Snapshot().Sub(before)
	after, err := physical(ctx, tbl, "meter17")
	if err != nil {
		return err
	}
	rewritten := changedParts(parts, after)
	fmt.Fprintf(out, "Merge of R%s (held by part 0) read the parts and rewrote %v: %s\n", inPart0, rewritten, cost(c))
	if !slices.Equal(rewritten, []string{parts[0].rowKey}) {
		return fmt.Errorf("a merge of part 0's reading rewrote %v", rewritten)
	}

	before = meter.Snapshot()
	stored, err := w.Modify(ctx, "meter17", "2025", func(v *Readings) error {
		v.Values[inPart1] += 5
		return nil
	})
	if err != nil {
		return err
	}
	c = meter.Snapshot().Sub(before)
	prev := after
	if after, err = physical(ctx, tbl, "meter17"); err != nil {
		return err
	}
	rewritten = changedParts(prev, after)
	fmt.Fprintf(out, "Modify of R%s (held by part 1): now %d, rewrote %v: %s\n", inPart1, stored.Values[inPart1], rewritten, cost(c))
	if len(rewritten) != 2 {
		return fmt.Errorf("a change of part 1's reading rewrote %v", rewritten)
	}

	// The version of a logical entity is part 0's ETag: Modify returned
	// the new one from the transaction's answer, without reading again.
	stale := stored.ETag
	stored.Unit = "MWh"
	before = meter.Snapshot()
	etag, err := w.Update(ctx, stored, stored.ETag)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Update conditional on the version Modify returned: %s\n", cost(meter.Snapshot().Sub(before)))
	stored.Unit = "GWh"
	if _, err := w.Update(ctx, stored, stale); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		return fmt.Errorf("an Update with a stale version: want ErrPreconditionFailed, got %v", err)
	}
	back, err := w.Get(ctx, "meter17", "2025")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the same Update with the version it replaced is refused (ErrPreconditionFailed) and writes nothing: Get reads unit %s, R%s = %d, version as Update returned it: %t\n",
		back.Unit, inPart1, back.Values[inPart1], back.ETag == etag)
	if back.Unit != "MWh" || back.ETag != etag {
		return fmt.Errorf("after a refused Update: unit %s, version %s (Update returned %s)", back.Unit, back.ETag, etag)
	}

	before = meter.Snapshot()
	if err := w.Delete(ctx, "meter17", "2025", back.ETag); err != nil {
		return err
	}
	c = meter.Snapshot().Sub(before)
	n, err := w.Parts(ctx, "meter17", "2025")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Delete of that version removed every part in one transaction: %s; %d parts left\n", cost(c), n)
	if n != 0 {
		return fmt.Errorf("%d parts left after Delete", n)
	}

	// Three years of hourly readings: 26,280 properties, more than 100
	// parts of 250 hold.
	hourly := Readings{Meter: "meter17", Period: "2023-2025-hourly", Unit: "kWh", Values: map[string]int64{}}
	for h := range 3 * 365 * 24 {
		hourly.Values[fmt.Sprintf("%05d", h)] = int64(h % 7)
	}
	before = meter.Snapshot()
	_, err = w.Insert(ctx, hourly)
	if !errors.Is(err, tablekit.ErrTooLarge) {
		return fmt.Errorf("a 26,280-property entity: want ErrTooLarge, got %v", err)
	}
	sent := meter.Snapshot().Sub(before).Total()
	fmt.Fprintf(out, "%d readings need more than one transaction can hold (%d entities, 4 MiB): refused with ErrTooLarge, %d transactions sent: %v\n", len(hourly.Values), patterns.MaxWideParts, sent, err)
	if sent != 0 {
		return fmt.Errorf("a refused Insert sent %d requests", sent)
	}
	return nil
}

// part is one physical entity of a logical entity.
type part struct {
	rowKey      string
	etag        azcore.ETag
	props       []string // the logical entity's properties it holds, sorted
	bookkeeping []string // Wide's own properties
}

// firstReading returns the key (without the R) of the first reading the
// part holds.
func (p part) firstReading() string {
	for _, name := range p.props {
		if key, ok := strings.CutPrefix(name, "R"); ok {
			return key
		}
	}
	return ""
}

// physical reads the physical entities of partition pk through the
// table's property-bag view: one query.
func physical(ctx context.Context, tbl *tablekit.Table[Readings], pk string) ([]part, error) {
	var parts []part
	for e, err := range tbl.AsEntities().Query(ctx, tablekit.PartitionEq(pk), nil) {
		if err != nil {
			return nil, err
		}
		p := part{rowKey: e.RowKey, etag: e.ETag}
		for name := range e.Properties {
			if name == patterns.WideStampProperty || name == patterns.WideManifestProperty {
				p.bookkeeping = append(p.bookkeeping, name)
			} else {
				p.props = append(p.props, name)
			}
		}
		slices.Sort(p.props)
		slices.Sort(p.bookkeeping)
		parts = append(parts, p)
	}
	return parts, nil
}

// changedParts returns the RowKeys of the parts whose ETag changed.
func changedParts(before, after []part) []string {
	var changed []string
	for _, a := range after {
		i := slices.IndexFunc(before, func(b part) bool { return b.rowKey == a.rowKey })
		if i < 0 || before[i].etag != a.etag {
			changed = append(changed, a.rowKey)
		}
	}
	return changed
}

// summary lists a sorted run of property names by its ends and what else
// it holds: "R001..R249, Unit".
func summary(props []string) string {
	var readings, other []string
	for _, name := range props {
		if strings.HasPrefix(name, "R") {
			readings = append(readings, name)
		} else {
			other = append(other, name)
		}
	}
	var s []string
	if len(readings) > 0 {
		s = append(s, readings[0]+".."+readings[len(readings)-1])
	}
	return strings.Join(append(s, other...), ", ")
}

// cost states what a step cost in storage transactions, by operation.
func cost(s tablekit.MeterSnapshot) string {
	var ops []string
	for _, c := range s.Counts() {
		ops = append(ops, fmt.Sprintf("%s=%d", c.Operation, c.Requests))
	}
	unit := "transactions"
	if s.Total() == 1 {
		unit = "transaction"
	}
	return fmt.Sprintf("%d %s (%s)", s.Total(), unit, strings.Join(ops, " "))
}
