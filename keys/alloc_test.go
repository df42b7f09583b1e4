package keys_test

import (
	"testing"
	"time"

	"github.com/tablekit/tablekit/keys"
)

// TestAllocations holds the allocation-free paths the package doc promises
// (the benchmarks measure their speed): the Builder on a reused buffer,
// Split of up to four components into a slice that does not escape, and
// the decoders and checks.
func TestAllocations(t *testing.T) {
	tm := time.Date(2024, 5, 1, 12, 34, 56, 789123400, time.UTC)
	buf := make([]byte, 0, 256)
	var b keys.Builder
	var n int
	for name, f := range map[string]func(){
		"Builder": func() {
			b.Reset(buf[:0])
			out, _ := b.Add("docs/readme.md").AddUint(1).AddUintN(2, 3).AddInt(-4).AddTime(tm).AddTicks(tm).AddInvertedTicks(tm).AddGUID([16]byte{}).Bytes()
			n += len(out)
		},
		"Split": func() {
			parts, _ := keys.Split("empid!000223!2012!x")
			n += len(parts[3])
		},
		"Validate": func() { _ = keys.Validate("email!jonesj@contoso..com") },
		"Shard":    func() { n, _ = keys.Shard("device-000123", 16) },
		"ParseInvertedTicks": func() {
			got, _ := keys.ParseInvertedTicks("2516877339032108765")
			n += got.Nanosecond()
		},
		"Compare": func() { n += keys.Compare("a\U0001F600", "a\uffff") },
	} {
		if allocs := testing.AllocsPerRun(100, f); allocs != 0 {
			t.Errorf("%s: %.1f allocations, want 0", name, allocs)
		}
	}
}
