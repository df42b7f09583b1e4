package keys_test

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tablekit/tablekit/keys"
)

// Fuzz inputs encode a tuple as one string with components separated by
// the byte 0xFF, which never occurs in valid UTF-8, so no valid component
// is lost; every other byte, U+0000 included, is component content.
func tuple(s string) []string { return strings.Split(s, "\xff") }

// valid turns the invalid UTF-8 of a fuzzed component into '/', so that the
// order targets compare encodable tuples rich in escaped characters.
func valid(c string) string { return strings.ToValidUTF8(c, "/") }

func validAll(t []string) []string {
	out := make([]string, len(t))
	for i, c := range t {
		out[i] = valid(c)
	}
	return out
}

// sanitize maps what Azure refuses in a raw key to characters that are
// allowed, for the checks of PrefixEnd on raw keys.
func sanitize(c string) string {
	c = strings.ToValidUTF8(c, `"`)
	return strings.Map(func(r rune) rune {
		switch {
		case r < 0x20:
			return rune(" !\"$"[r%4])
		case r == '/':
			return '.'
		case r == '\\':
			return '['
		case r == '#', r == '?':
			return ' '
		case r >= 0x7f && r <= 0x9f:
			return '~'
		}
		return r
	}, c)
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// utf16Compare compares as Azure and Azurite (JavaScript) do: by UTF-16
// code units.
func utf16Compare(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

// tupleCompare compares tuples component by component; a tuple sorts
// before its extensions.
func tupleCompare(a, b []string, cmp func(a, b string) int) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := cmp(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// refEscape is the escape table of the format (see keys.Separator),
// written out independently of the implementation.
func refEscape(r rune) string {
	switch {
	case r <= 0x09:
		return `"` + string('0'+r)
	case r <= 0x1F:
		return `"` + string('A'+r-0x0A)
	case r >= 0x80 && r <= 0x87:
		return "~" + string('2'+r-0x80)
	case r >= 0x88 && r <= 0x9F:
		return "~" + string('A'+r-0x88)
	}
	switch r {
	case ' ':
		return `"_`
	case '!':
		return `"e`
	case '"':
		return `"q`
	case '#':
		return `"|`
	case '.':
		return ".."
	case '/':
		return ".|"
	case '>':
		return ">>"
	case '?':
		return ">|"
	case '[':
		return "[["
	case '\\':
		return "[|"
	case '~':
		return "~0"
	case 0x7F:
		return "~1"
	}
	return string(r)
}

// refCompound is Compound by the table, without the checks.
func refCompound(tu []string) string {
	var b strings.Builder
	for i, c := range tu {
		if i > 0 {
			b.WriteByte('!')
		}
		for _, r := range c {
			b.WriteString(refEscape(r))
		}
	}
	return b.String()
}

// encodeOrReject checks that Compound either encodes the tuple into the
// valid key the format table gives, which decodes back, or rejects it for
// a reason that is really there: invalid UTF-8, or a key over 1 KiB of
// UTF-16.
func encodeOrReject(t *testing.T, tu []string) (string, bool) {
	t.Helper()
	k, err := keys.Compound(tu...)
	if err != nil {
		var ke *keys.KeyError
		switch {
		case errors.As(err, &ke) && ke.Component >= 0:
			if ke.Component >= len(tu) || utf8.ValidString(tu[ke.Component]) || !errors.Is(err, keys.ErrKeyCharacter) {
				t.Fatalf("Compound(%q) = %v, but component %d is valid UTF-8", tu, err, ke.Component)
			}
			for i := 0; i < ke.Component; i++ {
				if !utf8.ValidString(tu[i]) {
					t.Fatalf("Compound(%q) = %v, but component %d was bad first", tu, err, i)
				}
			}
		case errors.Is(err, keys.ErrKeyTooLong):
			for _, c := range tu {
				if !utf8.ValidString(c) {
					t.Fatalf("Compound(%q) = %v, but a component is invalid", tu, err)
				}
			}
			if n := 2 * len(utf16.Encode([]rune(refCompound(tu)))); n <= keys.MaxKeyLen {
				t.Fatalf("Compound(%q) = %v, but the encoding is %d bytes in UTF-16", tu, err, n)
			}
		default:
			t.Fatalf("Compound(%q) = unexpected error %v", tu, err)
		}
		return "", false
	}
	if want := refCompound(tu); k != want {
		t.Fatalf("Compound(%q) = %q, want %q by the format table", tu, k, want)
	}
	if err := keys.Validate(k); err != nil {
		t.Fatalf("Compound(%q) = %q: %v", tu, k, err)
	}
	back, err := keys.Split(k)
	if err != nil || !slices.Equal(back, tu) {
		t.Fatalf("Split(Compound(%q)) = %q, %v", tu, back, err)
	}
	return k, true
}

// compoundSeeds hold what the format must escape or leave alone: Azure's
// refused characters, every lead, control characters of both blocks, and
// characters on both sides of the UTF-16 / code point divergence.
var compoundSeeds = []string{
	"", "empid\xff000223", "a!b\xff\"\xff ", "\xff", "x/y", "a\\b", "#tag", "what?", "https://contoso.com/a?b=c#d",
	"\x00", "\x00\xff\x00\x00", "tab\tnl\n\x1f", "\x7f\u0080\u0085\u009f\u00a0", "..\xff./", ">?\xff>>", "[\\\xff[[", "~\x7f\xff~~0",
	"|", ".|", "\"|", "日本\xff\U0001F600", "\U0001F600/\uffff", "\ue000\xff\U0010FFFF", `"""`, "a\xfe", strings.Repeat("!", 600), strings.Repeat("/", 300),
}

// FuzzCompoundRoundTrip: any tuple is encoded as the format table says
// (and decodes back exactly) or rejected for a real reason; any string
// Split accepts re-encodes to itself; nothing panics.
func FuzzCompoundRoundTrip(f *testing.F) {
	for _, s := range compoundSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tu := tuple(s)
		encodeOrReject(t, tu)
		encodeOrReject(t, validAll(tu))
		// s as a key: Split accepts exactly the encodings.
		if parts, err := keys.Split(s); err == nil {
			k, err := keys.Compound(parts...)
			if err != nil || k != s {
				t.Fatalf("Compound(Split(%q)) = %q, %v", s, k, err)
			}
		} else if !errors.Is(err, keys.ErrMalformed) && !errors.Is(err, keys.ErrKeyCharacter) && !errors.Is(err, keys.ErrKeyTooLong) {
			t.Fatalf("Split(%q) = unexpected error %v", s, err)
		}
		// Validate agrees with an independent statement of the rules.
		if got, want := keys.Validate(s) == nil, slowValid(s); got != want {
			t.Fatalf("Validate(%q) ok = %v, want %v", s, got, want)
		}
	})
}

// FuzzCompoundOrder: sign(compare(enc(a), enc(b))) == sign(compare(a, b)),
// both in Go's byte order and in UTF-16 order (Azure's), for tuples whose
// components hold any character.
func FuzzCompoundOrder(f *testing.F) {
	for _, p := range [][2]string{
		{"a\xffz", "a0\xff"}, {"a", "a\xff"}, {"", "\xff"}, {"a b", "a!b"}, {"a\xff!", "a!"},
		{`"`, "!"}, {"\uffff", "\U00010000"}, {"\ue000", "\U0010ffff"}, {"x\xff", "x\xff\xff"},
		{"a/", "a."}, {"a/", "a0"}, {"a.", "a.\xff"}, {"a\\", "a["}, {"a\\", "a]"}, {"a?", "a>"}, {"a?", "a@"},
		{"a#", `a"`}, {"a#", "a$"}, {"\x00", "\x1f"}, {"\x1f", " "}, {"a~", "a\x7f"}, {"\u009f", "\u00a0"},
		{"\x00", ""}, {"\x00\xff", "\xff\x00"}, {"|", "~"}, {"a.|", "a/"}, {"\U0001F600/", "\U0001F600."},
		{"\U0001F600", "\uffff/"}, {"dir/a", "dir\xffa"},
	} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, sa, sb string) {
		a, b := validAll(tuple(sa)), validAll(tuple(sb))
		ka, oka := encodeOrReject(t, a)
		kb, okb := encodeOrReject(t, b)
		if !oka || !okb {
			return // too long
		}
		if got, want := sign(strings.Compare(ka, kb)), sign(tupleCompare(a, b, strings.Compare)); got != want {
			t.Fatalf("byte order: %q vs %q = %d, tuples %q vs %q = %d", ka, kb, got, a, b, want)
		}
		if got, want := sign(utf16Compare(ka, kb)), sign(tupleCompare(a, b, utf16Compare)); got != want {
			t.Fatalf("UTF-16 order: %q vs %q = %d, tuples %q vs %q = %d", ka, kb, got, a, b, want)
		}
	})
}

