package index

import (
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
)

// What the package's external tests use of its internals: the list stores
// (which tests drive directly, under faults and contention) and the names
// of the properties and partitions it stores.

type (
	ListKey       = listKey
	ListStore     = listStore
	EntityList    = entityList
	BlobList      = blobList
	ConflictError = conflictError
)

const (
	PrimaryPartitionKeyProperty = primaryPartitionKeyProperty
	PrimaryRowKeyProperty       = primaryRowKeyProperty
	PrimaryETagProperty         = primaryETagProperty
	IDsProperty                 = idsProperty
	CountProperty               = countProperty
	StatePartitionPrefix        = statePartitionPrefix
	SyncedProperty              = syncedProperty
	EntriesProperty             = entriesProperty
	DefaultKind                 = defaultKind
)

// ListOptions stands for the Retry a CrossPartition gives its list stores.
type ListOptions struct{ Retry tablekit.RetryPolicy }

func (o *ListOptions) retry(op string) (tablekit.RetryPolicy, error) {
	if o == nil {
		return defaultRetry, nil
	}
	return retryPolicy(op, o.Retry)
}

// NewEntityList returns an entityList over table's property-bag view.
func NewEntityList[E any](table *tablekit.Table[E], opts *ListOptions) (*EntityList, error) {
	if table == nil {
		return nil, invalid("index.NewEntityList", "", "table is nil")
	}
	p, err := opts.retry("index.NewEntityList")
	if err != nil {
		return nil, err
	}
	return newEntityList(table.AsEntities(), p), nil
}

// NewBlobList returns a blobList over c.
func NewBlobList(c *container.Client, opts *ListOptions) (*BlobList, error) {
	if c == nil {
		return nil, invalid("index.NewBlobList", "", "container is nil")
	}
	p, err := opts.retry("index.NewBlobList")
	if err != nil {
		return nil, err
	}
	return newBlobList(c, p), nil
}

// Keys returns the PartitionKey and RowKey of list's index entity.
func (l *entityList) Keys(list ListKey) (pk, rk string, err error) { return l.keys("", list) }

// BlobName returns the name of list's blob.
func (l *blobList) BlobName(list ListKey) string { return l.blobName(list) }
