package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/core"
)

// ListKey names one id list: the list of the entities that have Value in
// the index Index, among the entities of one partition (Partition) or of
// the whole table (Partition "").
type ListKey struct {
	Index     string
	Partition string
	Value     string
}

// String formats the key for messages.
func (k ListKey) String() string {
	if k.Partition == "" {
		return fmt.Sprintf("%s=%q", k.Index, k.Value)
	}
	return fmt.Sprintf("%s=%q in partition %q", k.Index, k.Value, k.Partition)
}

// ListStore keeps id lists: where an [CrossPartition] keeps its List indexes. Every
// method is idempotent, so a redelivered maintenance message is harmless,
// and safe for concurrent use: updates are read-modify-write cycles made
// conditional on the ETag read, retried when another writer got there
// first. [EntityList] (an index entity per list, the guide's option 3) and
// [BlobList] (a blob per list, option 1) implement it.
type ListStore interface {
	// Add puts id in the list; nothing happens if it is there.
	Add(ctx context.Context, list ListKey, id ID) error
	// Remove takes id out of the list; nothing happens if it is not
	// there. A list left empty is deleted.
	Remove(ctx context.Context, list ListKey, id ID) error
	// IDs returns the ids of the list, sorted by PartitionKey and RowKey;
	// none for a list that does not exist.
	IDs(ctx context.Context, list ListKey) ([]ID, error)
}

// ListOptions configures an [EntityList] or a [BlobList]. A nil
// *ListOptions means defaults.
type ListOptions struct {
	// Retry says how often and how patiently an update repeats its
	// read-modify-write cycle while other writers keep changing the list;
	// then it fails with a *ConflictError (tablekit.ErrPreconditionFailed).
	// Its zero fields take the package's defaults: 30 attempts, full-jitter
	// exponential back-off from 10 ms up to 2 s ([core.ConflictRetry]
	// with a longer cap), which carries tens of writers in separate
	// processes on one list.
	Retry tablekit.RetryPolicy
}

func listRetry(op string, opts *ListOptions) (tablekit.RetryPolicy, error) {
	var o ListOptions
	if opts != nil {
		o = *opts
	}
	return retryPolicy(op, o.Retry)
}

// EntityList keeps each id list in an index entity of a table: the
// guide's index entities pattern, option 3, when used by an [CrossPartition]. The
// index entity of a list has the PartitionKey keys.Compound(Index) (or
// keys.Compound(Index, Partition) for a per-partition list) and the RowKey
// keys.Compound(Value); its ids are in the properties IDs, IDs2, ... (see
// [IDsProperty]). An index entity holds at most 1 MiB of ids; an Add that
// would grow it further fails with an error matching tablekit.ErrTooLarge
// that points to [BlobList].
type EntityList struct {
	table *tablekit.Table[tablekit.Entity]
	retry tablekit.RetryPolicy
	locks keyLocks
}

// NewEntityList returns an EntityList storing index entities in table,
// through its property-bag view (table.AsEntities(): the index entities keep
// table's tracing, logger and Cosmos DB mode). E is the table's type,
// whatever it is: the index entities are property bags.
func NewEntityList[E any](table *tablekit.Table[E], opts *ListOptions) (*EntityList, error) {
	const op = "index.NewEntityList"
	if table == nil {
		return nil, invalid(op, "", "table is nil")
	}
	p, err := listRetry(op, opts)
	if err != nil {
		return nil, err
	}
	return &EntityList{table: table.AsEntities(), retry: p}, nil
}

// TableName returns the name of the table that holds the index entities.
func (l *EntityList) TableName() string { return l.table.Name() }

// Keys returns the PartitionKey and RowKey of list's index entity.
func (l *EntityList) Keys(list ListKey) (pk, rk string, err error) {
	return l.keys("EntityList.Keys", list)
}

func (l *EntityList) keys(op string, list ListKey) (pk, rk string, err error) {
	what := "list " + list.String()
	if list.Partition == "" {
		pk, err = compound(op, l.table.Name(), what+": PartitionKey", list.Index)
	} else {
		pk, err = compound(op, l.table.Name(), what+": PartitionKey", list.Index, list.Partition)
	}
	if err != nil {
		return "", "", err
	}
	rk, err = compound(op, l.table.Name(), what+": RowKey", list.Value)
	return pk, rk, err
}

func (l *EntityList) describe(pk, rk string) string {
	if l.table.Name() == "" {
		return pk + "/" + rk
	}
	return l.table.Name() + ":" + pk + "/" + rk
}

