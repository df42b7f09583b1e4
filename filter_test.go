package tablekit

import (
	"errors"
	"math"
	"net/netip"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

type (
	filterTestDept  string
	filterTestLevel int32
	filterTestCount int
	filterTestFlag  bool
	filterTestBlob  []byte
	filterTestUUID  [16]byte
	filterTestRatio float32
	filterTestU32   uint32

	// filterTestText fails to marshal when empty.
	filterTestText struct{ s string }
	// filterTestPtrText marshals through a pointer receiver only.
	filterTestPtrText struct{ s string }
	// filterTestStringText is a string kind: its MarshalText is ignored.
	filterTestStringText string
	// filterTestGUIDText is a guid array kind: its MarshalText is ignored.
	filterTestGUIDText [16]byte
)

func (t filterTestText) MarshalText() ([]byte, error) {
	if t.s == "" {
		return nil, errors.New("empty")
	}
	return []byte("<" + t.s + ">"), nil
}

func (t *filterTestPtrText) MarshalText() ([]byte, error) { return []byte(t.s), nil }

func (filterTestStringText) MarshalText() ([]byte, error) { return []byte("marshalled"), nil }

func (filterTestGUIDText) MarshalText() ([]byte, error) { return []byte("marshalled"), nil }

func TestWhereLiterals(t *testing.T) {
	str := "o'k"
	i64 := int64(-7)
	addr := netip.IPv6Loopback()
	when := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	guid := [16]byte{0x1b, 0x4e, 0x28, 0xba, 0x2f, 0xa1, 0x11, 0xd2, 0x88, 0x3f, 0x00, 0x16, 0xd3, 0xcc, 0x42, 0x7e}
	const guidText = "guid'1b4e28ba-2fa1-11d2-883f-0016d3cc427e'"
	east := time.FixedZone("UTC+5", 5*3600)

	tests := []struct {
		name string
		arg  any
		want string
	}{
		{"string", "Sales", "'Sales'"},
		{"string empty", "", "''"},
		{"string quote", "o'k", "'o''k'"},
		{"string quotes only", "''", "''''''"},
		{"string injection", "x' or PartitionKey ne '", "'x'' or PartitionKey ne '''"},
		{"string double quote", `say "hi"`, `'say "hi"'`},
		{"string question mark", "why?", "'why?'"},
		{"string unicode", "Zürich 東京 🎉", "'Zürich 東京 🎉'"},
		{"string control", "a\x00b\n", "'a\x00b\n'"},
		{"bool true", true, "true"},
		{"bool false", false, "false"},
		{"int32", int32(123), "123"},
		{"int32 min", int32(math.MinInt32), "-2147483648"},
		{"int16", int16(-5), "-5"},
		{"int8", int8(-128), "-128"},
		{"uint8", uint8(255), "255"},
		{"uint16", uint16(65535), "65535"},
		{"uint32", uint32(7), "7L"},
		{"uint32 max", uint32(math.MaxUint32), "4294967295L"},
		{"int", 123, "123L"},
		{"int negative", -1, "-1L"},
		{"int64", int64(math.MaxInt64), "9223372036854775807L"},
		{"int64 min", int64(math.MinInt64), "-9223372036854775808L"},
		{"uint fits", uint(42), "42L"},
		{"uint64 max int64", uint64(math.MaxInt64), "9223372036854775807L"},
		{"float64 whole", 2.0, "2.0"},
		{"float64 zero", 0.0, "0.0"},
		{"float64 negative zero", math.Copysign(0, -1), "-0.0"},
		{"float64 fraction", 0.1, "0.1"},
		{"float64 negative", -2.5, "-2.5"},
		{"float64 large", 1e21, "1000000000000000000000.0"},
		{"float64 small", 2.5e-7, "0.00000025"},
		{"float64 max", math.MaxFloat64, strconv.FormatFloat(math.MaxFloat64, 'f', -1, 64) + ".0"},
		{"float64 smallest", math.SmallestNonzeroFloat64, "0." + strings.Repeat("0", 323) + "5"},
		{"float32 widened exactly", float32(0.1), "0.10000000149011612"},
		{"float32 whole", float32(3), "3.0"},
		{"time utc", when, "datetime'2024-05-06T07:08:09.1234567Z'"},
		{"time other zone", time.Date(2024, 5, 6, 12, 8, 9, 0, east), "datetime'2024-05-06T07:08:09.0000000Z'"},
		{"time zero value", time.Time{}, "datetime'0001-01-01T00:00:00.0000000Z'"},
		{"time max", time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), "datetime'9999-12-31T23:59:59.9999999Z'"},
		{"bytes", []byte{0x00, 0xab, 0xff}, "X'00abff'"},
		{"bytes empty", []byte{}, "X''"},
		{"bytes nil", []byte(nil), "X''"},
		{"bytes long", make([]byte, 100), "X'" + strings.Repeat("00", 100) + "'"},
		{"guid array", guid, guidText},
		{"guid named array", filterTestUUID(guid), guidText},
		{"pointer to string", &str, "'o''k'"},
		{"pointer to int64", &i64, "-7L"},
		{"pointer to time", &when, "datetime'2024-05-06T07:08:09.1234567Z'"},
		{"pointer to guid", &guid, guidText},
		{"named string", filterTestDept("Sales"), "'Sales'"},
		{"named int32", filterTestLevel(9), "9"},
		{"named int", filterTestCount(9), "9L"},
		{"named bool", filterTestFlag(true), "true"},
		{"named bytes", filterTestBlob{1, 2}, "X'0102'"},
		{"named float32", filterTestRatio(0.5), "0.5"},
		{"named uint32", filterTestU32(9), "9L"},
		{"text marshaler", netip.MustParseAddr("10.0.0.1"), "'10.0.0.1'"},
		{"text marshaler quote", filterTestText{"o'k"}, "'<o''k>'"},
		{"pointer to text marshaler", &addr, "'::1'"},
		{"pointer receiver text marshaler", &filterTestPtrText{"x'y"}, "'x''y'"},
		{"named string with MarshalText stays a string", filterTestStringText("raw"), "'raw'"},
		{"pointer to guid with MarshalText stays a guid", &filterTestGUIDText{0xab}, "guid'ab000000-0000-0000-0000-000000000000'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Where("P eq ?", tt.arg)
			got, err := f.build()
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if want := "P eq " + tt.want; got != want {
				t.Fatalf("got  %q\nwant %q", got, want)
			}
			if f.String() != got {
				t.Errorf("String() = %q, Build() = %q", f.String(), got)
			}
			if f.Err() != nil || f.IsZero() {
				t.Errorf("Err() = %v, IsZero() = %v", f.Err(), f.IsZero())
			}
			if p := f.Properties(); !reflect.DeepEqual(p, []string{"P"}) {
				t.Errorf("Properties() = %q, want [P]", p)
			}
		})
	}
}

