package logtail

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/wire"
)

// This file writes a Writer's blocks to storage. Only the goroutine that
// is flushing (Writer.flushing set) runs it, without the Writer's lock; it
// owns the blob state (blob, seqHint, blockSeq).

// commitResult counts what a commit did, for the Writer's stats.
type commitResult struct {
	blobs, nameConflicts int64
}

// commit writes b as one block of the current blob of b's period, or of a
// new blob when there is none, and commits the blob's block list. A batch
// tried again keeps its block id, so that a commit the service applied
// but whose answer was lost is recognised (see confirm) instead of written
// twice.
func (w *Writer) commit(ctx context.Context, b *batch) (commitResult, error) {
	var res commitResult
	if w.blob != nil && !w.blob.period.Equal(b.period) {
		w.seqHint[w.blob.period] = w.blob.seq + 1
		w.blob = nil
	}
	if w.blob == nil {
		if err := w.create(ctx, b, &res); err != nil {
			return res, err
		}
	} else if err := w.appendBlock(ctx, b); err != nil {
		return res, err
	}
	if bs := w.blob; len(bs.ids) >= w.o.maxBlocks || bs.size >= w.o.MaxBlobBytes {
		w.seqHint[bs.period] = bs.seq + 1
		w.blob = nil
	}
	if len(w.seqHint) > 64 {
		for k := range w.seqHint {
			if !k.Equal(b.period) {
				delete(w.seqHint, k)
			}
		}
	}
	return res, nil
}

// newBlockID returns a block id unique to this writer: its random identity
// and a counter, 16 bytes in base64. Two writers staging blocks on the
// same name (before one of them wins the create) never overwrite each
// other's blocks, and all ids have the length the service requires.
func (w *Writer) newBlockID() string {
	var b [16]byte
	copy(b[:8], w.id[:])
	w.blockSeq++
	binary.BigEndian.PutUint64(b[8:], w.blockSeq)
	return base64.StdEncoding.EncodeToString(b[:])
}

func (w *Writer) metadata(b *blobState) map[string]*string {
	return map[string]*string{
		metaFirst:   to.Ptr(formatTime(b.first)),
		metaLast:    to.Ptr(formatTime(b.last)),
		metaRecords: to.Ptr(strconv.FormatInt(b.records, 10)),
	}
}

var textHeaders = &blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain; charset=utf-8")}

// appendBlock stages b as a block of the current blob and commits the
// blob's block list with it, conditional on the blob's ETag.
func (w *Writer) appendBlock(ctx context.Context, b *batch) error {
	cur := w.blob
	next := *cur
	next.ids = append(cur.ids[:len(cur.ids):len(cur.ids)], b.id)
	next.size += int64(len(b.data))
	next.records += int64(b.n)
	if b.first.Before(next.first) {
		next.first = b.first
	}
	if b.last.After(next.last) {
		next.last = b.last
	}
	bb := w.c.NewBlockBlobClient(cur.name)
	if _, err := bb.StageBlock(ctx, b.id, streaming.NopCloser(bytes.NewReader(b.data)), nil); err != nil {
		return wire.Wrap("PutBlock "+cur.name, "", "", "", err)
	}
	resp, err := bb.CommitBlockList(ctx, next.ids, &blockblob.CommitBlockListOptions{
		Metadata:         w.metadata(&next),
		HTTPHeaders:      textHeaders,
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &cur.etag}},
	})
	if err != nil {
		err = wire.Wrap("PutBlockList "+cur.name, "", "", "", err)
		if ctx.Err() != nil {
			// Cut off: whether a try was applied is for the next try of
			// this block to find out (it commits the same list).
			w.logUnknown(ctx, cur.name, b, err, nil)
			return cutOff(ctx, cur.name, err)
		}
		// This very commit, applied by the service in a try whose answer
		// was lost (retried by the SDK, or a flush that failed)? Then the
		// committed list is exactly ours. Asked after any failure, so
		// that a failed flush means "not written" whenever the Writer can
		// tell.
		etag, ok, cerr := w.confirm(ctx, bb, next.ids)
		if cerr != nil {
			// Cannot tell: keep the blob, so that the next try of this
			// block commits the same list and asks again (moving on
			// would write the block a second time if it is there).
			w.logUnknown(ctx, cur.name, b, err, cerr)
			return unsettled(cur.name, err, cerr)
		}
		if !ok {
			if errors.Is(err, tablekit.ErrPreconditionFailed) || errors.Is(err, tablekit.ErrNotFound) {
				// Someone else changed or deleted the blob: leave it
				// alone and write these records to a new blob on the
				// next try. (The ETag changed, so no earlier try of this
				// commit can still succeed.)
				w.logBlock(ctx, slog.LevelWarn, "logtail: blob changed or deleted by someone else; its records go to a new blob", cur.name, b, err)
				w.seqHint[cur.period] = cur.seq + 1
				w.blob = nil
			}
			return err // not applied: the blob is as the Writer knows it
		}
		w.logBlock(ctx, slog.LevelInfo, "logtail: commit settled as applied after its answer was lost (the block list shows it)", cur.name, b, err)
		next.etag = etag
	} else {
		next.etag = *resp.ETag
	}
	w.blob = &next
	return nil
}

