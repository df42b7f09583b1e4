package index

import "github.com/tablekit/tablekit"

// keyOrder returns the query options of index lookups: results in index order.
// On Azure Cosmos DB for Table, which does not keep key order, a lookup's
// index entries are read whole and sorted on the client (at most
// limits.CollectLimit of them, else an error matching
// tablekit.ErrTooLarge).
func keyOrder() *tablekit.QueryOptions { return &tablekit.QueryOptions{KeyOrder: true} }
