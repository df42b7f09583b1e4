package tablekit

import (
	"errors"
	"fmt"

	"github.com/tablekit/tablekit/internal/limits"
)

// Azure Cosmos DB for Table speaks the Table service's protocol, so tablekit
// works with it, but it does not return query results in PartitionKey and
// RowKey order. An Account is in Cosmos DB mode when Options.Service says
// so, when its table endpoint is a Cosmos DB one (see internal/wire.IsCosmosEndpoint),
// or, with ServiceAuto, from the first answer that shows Cosmos DB on (see
// wire.ShowsCosmos): its Tables, those opened before too, then behave as on
// Cosmos DB. APIs whose meaning is key order then either sort within the
// bounded result they read or refuse with an error matching ErrUnsupported
// that says why; each says which in its documentation. An operation whose
// result already depended on key order when an answer showed Cosmos DB
// fails so too rather than return what it read.

// Service is the service behind an Account's table endpoint, as
// [Options.Service] says it.
type Service uint8

const (
	// ServiceAuto (the zero value) finds the service out: Cosmos DB when
	// the table endpoint is one of Cosmos DB's (*.table.cosmos.azure.com
	// and the sovereign clouds' likes, or the Cosmos DB emulator on port
	// 8902), else Table storage until an answer shows Cosmos DB (its JSON
	// continuation tokens, its error bodies, query results out of key
	// order), from when on the Account is in Cosmos DB mode.
	ServiceAuto Service = iota
	// ServiceTableStorage says the endpoint is Azure Table storage (or
	// Azurite), whose results are in key order: an answer that shows
	// Cosmos DB is then an error (matching ErrInvalidInput), and so is
	// every later request of the Account.
	ServiceTableStorage
	// ServiceCosmosDB says the endpoint is Azure Cosmos DB for Table,
	// whatever its host: for a proxy, a custom domain or an emulator that
	// tablekit does not recognise.
	ServiceCosmosDB
)

// String names the setting ("auto", "Azure Table storage" or "Azure
// Cosmos DB for Table").
func (s Service) String() string {
	switch s {
	case ServiceAuto:
		return "auto"
	case ServiceTableStorage:
		return "Azure Table storage"
	case ServiceCosmosDB:
		return "Azure Cosmos DB for Table"
	}
	return fmt.Sprintf("Service(%d)", uint8(s))
}

// maxTransactionBytes is the transaction size limit of t's service.
func (t *Table[T]) maxTransactionBytes() int {
	if t.onCosmos() {
		return limits.CosmosTransactionBytes
	}
	return limits.TransactionBytes
}

// ErrUnsupported is matched by the error of an operation the service
// cannot do as asked, such as one that relies on results in key order on
// Azure Cosmos DB for Table.
var ErrUnsupported = errors.New("tablekit: not supported by this service")

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

// onCosmos reports whether t's Account is in Cosmos DB mode now.
func (t *Table[T]) onCosmos() bool { return t.svc.Cosmos() }
