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
	"github.com/tablekit/tablekit/internal/wire"
)

// listKey names one id list: the list of the entities that have Value in
// the index Index, among the entities of one partition (Partition) or of
// the whole table (Partition "").
type listKey struct {
	Index     string
	Partition string
	Value     string
}

// String formats the key for messages.
func (k listKey) String() string {
	if k.Partition == "" {
		return fmt.Sprintf("%s=%q", k.Index, k.Value)
	}
	return fmt.Sprintf("%s=%q in partition %q", k.Index, k.Value, k.Partition)
}

// listStore keeps the id lists of a CrossPartition List index: an
// entityList (an index entity per list, the guide's option 3) or a blobList
// (a blob per list, option 1). Every method is idempotent, so a redelivered
// maintenance message is harmless, and safe for concurrent use: updates
// are read-modify-write cycles made conditional on the ETag read, retried
// when another writer got there first. Errors name no operation: the
// exported call that uses the store names its own.
type listStore interface {
	// Add puts id in the list; nothing happens if it is there.
	Add(ctx context.Context, list listKey, id ID) error
	// Remove takes id out of the list; nothing happens if it is not
	// there. A list left empty is deleted.
	Remove(ctx context.Context, list listKey, id ID) error
	// IDs returns the ids of the list, sorted by PartitionKey and RowKey;
	// none for a list that does not exist.
	IDs(ctx context.Context, list listKey) ([]ID, error)
}

// entityList keeps each id list in an index entity of a table: the
// guide's index entities pattern, option 3. The index entity of a list has
// the PartitionKey keys.Compound(Index) (or keys.Compound(Index,
// Partition) for a per-partition list) and the RowKey
// keys.Compound(Value); its ids are in the properties IDs, IDs2, ... (see
// idlist.go). An index entity holds at most 1 MiB of ids; an Add that
// would grow it further fails with an error matching tablekit.ErrTooLarge
// that points to Index.Blobs.
type entityList struct {
	table *tablekit.Table[tablekit.Entity]
	retry tablekit.RetryPolicy
	locks keyLocks
}

// newEntityList returns an entityList storing index entities in table.
func newEntityList(table *tablekit.Table[tablekit.Entity], retry tablekit.RetryPolicy) *entityList {
	return &entityList{table: table, retry: retry}
}

func (l *entityList) keys(op string, list listKey) (pk, rk string, err error) {
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

func (l *entityList) describe(pk, rk string) string {
	if l.table.Name() == "" {
		return pk + "/" + rk
	}
	return l.table.Name() + ":" + pk + "/" + rk
}

// Add puts id in the list's index entity, creating it if needed. Cost: 2
// transactions (read, conditional write) per attempt; 1 when id is there.
// A write whose answer was lost, and whose SDK retry met the change it may
// have made, is settled by reading the list again, as a lost race is.
func (l *entityList) Add(ctx context.Context, list listKey, id ID) error {
	return l.update(ctx, list, id, true)
}

// Remove takes id out of the list's index entity, deleting it when it
// becomes empty. Cost: as Add.
func (l *entityList) Remove(ctx context.Context, list listKey, id ID) error {
	return l.update(ctx, list, id, false)
}

func (l *entityList) update(ctx context.Context, list listKey, id ID, adding bool) error {
	const op = ""
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
	return lastUnsettled(err)
}

// attempt makes one read-modify-write cycle, holding the process's lock of
// the list.
func (l *entityList) attempt(ctx context.Context, op string, list listKey, pk, rk string, id ID, adding bool) error {
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
func (l *entityList) IDs(ctx context.Context, list listKey) ([]ID, error) {
	pk, rk, err := l.keys("", list)
	if err != nil {
		return nil, err
	}
	e, err := l.table.Get(ctx, pk, rk)
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
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

// blobList keeps each id list in a block blob: the guide's index entities
// pattern, option 1. The blob of a list is named
// "<Index>/<Value>" (or "<Index>/<Partition>/<Value>" for a per-partition
// list), each part path-escaped, and holds the ids as text, one
// "PartitionKey<TAB>RowKey" per line, sorted. A blob has no practical size
// limit, so a blobList suits values shared by very many entities; every
// update rewrites the whole blob, conditional on its ETag. The container is
// created on first write if it does not exist.
type blobList struct {
	container *container.Client
	name      string
	retry     tablekit.RetryPolicy
	locks     keyLocks
}

// newBlobList returns a blobList storing its blobs in c.
func newBlobList(c *container.Client, retry tablekit.RetryPolicy) *blobList {
	return &blobList{container: c, name: containerName(c.URL()), retry: retry}
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

// blobName returns the name of list's blob.
func (l *blobList) blobName(list listKey) string {
	parts := []string{url.PathEscape(list.Index)}
	if list.Partition != "" {
		parts = append(parts, url.PathEscape(list.Partition))
	}
	return strings.Join(append(parts, url.PathEscape(list.Value)), "/")
}

// Add puts id in the list's blob, creating it if needed. Cost: 2
// transactions (read, conditional upload) per attempt; 1 when id is there.
func (l *blobList) Add(ctx context.Context, list listKey, id ID) error {
	return l.update(ctx, list, id, true)
}

// Remove takes id out of the list's blob, deleting it when it becomes
// empty. Cost: as Add.
func (l *blobList) Remove(ctx context.Context, list listKey, id ID) error {
	return l.update(ctx, list, id, false)
}

// read returns the list's lines and the blob's ETag ("" when absent).
func (l *blobList) read(ctx context.Context, name string) ([]string, azcore.ETag, error) {
	resp, err := l.container.NewBlobClient(name).DownloadStream(ctx, nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", wire.Wrap("GetBlob", "", "", "", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", wire.Wrap("GetBlob", "", "", "", err)
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

func (l *blobList) update(ctx context.Context, list listKey, id ID, adding bool) error {
	name := l.blobName(list)
	return retry(ctx, l.retry, ID{RowKey: name}, func() (bool, error) {
		return l.attempt(ctx, name, id, adding)
	})
}

// attempt makes one read-modify-write cycle, holding the process's lock of
// the blob; retry says whether another writer got in the way (or the
// container had to be created).
func (l *blobList) attempt(ctx context.Context, name string, id ID, adding bool) (retry bool, err error) {
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
				return false, wire.Wrap("CreateContainer", "", "", "", cerr)
			}
			return true, wire.Wrap("PutBlob", "", "", "", err)
		}
	}
	if err == nil {
		return false, nil
	}
	if bloberror.HasCode(err, bloberror.ConditionNotMet, bloberror.BlobAlreadyExists) {
		return true, wire.Wrap(sdkOp, "", "", "", err)
	}
	return false, wire.Wrap(sdkOp, "", "", "", err)
}

// IDs returns the ids in the list's blob. Cost: 1 transaction.
func (l *blobList) IDs(ctx context.Context, list listKey) ([]ID, error) {
	lines, _, err := l.read(ctx, l.blobName(list))
	if err != nil {
		return nil, err
	}
	return toIDs(lines), nil
}