// FuzzRanges: TupleRange and ComponentPrefixRange select exactly the keys
// of the tuples that extend the prefix, and PrefixEnd bounds exactly the
// keys that start with a prefix. The order caveat for supplementary-plane
// characters (see PrefixEnd) decides which orders are checked.
func FuzzRanges(f *testing.F) {
	for _, s := range [][3]string{
		{"a", "", "a\xffb"}, {"email", "jones", "email\xffjonesj@contoso.com"}, {"a", `x"`, `a` + "\xff" + `x""`},
		{"a", `x"`, "a\xffx\"!"}, {"a\xffb\"", "", "a\xffb\"\xffc"}, {"", "\uffff", "\uffff\uffff"},
		{"a", "x\uffff", "a\xffx\U00010000"}, {"a", "\ud7ff", "a\xff\ud7ff\U00010000"}, {"", "", ""},
		{"path", "docs/", "path\xffdocs/readme.md"}, {"path", "docs.", "path\xffdocs/x"}, {"a/", "", "a/\xff\x00"},
		{"", "a.", "a.|x"}, {"", "~", "~\x7f"}, {"#", "?", "#\xff?\\"}, {"\x00", "\x1f", "\x00\xff\x1f\x00"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, sp, partial, sk string) {
		prefix := validAll(tuple(sp))
		if sp == "" {
			prefix = nil // also cover the empty tuple prefix
		}
		partial = valid(partial)
		k := validAll(tuple(sk))
		key, ok := encodeOrReject(t, k)
		if !ok {
			return
		}
		type order struct {
			name string
			cmp  func(a, b string) int
		}
		orders := []order{{"byte", strings.Compare}, {"UTF-16", utf16Compare}}

		// TupleRange: the tuple and its extensions, for any content.
		if lo, hi, err := keys.TupleRange(prefix...); err == nil {
			want := len(k) >= len(prefix) && slices.Equal(k[:len(prefix)], prefix)
			for _, o := range orders {
				in := o.cmp(key, lo) >= 0 && (len(prefix) == 0 || o.cmp(key, hi) < 0)
				if in != want {
					t.Fatalf("%s order: key %q (%q) in TupleRange(%q) = [%q, %q): %v, want %v", o.name, key, k, prefix, lo, hi, in, want)
				}
			}
		} else if !errors.Is(err, keys.ErrKeyTooLong) {
			t.Fatalf("TupleRange(%q): %v", prefix, err)
		}

		// ComponentPrefixRange: one more component that starts with partial.
		if lo, hi, err := keys.ComponentPrefixRange(prefix, partial); err == nil {
			want := len(k) > len(prefix) && slices.Equal(k[:len(prefix)], prefix) && strings.HasPrefix(k[len(prefix)], partial)
			for _, o := range caveatOrders(lo, orders) {
				in := o.cmp(key, lo) >= 0 && (hi == "" || o.cmp(key, hi) < 0)
				if in != want {
					t.Fatalf("%s order: key %q (%q) in ComponentPrefixRange(%q, %q) = [%q, %q): %v, want %v", o.name, key, k, prefix, partial, lo, hi, in, want)
				}
			}
		} else if !errors.Is(err, keys.ErrKeyTooLong) {
			t.Fatalf("ComponentPrefixRange(%q, %q): %v", prefix, partial, err)
		}

		// PrefixEnd on raw strings: sanitize(partial) as a prefix of sanitize(sk).
		raw, rawPrefix := sanitize(sk), sanitize(partial)
		if keys.Validate(raw) == nil && keys.Validate(rawPrefix) == nil {
			end, ok := keys.PrefixEnd(rawPrefix)
			if ok && (keys.Validate(end) != nil && keys.KeySize(end) <= keys.MaxKeyLen || !utf8.ValidString(end)) {
				t.Fatalf("PrefixEnd(%q) = %q: not a valid key", rawPrefix, end)
			}
			want := strings.HasPrefix(raw, rawPrefix)
			for _, o := range caveatOrders(rawPrefix, orders) {
				in := o.cmp(raw, rawPrefix) >= 0 && (!ok || o.cmp(raw, end) < 0)
				if in != want {
					t.Fatalf("%s order: %q in [%q, %q) = %v, want %v", o.name, raw, rawPrefix, end, in, want)
				}
			}
		}
	})
}