// create writes b as the first block of a new blob of its period:
// create-only (If-None-Match: *), so it never overwrites a blob of another
// writer; when the name is taken by another writer it moves past the
// highest sequence number in use.
func (w *Writer) create(ctx context.Context, b *batch, res *commitResult) error {
	seq := w.seqHint[b.period]
	listed := false
	for {
		if seq > maxSeq {
			return &tablekit.ValidationError{Op: "logtail.Writer.Flush", Entity: w.cname, Property: "seq", Limit: "999999", Size: seq, Detail: "no free blob sequence number left in period " + b.period.Format(time.RFC3339), Err: tablekit.ErrTooLarge}
		}
		name := blobName(w.source, b.period, seq)
		bs := &blobState{name: name, period: b.period, seq: seq, ids: []string{b.id}, size: int64(len(b.data)), records: int64(b.n), first: b.first, last: b.last}
		bb := w.c.NewBlockBlobClient(name)
		if _, err := bb.StageBlock(ctx, b.id, streaming.NopCloser(bytes.NewReader(b.data)), nil); err != nil {
			return wire.Wrap("PutBlock "+name, "", "", "", err)
		}
		resp, err := bb.CommitBlockList(ctx, bs.ids, &blockblob.CommitBlockListOptions{
			Metadata:         w.metadata(bs),
			HTTPHeaders:      textHeaders,
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}},
		})
		if err == nil {
			bs.etag = *resp.ETag
			w.blob = bs
			res.blobs++
			return nil
		}
		err = wire.Wrap("PutBlockList "+name, "", "", "", err)
		// The next try of this block starts at this name again, unless
		// it turns out to be another writer's.
		w.seqHint[b.period] = seq
		if ctx.Err() != nil {
			w.logUnknown(ctx, name, b, err, nil)
			return cutOff(ctx, name, err)
		}
		etag, ok, cerr := w.confirm(ctx, bb, bs.ids)
		if cerr != nil {
			// Cannot tell whether the name is ours.
			w.logUnknown(ctx, name, b, err, cerr)
			return unsettled(name, err, cerr)
		}
		if ok { // our own earlier try
			w.logBlock(ctx, slog.LevelInfo, "logtail: commit settled as applied after its answer was lost (the block list shows it)", name, b, err)
			bs.etag = etag
			w.blob = bs
			res.blobs++
			return nil
		}
		if !errors.Is(err, tablekit.ErrAlreadyExists) && !errors.Is(err, tablekit.ErrPreconditionFailed) {
			return err // not applied, and the name may still be free
		}
		res.nameConflicts++
		w.logBlock(ctx, slog.LevelDebug, "logtail: blob name taken by another writer; trying the next sequence number", name, b, err)
		if !listed {
			listed = true
			top, lerr := w.highestSeq(ctx, b.period)
			if lerr != nil {
				return lerr
			}
			seq = max(seq, top) + 1
		} else {
			seq++
		}
		w.seqHint[b.period] = seq
	}
}

