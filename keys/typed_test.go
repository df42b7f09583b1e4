package keys_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/keys"
)

func TestUint(t *testing.T) {
	for _, tc := range []struct {
		v        uint64
		enc, inv string
	}{
		{0, "00000000000000000000", "18446744073709551615"},
		{223, "00000000000000000223", "18446744073709551392"},
		{math.MaxUint64, "18446744073709551615", "00000000000000000000"},
	} {
		if got := keys.Uint(tc.v); got != tc.enc {
			t.Errorf("Uint(%d) = %q, want %q", tc.v, got, tc.enc)
		}
		// The descending form the doc gives: Uint(math.MaxUint64-v).
		if got := keys.Uint(math.MaxUint64 - tc.v); got != tc.inv {
			t.Errorf("Uint(math.MaxUint64-%d) = %q, want %q", tc.v, got, tc.inv)
		}
		if v, err := keys.ParseUint(tc.enc); err != nil || v != tc.v {
			t.Errorf("ParseUint(%q) = %d, %v", tc.enc, v, err)
		}
	}
	for _, s := range []string{"", "0", "18446744073709551616", "99999999999999999999", "0000000000000000000a", "-0000000000000000001", "+0000000000000000001", "000000000000000000000"} {
		if _, err := keys.ParseUint(s); !errors.Is(err, keys.ErrMalformed) {
			t.Errorf("ParseUint(%q) = %v", s, err)
		}
	}
}

func TestUintN(t *testing.T) {
	for _, tc := range []struct {
		v     uint64
		width int
		enc   string
		err   error
	}{
		{223, 6, "000223", nil},
		{999999, 6, "999999", nil},
		{1000000, 6, "", keys.ErrInvalidArgument},
		{0, 1, "0", nil},
		{10, 1, "", keys.ErrInvalidArgument},
		{math.MaxUint64, 20, "18446744073709551615", nil},
		{1, 0, "", keys.ErrInvalidArgument},
		{1, 21, "", keys.ErrInvalidArgument},
		{1, -1, "", keys.ErrInvalidArgument},
	} {
		got, err := keys.UintN(tc.v, tc.width)
		if got != tc.enc || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("UintN(%d, %d) = %q, %v; want %q, %v", tc.v, tc.width, got, err, tc.enc, tc.err)
		}
		if tc.err == nil {
			if v, err := keys.ParseUintN(got, tc.width); err != nil || v != tc.v {
				t.Errorf("ParseUintN(%q, %d) = %d, %v", got, tc.width, v, err)
			}
		}
	}
	if _, err := keys.ParseUintN("0223", 6); !errors.Is(err, keys.ErrMalformed) {
		t.Errorf("ParseUintN short: %v", err)
	}
	if _, err := keys.ParseUintN("0223", 0); !errors.Is(err, keys.ErrInvalidArgument) {
		t.Errorf("ParseUintN width 0: %v", err)
	}
}

func TestInt(t *testing.T) {
	for _, tc := range []struct {
		v        int64
		enc, inv string
	}{
		{0, "00000000000000000000", "-9999999999999999999"},
		{42, "00000000000000000042", "-9999999999999999957"},
		{-1, "-9999999999999999999", "00000000000000000000"},
		{-42, "-9999999999999999958", "00000000000000000041"},
		{math.MaxInt64, "09223372036854775807", "-0776627963145224192"},
		{math.MinInt64, "-0776627963145224192", "09223372036854775807"},
	} {
		if got := keys.Int(tc.v); got != tc.enc {
			t.Errorf("Int(%d) = %q, want %q", tc.v, got, tc.enc)
		}
		// The descending form the doc gives: Int(^v), decoded with ^.
		if got := keys.Int(^tc.v); got != tc.inv {
			t.Errorf("Int(^%d) = %q, want %q", tc.v, got, tc.inv)
		}
		if v, err := keys.ParseInt(tc.enc); err != nil || v != tc.v {
			t.Errorf("ParseInt(%q) = %d, %v", tc.enc, v, err)
		}
		if v, err := keys.ParseInt(tc.inv); err != nil || ^v != tc.v {
			t.Errorf("^ParseInt(%q) = %d, %v", tc.inv, ^v, err)
		}
	}
	for _, s := range []string{"", "09223372036854775808", "-0776627963145224191", "19223372036854775807", "-999999999999999999", "-999999999999999999a", "+0000000000000000001"} {
		if _, err := keys.ParseInt(s); !errors.Is(err, keys.ErrMalformed) {
			t.Errorf("ParseInt(%q) = %v", s, err)
		}
	}
	// Order across the sign.
	vals := []int64{math.MinInt64, math.MinInt64 + 1, -1e18, -10, -9, -1, 0, 1, 9, 10, 1e18, math.MaxInt64}
	for i := 1; i < len(vals); i++ {
		if !(keys.Int(vals[i-1]) < keys.Int(vals[i])) {
			t.Errorf("Int(%d) >= Int(%d)", vals[i-1], vals[i])
		}
		if !(keys.Int(^vals[i-1]) > keys.Int(^vals[i])) {
			t.Errorf("Int(^%d) <= Int(^%d)", vals[i-1], vals[i])
		}
	}
}