// Add puts id in the list's index entity, creating it if needed. Cost: 2
// transactions (read, conditional write) per attempt; 1 when id is there.
// A write whose answer was lost, and whose SDK retry met the change it may
// have made, is settled by reading the list again, as a lost race is.
func (l *EntityList) Add(ctx context.Context, list ListKey, id ID) error {
	return l.update(ctx, "EntityList.Add", list, id, true)
}

// Remove takes id out of the list's index entity, deleting it when it
// becomes empty. Cost: as Add.
func (l *EntityList) Remove(ctx context.Context, list ListKey, id ID) error {
	return l.update(ctx, "EntityList.Remove", list, id, false)
}

func (l *EntityList) update(ctx context.Context, op string, list ListKey, id ID, adding bool) error {
	pk, rk, err := l.keys(op, list)
	if err != nil {
		return err
	}
	// A write whose answer was lost, and whose SDK retry met the change
	// its first try may have made, has an unknown outcome; the next cycle
	// reads the list again, which settles it: the update is idempotent.
	err = retry(ctx, l.retry, ID{pk, rk}, func() (bool, error) {
		err := l.attempt(ctx, op, list, pk, rk, id, adding)
		return err != nil && (isConflict(err) || errors.Is(err, tablekit.ErrOutcomeUnknown)), err
	})
	return withOp(op, lastUnsettled(err))
}

// attempt makes one read-modify-write cycle, holding the process's lock of
// the list.
func (l *EntityList) attempt(ctx context.Context, op string, list ListKey, pk, rk string, id ID, adding bool) error {
	unlock, err := l.locks.lock(ctx, pk+"\x00"+rk)
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := l.table.Get(ctx, pk, rk)
	exists := err == nil
	if err != nil && !errors.Is(err, tablekit.ErrNotFound) {
		return err
	}
	var ids []string
	if exists {
		ids = readIDs(&cur)
	}
	var changed bool
	if adding {
		ids, changed = addID(ids, joinID(id))
	} else {
		ids, changed = removeID(ids, joinID(id))
	}
	if !changed {
		return nil
	}
	what := l.describe(pk, rk)
	e := tablekit.Entity{PartitionKey: pk, RowKey: rk}
	switch {
	case !exists:
		if err = setIDs(op, &e, ids, what); err != nil {
			return err
		}
		_, err = l.table.Insert(ctx, e)
	case len(ids) == 0:
		err = l.table.Delete(ctx, pk, rk, cur.ETag)
		if errors.Is(err, tablekit.ErrNotFound) {
			return nil
		}
	default:
		if err = setIDs(op, &e, ids, what); err != nil {
			return err
		}
		_, err = l.table.Update(ctx, e, cur.ETag)
	}
	return err
}

// IDs returns the ids the list's index entity holds. Cost: 1 transaction.
func (l *EntityList) IDs(ctx context.Context, list ListKey) ([]ID, error) {
	const op = "EntityList.IDs"
	pk, rk, err := l.keys(op, list)
	if err != nil {
		return nil, err
	}
	e, err := l.table.Get(ctx, pk, rk)
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, withOp(op, err)
	}
	return toIDs(readIDs(&e)), nil
}

func toIDs(lines []string) []ID {
	out := make([]ID, len(lines))
	for i, s := range lines {
		out[i] = splitID(s)
	}
	return out
}

// BlobList keeps each id list in a block blob: the guide's index entities
// pattern, option 1. The blob of a list is named
// "<Index>/<Value>" (or "<Index>/<Partition>/<Value>" for a per-partition
// list), each part path-escaped, and holds the ids as text, one
// "PartitionKey<TAB>RowKey" per line, sorted. A blob has no practical size
// limit, so a BlobList suits values shared by very many entities; every
// update rewrites the whole blob, conditional on its ETag. The container is
// created on first write if it does not exist.
type BlobList struct {
	container *container.Client
	name      string
	retry     tablekit.RetryPolicy
	locks     keyLocks
}

// NewBlobList returns a BlobList storing its blobs in c.
func NewBlobList(c *container.Client, opts *ListOptions) (*BlobList, error) {
	const op = "index.NewBlobList"
	if c == nil {
		return nil, invalid(op, "", "container is nil")
	}
	p, err := listRetry(op, opts)
	if err != nil {
		return nil, err
	}
	return &BlobList{container: c, name: containerName(c.URL()), retry: p}, nil
}

// containerName returns the last segment of a container URL's path.
func containerName(u string) string {
	if p, err := url.Parse(u); err == nil {
		u = p.Path
	}
	u = strings.TrimRight(u, "/")
	name := u[strings.LastIndexByte(u, '/')+1:]
	if n, err := url.PathUnescape(name); err == nil {
		return n
	}
	return name
}