// TestDoubleLiteralsRoundTrip checks that double literals parse back to the
// same float64 bits and always look like doubles (never integers or
// exponent forms, which Azurite does not parse).
func TestDoubleLiteralsRoundTrip(t *testing.T) {
	vals := []float64{0, 1, -1, 0.1, 1.0 / 3, math.Pi, 1e15, 1e16, 1e17, 123456789012345678, 1e-5,
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 0x1p-1022, math.MaxInt64, math.Nextafter(1, 2)}
	for e := -320; e <= 308; e += 7 {
		vals = append(vals, 1.2345678901234567*math.Pow(10, float64(e)))
	}
	for _, v := range vals {
		checkFilterDoubleLiteral(t, v)
		checkFilterDoubleLiteral(t, -v)
		checkFilterDoubleLiteral(t, float64(float32(v)))
	}
}

var filterDoubleLiteralRE = regexp.MustCompile(`^-?[0-9]+\.[0-9]+$`)

func checkFilterDoubleLiteral(t *testing.T, v float64) {
	t.Helper()
	var b strings.Builder
	if err := filterAppendDouble(&b, v); err != nil {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return
		}
		t.Fatalf("filterAppendDouble(%v): %v", v, err)
	}
	lit := b.String()
	if !filterDoubleLiteralRE.MatchString(lit) {
		t.Fatalf("literal for %v is %q: not a plain decimal double", v, lit)
	}
	back, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.Float64bits(back) != math.Float64bits(v) {
		t.Fatalf("literal %q for %v parses back as %v, %v", lit, v, back, err)
	}
}