func date(y int, mo time.Month, d, h, mi, s, hns int) time.Time {
	return time.Date(y, mo, d, h, mi, s, hns*100, time.UTC)
}

// The .NET vectors: DateTime.Ticks and the guide's
// string.Format("{0:D19}", DateTime.MaxValue.Ticks - t.Ticks).
var tickVectors = []struct {
	t        time.Time
	ticks    int64
	inverted string
	text     string
}{
	{date(1, 1, 1, 0, 0, 0, 0), 0, "3155378975999999999", "0001-01-01T00:00:00.0000000Z"},
	{date(1601, 1, 1, 0, 0, 0, 0), 504911232000000000, "2650467743999999999", "1601-01-01T00:00:00.0000000Z"},
	{date(1970, 1, 1, 0, 0, 0, 0), 621355968000000000, "2534023007999999999", "1970-01-01T00:00:00.0000000Z"},
	{date(2000, 1, 1, 0, 0, 0, 0), 630822816000000000, "2524556159999999999", "2000-01-01T00:00:00.0000000Z"},
	{date(2012, 3, 4, 5, 6, 7, 1), 634664343670000001, "2520714632329999998", "2012-03-04T05:06:07.0000001Z"},
	{date(2024, 5, 1, 12, 34, 56, 7891234), 638501636967891234, "2516877339032108765", "2024-05-01T12:34:56.7891234Z"},
	{date(9999, 12, 31, 23, 59, 59, 9999999), 3155378975999999999, "0000000000000000000", "9999-12-31T23:59:59.9999999Z"},
}

func TestTicksVectors(t *testing.T) {
	for _, v := range tickVectors {
		inv, err := keys.InvertedTicks(v.t)
		if err != nil || inv != v.inverted {
			t.Errorf("InvertedTicks(%v) = %q, %v; want %q", v.t, inv, err, v.inverted)
		}
		// The same instant in another zone gives the same key.
		inv2, err := keys.InvertedTicks(v.t.In(time.FixedZone("X", -7*3600)))
		if err != nil || inv2 != v.inverted {
			t.Errorf("InvertedTicks(%v in -07:00) = %q, %v", v.t, inv2, err)
		}
		back, err := keys.ParseInvertedTicks(inv)
		if err != nil || !back.Equal(v.t) || back.Location() != time.UTC {
			t.Errorf("ParseInvertedTicks(%q) = %v, %v; want %v", inv, back, err, v.t)
		}
		asc, err := keys.Ticks(v.t)
		if want := fmt.Sprintf("%019d", v.ticks); err != nil || asc != want {
			t.Errorf("Ticks(%v) = %q, %v; want %q", v.t, asc, err, want)
		}
		if back, err := keys.ParseTicks(asc); err != nil || !back.Equal(v.t) {
			t.Errorf("ParseTicks(%q) = %v, %v", asc, back, err)
		}
		text, err := keys.Time(v.t)
		if err != nil || text != v.text {
			t.Errorf("Time(%v) = %q, %v; want %q", v.t, text, err, v.text)
		}
		if back, err := keys.ParseTime(text); err != nil || !back.Equal(v.t) {
			t.Errorf("ParseTime(%q) = %v, %v", text, back, err)
		}
	}
}

func TestTicksTruncation(t *testing.T) {
	// 199 ns is truncated to one tick (100 ns), as .NET's DateTime does.
	tm := time.Date(2024, 5, 1, 0, 0, 0, 199, time.UTC)
	inv, _ := keys.InvertedTicks(tm)
	back, err := keys.ParseInvertedTicks(inv)
	if err != nil || !back.Equal(tm.Truncate(100)) {
		t.Errorf("round trip of %v = %v, %v", tm, back, err)
	}
	// Before the Unix epoch too (truncation toward the past).
	tm = time.Date(1900, 1, 1, 0, 0, 0, 99, time.UTC)
	ticks, _ := keys.Ticks(tm)
	want, _ := keys.Ticks(time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC))
	if ticks != want {
		t.Errorf("Ticks(%v) = %s, want %s", tm, ticks, want)
	}
}