// caveatOrders drops the orders in which PrefixEnd(lo) is documented not to
// hold for supplementary-plane content: byte order after U+FFFF; UTF-16
// order after U+D7FF or U+10FFFF.
func caveatOrders[O any](lo string, orders []O) []O {
	var out []O
	if !strings.ContainsRune(lo, 0xFFFF) {
		out = append(out, orders[0])
	}
	if !strings.ContainsRune(lo, 0xD7FF) && !strings.ContainsRune(lo, 0x10FFFF) {
		out = append(out, orders[1])
	}
	return out
}

// FuzzShardedKey: ShardedKey and ParseShardedKey are inverses, a sharded
// key is valid, and within one bucket sharded keys keep the order of their
// keys.
func FuzzShardedKey(f *testing.F) {
	f.Add("clicks", "clicks2", uint16(3), uint16(16))
	f.Add("", "a!b", uint16(0), uint16(1))
	f.Add("a/b", "\x00", uint16(9999), uint16(10000))
	f.Add(strings.Repeat("x", 509), "y", uint16(5), uint16(10))
	f.Fuzz(func(t *testing.T, a, b string, bucket, n uint16) {
		ka, err := keys.ShardedKey(int(bucket), int(n), a)
		switch {
		case n < 1 || n > keys.MaxShards || bucket >= n:
			if !errors.Is(err, keys.ErrInvalidArgument) {
				t.Fatalf("ShardedKey(%d, %d, %q) = %q, %v", bucket, n, a, ka, err)
			}
			return
		case keys.Validate(a) != nil:
			if !errors.Is(err, keys.ErrKeyCharacter) && !errors.Is(err, keys.ErrKeyTooLong) {
				t.Fatalf("ShardedKey(%d, %d, %q) = %q, %v", bucket, n, a, ka, err)
			}
			return
		case err != nil:
			if !errors.Is(err, keys.ErrKeyTooLong) || keys.KeySize(a)+2*(shardWidth(int(n))+1) <= keys.MaxKeyLen {
				t.Fatalf("ShardedKey(%d, %d, %q) = %v", bucket, n, a, err)
			}
			return
		}
		if keys.Validate(ka) != nil || len(ka) != shardWidth(int(n))+1+len(a) {
			t.Fatalf("ShardedKey(%d, %d, %q) = %q", bucket, n, a, ka)
		}
		gb, ga, err := keys.ParseShardedKey(ka, int(n))
		if err != nil || gb != int(bucket) || ga != a {
			t.Fatalf("ParseShardedKey(%q) = %d, %q, %v", ka, gb, ga, err)
		}
		if kb, err := keys.ShardedKey(int(bucket), int(n), b); err == nil {
			if sign(strings.Compare(ka, kb)) != sign(strings.Compare(a, b)) || sign(utf16Compare(ka, kb)) != sign(utf16Compare(a, b)) {
				t.Fatalf("order of %q, %q differs from %q, %q", ka, kb, a, b)
			}
		}
		// Any string ParseShardedKey accepts re-encodes to itself.
		if gb, ga, err := keys.ParseShardedKey(b, int(n)); err == nil {
			if k, err := keys.ShardedKey(gb, int(n), ga); err != nil || k != b {
				t.Fatalf("ShardedKey(ParseShardedKey(%q)) = %q, %v", b, k, err)
			}
		} else if !errors.Is(err, keys.ErrMalformed) && !errors.Is(err, keys.ErrKeyCharacter) && !errors.Is(err, keys.ErrKeyTooLong) {
			t.Fatalf("ParseShardedKey(%q): %v", b, err)
		}
	})
}

