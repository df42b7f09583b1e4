package transfer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tablekit/tablekit"
)

// stored says what a table holds for an entity an insert may already
// have written.
type stored uint8

const (
	storedNone      stored = iota // no entity with these keys
	storedIdentical               // the same properties, with the same types
	storedOther                   // an entity with other properties
)

// errStoredOther is the failure of an entity a resumed insert of op
// ("Import", "Copy") found stored with other values than its own (what:
// "its line", "the source's"): a conflict, as an insert of it would meet.
func errStoredOther(op, what string) error {
	return fmt.Errorf("transfer: %s: resumed insert: the entity exists with other values than %s: %w", op, what, tablekit.ErrAlreadyExists)
}

// lookupStored reads what t holds for each of es (entities the caller may
// have inserted before: a run being resumed, or a try whose answer was
// lost) and compares it with them. It reads each partition's entities by
// point reads when there are few, else with one range query from the
// smallest to the largest RowKey.
func lookupStored(ctx context.Context, t *tablekit.Table[tablekit.Entity], es []*tablekit.Entity) ([]stored, error) {
	out := make([]stored, len(es))
	byPK := map[string][]int{}
	var order []string
	for i, e := range es {
		if byPK[e.PartitionKey] == nil {
			order = append(order, e.PartitionKey)
		}
		byPK[e.PartitionKey] = append(byPK[e.PartitionKey], i)
	}
	for _, pk := range order {
		idx := byPK[pk]
		found := map[string]tablekit.Entity{}
		if len(idx) <= 4 {
			for _, i := range idx {
				e, err := t.Get(ctx, pk, es[i].RowKey)
				switch {
				case err == nil:
					found[e.RowKey] = e
				case errors.Is(err, tablekit.ErrNotFound):
				default:
					return nil, err
				}
			}
		} else {
			lo, hi := es[idx[0]].RowKey, es[idx[0]].RowKey
			for _, i := range idx[1:] {
				if rk := es[i].RowKey; compareKeys(rk, lo) < 0 {
					lo = rk
				} else if compareKeys(rk, hi) > 0 {
					hi = rk
				}
			}
			want := map[string]bool{}
			for _, i := range idx {
				want[es[i].RowKey] = true
			}
			f := tablekit.And(tablekit.PartitionEq(pk), tablekit.Where("RowKey ge ? and RowKey le ?", lo, hi))
			for e, err := range t.Query(ctx, f, &tablekit.QueryOptions{Reserved: true}) {
				if err != nil {
					return nil, err
				}
				if want[e.RowKey] {
					found[e.RowKey] = e
				}
			}
		}
		for _, i := range idx {
			s, ok := found[es[i].RowKey]
			switch {
			case !ok:
				out[i] = storedNone
			case sameProperties(es[i].Properties, s.Properties):
				out[i] = storedIdentical
			default:
				out[i] = storedOther
			}
		}
	}
	return out, nil
}

// sameProperties reports whether a and b hold the same properties with the
// same Go (and so EDM) types and values. Doubles compare with == (0 equals
// -0, which Azurite stores as 0) and NaN equals NaN; times compare as
// instants.
func sameProperties(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for name, av := range a {
		bv, ok := b[name]
		if !ok || !sameValue(av, bv) {
			return false
		}
	}
	return true
}

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case string, int32, int64, bool, tablekit.GUID:
		return a == b
	}
	return false
}