func TestWhereErrors(t *testing.T) {
	var nilStr *string
	var nilBytes *[]byte
	str := "x"
	pstr := &str
	tests := []struct {
		name string
		expr string
		args []any
		msg  string // substring of the error message
	}{
		{"too few args", "A eq ? and B eq ?", []any{"x"}, "2 placeholders, 1 arguments"},
		{"too many args", "A eq ?", []any{"x", "y"}, "1 placeholders, 2 arguments"},
		{"args without placeholder", "A eq 'x'", []any{"x"}, "0 placeholders, 1 arguments"},
		{"empty expr with arg", "", []any{1}, "0 placeholders, 1 arguments"},
		{"no args", "A eq ?", nil, "1 placeholders, 0 arguments"},
		{"question in single quotes", "A eq '?'", nil, "inside a quoted literal"},
		{"question in quotes with args", "A eq 'a?b' and B eq ?", []any{"x"}, "inside a quoted literal"},
		{"question in double quotes", `A eq "?"`, []any{"x"}, "inside a quoted literal"},
		{"question in typed literal", "A eq datetime'?'", []any{time.Now()}, "inside a quoted literal"},
		{"unterminated quote", "A eq 'abc and B eq ?", []any{"x"}, "unterminated"},
		{"unterminated after doubled quote", "A eq 'it''s", nil, "unterminated"},
		{"unterminated double quote", `A eq "abc`, nil, "unterminated"},
		{"glued to name", "A eq ?x", []any{"x"}, "separated"},
		{"glued after name", "A eq x?", []any{"x"}, "separated"},
		{"glued to quote", "A eq ''?", []any{"x"}, "separated"},
		{"two placeholders glued", "A eq ??", []any{"x", "y"}, "separated"},
		{"negated placeholder", "A eq -?", []any{1}, "separated"},
		{"nil", "A eq ?", []any{nil}, "nil value"},
		{"nil pointer", "A eq ?", []any{nilStr}, "nil pointer"},
		{"nil pointer to bytes", "A eq ?", []any{nilBytes}, "nil pointer"},
		{"pointer to pointer", "A eq ?", []any{&pstr}, "one pointer indirection"},
		{"invalid utf8", "A eq ?", []any{"a\xffb"}, "not valid UTF-8"},
		{"text marshaler fails", "A eq ?", []any{filterTestText{}}, "MarshalText: empty"},
		{"text marshaler invalid utf8", "A eq ?", []any{filterTestText{"\xff"}}, "not valid UTF-8"},
		{"pointer receiver text marshaler by value", "A eq ?", []any{filterTestPtrText{}}, "unsupported type tablekit.filterTestPtrText"},
		{"uint too big", "A eq ?", []any{uint(math.MaxUint64)}, "does not fit in Edm.Int64"},
		{"uint64 too big", "A eq ?", []any{uint64(math.MaxInt64 + 1)}, "does not fit in Edm.Int64"},
		{"NaN", "A eq ?", []any{math.NaN()}, "not a finite number"},
		{"+Inf", "A eq ?", []any{math.Inf(1)}, "not a finite number"},
		{"-Inf float32", "A eq ?", []any{float32(math.Inf(-1))}, "not a finite number"},
		{"year 0", "A eq ?", []any{time.Date(0, 12, 31, 23, 0, 0, 0, time.UTC)}, "outside years"},
		{"year 10000", "A eq ?", []any{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "outside years"},
		{"year 1 east of UTC is year 0 in UTC", "A eq ?", []any{time.Date(1, 1, 1, 0, 30, 0, 0, time.FixedZone("", 3600))}, "outside years"},
		{"complex", "A eq ?", []any{complex(1, 2)}, "unsupported type complex128"},
		{"uintptr", "A eq ?", []any{uintptr(1)}, "unsupported type uintptr"},
		{"struct", "A eq ?", []any{struct{}{}}, "unsupported type struct {}"},
		{"map", "A eq ?", []any{map[string]int{}}, "unsupported type map[string]int"},
		{"string slice", "A eq ?", []any{[]string{"a"}}, "unsupported type []string"},
		{"15-byte array", "A eq ?", []any{[15]byte{}}, "unsupported type [15]uint8"},
		{"16-int array", "A eq ?", []any{[16]int{}}, "unsupported type [16]int"},
		{"func", "A eq ?", []any{func() {}}, "unsupported type func()"},
		{"error in second arg", "A eq ? and B eq ?", []any{"ok", make(chan int)}, "argument 2: unsupported type chan int"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Where(tt.expr, tt.args...)
			checkInvalidFilter(t, f, tt.msg)
		})
	}
}

