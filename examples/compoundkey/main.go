// Command compoundkey shows the compound key pattern: a RowKey made of
// (employee id, year), encoded so that string order is tuple order and one
// range query reads all of an employee's reviews.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed): go run ./examples/compoundkey
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azurite"
	"github.com/tablekit/tablekit/keys"
)

// Review is an employee's yearly review. The department is the
// PartitionKey; the RowKey is the compound key (employee id, year).
type Review struct {
	Department string `table:",pk"`
	Key        string `table:",rk"`
	Rating     int32
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
		fmt.Fprintln(os.Stderr, "compoundkey:", err)
		os.Exit(1)
	}
}

// run is the example: it creates a table of its own, uses it, and deletes it.
func run(ctx context.Context, acct *tablekit.Account, out io.Writer) error {
	tbl, err := tablekit.OpenTable[Review](acct, "Reviews"+rand.Text()[:8], nil)
	if err != nil {
		return err
	}
	if err := tbl.CreateIfNotExists(ctx); err != nil {
		return err
	}
	defer tbl.DeleteTable(context.WithoutCancel(ctx))
	meter := acct.Meter()

	// Five yearly reviews for each of three employees. The numbers are
	// zero-padded, so that string order (the service's) is numeric order.
	var rows []Review
	for _, emp := range []uint64{223, 224, 1000} {
		for year := uint64(2010); year <= 2014; year++ {
			k, err := reviewKey(emp, year)
			if err != nil {
				return err
			}
			rows = append(rows, Review{Department: "Sales", Key: k, Rating: int32(1 + (emp+year)%5)})
		}
	}
	if _, err := tbl.BulkWriter(nil).Upsert(ctx, rows); err != nil {
		return err
	}
	fmt.Fprintf(out, "stored %d reviews with RowKeys such as %q (zero-padded id, then year)\n", len(rows), rows[0].Key)

	// A partition is kept in RowKey order: the employees in numeric order.
	employees, err := componentIn(ctx, tbl, "", "", 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the partition in RowKey order holds the employees in numeric order: %v\n", employees)

	// All of one employee's reviews, ("000223") and its extensions: one range.
	lo, hi, err := keys.TupleRange("000223")
	if err != nil {
		return err
	}
	before := meter.Snapshot()
	years, err := componentIn(ctx, tbl, lo, hi, 1)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "range %q ≤ RowKey < %q read employee 000223's reviews for %v: %d transaction\n", lo, hi, years, meter.Snapshot().Sub(before).Total())

	// A range of years for one employee: (000224, 2011) ≤ key < (000224, 2014).
	lo, err = reviewKey(224, 2011)
	if err != nil {
		return err
	}
	if hi, err = reviewKey(224, 2014); err != nil {
		return err
	}
	before = meter.Snapshot()
	if years, err = componentIn(ctx, tbl, lo, hi, 1); err != nil {
		return err
	}
	fmt.Fprintf(out, "range %q ≤ RowKey < %q read employee 000224's reviews for %v: %d transaction\n", lo, hi, years, meter.Snapshot().Sub(before).Total())

	// Any text can be a component: the separator and the characters Azure
	// refuses in keys ('/', '\', '#', '?', control characters) are escaped,
	// so an id from another system, "EMEA/17", needs no care.
	k, err := keys.Compound("EMEA/17", "2014")
	if err != nil {
		return err
	}
	if _, err := tbl.Insert(ctx, Review{Department: "Sales", Key: k, Rating: 4}); err != nil {
		return err
	}
	parts, err := keys.Split(k)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the raw key \"EMEA/17!2014\" is refused (%v); the compound key %q is stored and splits back into %q\n", keys.Validate("EMEA/17!2014"), k, parts)
	return nil
}

// reviewKey is the RowKey of an employee's review of a year: the id as six
// digits, then the year as four.
func reviewKey(emp, year uint64) (string, error) {
	var b keys.Builder
	return b.AddUintN(emp, 6).AddUintN(year, 4).Key()
}

// componentIn reads the reviews with lo ≤ RowKey < hi (one range query, in
// RowKey order: KeyOrder sorts it on Cosmos DB for Table) and returns
// component i of their RowKeys, each value once in a row.
func componentIn(ctx context.Context, tbl *tablekit.Table[Review], lo, hi string, i int) ([]string, error) {
	var values []string
	for r, err := range tbl.Query(ctx, tablekit.RowKeyRange("Sales", lo, hi), &tablekit.QueryOptions{KeyOrder: true}) {
		if err != nil {
			return nil, err
		}
		parts, err := keys.Split(r.Key)
		if err != nil {
			return nil, err
		}
		if len(values) == 0 || values[len(values)-1] != parts[i] {
			values = append(values, parts[i])
		}
	}
	return values, nil
}
