package logtail_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/logtail"
)

func TestRecordFormat(t *testing.T) {
	at := time.Date(2024, 5, 6, 15, 4, 5, 123456789, time.FixedZone("CEST", 2*3600))
	for _, tc := range []struct{ msg, line string }{
		{"", "2024-05-06T13:04:05.123456789Z\t\n"},
		{"plain text", "2024-05-06T13:04:05.123456789Z\tplain text\n"},
		{"a\tb\nc\rd\\e", "2024-05-06T13:04:05.123456789Z\ta\\tb\\nc\\rd\\\\e\n"},
		{`\n is not a newline`, "2024-05-06T13:04:05.123456789Z\t\\\\n is not a newline\n"},
		{"\x00\xff ü 日本", "2024-05-06T13:04:05.123456789Z\t\x00\xff ü 日本\n"},
	} {
		line, err := logtail.AppendRecord(nil, logtail.Record{Time: at, Message: tc.msg})
		if err != nil {
			t.Fatal(err)
		}
		if string(line) != tc.line {
			t.Errorf("AppendRecord(%q) = %q, want %q", tc.msg, line, tc.line)
		}
		r, err := logtail.ParseRecord(line)
		if err != nil {
			t.Fatalf("ParseRecord(%q): %v", line, err)
		}
		if r.Message != tc.msg || !r.Time.Equal(at) || r.Time.Location() != time.UTC {
			t.Errorf("round trip of %q: %v %q", tc.msg, r.Time, r.Message)
		}
	}
	for _, bad := range []string{
		"", "2024-05-06T13:04:05.123456789Z", "2024-05-06T13:04:05.12345678Z\tx",
		"2024-05-06T13:04:05.123456789+00:00\tx", "2024-05-06 13:04:05.123456789Z\tx",
		"2024-05-06T13:04:05.123456789Z\ta\tb", "2024-05-06T13:04:05.123456789Z\ta\\", "2024-05-06T13:04:05.123456789Z\ta\\x",
		"2024-02-30T13:04:05.123456789Z\tx",
	} {
		if _, err := logtail.ParseRecord([]byte(bad)); err == nil {
			t.Errorf("ParseRecord(%q) accepted", bad)
		}
	}
	if _, err := logtail.AppendRecord(nil, logtail.Record{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("year 10000: %v", err)
	}
}

func FuzzRecord(f *testing.F) {
	f.Add(int64(0), "")
	f.Add(int64(1715007845123456789), "a\tb\nc\\d\re")
	f.Add(int64(-62135596800000000), "\\\\n")
	f.Fuzz(func(t *testing.T, nanos int64, msg string) {
		at := time.Unix(0, nanos)
		line, err := logtail.AppendRecord(nil, logtail.Record{Time: at, Message: msg})
		if err != nil {
			t.Fatal(err) // every int64 nanosecond time is within 1678..2262
		}
		if strings.Count(string(line), "\n") != 1 || strings.Count(string(line), "\t") != 1 {
			t.Fatalf("line %q has more than one delimiter", line)
		}
		r, err := logtail.ParseRecord(line)
		if err != nil {
			t.Fatal(err)
		}
		if r.Message != msg || !r.Time.Equal(at) {
			t.Fatalf("round trip: %v %q, want %v %q", r.Time, r.Message, at, msg)
		}
	})
}

func TestBlobNames(t *testing.T) {
	at := time.Date(2024, 5, 6, 15, 4, 59, 999, time.FixedZone("X", -3600))
	name := logtail.BlobName("web/eu-1", at, 42)
	if name != "web/eu-1/2024/05/06/1604/000042.log" {
		t.Fatalf("BlobName = %q", name)
	}
	src, start, seq, err := logtail.ParseBlobName(name)
	if err != nil || src != "web/eu-1" || !start.Equal(time.Date(2024, 5, 6, 16, 4, 0, 0, time.UTC)) || seq != 42 {
		t.Fatalf("ParseBlobName = %q %v %d %v", src, start, seq, err)
	}
	for _, bad := range []string{
		"web/2024/05/06/1504/000001.txt", "web/2024/05/06/1504/00001.log", "web/2024/13/06/1504/000001.log",
		"web/2024/05/06/2504/000001.log", "2024/05/06/1504/000001.log", "web/2024/05/06/1504/00000a.log",
	} {
		if _, _, _, err := logtail.ParseBlobName(bad); err == nil {
			t.Errorf("ParseBlobName(%q) accepted", bad)
		}
	}
}