// checkInvalidFilter asserts that f carries a *ValidationError matching
// ErrInvalidInput whose message contains msg, and that nothing of it can be
// mistaken for filter text.
func checkInvalidFilter(t *testing.T, f Filter, msg string) {
	t.Helper()
	err := f.Err()
	if err == nil {
		t.Fatalf("no error; filter %q", f.String())
	}
	if !errors.Is(err, ErrInvalidInput) {
		t.Errorf("errors.Is(err, ErrInvalidInput) = false for %v", err)
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Errorf("err is %T, not *ValidationError", err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("error %q does not mention %q", err, msg)
	}
	text, berr := f.build()
	if text != "" || berr != err {
		t.Errorf("Build() = %q, %v; want \"\", the Err() value", text, berr)
	}
	if f.IsZero() {
		t.Error("IsZero() = true for an invalid filter")
	}
	if s := f.String(); !strings.HasPrefix(s, "<invalid filter: ") || !strings.HasSuffix(s, ">") {
		t.Errorf("String() = %q", s)
	}
	if p := f.Properties(); p != nil {
		t.Errorf("Properties() = %q, want nil", p)
	}
	for _, g := range []Filter{And(PartitionEq("p"), f), Or(f, PartitionEq("p")), Not(f)} {
		if g.Err() != err {
			t.Errorf("combinator lost the error: %v", g)
		}
	}
}

func TestWhereTrustedText(t *testing.T) {
	tests := []struct {
		name string
		expr string
		args []any
		want string
	}{
		{"no placeholders", "PartitionKey eq 'a'", nil, "PartitionKey eq 'a'"},
		{"quoted literal with doubled quote kept", "Name eq 'it''s' and Age gt ?", []any{3}, "Name eq 'it''s' and Age gt 3L"},
		{"double-quoted literal kept", `Name eq "a'b" and Age gt ?`, []any{3}, `Name eq "a'b" and Age gt 3L`},
		{"parens around placeholder", "(Age gt ?)and(Age lt ?)", []any{int32(1), int32(9)}, "(Age gt 1)and(Age lt 9)"},
		{"placeholder at start and end", "? eq Name", []any{"x"}, "'x' eq Name"},
		{"tabs and newlines", "A eq\t?\nand B eq\r?", []any{true, false}, "A eq\ttrue\nand B eq\rfalse"},
		{"typed literal in expr", "When lt datetime'2024-01-01T00:00:00Z' and P eq ?", []any{"p"}, "When lt datetime'2024-01-01T00:00:00Z' and P eq 'p'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Where(tt.expr, tt.args...).build()
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestZeroFilter(t *testing.T) {
	for name, f := range map[string]Filter{
		"zero value":       {},
		"Where empty":      Where(""),
		"Where blank":      Where(" \t\n"),
		"And none":         And(),
		"Or none":          Or(),
		"And of zeros":     And(Filter{}, Where("")),
		"PartitionRange()": PartitionRange("", ""),
	} {
		t.Run(name, func(t *testing.T) {
			if !f.IsZero() || f.Err() != nil {
				t.Fatalf("IsZero() = %v, Err() = %v", f.IsZero(), f.Err())
			}
			if text, err := f.build(); text != "" || err != nil {
				t.Fatalf("Build() = %q, %v", text, err)
			}
			if f.String() != "" || f.Properties() != nil {
				t.Fatalf("String() = %q, Properties() = %q", f.String(), f.Properties())
			}
			if f != (Filter{}) {
				t.Fatalf("%#v is not the zero Filter", f)
			}
		})
	}
}

func TestCombinators(t *testing.T) {
	a := Where("A eq ?", 1)
	b := Where("B eq ?", "x")
	c := Where("C eq ? or D eq ?", true, false)
	tests := []struct {
		name string
		f    Filter
		want string
	}{
		{"and two", And(a, b), "(A eq 1L) and (B eq 'x')"},
		{"and three", And(a, b, c), "(A eq 1L) and (B eq 'x') and (C eq true or D eq false)"},
		{"and one", And(a), "A eq 1L"},
		{"and skips zero", And(Filter{}, a, Filter{}, b), "(A eq 1L) and (B eq 'x')"},
		{"and one after skipping", And(Filter{}, c), "C eq true or D eq false"},
		{"or two", Or(a, c), "(A eq 1L) or (C eq true or D eq false)"},
		{"or skips zero", Or(a, Filter{}), "A eq 1L"},
		{"not", Not(c), "not (C eq true or D eq false)"},
		{"nested", Or(And(a, b), Not(a)), "((A eq 1L) and (B eq 'x')) or (not (A eq 1L))"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.f.build()
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}

	t.Run("not of zero", func(t *testing.T) {
		checkInvalidFilter(t, Not(Filter{}), "Not of the zero filter")
	})
	t.Run("first error wins", func(t *testing.T) {
		e1 := Where("A eq ?")
		e2 := Where("B eq ?", 1, 2)
		if got := And(a, e1, e2).Err(); got != e1.Err() {
			t.Fatalf("And error = %v, want %v", got, e1.Err())
		}
		if got := Or(e2, e1).Err(); got != e2.Err() {
			t.Fatalf("Or error = %v, want %v", got, e2.Err())
		}
	})
}

func TestQueryShapeHelpers(t *testing.T) {
	tests := []struct {
		name  string
		f     Filter
		want  string
		props []string
	}{
		{"point", PointQuery("Sales", "000223"), "PartitionKey eq 'Sales' and RowKey eq '000223'", []string{"PartitionKey", "RowKey"}},
		{"point quote", PointQuery("o'k", "x' or RowKey ne '"), "PartitionKey eq 'o''k' and RowKey eq 'x'' or RowKey ne '''", []string{"PartitionKey", "RowKey"}},
		{"partition", PartitionEq("Sales"), "PartitionKey eq 'Sales'", []string{"PartitionKey"}},
		{"partition empty", PartitionEq(""), "PartitionKey eq ''", []string{"PartitionKey"}},
		{"row range", RowKeyRange("Sales", "000100", "000200"), "PartitionKey eq 'Sales' and RowKey ge '000100' and RowKey lt '000200'", []string{"PartitionKey", "RowKey"}},
		{"row range open hi", RowKeyRange("Sales", "000100", ""), "PartitionKey eq 'Sales' and RowKey ge '000100'", nil},
		{"row range open lo", RowKeyRange("Sales", "", "000200"), "PartitionKey eq 'Sales' and RowKey lt '000200'", nil},
		{"row range open both", RowKeyRange("Sales", "", ""), "PartitionKey eq 'Sales'", nil},
		{"prefix", RowKeyPrefix("Sales", "emp_"), "PartitionKey eq 'Sales' and RowKey ge 'emp_' and RowKey lt 'emp`'", nil},
		{"prefix quote", RowKeyPrefix("p", "a'"), "PartitionKey eq 'p' and RowKey ge 'a''' and RowKey lt 'a('", nil},
		{"prefix empty", RowKeyPrefix("Sales", ""), "PartitionKey eq 'Sales'", nil},
		{"prefix without successor", RowKeyPrefix("Sales", "\U0010FFFF"), "PartitionKey eq 'Sales' and RowKey ge '\U0010FFFF'", nil},
		{"partition range", PartitionRange("a", "m"), "PartitionKey ge 'a' and PartitionKey lt 'm'", []string{"PartitionKey"}},
		{"partition range open hi", PartitionRange("a", ""), "PartitionKey ge 'a'", nil},
		{"partition range open lo", PartitionRange("", "m"), "PartitionKey lt 'm'", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.f.build()
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
			if tt.props != nil && !reflect.DeepEqual(tt.f.Properties(), tt.props) {
				t.Fatalf("Properties() = %q, want %q", tt.f.Properties(), tt.props)
			}
		})
	}
	t.Run("invalid utf8 key", func(t *testing.T) {
		checkInvalidFilter(t, PointQuery("p", "\xff"), "not valid UTF-8")
		checkInvalidFilter(t, RowKeyPrefix("p", "a\xff"), "not valid UTF-8")
	})
}

func TestProperties(t *testing.T) {
	tests := []struct {
		name string
		f    Filter
		want []string
	}{
		{"simple", Where("Name eq ?", "SSN"), []string{"Name"}},
		{"dedupe in order", Where("B eq 1 and A eq 2 or B eq 3"), []string{"B", "A"}},
		{"keywords", Where("not (A eq true) and B ne false or C gt 1 and D ge 2 and E lt 3 and F le 4 and G eq null"), []string{"A", "B", "C", "D", "E", "F", "G"}},
		{"string args are not names", Where("A eq ? and B eq ?", "C eq D", "' or E eq '"), []string{"A", "B"}},
		{"literals in expr", Where(`A eq 'B eq C' and D eq "E" and F eq 'it''s G'`), []string{"A", "D", "F"}},
		{"typed literals", Where("A eq datetime'2024-01-01T00:00:00Z' and B eq guid'00000000-0000-0000-0000-000000000000' and C eq X'00ff' and D eq binary'00' and E eq x'01'"), []string{"A", "B", "C", "D", "E"}},
		{"typed literal args", Where("A eq ? and B eq ? and C eq ?", time.Now(), [16]byte{}, []byte("ok")), []string{"A", "B", "C"}},
		{"numbers", Where("A eq 1 and B eq -2.5 and C eq 3L and D eq 1e10 and E eq 2.0d and F eq ?", 1.5), []string{"A", "B", "C", "D", "E", "F"}},
		{"no spaces", Where("(A eq 'x')and(B eq 'y')"), []string{"A", "B"}},
		{"prefix words are names without quote", Where("guid eq 1 and datetime eq 2 and X eq 3"), []string{"guid", "datetime", "X"}},
		{"capitalised keyword is a name", Where("Not eq 1 and A Eq 2"), []string{"Not", "A", "Eq"}},
		{"unicode name", Where("Größe eq ?", 1), []string{"Größe"}},
		{"underscore name", Where("_x1 eq ?", 1), []string{"_x1"}},
		{"combinators", And(PointQuery("p", "r"), Not(Where("SSN eq ?", "1"))), []string{"PartitionKey", "RowKey", "SSN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.f.Err(); err != nil {
				t.Fatal(err)
			}
			if got := tt.f.Properties(); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Properties() = %q, want %q (text %q)", got, tt.want, tt.f.String())
			}
		})
	}
}

// parseFilterStringLiteral parses an OData string literal at the start of s ('...'
// with a doubled quote standing for one) and returns its value and the rest
// of s.
func parseFilterStringLiteral(s string) (value, rest string, ok bool) {
	if !strings.HasPrefix(s, "'") {
		return "", s, false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), s[i+1:], true
	}
	return "", s, false
}

func FuzzWhere(f *testing.F) {
	seeds := []struct{ expr, s string }{
		{"Name eq ?", "x' or PartitionKey ne '"},
		{"A eq ? and B eq ?", "''"},
		{"A eq '?'", "x"},
		{"A eq 'it''s' or B eq ?", "?"},
		{`A eq "x" and B eq ?`, `"`},
		{"(A eq ?)or(B eq ?)", "é"},
		{"A eq datetime'2024-01-01T00:00:00Z'", ""},
		{"not (A eq ?)", "a\x00b"},
		{"A eq ??", "\xff"},
		{"'", "'"},
	}
	for _, s := range seeds {
		f.Add(s.expr, s.s)
	}
	f.Fuzz(func(t *testing.T, expr, s string) {
		// Any string argument renders as a literal that parses back to it,
		// and contributes no property name.
		lit := Where("Name eq ?", s)
		if !utf8.ValidString(s) {
			if !errors.Is(lit.Err(), ErrInvalidInput) {
				t.Fatalf("invalid UTF-8 %q accepted: %v", s, lit)
			}
		} else {
			text, err := lit.build()
			if err != nil {
				t.Fatalf("Where(%q): %v", s, err)
			}
			rest, ok := strings.CutPrefix(text, "Name eq ")
			if !ok {
				t.Fatalf("text %q lost its expression", text)
			}
			got, rest, ok := parseFilterStringLiteral(rest)
			if !ok || rest != "" || got != s {
				t.Fatalf("literal %q parses as %q (rest %q, ok %v), want %q", text, got, rest, ok, s)
			}
			if p := lit.Properties(); !reflect.DeepEqual(p, []string{"Name"}) {
				t.Fatalf("Properties() of %q = %q", text, p)
			}
		}

		// Where never panics on any expr; arguments never add names.
		n := strings.Count(expr, "?")
		if n > 64 {
			return
		}
		args := make([]any, n)
		plain := make([]any, n)
		for i := range args {
			args[i] = s
			plain[i] = int32(i)
		}
		w := Where(expr, args...)
		_ = w.String()
		_ = Not(w).String()
		_ = And(w, lit).String()
		props := w.Properties()
		if err := w.Err(); err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("error %v is not a *ValidationError matching ErrInvalidInput", err)
			}
			return
		}
		p := Where(expr, plain...)
		if p.Err() != nil {
			t.Fatalf("Where(%q) with ints failed (%v) but with strings did not", expr, p.Err())
		}
		if want := p.Properties(); !reflect.DeepEqual(props, want) {
			t.Fatalf("Where(%q, %q...) names %q, with ints %q", expr, s, props, want)
		}
	})
}

