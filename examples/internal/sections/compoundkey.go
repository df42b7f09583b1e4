package sections

import (
	"context"
	"fmt"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/keys"
)

// review is an employee's yearly review, keyed by a compound RowKey
// (employee id, year) as in the guide's compound key pattern.
type review struct {
	Department string `table:",pk"`
	Key        string `table:",rk"`
	Rating     int32
}

// CompoundKey shows the compound key pattern: several values in one RowKey
// whose string order is the order of the tuple, so one range query reads
// all of an employee's reviews.
func CompoundKey() demo.Section {
	return demo.Section{
		Name:        "compoundkey",
		Description: "compound RowKeys (employee id, year): order-preserving encoding and one range query per prefix",
		Run:         runCompoundKey,
	}
}

func runCompoundKey(ctx context.Context, env *demo.Env) error {
	tbl, err := openTable[review](ctx, env, "TourReviews")
	if err != nil {
		return err
	}
	var rows []review
	for _, emp := range []uint64{223, 224, 1000} {
		for year := uint64(2010); year <= 2014; year++ {
			id, _ := keys.UintN(emp, 6)
			y, _ := keys.UintN(year, 4)
			k, err := keys.Compound(id, y)
			if err != nil {
				return err
			}
			rows = append(rows, review{Department: "Sales", Key: k, Rating: int32(year - 2008)})
		}
	}
	if _, err := tbl.BulkWriter(nil).Upsert(ctx, rows); err != nil {
		return err
	}
	env.Say("stored 15 reviews with RowKeys such as %q (zero-padded id, then year)", rows[0].Key)

	lo, hi, err := keys.TupleRange("000223")
	if err != nil {
		return err
	}
	var got []string
	n, err := cost(env, func() error {
		for r, err := range tbl.Query(ctx, tablekit.RowKeyRange("Sales", lo, hi), nil) {
			if err != nil {
				return err
			}
			parts, err := keys.Split(r.Key)
			if err != nil {
				return err
			}
			got = append(got, parts[1])
		}
		return nil
	})
	if err != nil {
		return err
	}
	env.Say("range %q ≤ RowKey < %q read employee 000223's reviews for %v: %d transaction", lo, hi, got, n)
	if len(got) != 5 {
		return fmt.Errorf("read %d reviews, want 5", len(got))
	}
	// Any content is safe: the separator inside a component is escaped and
	// order still holds.
	odd, _ := keys.Compound("a!b", "c")
	env.Say("a component holding the separator stays unambiguous: (\"a!b\", \"c\") -> %q", odd)
	return nil
}
