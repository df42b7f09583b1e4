package logtail_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/logtail"
)

// BenchmarkBlobWriter measures records per second into blobs, against
// Azurite (or AZURE_STORAGE_CONNECTION_STRING): through the buffered
// Writer, through the write-through Writer (Put Block + Put Block List per
// record), and with one Put Blob per record (the naive "one blob write per
// record"). Records are 100-byte lines. The buffered case stores about
// 100 bytes per op in the emulator's memory, so bound it, e.g.
//
//	go test -run '^$' -bench BlobWriter -benchtime 200000x ./logtail   (buffered)
//	go test -run '^$' -bench BlobWriter -benchtime 2000x ./logtail     (all three)
func BenchmarkBlobWriter(b *testing.B) {
	ctx := context.Background()
	acct := testenv.Account(b, nil)
	msg := strings.Repeat("x", 100-len("2006-01-02T15:04:05.000000000Z")-2)
	for _, mode := range []struct {
		name string
		opts logtail.WriterOptions
	}{
		{"buffered", logtail.WriterOptions{}},
		{"write-through", logtail.WriterOptions{WriteThrough: true}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			c := testenv.NewContainer(b, acct)
			w, err := logtail.OpenWriter(acct, containerName(c), "bench", &mode.opts)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(100)
			b.ResetTimer()
			for range b.N {
				if err := w.Write(ctx, msg); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(ctx); err != nil { // timed: the last flush counts
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
	b.Run("put-blob-per-record", func(b *testing.B) {
		c := testenv.NewContainer(b, acct)
		b.SetBytes(100)
		b.ResetTimer()
		for i := range b.N {
			line, err := logtail.AppendRecord(nil, logtail.Record{Time: time.Now(), Message: msg})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.NewBlockBlobClient(fmt.Sprintf("naive/%09d.log", i)).UploadBuffer(ctx, line, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
}

// BenchmarkAppendRecord measures the encoder alone.
func BenchmarkAppendRecord(b *testing.B) {
	r := logtail.Record{Time: time.Now(), Message: strings.Repeat("x", 60) + "\twith a tab"}
	var buf []byte
	b.ReportAllocs()
	for range b.N {
		buf, _ = logtail.AppendRecord(buf[:0], r)
	}
}