func FuzzDoubleLiteral(f *testing.F) {
	for _, v := range []float64{0, -0.5, 1, 0.1, 1e21, 5e-324, math.MaxFloat64} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		checkFilterDoubleLiteral(t, math.Float64frombits(bits))
	})
}

var filterBenchSink Filter

func BenchmarkWhere3Args(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		filterBenchSink = Where("PartitionKey eq ? and RowKey ge ? and Age gt ?", "Sales", "000100", int32(30))
	}
}

func BenchmarkWhereTypedArgs(b *testing.B) {
	when := time.Date(2024, 5, 6, 7, 8, 9, 123456700, time.UTC)
	guid := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	b.ReportAllocs()
	for b.Loop() {
		filterBenchSink = Where("A eq ? and B eq ? and C eq ? and D eq ?", when, guid, 1.5, int64(7))
	}
}

func BenchmarkAnd(b *testing.B) {
	x, y := PartitionEq("Sales"), Where("Age gt ?", 30)
	b.ReportAllocs()
	for b.Loop() {
		filterBenchSink = And(x, y)
	}
}

func BenchmarkRowKeyPrefix(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		filterBenchSink = RowKeyPrefix("Sales", "emp_")
	}
}

var filterBenchNames []string

func BenchmarkProperties(b *testing.B) {
	f := And(PointQuery("Sales", "000223"), Where("Age gt ? and Name ne ?", 30, "x"))
	b.ReportAllocs()
	for b.Loop() {
		filterBenchNames = f.Properties()
	}
}
