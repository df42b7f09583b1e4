package index

import (
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
)

// Index describes one secondary index of a [SamePartition] or a
// [CrossPartition]: its name, how to get an entity's value, and how the
// entries are kept. By default an entry is a copy of the entity stored
// under the value; with List, the entities that share a value are listed
// by id instead (the guide's index entities pattern).
//
// A SamePartition keeps the copy of employee Sales/000223 with email
// jonesj@contoso.com in partition Sales under the RowKey
// keys.Compound("email", "jonesj@contoso.com"), stored as
// "email!jonesj@contoso..com" (keys.Compound doubles the '.' of a value);
// a CrossPartition keeps it in partition "email!Sales" under
// keys.Compound(value, "000223"). The package doc shows every layout.
//
//	indexes := []index.Index[Employee]{
//		{Name: "email", Key: func(e Employee) string { return e.Email }, Unique: true},
//		{Name: "lastname", Key: func(e Employee) string { return e.LastName }, List: true},
//	}
type Index[T any] struct {
	// Name names the index, e.g. "email", and is the first component of
	// its keys. Entities' own keys must not begin with Name and '!'.
	Name string
	// Key returns v's indexed value; "" means no entry. Any valid UTF-8
	// (a key component: keys.Compound escapes it) within the 1 KiB key
	// limit; encode numbers with package keys (keys.UintN) so that their
	// order is numeric. It must not be derived from a property the table
	// encrypts (keys are stored in clear): such a write is refused.
	Key func(v T) string
	// Unique makes the value identify one entity: a lookup is a point
	// query, and a write that gives a second entity the value fails with a
	// *UniqueError. SamePartition copies only.
	Unique bool
	// Properties, when not nil, projects the copies onto these properties:
	// entities read through the index have the other fields zero. Copies
	// only.
	Properties []string
	// List keeps, per value, a list of the ids of the entities that have
	// it instead of a copy of each: an index entity of at most 1 MiB
	// (about 100,000 short ids), or a blob with Blobs.
	List bool
	// Global (CrossPartition only) puts the entries of all the entities'
	// partitions together: one partition of copies, or lists that span
	// partitions; lookups then ignore their pk argument.
	Global bool
	// Table (CrossPartition only) holds the copies or index entities (a
	// typed table's AsEntities()); nil means the entities' own table. It
	// must encrypt what the copies hold of the properties the entities'
	// table encrypts, or NewCrossPartition refuses it.
	Table *tablekit.Table[tablekit.Entity]
	// Blobs (CrossPartition List only) keeps each list in a blob of this
	// container (the guide's option 1), for values shared by more
	// entities than an index entity can list. The container is created on
	// first write.
	Blobs *container.Client
}