func TestTimeOutOfRange(t *testing.T) {
	for _, tm := range []time.Time{
		time.Time{}.Add(-1), // 0000-12-31T23:59:59.999999999
		time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-5000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(math.MaxInt64/2, 0),
		time.Unix(math.MinInt64/2, 0),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.FixedZone("E", 3600)), // 0000-12-31T23:00Z
	} {
		if _, err := keys.InvertedTicks(tm); !errors.Is(err, keys.ErrInvalidArgument) {
			t.Errorf("InvertedTicks(%v) = %v", tm, err)
		}
		if _, err := keys.Ticks(tm); !errors.Is(err, keys.ErrInvalidArgument) {
			t.Errorf("Ticks(%v) = %v", tm, err)
		}
		if _, err := keys.Time(tm); !errors.Is(err, keys.ErrInvalidArgument) {
			t.Errorf("Time(%v) = %v", tm, err)
		}
		if _, err := keys.DescendingKey(tm, 1); !errors.Is(err, keys.ErrInvalidArgument) {
			t.Errorf("DescendingKey(%v) = %v", tm, err)
		}
		var b keys.Builder
		if k, err := b.AddInvertedTicks(tm).Key(); !errors.Is(err, keys.ErrInvalidArgument) {
			t.Errorf("Builder.AddInvertedTicks(%v) = %q, %v", tm, k, err)
		}
	}
	for _, s := range []string{"", "3155378976000000000", "9999999999999999999", "315537897599999999x", "03155378975999999999"} {
		if _, err := keys.ParseInvertedTicks(s); !errors.Is(err, keys.ErrMalformed) {
			t.Errorf("ParseInvertedTicks(%q) = %v", s, err)
		}
		if _, err := keys.ParseTicks(s); !errors.Is(err, keys.ErrMalformed) {
			t.Errorf("ParseTicks(%q) = %v", s, err)
		}
	}
	for _, s := range []string{"", "2024-02-30T00:00:00.0000000Z", "0000-01-01T00:00:00.0000000Z", "2024-13-01T00:00:00.0000000Z",
		"2024-01-01T24:00:00.0000000Z", "2024-01-01T00:60:00.0000000Z", "2024-01-01T00:00:60.0000000Z", "2024-01-01 00:00:00.0000000Z",
		"2024-01-01T00:00:00.0000000+", "2024-01-01T00:00:00.000000Z", "2024-01-00T00:00:00.0000000Z", "2023-02-29T00:00:00.0000000Z",
		"+024-01-01T00:00:00.0000000Z"} {
		if _, err := keys.ParseTime(s); !errors.Is(err, keys.ErrMalformed) {
			t.Errorf("ParseTime(%q) = %v", s, err)
		}
	}
	if tm, err := keys.ParseTime("2024-02-29T00:00:00.0000000Z"); err != nil || tm.Day() != 29 {
		t.Errorf("leap day: %v, %v", tm, err)
	}
}