// FuzzIntOrder: the number encoders round-trip and preserve numeric order,
// and their documented descending forms (Int(^v), Uint(math.MaxUint64-v))
// reverse it.
func FuzzIntOrder(f *testing.F) {
	f.Add(int64(0), int64(-1), uint64(0), uint64(math.MaxUint64), uint8(6))
	f.Add(int64(math.MinInt64), int64(math.MaxInt64), uint64(9), uint64(10), uint8(1))
	f.Add(int64(-10), int64(-9), uint64(99999), uint64(100000), uint8(19))
	f.Fuzz(func(t *testing.T, a, b int64, ua, ub uint64, w uint8) {
		want := sign(boolInt(a > b) - boolInt(a < b))
		uwant := sign(boolInt(ua > ub) - boolInt(ua < ub))

		ea, eb := keys.Int(a), keys.Int(b)
		check(t, "Int", ea, eb, want, len(ea) == 20)
		ia, ib := keys.Int(^a), keys.Int(^b)
		check(t, "Int(^v)", ia, ib, -want, len(ia) == 20)
		if v, err := keys.ParseInt(ea); err != nil || v != a {
			t.Fatalf("ParseInt(%q) = %d, %v; want %d", ea, v, err, a)
		}
		if v, err := keys.ParseInt(ia); err != nil || ^v != a {
			t.Fatalf("^ParseInt(%q) = %d, %v; want %d", ia, ^v, err, a)
		}

		xa, xb := keys.Uint(ua), keys.Uint(ub)
		check(t, "Uint", xa, xb, uwant, len(xa) == 20)
		va, vb := keys.Uint(math.MaxUint64-ua), keys.Uint(math.MaxUint64-ub)
		check(t, "Uint(math.MaxUint64-v)", va, vb, -uwant, len(va) == 20)
		if v, err := keys.ParseUint(xa); err != nil || v != ua {
			t.Fatalf("ParseUint(%q) = %d, %v", xa, v, err)
		}
		if v, err := keys.ParseUint(va); err != nil || math.MaxUint64-v != ua {
			t.Fatalf("math.MaxUint64-ParseUint(%q) = %d, %v", va, math.MaxUint64-v, err)
		}

		width := int(w%22) - 1 // -1..20: invalid widths too
		na, errA := keys.UintN(ua, width)
		switch {
		case width < 1 || width > 20:
			if !errors.Is(errA, keys.ErrInvalidArgument) {
				t.Fatalf("UintN(%d, %d) = %q, %v", ua, width, na, errA)
			}
		case width < 20 && ua >= pow10(width):
			if !errors.Is(errA, keys.ErrInvalidArgument) {
				t.Fatalf("UintN(%d, %d) = %q, %v", ua, width, na, errA)
			}
		default:
			if errA != nil || len(na) != width {
				t.Fatalf("UintN(%d, %d) = %q, %v", ua, width, na, errA)
			}
			if v, err := keys.ParseUintN(na, width); err != nil || v != ua {
				t.Fatalf("ParseUintN(%q) = %d, %v", na, v, err)
			}
			ubw := ub
			if width < 20 {
				ubw = ub % pow10(width)
			}
			nb, err := keys.UintN(ubw, width)
			if err != nil {
				t.Fatal(err)
			}
			check(t, "UintN", na, nb, sign(boolInt(ua > ubw)-boolInt(ua < ubw)), true)
		}
		// Every encoding is a valid key that needs no escaping in a compound key.
		for _, s := range []string{ea, ia, xa, va} {
			if k, err := keys.Compound(s); err != nil || k != s {
				t.Fatalf("Compound(%q) = %q, %v", s, k, err)
			}
		}
	})
}

