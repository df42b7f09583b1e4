package logtail

import "time"

// BlobName and ParseBlobName are the blob name format.
func BlobName(source string, start time.Time, seq int) string { return blobName(source, start, seq) }

var ParseBlobName = parseBlobName

// WithMaxBlocks returns o with a blob's most blocks set to n, for tests
// that need short blobs.
func WithMaxBlocks(o WriterOptions, n int) *WriterOptions {
	o.maxBlocks = n
	return &o
}

// SetConcurrency sets how many blobs r downloads at once.
func SetConcurrency(r *Reader, n int) { r.conc = n }
