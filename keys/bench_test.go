package keys_test

import (
	"testing"
	"time"

	"github.com/tablekit/tablekit/keys"
)

var (
	sinkBytes  []byte
	sinkString string
	sinkInt    int
	sinkErr    error
)

// The allocation-free path: a Builder appending to a reused buffer.
func BenchmarkBuilderStrings3(b *testing.B) {
	buf := make([]byte, 0, 64)
	var kb keys.Builder
	b.ReportAllocs()
	for b.Loop() {
		kb.Reset(buf[:0])
		sinkBytes, sinkErr = kb.Add("empid").Add("000223").Add("2012").Bytes()
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

func BenchmarkCompound3(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkString, sinkErr = keys.Compound("empid", "000223", "2012")
	}
}

// Components holding escaped characters: a path, an email, a hashtag.
func BenchmarkBuilderEscaped3(b *testing.B) {
	buf := make([]byte, 0, 64)
	var kb keys.Builder
	b.ReportAllocs()
	for b.Loop() {
		kb.Reset(buf[:0])
		sinkBytes, sinkErr = kb.Add("docs/readme.md").Add("jonesj@contoso.com").Add("#golang").Bytes()
	}
}

// Split as callers use it: the components are read, the slice is not kept.
func BenchmarkSplit3(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		parts, err := keys.Split("empid!000223!2012")
		sinkString, sinkErr = parts[len(parts)-1], err
	}
}

func BenchmarkSplit3Escaped(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		parts, err := keys.Split(`docs.|readme..md!jonesj@contoso..com!"|golang`)
		sinkString, sinkErr = parts[len(parts)-1], err
	}
}

func BenchmarkBuilderInvertedTicks(b *testing.B) {
	buf := make([]byte, 0, 32)
	var kb keys.Builder
	t := time.Date(2024, 5, 1, 12, 34, 56, 789123400, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		kb.Reset(buf[:0])
		sinkBytes, sinkErr = kb.AddInvertedTicks(t).Bytes()
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

func BenchmarkBuilderInt(b *testing.B) {
	buf := make([]byte, 0, 32)
	var kb keys.Builder
	b.ReportAllocs()
	for b.Loop() {
		kb.Reset(buf[:0])
		sinkBytes, sinkErr = kb.AddInt(-123456789).Bytes()
	}
}

func BenchmarkValidate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkErr = keys.Validate("email!jonesj@contoso.com")
	}
}

func BenchmarkShard(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkInt, sinkErr = keys.Shard("device-000123", 16)
	}
}

func BenchmarkShardedKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkString, sinkErr = keys.ShardedKey(7, 16, "device-000123")
	}
}
