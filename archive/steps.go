package archive

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/wire"
)

// The idempotent blob steps of an eventually consistent operation: each
// can be repeated any number of times with the same outcome, so a
// redelivered message is harmless. The table steps are the Table's own
// methods: [tablekit.Table.Upsert] (insert or replace) and
// [tablekit.Table.DeleteIfExists].

// UpsertBlob writes data to the block blob name in c, replacing whatever
// is there (an unconditional write), and returns the blob's new ETag: the
// idempotent blob write step. It costs one storage transaction (a blob of
// up to 256 MiB is uploaded in one request).
func UpsertBlob(ctx context.Context, c *container.Client, name string, data []byte) (azcore.ETag, error) {
	const op = "archive.UpsertBlob"
	if c == nil {
		return "", invalid(op, "container", "the container is nil")
	}
	resp, err := c.NewBlockBlobClient(name).UploadBuffer(ctx, data, nil)
	if err != nil {
		return "", wire.Wrap(op, "", "", "", err)
	}
	if resp.ETag == nil {
		return "", nil
	}
	return *resp.ETag, nil
}

// DeleteBlobIfExists deletes the blob name (with its snapshots) from c
// whatever its version; a missing blob or container is not an error. It
// reports whether the blob existed: the idempotent blob delete step. It
// costs one storage transaction.
func DeleteBlobIfExists(ctx context.Context, c *container.Client, name string) (existed bool, err error) {
	const op = "archive.DeleteBlobIfExists"
	if c == nil {
		return false, invalid(op, "container", "the container is nil")
	}
	_, err = c.NewBlobClient(name).Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: ptr(blob.DeleteSnapshotsOptionTypeInclude)})
	switch {
	case err == nil:
		return true, nil
	case bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound):
		return false, nil
	}
	return false, wire.Wrap(op, "", "", "", err)
}

// getBlob reads the whole blob name from c. A missing blob is an error
// matching tablekit.ErrNotFound. It costs one storage transaction.
func getBlob(ctx context.Context, c *container.Client, name string) ([]byte, error) {
	resp, err := c.NewBlobClient(name).DownloadStream(ctx, nil)
	if err != nil {
		return nil, wire.Wrap("archive.Worker.Run", "", "", "", err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if resp.ContentLength != nil && *resp.ContentLength > 0 {
		buf.Grow(int(*resp.ContentLength))
	}
	if _, err := io.Copy(&buf, resp.Body); err != nil {
		return nil, wire.Wrap("archive.Worker.Run", "", "", "", err)
	}
	return buf.Bytes(), nil
}

// putBlobOverwrite writes a blob, replacing any, creating the container
// when it does not exist yet.
func putBlobOverwrite(ctx context.Context, c *container.Client, name string, data []byte) error {
	_, err := UpsertBlob(ctx, c, name, data)
	if errors.Is(err, tablekit.ErrNotFound) {
		if _, cerr := c.Create(ctx, nil); cerr != nil && !bloberror.HasCode(cerr, bloberror.ContainerAlreadyExists) {
			return wire.Wrap("archive.Worker.Run", "", "", "", cerr)
		}
		_, err = UpsertBlob(ctx, c, name, data)
	}
	return err
}

// putClaimBlob writes a new claim-check blob, creating the container when
// it does not exist yet. Its name is random (128 bits), so it overwrites
// nothing but an earlier try of its own upload: an SDK retry after a lost
// answer must succeed, not fail on the blob that try stored.
func putClaimBlob(ctx context.Context, op string, c *container.Client, name string, data []byte) error {
	bb := c.NewBlockBlobClient(name)
	_, err := bb.UploadBuffer(ctx, data, nil)
	if bloberror.HasCode(err, bloberror.ContainerNotFound) {
		if _, cerr := c.Create(ctx, nil); cerr != nil && !bloberror.HasCode(cerr, bloberror.ContainerAlreadyExists) {
			return wire.Wrap(op, "", "", "", cerr)
		}
		_, err = bb.UploadBuffer(ctx, data, nil)
	}
	if err != nil && errors.Is(err, context.Canceled) {
		return context.Canceled
	}
	return wire.Wrap(op, "", "", "", err)
}