// ContainerName returns the name of the blob container that holds the
// lists.
func (l *BlobList) ContainerName() string { return l.name }

// BlobName returns the name of list's blob.
func (l *BlobList) BlobName(list ListKey) string {
	parts := []string{url.PathEscape(list.Index)}
	if list.Partition != "" {
		parts = append(parts, url.PathEscape(list.Partition))
	}
	return strings.Join(append(parts, url.PathEscape(list.Value)), "/")
}

// Add puts id in the list's blob, creating it if needed. Cost: 2
// transactions (read, conditional upload) per attempt; 1 when id is there.
func (l *BlobList) Add(ctx context.Context, list ListKey, id ID) error {
	return withOp("BlobList.Add", l.update(ctx, list, id, true))
}

// Remove takes id out of the list's blob, deleting it when it becomes
// empty. Cost: as Add.
func (l *BlobList) Remove(ctx context.Context, list ListKey, id ID) error {
	return withOp("BlobList.Remove", l.update(ctx, list, id, false))
}

// read returns the list's lines and the blob's ETag ("" when absent).
func (l *BlobList) read(ctx context.Context, name string) ([]string, azcore.ETag, error) {
	resp, err := l.container.NewBlobClient(name).DownloadStream(ctx, nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", core.WrapError("GetBlob", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", core.WrapError("GetBlob", err)
	}
	var etag azcore.ETag
	if resp.ETag != nil {
		etag = *resp.ETag
	}
	var lines []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if line != "" {
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	return slices.Compact(lines), etag, nil
}

func (l *BlobList) update(ctx context.Context, list ListKey, id ID, adding bool) error {
	name := l.BlobName(list)
	return retry(ctx, l.retry, ID{RowKey: name}, func() (bool, error) {
		return l.attempt(ctx, name, id, adding)
	})
}

// attempt makes one read-modify-write cycle, holding the process's lock of
// the blob; retry says whether another writer got in the way (or the
// container had to be created).
func (l *BlobList) attempt(ctx context.Context, name string, id ID, adding bool) (retry bool, err error) {
	unlock, err := l.locks.lock(ctx, name)
	if err != nil {
		return false, err
	}
	defer unlock()
	lines, etag, err := l.read(ctx, name)
	if err != nil {
		return false, err
	}
	var changed bool
	if adding {
		lines, changed = addID(lines, joinID(id))
	} else {
		lines, changed = removeID(lines, joinID(id))
	}
	if !changed {
		return false, nil
	}
	bb := l.container.NewBlockBlobClient(name)
	cond := &blob.ModifiedAccessConditions{}
	if etag == "" {
		cond.IfNoneMatch = new(azcore.ETagAny)
	} else {
		cond.IfMatch = &etag
	}
	sdkOp := "PutBlob"
	if len(lines) == 0 {
		sdkOp = "DeleteBlob"
		_, err = bb.Delete(ctx, &blob.DeleteOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: cond}})
		if bloberror.HasCode(err, bloberror.BlobNotFound) {
			return false, nil
		}
	} else {
		var buf bytes.Buffer
		for _, line := range lines {
			buf.WriteString(line)
			buf.WriteByte('\n')
		}
		opts := &blockblob.UploadBufferOptions{
			HTTPHeaders:      &blob.HTTPHeaders{BlobContentType: new("text/plain; charset=utf-8")},
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: cond},
		}
		_, err = bb.UploadBuffer(ctx, buf.Bytes(), opts)
		if bloberror.HasCode(err, bloberror.ContainerNotFound) {
			if _, cerr := l.container.Create(ctx, nil); cerr != nil && !bloberror.HasCode(cerr, bloberror.ContainerAlreadyExists) {
				return false, core.WrapError("CreateContainer", cerr)
			}
			return true, core.WrapError("PutBlob", err)
		}
	}
	if err == nil {
		return false, nil
	}
	if bloberror.HasCode(err, bloberror.ConditionNotMet, bloberror.BlobAlreadyExists) {
		return true, core.WrapError(sdkOp, err)
	}
	return false, core.WrapError(sdkOp, err)
}

// IDs returns the ids in the list's blob. Cost: 1 transaction.
func (l *BlobList) IDs(ctx context.Context, list ListKey) ([]ID, error) {
	lines, _, err := l.read(ctx, l.BlobName(list))
	if err != nil {
		return nil, withOp("BlobList.IDs", err)
	}
	return toIDs(lines), nil
}
