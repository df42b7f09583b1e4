// Command compoundkey shows the compound key pattern: a RowKey made of
// (employee id, year), encoded so that string order is tuple order and one
// range query reads all of an employee's reviews.
//
// It runs against the account in AZURE_STORAGE_CONNECTION_STRING, or an
// Azurite it starts (Node.js 18+ needed; installed with npm on first use):
//
//	go run ./examples/compoundkey
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

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
	if err != nil {
		fmt.Fprintln(os.Stderr, "compoundkey:", err)
		os.Exit(1)
	}
	acct, err := tablekit.Open(conn, nil)
	if err == nil {
		err = run(ctx, acct, os.Stdout)
		fmt.Printf("cost: %d storage transactions (%v)\n", acct.Meter().Snapshot().Total(), acct.Meter().Snapshot())
	}
	stop()
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
	// zero-padded to a fixed width, so that their string order, the only
	// order the service knows, is numeric order.
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

	// The service keeps a partition in RowKey order: the employees come
	// back in numeric order (unpadded, "1000" would sort before "223").
	var employees []string
	for r, err := range tbl.Query(ctx, tablekit.PartitionEq("Sales"), nil) {
		if err != nil {
			return err
		}
		parts, err := keys.Split(r.Key)
		if err != nil {
			return err
		}
		if len(employees) == 0 || employees[len(employees)-1] != parts[0] {
			employees = append(employees, parts[0])
		}
	}
	if strings.Join(employees, " ") != "000223 000224 001000" {
		return fmt.Errorf("employees in key order: got %v, want [000223 000224 001000]", employees)
	}
	fmt.Fprintf(out, "the partition in RowKey order holds the employees in numeric order: %v\n", employees)

	// All of one employee's reviews: the tuple ("000223") and every tuple
	// extending it, as one RowKey range.
	lo, hi, err := keys.TupleRange("000223")
	if err != nil {
		return err
	}
	before := meter.Snapshot()
	years, err := yearsIn(ctx, tbl, lo, hi)
	if err != nil {
		return err
	}
	if strings.Join(years, " ") != "2010 2011 2012 2013 2014" {
		return fmt.Errorf("employee 000223's reviews: got years %v, want 2010 to 2014", years)
	}
	fmt.Fprintf(out, "range %q ≤ RowKey < %q read employee 000223's reviews for %v: %d transaction\n", lo, hi, years, meter.Snapshot().Sub(before).Total())

	// A range of years for one employee: from (000224, 2011) up to, not
	// including, (000224, 2014).
	lo, err = reviewKey(224, 2011)
	if err != nil {
		return err
	}
	hi, err = reviewKey(224, 2014)
	if err != nil {
		return err
	}
	before = meter.Snapshot()
	if years, err = yearsIn(ctx, tbl, lo, hi); err != nil {
		return err
	}
	if strings.Join(years, " ") != "2011 2012 2013" {
		return fmt.Errorf("employee 000224's reviews 2011–2013: got years %v", years)
	}
	fmt.Fprintf(out, "range %q ≤ RowKey < %q read employee 000224's reviews for %v: %d transaction\n", lo, hi, years, meter.Snapshot().Sub(before).Total())

	// Any text can be a component. The separator inside a component is
	// escaped, so ("a!b", "c") and ("a", "b!c") stay apart...
	k1, err := keys.Compound("a!b", "c")
	if err != nil {
		return err
	}
	k2, err := keys.Compound("a", "b!c")
	if err != nil {
		return err
	}
	p1, err := keys.Split(k1)
	if err != nil {
		return err
	}
	if k1 == k2 || !slices.Equal(p1, []string{"a!b", "c"}) {
		return fmt.Errorf("(\"a!b\", \"c\") is %q, (\"a\", \"b!c\") is %q, and %q splits into %q", k1, k2, k1, p1)
	}
	fmt.Fprintf(out, "a component holding the separator stays unambiguous: (\"a!b\", \"c\") is %q, (\"a\", \"b!c\") is %q\n", k1, k2)

	// ...and characters Azure refuses in keys ('/', '\', '#', '?', control
	// characters) are escaped too: an id from another system, "EMEA/17".
	raw := "EMEA/17!2014"
	if err := keys.Validate(raw); err == nil {
		return fmt.Errorf("keys.Validate accepted %q", raw)
	}
	k, err := keys.Compound("EMEA/17", "2014")
	if err != nil {
		return err
	}
	if _, err := tbl.Insert(ctx, Review{Department: "Sales", Key: k, Rating: 4}); err != nil {
		return err
	}
	lo, hi, err = keys.TupleRange("EMEA/17")
	if err != nil {
		return err
	}
	got, err := tbl.Top(ctx, tablekit.RowKeyRange("Sales", lo, hi), 10, nil)
	if err != nil {
		return err
	}
	if len(got) != 1 {
		return fmt.Errorf("reviews of EMEA/17: got %d, want 1", len(got))
	}
	parts, err := keys.Split(got[0].Key)
	if err != nil {
		return err
	}
	if !slices.Equal(parts, []string{"EMEA/17", "2014"}) {
		return fmt.Errorf("the key of EMEA/17's review splits into %q", parts)
	}
	fmt.Fprintf(out, "the raw key %q is refused (it holds '/'); the compound key %q is stored, found by its range and splits back into %q\n", raw, k, parts)
	return nil
}

// reviewKey is the RowKey of an employee's review of a year: the id as six
// digits, then the year as four.
func reviewKey(emp, year uint64) (string, error) {
	id, err := keys.UintN(emp, 6)
	if err != nil {
		return "", err
	}
	y, err := keys.UintN(year, 4)
	if err != nil {
		return "", err
	}
	return keys.Compound(id, y)
}

// yearsIn reads the reviews with lo ≤ RowKey < hi in one partition, with
// one range query, and returns their years.
func yearsIn(ctx context.Context, tbl *tablekit.Table[Review], lo, hi string) ([]string, error) {
	var years []string
	for r, err := range tbl.Query(ctx, tablekit.RowKeyRange("Sales", lo, hi), nil) {
		if err != nil {
			return nil, err
		}
		parts, err := keys.Split(r.Key)
		if err != nil {
			return nil, err
		}
		years = append(years, parts[1])
	}
	return years, nil
}