func TestDescendingKey(t *testing.T) {
	tm := date(2024, 5, 1, 12, 34, 56, 7891234)
	k, err := keys.DescendingKey(tm, 7)
	if err != nil || k != "2516877339032108765_18446744073709551608" {
		t.Fatalf("DescendingKey = %q, %v", k, err)
	}
	back, seq, err := keys.ParseDescendingKey(k)
	if err != nil || !back.Equal(tm) || seq != 7 {
		t.Errorf("ParseDescendingKey(%q) = %v, %d, %v", k, back, seq, err)
	}
	// Newest first; within a tick, larger seq first.
	later, _ := keys.DescendingKey(tm.Add(100), 0)
	sameTickNext, _ := keys.DescendingKey(tm, 8)
	earlier, _ := keys.DescendingKey(tm.Add(-100), math.MaxUint64)
	got := []string{k, earlier, sameTickNext, later}
	slices.Sort(got)
	if want := []string{later, sameTickNext, k, earlier}; !slices.Equal(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
	for _, s := range []string{"", k[:39], strings.Replace(k, "_", "!", 1), "3155378976000000000_00000000000000000000", "2516877339032108765_1844674407370955161x"} {
		if _, _, err := keys.ParseDescendingKey(s); !errors.Is(err, keys.ErrMalformed) {
			t.Errorf("ParseDescendingKey(%q) = %v", s, err)
		}
	}
}

func TestGUID(t *testing.T) {
	g := [16]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	if s := keys.GUID(g); s != "12345678-9abc-def0-0123-456789abcdef" {
		t.Errorf("GUID = %q", s)
	}
	if s := keys.GUID(complement(g)); s != "edcba987-6543-210f-fedc-ba9876543210" {
		t.Errorf("GUID(complement) = %q", s)
	}
	if back, err := keys.ParseGUID(keys.GUID(g)); err != nil || back != g {
		t.Errorf("ParseGUID = %x, %v", back, err)
	}
	for _, s := range []string{"", "12345678-9ABC-def0-0123-456789abcdef", "12345678x9abc-def0-0123-456789abcdef", "123456789abcdef00123456789abcdef",
		"{12345678-9abc-def0-0123-456789abcde}", "12345678-9abc-def0-0123-456789abcdeg", "12345678-9abc-def0-0123-456789abcdef0"} {
		if _, err := keys.ParseGUID(s); !errors.Is(err, keys.ErrMalformed) {
			t.Errorf("ParseGUID(%q) = %v", s, err)
		}
	}
	a := [16]byte{0: 1}
	b := [16]byte{0: 1, 15: 1}
	if !(keys.GUID(a) < keys.GUID(b)) || !(keys.GUID(complement(a)) > keys.GUID(complement(b))) {
		t.Error("GUID order")
	}
}

// complement is the descending form of a GUID the doc gives: every byte
// complemented.
func complement(g [16]byte) [16]byte {
	for i := range g {
		g[i] = ^g[i]
	}
	return g
}

func TestShard(t *testing.T) {
	// FNV-1a 32-bit reference values: "" = 0x811c9dc5, "a" = 0xe40c292c,
	// "foobar" = 0xbf9cf968.
	for _, tc := range []struct {
		key    string
		n      int
		bucket int
		prefix string
	}{
		{"", 1, 0, "0"},
		{"", 100, 0x811c9dc5 % 100, "61"},
		{"a", 16, 0xe40c292c % 16, "12"},
		{"foobar", 10000, 0xbf9cf968 % 10000, "5720"},
		{"foobar", 10, 0xbf9cf968 % 10, "0"},
		{"foobar", 11, 0xbf9cf968 % 11, "09"},
	} {
		b, err := keys.Shard(tc.key, tc.n)
		if err != nil || b != tc.bucket {
			t.Errorf("Shard(%q, %d) = %d, %v; want %d", tc.key, tc.n, b, err, tc.bucket)
		}
		k, err := keys.ShardedKey(b, tc.n, tc.key)
		if err != nil || k != tc.prefix+"!"+tc.key {
			t.Errorf("ShardedKey(%d, %d, %q) = %q, %v; want bucket %q", b, tc.n, tc.key, k, err, tc.prefix)
		}
	}
	for _, n := range []int{0, -1, keys.MaxShards + 1} {
		if _, err := keys.Shard("a", n); !errors.Is(err, keys.ErrInvalidArgument) {
			t.Errorf("Shard(n=%d) = %v", n, err)
		}
		if _, err := keys.ShardedKeys(n, "a"); !errors.Is(err, keys.ErrInvalidArgument) {
			t.Errorf("ShardedKeys(%d) = %v", n, err)
		}
		if _, err := keys.ShardedKey(0, n, "a"); !errors.Is(err, keys.ErrInvalidArgument) {
			t.Errorf("ShardedKey(n=%d) = %v", n, err)
		}
	}
	for _, tc := range []struct{ n, w int }{{1, 1}, {10, 1}, {11, 2}, {100, 2}, {101, 3}, {10000, 4}} {
		ks, err := keys.ShardedKeys(tc.n, "")
		if err != nil || len(ks) != tc.n {
			t.Fatalf("ShardedKeys(%d) = %d keys, %v", tc.n, len(ks), err)
		}
		if !slices.IsSorted(ks) || len(ks[0]) != tc.w+1 || len(ks[tc.n-1]) != tc.w+1 {
			t.Errorf("ShardedKeys(%d): %q ... %q, want %d digits and '!'", tc.n, ks[0], ks[tc.n-1], tc.w)
		}
		b, _ := keys.Shard("anything", tc.n)
		if k, _ := keys.ShardedKey(b, tc.n, ""); ks[b] != k {
			t.Errorf("ShardedKeys(%d)[%d] = %q, ShardedKey = %q", tc.n, b, ks[b], k)
		}
	}
	// Spread: 10,000 sequential ids over 16 buckets, none starved.
	counts := make([]int, 16)
	for i := range 10000 {
		b, _ := keys.Shard(keys.Uint(uint64(i)), 16)
		counts[b]++
	}
	for b, c := range counts {
		if c < 400 || c > 850 {
			t.Errorf("bucket %d got %d of 10000", b, c)
		}
	}
}

func mustKey(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

func TestBuilder(t *testing.T) {
	tm := date(2024, 5, 1, 12, 34, 56, 7891234)
	g := [16]byte{15: 1}
	var b keys.Builder
	b.Reset(make([]byte, 0, 256))
	b.Add("order").AddUint(42).AddUintN(7, 3).AddUint(math.MaxUint64 - 1).AddInt(-1).AddInt(^1).
		AddTime(tm).AddTicks(tm).AddInvertedTicks(tm).AddGUID(g).Add("a b")
	k, err := b.Key()
	if err != nil {
		t.Fatal(err)
	}
	want := "order!00000000000000000042!007!18446744073709551614!-9999999999999999999!-9999999999999999998!" +
		"2024-05-01T12:34:56..7891234Z!0638501636967891234!2516877339032108765!" +
		"00000000-0000-0000-0000-000000000001!a\"_b"
	if k != want {
		t.Errorf("Builder key\n got %q\nwant %q", k, want)
	}
	parts, err := keys.Split(k)
	if err != nil || len(parts) != 11 || parts[10] != "a b" {
		t.Errorf("Split = %q, %v", parts, err)
	}
	// Each typed component is written as Add writes its string form.
	strs := []string{"order", keys.Uint(42), "007", keys.Uint(math.MaxUint64 - 1), keys.Int(-1), keys.Int(^1),
		mustKey(keys.Time(tm)), mustKey(keys.Ticks(tm)), mustKey(keys.InvertedTicks(tm)),
		keys.GUID(g), "a b"}
	if c, err := keys.Compound(strs...); err != nil || c != k {
		t.Errorf("Compound of the string forms = %q, %v; want the Builder's %q", c, err, k)
	}
	if !slices.Equal(parts, strs) {
		t.Errorf("Split = %q, want %q", parts, strs)
	}
	// A time appended to a buffer with no room left moves the buffer.
	b.Reset(make([]byte, 0, 1))
	if k, err := b.AddTime(tm).Key(); err != nil || k != "2024-05-01T12:34:56..7891234Z" {
		t.Errorf("AddTime = %q, %v", k, err)
	}

	// Appends after what the buffer holds.
	b.Reset([]byte("PK|"))
	out, err := b.Add("x").Bytes()
	if err != nil || string(out) != "PK|x" {
		t.Errorf("Bytes = %q, %v", out, err)
	}
	if k, _ := b.Key(); k != "x" {
		t.Errorf("Key = %q", k)
	}

	// Errors stick.
	b.Reset(nil)
	b.Add("ok").Add("bad\xff").AddUint(1)
	if _, err := b.Key(); !errors.Is(err, keys.ErrKeyCharacter) {
		t.Errorf("Key after bad component = %v", err)
	}
	if out, err := b.Bytes(); !errors.Is(err, keys.ErrKeyCharacter) || out != nil {
		t.Errorf("Bytes after bad component = %q, %v", out, err)
	}
	b.Reset(nil)
	if _, err := b.AddTime(time.Time{}.Add(-1)).Key(); !errors.Is(err, keys.ErrInvalidArgument) {
		t.Errorf("Key after bad time = %v", err)
	}
	b.Reset(nil)
	if _, err := b.AddUintN(100, 2).Key(); !errors.Is(err, keys.ErrInvalidArgument) {
		t.Errorf("Key after bad UintN = %v", err)
	}
	var zero keys.Builder
	if _, err := zero.Key(); !errors.Is(err, keys.ErrInvalidArgument) {
		t.Errorf("empty Builder = %v", err)
	}
	if _, err := zero.Add(strings.Repeat("x", 1000)).Add(strings.Repeat("y", 100)).Key(); !errors.Is(err, keys.ErrKeyTooLong) {
		t.Errorf("long Builder = %v", err)
	}
}
