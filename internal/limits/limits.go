// Package limits holds the limits of Azure Table storage (and the stricter
// ones of Azure Cosmos DB for Table) that tablekit checks before anything
// is sent, so that every package checks the same numbers. The root's
// errors state them to users ("<= 64 KiB per property"); its docs give
// the numbers.
package limits

const (
	// TransactionActions is the most actions in one entity group
	// transaction.
	TransactionActions = 100
	// TransactionBytes is the largest transaction request body (4 MiB).
	TransactionBytes = 4 * 1024 * 1024
	// CustomProperties is the most custom properties an entity can have
	// (255 in all, less PartitionKey, RowKey and Timestamp).
	CustomProperties = 252
	// PropertyBytes is the largest Edm.String or Edm.Binary value: 64 KiB
	// (a string's size is 2 bytes per UTF-16 code unit).
	PropertyBytes = 64 * 1024
	// EntityBytes is the largest entity, measured as Azure does.
	EntityBytes = 1024 * 1024
	// PageSize is the most entities the service returns in one page.
	PageSize = 1000
	// CollectLimit is the most values tablekit gathers into memory from a
	// query when told no other limit (Collect, a query sorted on the
	// client).
	CollectLimit = 10_000

	// CosmosRowKeyBytes is the longest RowKey on Azure Cosmos DB for
	// Table, in bytes.
	CosmosRowKeyBytes = 255
	// CosmosTransactionBytes is the largest transaction on Azure Cosmos DB
	// for Table (2 MB).
	CosmosTransactionBytes = 2 * 1000 * 1000

	// PartitionTarget is the entities per second one partition serves
	// (Azure's published scalability target, 1 KiB entities).
	PartitionTarget = 2_000
	// AccountTarget is the transactions (requests) per second one storage
	// account serves.
	AccountTarget = 20_000
)