// logBlock logs one event of the commit of block b to blob name, with the
// error of the commit.
func (w *Writer) logBlock(ctx context.Context, level slog.Level, msg, name string, b *batch, err error, more ...slog.Attr) {
	log := w.logger()
	if !log.Enabled(ctx, level) {
		return
	}
	attrs := append([]slog.Attr{
		slog.String("container", w.cname), slog.String("source", w.source), slog.String("blob", name),
		slog.String("block", b.id), slog.Int("records", b.n), slog.Any("error", err),
	}, more...)
	log.LogAttrs(ctx, level, msg, attrs...)
}

// logUnknown logs a commit of b to blob name that failed with err when
// whether a try of it was applied is unknown: ctx ended (cerr nil), or
// reading the block list failed with cerr.
func (w *Writer) logUnknown(ctx context.Context, name string, b *batch, err, cerr error) {
	msg := "logtail: commit outcome unknown; its records stay buffered and the next flush checks the block list again"
	if b.reason == reasonWriteThrough {
		msg = "logtail: commit outcome unknown; the write fails with its record stored once or not at all"
	}
	var more []slog.Attr
	if cerr != nil {
		more = append(more, slog.Any("check_error", cerr))
	}
	w.logBlock(ctx, slog.LevelWarn, msg, name, b, err, more...)
}

// confirm reports whether the blob's committed block list is exactly ids,
// and its ETag. It returns an error when it cannot tell (the list could
// not be read); a blob that does not exist is not ours.
func (w *Writer) confirm(ctx context.Context, bb *blockblob.Client, ids []string) (azcore.ETag, bool, error) {
	resp, err := bb.GetBlockList(ctx, blockblob.BlockListTypeCommitted, nil)
	if err != nil {
		err = wire.Wrap("GetBlockList", "", "", "", err)
		if errors.Is(err, tablekit.ErrNotFound) {
			return "", false, nil
		}
		return "", false, err
	}
	if resp.ETag == nil || len(resp.BlockList.CommittedBlocks) != len(ids) {
		return "", false, nil
	}
	for i, blk := range resp.BlockList.CommittedBlocks {
		if blk == nil || blk.Name == nil || *blk.Name != ids[i] {
			return "", false, nil
		}
	}
	return *resp.ETag, true, nil
}

// cutOff is the error of a commit of blob name that failed with err while
// ctx ended: a context error as it is, else (the commit failed in another
// way just before) unsettled, since a try may have been applied.
func cutOff(ctx context.Context, name string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return unsettled(name, err, ctx.Err())
}

// unsettled is the error of a commit of blob name that failed with err,
// when reading the block list to tell whether a try of it was applied all
// the same failed with cerr. It matches tablekit.ErrOutcomeUnknown (and
// cerr), not err's sentinel: a conflict may be the commit's own doing.
func unsettled(name string, err, cerr error) error {
	return fmt.Errorf("logtail: Put Block List %s: %w: it failed (%v), and reading the block list to tell whether a try of it was applied failed too: %w",
		name, tablekit.ErrOutcomeUnknown, err, cerr)
}

// highestSeq returns the highest sequence number of the source's blobs of
// the period starting at p, or -1 when there are none.
func (w *Writer) highestSeq(ctx context.Context, p time.Time) (int, error) {
	prefix := blobName(w.source, p, 0)
	prefix = prefix[:len(prefix)-len("000000.log")]
	top := -1
	pager := w.c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return 0, wire.Wrap("ListBlobs "+prefix, "", "", "", err)
		}
		for _, it := range page.Segment.BlobItems {
			if it.Name == nil {
				continue
			}
			if _, _, seq, err := parseBlobName(*it.Name); err == nil && seq > top {
				top = seq
			}
		}
	}
	return top, nil
}