// shardWidth is the documented width of a bucket among n: that of n-1.
func shardWidth(n int) int { return len(strconv.Itoa(n - 1)) }

func pow10(n int) uint64 {
	p := uint64(1)
	for range n {
		p *= 10
	}
	return p
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func check(t *testing.T, name, a, b string, want int, widthOK bool) {
	t.Helper()
	if got := sign(strings.Compare(a, b)); got != want || !widthOK {
		t.Fatalf("%s: compare(%q, %q) = %d, want %d (width ok: %v)", name, a, b, got, want, widthOK)
	}
}

// FuzzTimeOrder: the time encoders round-trip to 100 ns, preserve (Time,
// Ticks) or reverse (InvertedTicks, DescendingKey) order, and reject times
// outside 0001..9999 with ErrInvalidArgument, never panicking.
func FuzzTimeOrder(f *testing.F) {
	f.Add(int64(0), uint32(0), int64(0), uint32(99), uint64(1), uint64(2))
	f.Add(int64(-62135596800), uint32(0), int64(253402300799), uint32(999999999), uint64(0), uint64(math.MaxUint64))
	f.Add(int64(-62135596801), uint32(999999999), int64(253402300800), uint32(0), uint64(5), uint64(5))
	f.Add(int64(math.MinInt64), uint32(0), int64(math.MaxInt64), uint32(0), uint64(5), uint64(5))
	f.Fuzz(func(t *testing.T, sa int64, na uint32, sb int64, nb uint32, qa, qb uint64) {
		a := time.Unix(sa, int64(na%1e9))
		b := time.Unix(sb, int64(nb%1e9))
		_, errA := keys.Ticks(a)
		_, errB := keys.Ticks(b)
		inRange := func(tm time.Time) bool {
			return !tm.Before(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)) && tm.Before(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))
		}
		for _, c := range []struct {
			tm  time.Time
			err error
		}{{a, errA}, {b, errB}} {
			if inRange(c.tm) != (c.err == nil) {
				t.Fatalf("Ticks(%v) error %v", c.tm, c.err)
			}
			if c.err != nil && !errors.Is(c.err, keys.ErrInvalidArgument) {
				t.Fatalf("Ticks(%v) error %v", c.tm, c.err)
			}
			_, e1 := keys.Time(c.tm)
			_, e2 := keys.InvertedTicks(c.tm)
			_, e3 := keys.DescendingKey(c.tm, 1)
			if (e1 == nil) != (c.err == nil) || (e2 == nil) != (c.err == nil) || (e3 == nil) != (c.err == nil) {
				t.Fatalf("errors disagree for %v: %v %v %v %v", c.tm, c.err, e1, e2, e3)
			}
		}
		if errA != nil || errB != nil {
			return
		}
		a100, b100 := a.Truncate(100), b.Truncate(100) // Truncate works from the zero time: same as ticks
		want := a100.Compare(b100)
		enc := func(name string, fn func(time.Time) (string, error), parse func(string) (time.Time, error), dir int) {
			ea, err := fn(a)
			if err != nil {
				t.Fatal(err)
			}
			eb, err := fn(b)
			if err != nil {
				t.Fatal(err)
			}
			check(t, name, ea, eb, dir*want, keys.Validate(ea) == nil)
			back, err := parse(ea)
			if err != nil || !back.Equal(a100) || back.Location() != time.UTC {
				t.Fatalf("%s round trip of %v: %q -> %v, %v", name, a, ea, back, err)
			}
		}
		enc("Time", keys.Time, keys.ParseTime, 1)
		enc("Ticks", keys.Ticks, keys.ParseTicks, 1)
		enc("InvertedTicks", keys.InvertedTicks, keys.ParseInvertedTicks, -1)

		da, _ := keys.DescendingKey(a, qa)
		db, _ := keys.DescendingKey(b, qb)
		dwant := -want
		if want == 0 {
			dwant = -sign(boolInt(qa > qb) - boolInt(qa < qb))
		}
		check(t, "DescendingKey", da, db, dwant, len(da) == 40)
		bt, bq, err := keys.ParseDescendingKey(da)
		if err != nil || !bt.Equal(a100) || bq != qa {
			t.Fatalf("ParseDescendingKey(%q) = %v, %d, %v", da, bt, bq, err)
		}
	})
}

