package logtail

import (
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/codec"
	"github.com/tablekit/tablekit/internal/names"
	"github.com/tablekit/tablekit/internal/wire"
)

// Reader reads the records of one source from the blobs Writers made.
// It is safe for concurrent use.
type Reader struct {
	c      *container.Client
	cname  string
	source string
	conc   int
}

// OpenReader returns a Reader of source's records in the container named
// container in acct; it downloads up to 8 blobs at once. Bad input is
// refused with a *tablekit.ValidationError whose Op is
// "logtail.OpenReader"; nothing is sent.
func OpenReader(acct *tablekit.Account, container, source string) (*Reader, error) {
	const op = "logtail.OpenReader"
	c, err := openContainer(op, acct, container)
	if err != nil {
		return nil, err
	}
	if err := checkSource(op, source); err != nil {
		return nil, err
	}
	return &Reader{c: c, cname: container, source: source, conc: 8}, nil
}

// openContainer returns the client of the container named name in acct,
// or op's refusal of a zero Account or a bad name.
func openContainer(op string, acct *tablekit.Account, name string) (*container.Client, error) {
	if acct == nil || acct.Blobs() == nil {
		return nil, &tablekit.ValidationError{Op: op, Property: "acct", Detail: "the account is nil or zero: use tablekit.Open", Err: tablekit.ErrInvalidInput}
	}
	if err := names.CheckContainer(name); err != nil {
		return nil, codec.WithOp(op, err)
	}
	return acct.Blobs().ServiceClient().NewContainerClient(name), nil
}

// ContainerName returns the name of the container the Reader reads.
func (r *Reader) ContainerName() string {
	if r == nil {
		return ""
	}
	return r.cname
}

// Source returns the source whose records the Reader reads.
func (r *Reader) Source() string {
	if r == nil {
		return ""
	}
	return r.source
}

// check refuses a nil or zero Reader.
func (r *Reader) check(op string) error {
	if r == nil || r.c == nil {
		return &tablekit.ValidationError{Op: op, Detail: "the Reader is nil or zero: use logtail.OpenReader", Err: tablekit.ErrInvalidInput}
	}
	return nil
}

// BlobInfo describes one log blob, as listed.
type BlobInfo struct {
	Name string
	// Start is the start of the blob's period (from its name).
	Start time.Time
	// Seq is the blob's sequence number (from its name).
	Seq int
	// First and Last are the earliest and latest record times, from the
	// blob's metadata; zero when the metadata is missing.
	First, Last time.Time
	// Records is the number of records, from the metadata (-1 if missing).
	Records int64
	// Size is the blob's length in bytes.
	Size int64
}

// Read returns the records of the source with from <= Time < to, in time
// order (records of equal time in blob name order, then in the order they
// were written). It works one hour at a time: it lists the blobs of that
// hour only (prefix "<source>/YYYY/MM/DD/hh", one request per 5,000
// blobs), skips those whose name or first/last metadata shows they hold no
// record in the window, downloads the rest in parallel, and yields the
// hour's records sorted. Memory is bounded by one hour's matching blobs.
//
// Records committed while Read runs may or may not be returned.
//
// Cost: one List Blobs per hour of the window (per 5,000 blobs), and one
// Get Blob per blob that may hold records of the window. A window that is
// empty or outside years 1..9999 is refused (yielded) with a
// *tablekit.ValidationError whose Op is "logtail.Reader.Read"; a blob whose
// content is not in the record format stops the read with a
// *tablekit.DecodeError naming it.
func (r *Reader) Read(ctx context.Context, from, to time.Time) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		if err := r.check("logtail.Reader.Read"); err != nil {
			yield(Record{}, err)
			return
		}
		if err := checkWindow("logtail.Reader.Read", from, to); err != nil {
			yield(Record{}, err)
			return
		}
		for h := from.UTC().Truncate(time.Hour); h.Before(to); h = h.Add(time.Hour) {
			blobs, err := r.hourBlobs(ctx, h, from, to)
			if err != nil {
				yield(Record{}, err)
				return
			}
			recs, err := r.download(ctx, blobs, from, to)
			if err != nil {
				yield(Record{}, err)
				return
			}
			for _, rec := range recs {
				if !yield(rec, nil) {
					return
				}
			}
		}
	}
}

