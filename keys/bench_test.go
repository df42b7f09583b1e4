package keys_test

import (
	"testing"
	"time"

	"github.com/tablekit/tablekit/keys"
)

var (
	sinkBytes  []byte
	sinkString string
	sinkErr    error
)

func BenchmarkAppendCompound3(b *testing.B) {
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		sinkBytes, sinkErr = keys.AppendCompound(buf[:0], "empid", "000223", "2012")
	}
}

func BenchmarkCompound3(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkString, sinkErr = keys.Compound("empid", "000223", "2012")
	}
}

func BenchmarkBuilder3(b *testing.B) {
	buf := make([]byte, 0, 64)
	var kb keys.Builder
	b.ReportAllocs()
	for b.Loop() {
		kb.Reset(buf[:0])
		sinkBytes, sinkErr = kb.Add("empid").AddUintN(223, 6).AddUintN(2012, 4).Bytes()
	}
}

func BenchmarkSplit3(b *testing.B) {
	b.ReportAllocs()
	dst := make([]string, 0, 3)
	for b.Loop() {
		dst, sinkErr = keys.AppendSplit(dst[:0], "empid!000223!2012")
	}
}

// Components holding escaped characters: a path, an email, a hashtag.
func BenchmarkAppendCompound3Escaped(b *testing.B) {
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		sinkBytes, sinkErr = keys.AppendCompound(buf[:0], "docs/readme.md", "jonesj@contoso.com", "#golang")
	}
}

func BenchmarkSplit3Escaped(b *testing.B) {
	b.ReportAllocs()
	dst := make([]string, 0, 3)
	for b.Loop() {
		dst, sinkErr = keys.AppendSplit(dst[:0], `docs.|readme..md!jonesj@contoso..com!"|golang`)
	}
}

func BenchmarkAppendInvertedTicks(b *testing.B) {
	buf := make([]byte, 0, 32)
	t := time.Date(2024, 5, 1, 12, 34, 56, 789123400, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		sinkBytes, sinkErr = keys.AppendInvertedTicks(buf[:0], t)
	}
}

func BenchmarkInvertedTicks(b *testing.B) {
	t := time.Date(2024, 5, 1, 12, 34, 56, 789123400, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		sinkString, sinkErr = keys.InvertedTicks(t)
	}
}

func BenchmarkParseInvertedTicks(b *testing.B) {
	b.ReportAllocs()
	var t time.Time
	for b.Loop() {
		t, sinkErr = keys.ParseInvertedTicks("2516877339032108765")
	}
	_ = t
}

func BenchmarkAppendInt(b *testing.B) {
	buf := make([]byte, 0, 32)
	b.ReportAllocs()
	for b.Loop() {
		sinkBytes = keys.AppendInt(buf[:0], -123456789)
	}
}

func BenchmarkValidate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkErr = keys.Validate("email!jonesj@contoso.com")
	}
}

func BenchmarkAppendShardPrefix(b *testing.B) {
	buf := make([]byte, 0, 8)
	b.ReportAllocs()
	for b.Loop() {
		sinkBytes, sinkErr = keys.AppendShardPrefix(buf[:0], "device-000123", 16)
	}
}

func BenchmarkAppendShardedKey(b *testing.B) {
	buf := make([]byte, 0, 32)
	b.ReportAllocs()
	for b.Loop() {
		sinkBytes, sinkErr = keys.AppendShardedKey(buf[:0], 7, 16, "device-000123")
	}
}