// FuzzDecode: every decoder accepts exactly the canonical encodings of its
// encoder and never panics.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"", "00000000000000000042", "-9999999999999999999", "3155378975999999999",
		"2024-05-01T12:34:56.7891234Z", "12345678-9abc-def0-0123-456789abcdef", "2516877339032108765_18446744073709551608", `a"!b!c`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := keys.ParseUint(s); err == nil && keys.Uint(v) != s {
			t.Fatalf("ParseUint(%q) = %d", s, v)
		}
		if v, err := keys.ParseUintN(s, len(s)); err == nil {
			if e, _ := keys.UintN(v, len(s)); e != s {
				t.Fatalf("ParseUintN(%q) = %d", s, v)
			}
		}
		if v, err := keys.ParseInt(s); err == nil && keys.Int(v) != s {
			t.Fatalf("ParseInt(%q) = %d", s, v)
		}
		for _, c := range []struct {
			name  string
			parse func(string) (time.Time, error)
			enc   func(time.Time) (string, error)
		}{{"Time", keys.ParseTime, keys.Time}, {"Ticks", keys.ParseTicks, keys.Ticks}, {"InvertedTicks", keys.ParseInvertedTicks, keys.InvertedTicks}} {
			if tm, err := c.parse(s); err == nil {
				if e, err := c.enc(tm); err != nil || e != s {
					t.Fatalf("Parse%s(%q) = %v, re-encoded %q, %v", c.name, s, tm, e, err)
				}
			} else if !errors.Is(err, keys.ErrMalformed) {
				t.Fatalf("Parse%s(%q): %v", c.name, s, err)
			}
		}
		if tm, q, err := keys.ParseDescendingKey(s); err == nil {
			if e, _ := keys.DescendingKey(tm, q); e != s {
				t.Fatalf("ParseDescendingKey(%q) re-encoded %q", s, e)
			}
		}
		if g, err := keys.ParseGUID(s); err == nil && keys.GUID(g) != s {
			t.Fatalf("ParseGUID(%q)", s)
		}
		if _, err := keys.Shard(s, 1+len(s)%keys.MaxShards); err != nil {
			t.Fatal(err)
		}
	})
}
