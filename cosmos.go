package tablekit

import (
	"errors"
	"net/url"
	"strings"

	"github.com/tablekit/tablekit/internal/limits"
)

// Azure Cosmos DB for Table speaks the Table service's protocol, so tablekit
// works with it, but it does not return query results in PartitionKey and
// RowKey order. tablekit knows a Table is on Cosmos DB when its Account's
// table endpoint is a Cosmos DB one (*.table.cosmos.azure.com,
// *.table.cosmosdb.azure.com, or the emulator on port 8902), or when
// Options.Cosmos says so (for a proxy or another
// emulator). APIs whose meaning is key order then either sort within the
// bounded result they read or refuse with an error matching ErrUnsupported
// that says why; each says which in its documentation.

// maxTransactionBytes is the transaction size limit of t's service.
func (t *Table[T]) maxTransactionBytes() int {
	if t.cosmos {
		return limits.CosmosTransactionBytes
	}
	return limits.TransactionBytes
}

// ErrUnsupported is matched by the error of an operation the service
// cannot do as asked, such as one that relies on results in key order on
// Azure Cosmos DB for Table.
var ErrUnsupported = errors.New("tablekit: not supported by this service")

// isCosmosEndpoint reports whether a table endpoint is Cosmos DB's.
func isCosmosEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	return strings.HasSuffix(host, ".table.cosmos.azure.com") ||
		strings.HasSuffix(host, ".table.cosmosdb.azure.com") ||
		strings.HasSuffix(host, ".table.cosmos.azure.cn") ||
		(isLoopbackHost(host) && u.Port() == "8902")
}

// unorderedError is the error of op on a table whose results are not in
// key order.
func (t *Table[T]) unorderedError(op, instead string) error {
	return &ValidationError{
		Op:     op,
		Entity: t.name,
		Detail: op + " relies on results in PartitionKey and RowKey order, which Azure Cosmos DB for Table does not keep; " + instead,
		Err:    ErrUnsupported,
	}
}
