package index

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/keys"
)

// The id list of an index entity.
//
// An index entity lists the entities that have one value (all employees
// named Jones) as text: their ids, sorted, one per line. Keys cannot hold
// control characters, so a newline never occurs inside an id, and a tab
// separates PartitionKey and RowKey where the list spans partitions. The
// text goes into the property IDs; when it is longer than a property may be
// (64 KiB, i.e. 32,768 UTF-16 code units) it continues in IDs2, IDs3, ...,
// each holding whole lines, until the entity reaches 1 MiB. Count holds the
// number of ids.
const (
	// idsProperty is the first property of an index entity's id list.
	idsProperty = "IDs"
	// countProperty is the number of ids an index entity lists.
	countProperty = "Count"
)

// maxChunkUnits is the most UTF-16 code units one string property holds.
const maxChunkUnits = limits.PropertyBytes / 2

// chunkName returns the name of the i-th (0-based) id property.
func chunkName(i int) string {
	if i == 0 {
		return idsProperty
	}
	return idsProperty + strconv.Itoa(i+1)
}

// readIDs returns the sorted ids an index entity lists.
func readIDs(e *tablekit.Entity) []string {
	var ids []string
	for i := 0; ; i++ {
		v, ok := e.Properties[chunkName(i)]
		if !ok {
			break
		}
		s, _ := v.(string)
		if s == "" {
			continue
		}
		ids = append(ids, strings.Split(s, "\n")...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// addID inserts id into the sorted ids; it reports whether it was missing.
func addID(ids []string, id string) ([]string, bool) {
	i, found := slices.BinarySearch(ids, id)
	if found {
		return ids, false
	}
	return slices.Insert(ids, i, id), true
}

// removeID removes id from the sorted ids; it reports whether it was there.
func removeID(ids []string, id string) ([]string, bool) {
	i, found := slices.BinarySearch(ids, id)
	if !found {
		return ids, false
	}
	return slices.Delete(ids, i, i+1), true
}

// setIDs replaces e's properties with the id list, split into properties of
// at most 64 KiB. It refuses a list that would make the entity larger than
// 1 MiB (or need more than 252 properties), naming the index entity and
// pointing to a blob list. op is the operation writing the list, and what
// describes the index entity for messages.
func setIDs(op string, e *tablekit.Entity, ids []string, what string) error {
	props := map[string]any{countProperty: int64(len(ids))}
	var b strings.Builder
	units, chunk := 0, 0
	flush := func() {
		props[chunkName(chunk)] = b.String()
		b.Reset()
		units = 0
		chunk++
	}
	for _, id := range ids {
		n := keys.KeySize(id) / 2
		if units > 0 && units+1+n > maxChunkUnits {
			flush()
		}
		if units > 0 {
			b.WriteByte('\n')
			units++
		}
		b.WriteString(id)
		units += n
	}
	if units > 0 || chunk == 0 {
		flush()
	}
	e.Properties = props
	size := codec.EntitySize(*e)
	if size > limits.EntityBytes || len(props) > limits.CustomProperties {
		return &tablekit.ValidationError{
			Op:       op,
			Entity:   what,
			Property: idsProperty,
			Limit:    "an index entity holds at most 1 MiB (64 KiB per property)",
			Size:     size,
			Unit:     "bytes",
			Detail: fmt.Sprintf("listing %d ids would make the index entity too large; "+
				"an index entity suits values shared by up to some tens of thousands of entities: "+
				"keep the id lists in blobs instead (a CrossPartition index with Index.Blobs, the guide's option 1)", len(ids)),
			Err: tablekit.ErrTooLarge,
		}
	}
	return nil
}

// joinID and splitID convert an ID to and from its list form,
// "PartitionKey\tRowKey".
func joinID(id ID) string { return id.PartitionKey + "\t" + id.RowKey }

func splitID(s string) ID {
	pk, rk, ok := strings.Cut(s, "\t")
	if !ok {
		return ID{RowKey: s}
	}
	return ID{PartitionKey: pk, RowKey: rk}
}