// Blobs returns the blobs Read(ctx, from, to) would download, in name
// order: the listing of each hour of the window minus the blobs whose name
// or metadata rule them out. Cost: one List Blobs per hour of the window
// (per 5,000 blobs). Refusals name Op "logtail.Reader.Blobs".
func (r *Reader) Blobs(ctx context.Context, from, to time.Time) ([]BlobInfo, error) {
	if err := r.check("logtail.Reader.Blobs"); err != nil {
		return nil, err
	}
	if err := checkWindow("logtail.Reader.Blobs", from, to); err != nil {
		return nil, err
	}
	var out []BlobInfo
	for h := from.UTC().Truncate(time.Hour); h.Before(to); h = h.Add(time.Hour) {
		blobs, err := r.hourBlobs(ctx, h, from, to)
		if err != nil {
			return nil, err
		}
		out = append(out, blobs...)
	}
	return out, nil
}

func checkWindow(op string, from, to time.Time) error {
	if err := checkTime(op, "from", from); err != nil {
		return err
	}
	if err := checkTime(op, "to", to); err != nil {
		return err
	}
	if !from.Before(to) {
		return &tablekit.ValidationError{Op: op, Property: "to", Limit: "from < to", Detail: "empty window", Err: tablekit.ErrInvalidInput}
	}
	return nil
}

// hourBlobs lists the source's blobs of the hour starting at h and keeps
// those that may hold records in [from, to).
func (r *Reader) hourBlobs(ctx context.Context, h, from, to time.Time) ([]BlobInfo, error) {
	prefix := hourPrefix(r.source, h)
	pager := r.c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{
		Prefix:  &prefix,
		Include: container.ListBlobsInclude{Metadata: true},
	})
	var out []BlobInfo
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, wire.Wrap("ListBlobs "+prefix, "", "", "", err)
		}
		for _, it := range page.Segment.BlobItems {
			if it.Name == nil {
				continue
			}
			src, start, seq, err := parseBlobName(*it.Name)
			if err != nil || src != r.source {
				continue // not a log blob of this source
			}
			if !start.Before(to) {
				continue // every record of it is at or after its period start
			}
			bi := BlobInfo{Name: *it.Name, Start: start, Seq: seq, Records: -1}
			if it.Properties != nil && it.Properties.ContentLength != nil {
				bi.Size = *it.Properties.ContentLength
			}
			for k, v := range it.Metadata {
				if v == nil {
					continue
				}
				switch {
				case strings.EqualFold(k, metaFirst):
					bi.First, _ = parseTime([]byte(*v))
				case strings.EqualFold(k, metaLast):
					bi.Last, _ = parseTime([]byte(*v))
				case strings.EqualFold(k, metaRecords):
					if n, err := strconv.ParseInt(*v, 10, 64); err == nil {
						bi.Records = n
					}
				}
			}
			if bi.Records == 0 {
				continue
			}
			if !bi.First.IsZero() && !bi.Last.IsZero() && (bi.Last.Before(from) || !bi.First.Before(to)) {
				continue // the metadata says: nothing in the window
			}
			out = append(out, bi)
		}
	}
	return out, nil
}

// download reads blobs in parallel and returns their records in
// [from, to), sorted by time (stable: blob order, then line order).
func (r *Reader) download(ctx context.Context, blobs []BlobInfo, from, to time.Time) ([]Record, error) {
	if len(blobs) == 0 {
		return nil, nil
	}
	per := make([][]Record, len(blobs))
	errs := make([]error, len(blobs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, r.conc)
	var wg sync.WaitGroup
	for i := range blobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			per[i], errs[i] = r.readBlob(ctx, blobs[i].Name, from, to)
			if errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	var first error // report the cause, not the cancellations it caused
	for _, err := range errs {
		if err == nil {
			continue
		}
		if !isContextErr(err) {
			return nil, err
		}
		if first == nil {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	var out []Record
	for _, p := range per {
		out = append(out, p...)
	}
	slices.SortStableFunc(out, func(a, b Record) int { return a.Time.Compare(b.Time) })
	return out, nil
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// readBlob downloads one blob and returns its records in [from, to).
func (r *Reader) readBlob(ctx context.Context, name string, from, to time.Time) ([]Record, error) {
	resp, err := r.c.NewBlobClient(name).DownloadStream(ctx, nil)
	if err != nil {
		return nil, wire.Wrap("GetBlob "+name, "", "", "", err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if resp.ContentLength != nil && *resp.ContentLength > 0 {
		buf.Grow(int(*resp.ContentLength))
	}
	if _, err := io.Copy(&buf, resp.Body); err != nil {
		return nil, wire.Wrap("GetBlob "+name, "", "", "", err)
	}
	var out []Record
	err = parseRecords(buf.Bytes(), func(rec Record) error {
		if !rec.Time.Before(from) && rec.Time.Before(to) {
			out = append(out, rec)
		}
		return nil
	})
	if err != nil {
		return nil, &tablekit.DecodeError{Op: "logtail.Reader.Read", Detail: "blob " + quote(r.cname+"/"+name) + ": " + err.Error()}
	}
	return out, nil
}
