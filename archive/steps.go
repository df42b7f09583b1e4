package archive

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
)

// The idempotent steps the guide asks every eventually consistent
// operation to be built from: each can be repeated any number of times
// with the same outcome, so a redelivered message is harmless.

// InsertOrReplace stores v in t whatever is there (an upsert that
// replaces all properties): the idempotent write step.
func InsertOrReplace[T any](ctx context.Context, t *tablekit.Table[T], v T) error {
	_, err := t.Upsert(ctx, v, tablekit.Replace)
	return err
}

// DeleteIfExists deletes the entity pk/rk from t whatever its version; a
// missing entity counts as done (404 is success): the idempotent delete
// step.
func DeleteIfExists[T any](ctx context.Context, t *tablekit.Table[T], pk, rk string) error {
	_, err := t.DeleteIfExists(ctx, pk, rk)
	return err
}

// PutBlob writes data to the block blob name in c, replacing what is
// there: the idempotent blob write step.
func PutBlob(ctx context.Context, c *container.Client, name string, data []byte) error {
	_, err := c.NewBlockBlobClient(name).UploadBuffer(ctx, data, nil)
	return tablekit.WrapError("PutBlob", err)
}

// DeleteBlobIfExists deletes the blob name from c; a missing blob (or
// container) counts as done: the idempotent blob delete step.
func DeleteBlobIfExists(ctx context.Context, c *container.Client, name string) error {
	_, err := c.NewBlobClient(name).Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: ptr(blob.DeleteSnapshotsOptionTypeInclude)})
	if err == nil || bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		return nil
	}
	return tablekit.WrapError("DeleteBlob", err)
}

// GetBlob reads the whole blob name from c. A missing blob is an error
// matching tablekit.ErrNotFound.
func GetBlob(ctx context.Context, c *container.Client, name string) ([]byte, error) {
	resp, err := c.NewBlobClient(name).DownloadStream(ctx, nil)
	if err != nil {
		return nil, tablekit.WrapError("GetBlob", err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if resp.ContentLength != nil && *resp.ContentLength > 0 {
		buf.Grow(int(*resp.ContentLength))
	}
	if _, err := io.Copy(&buf, resp.Body); err != nil {
		return nil, tablekit.WrapError("GetBlob", err)
	}
	return buf.Bytes(), nil
}

// putBlobOverwrite writes a blob, replacing any, creating the container
// when it does not exist yet.
func putBlobOverwrite(ctx context.Context, c *container.Client, name string, data []byte) error {
	err := PutBlob(ctx, c, name, data)
	if errors.Is(err, tablekit.ErrNotFound) {
		if _, cerr := c.Create(ctx, nil); cerr != nil && !bloberror.HasCode(cerr, bloberror.ContainerAlreadyExists) {
			return tablekit.WrapError("CreateContainer", cerr)
		}
		err = PutBlob(ctx, c, name, data)
	}
	return err
}

// putClaimBlob writes a new claim-check blob, creating the container when
// it does not exist yet. Its name is random (128 bits), so it overwrites
// nothing but an earlier try of its own upload: an SDK retry after a lost
// answer must succeed, not fail on the blob that try stored.
func putClaimBlob(ctx context.Context, c *container.Client, name string, data []byte) error {
	bb := c.NewBlockBlobClient(name)
	_, err := bb.UploadBuffer(ctx, data, nil)
	if bloberror.HasCode(err, bloberror.ContainerNotFound) {
		if _, cerr := c.Create(ctx, nil); cerr != nil && !bloberror.HasCode(cerr, bloberror.ContainerAlreadyExists) {
			return tablekit.WrapError("CreateContainer", cerr)
		}
		_, err = bb.UploadBuffer(ctx, data, nil)
	}
	if err != nil && errors.Is(err, context.Canceled) {
		return context.Canceled
	}
	return tablekit.WrapError("PutBlob", err)
}
