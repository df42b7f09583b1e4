package codec

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/limits"
)

// The direct ToEntity and Decode must give what the JSON route gave
// (convert_ref_test.go): the same values, down to the bits of a NaN and the
// representation of a time.Time, and the same errors. These tests and
// FuzzConvertEquivalence check it; they also check that the refactored JSON
// encoder writes the same bytes and the JSON decoder reads the same values.

// textVal and ptrText are TextMarshaler fields (value and pointer
// receivers); a text starting with '!' is refused both ways.
type textVal struct{ s string }

func (t textVal) MarshalText() ([]byte, error) {
	if strings.HasPrefix(t.s, "!") {
		return nil, errors.New("refused")
	}
	return []byte("T:" + t.s), nil
}

func (t *textVal) UnmarshalText(b []byte) error {
	if bytes.HasPrefix(b, []byte("!")) {
		return errors.New("refused")
	}
	t.s = string(b)
	return nil
}

type ptrText struct{ s string }

func (t *ptrText) MarshalText() ([]byte, error) {
	if strings.HasPrefix(t.s, "!") {
		return nil, errors.New("refused")
	}
	return []byte(t.s), nil
}

func (t *ptrText) UnmarshalText(b []byte) error {
	if bytes.HasPrefix(b, []byte("!")) {
		return errors.New("refused")
	}
	t.s = string(b)
	return nil
}

type myUUID [16]byte

type convEmbedded struct {
	E   string
	E16 int16 `table:"E16,omitempty"`
}

// convKinds has a field of every kind, with every tag option, by value,
// by pointer and with omitempty.
type convKinds struct {
	PK  string    `table:",pk"`
	RK  string    `table:",rk"`
	Tag string    `table:",etag"`
	TS  time.Time `table:",timestamp"`
	convEmbedded
	S     string
	SO    string `table:",omitempty"`
	SP    *string
	Named status
	G     GUID
	GA    myUUID
	GP    *GUID
	GS    string  `table:",guid"`
	GSO   string  `table:",guid,omitempty"`
	GSP   *string `table:",guid"`
	B     bool
	BO    bool `table:",omitempty"`
	BP    *bool
	I     int
	I8    int8
	I16   int16
	I32   int32
	I64   int64
	IO    int64 `table:",omitempty"`
	IP    *int32
	N32   int    `table:",int32"`
	UN32  uint64 `table:",int32"`
	W64   int16  `table:",int64"`
	U     uint
	U8    uint8
	U16   uint16
	U32   uint32
	U64   uint64
	UP    *uint64
	F     float64
	F32   float32
	FO    float64 `table:",omitempty"`
	FP    *float64
	T     time.Time
	TO    time.Time `table:",omitempty"`
	TP    *time.Time
	D     time.Duration
	X     []byte
	XO    []byte `table:",omitempty"`
	XP    *[]byte
	J     []string       `table:",json"`
	JM    map[string]int `table:",json,omitempty"`
	JP    *int           `table:",json"`
	JI    any            `table:",json"`
	Txt   textVal
	TxtP  *textVal
	TxtR  ptrText
	Sec   string `table:",encrypt,omitempty"`
	Skip  string `table:"-"`
}

func sampleConvKinds() convKinds {
	s, g, b, i32, u64, f, tm, x, n := "pointed", GUID{9, 8, 7}, true, int32(-5), uint64(1<<40), 2.0, time.Date(2001, 2, 3, 4, 5, 6, 700, time.UTC), []byte{7}, 3
	gs := "0f8fad5b-d9cb-469f-a165-70867728950e"
	return convKinds{
		PK: "p", RK: "r", Tag: `W/"1"`, TS: time.Date(2020, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 3600)),
		convEmbedded: convEmbedded{E: "e", E16: 16},
		S:            "s", SO: "so", SP: &s, Named: "named", G: GUID{1, 2, 3}, GA: myUUID{4, 5, 6}, GP: &g,
		GS: gs, GSO: gs, GSP: &gs, B: true, BO: true, BP: &b,
		I: -1 << 40, I8: -8, I16: 1600, I32: 320000, I64: 1 << 50, IO: 7, IP: &i32, N32: 32, UN32: 33, W64: 64,
		U: 1, U8: 8, U16: 16, U32: 32, U64: 64, UP: &u64, F: 1.5, F32: 0.25, FO: 3, FP: &f,
		T: time.Date(2012, 3, 4, 5, 6, 7, 123456789, time.FixedZone("Y", -7200)), TO: tm, TP: &tm, D: time.Minute,
		X: []byte{1, 2}, XO: []byte{3}, XP: &x, J: []string{"a"}, JM: map[string]int{"k": 1}, JP: &n, JI: "any",
		Txt: textVal{"t"}, TxtP: &textVal{"tp"}, TxtR: ptrText{"tr"},
	}
}

// bigBytes is 64 KiB + n.
func bigBytes(n int) []byte { return bytes.Repeat([]byte{'b'}, limits.PropertyBytes+n) }

var (
	// b64Infinity is binary whose base64 reads "Infinity".
	b64Infinity, _ = base64.StdEncoding.DecodeString("Infinity")

	convStrings = []string{
		"", "abc", "o'k \"q\" \n\t\\ é 😀 \u2028 \x00", "\xff", "5", "-7", "300", "0", "NaN", "Infinity", "-INF", "1.5",
		"0f8fad5b-d9cb-469f-a165-70867728950e", "{0F8FAD5B-D9CB-469F-A165-70867728950E}", "0f8fad5b-d9cb-469f-a165-70867728950",
		"2012-03-04T05:06:07.1234567Z", "2012-03-04T05:06:07+02:00", "AAE=", "!fail", `{"a":1}`, `["x"]`, "null", `"q"`,
		"a/b", "#", "\x7f", strings.Repeat("k", 512), strings.Repeat("k", 513),
		strings.Repeat("a", limits.PropertyBytes/2), strings.Repeat("a", limits.PropertyBytes/2+1),
		strings.Repeat("😀", limits.PropertyBytes/4), strings.Repeat("😀", limits.PropertyBytes/4) + "a",
	}
	convInts   = []int64{0, 1, -1, 255, 256, math.MaxInt8, math.MinInt8, math.MaxInt8 + 1, math.MaxInt16 + 1, math.MinInt16 - 1, math.MaxInt32, math.MaxInt32 + 1, math.MinInt32, math.MinInt32 - 1, math.MaxInt64, math.MinInt64}
	convUints  = []uint64{0, 1, 255, 256, math.MaxUint16 + 1, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64, math.MaxInt64 + 1, math.MaxUint64}
	convFloats = []float64{0, math.Copysign(0, -1), 1, 2, 2.5, -3.25, 1e6, 1e21, 0.1, math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Float64frombits(0x7ff8000000000123), math.Inf(1), math.Inf(-1)}
	convTimes  = []time.Time{
		{}, time.Date(2012, 3, 4, 5, 6, 7, 123456789, time.UTC), time.Date(2012, 3, 4, 5, 6, 7, 100, time.FixedZone("Z1", 5*3600)),
		time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC).Add(-1),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1601, 1, 1, 1, 0, 0, 0, time.FixedZone("E", 2*3600)), time.Unix(0, 0), time.Now(),
	}
	convBytes = [][]byte{nil, {}, {0, 1, 255}, b64Infinity, bigBytes(0), bigBytes(1)}
)

// convSamples returns values of type t to set a field to.
func convSamples(t reflect.Type) []reflect.Value {
	var out []reflect.Value
	add := func(v any) { out = append(out, reflect.ValueOf(v).Convert(t)) }
	switch {
	case t.Kind() == reflect.Pointer:
		out = append(out, reflect.Zero(t))
		for i, v := range convSamples(t.Elem()) {
			if i%3 == 1 || t.Elem().Kind() == reflect.Bool {
				p := reflect.New(t.Elem())
				p.Elem().Set(v)
				out = append(out, p)
			}
		}
	case t == timeType:
		for _, v := range convTimes {
			add(v)
		}
	case t == reflect.TypeFor[textVal]():
		for _, s := range []string{"", "x", "!fail", "\xff", strings.Repeat("a", limits.PropertyBytes/2-2), strings.Repeat("a", limits.PropertyBytes/2-1)} {
			add(textVal{s})
		}
	case t == reflect.TypeFor[ptrText]():
		for _, s := range []string{"", "x", "!fail", "\xff"} {
			add(ptrText{s})
		}
	case t == reflect.TypeFor[[]string]():
		for _, v := range [][]string{nil, {}, {"a", "\xff"}, {strings.Repeat("a", limits.PropertyBytes/2-4)}, {strings.Repeat("a", limits.PropertyBytes/2-3)}} {
			add(v)
		}
	case t == reflect.TypeFor[map[string]int]():
		for _, v := range []map[string]int{nil, {}, {"x": 1}} {
			add(v)
		}
	case t.Kind() == reflect.Interface:
		out = append(out, reflect.Zero(t))
		for _, v := range []any{"s", 1.5, math.NaN(), make(chan int), []any{nil}} {
			add(v)
		}
	case t.Kind() == reflect.String:
		for _, v := range convStrings {
			add(v)
		}
	case t.Kind() == reflect.Bool:
		add(false)
		add(true)
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		for _, v := range convInts {
			if !reflect.Zero(t).OverflowInt(v) {
				add(v)
			}
		}
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		for _, v := range convUints {
			if !reflect.Zero(t).OverflowUint(v) {
				add(v)
			}
		}
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		for _, v := range convFloats {
			if t.Kind() == reflect.Float64 || math.IsNaN(v) || math.IsInf(v, 0) || !reflect.Zero(t).OverflowFloat(v) {
				add(v)
			}
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		for _, v := range convBytes {
			add(v)
		}
	case t.Kind() == reflect.Array:
		add([16]byte{})
		add([16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	default:
		panic("no samples for " + t.String())
	}
	return out
}

// convEntityValues are property values for Decode: every Go type an Entity
// may hold, in and out of range, and some it may not.
func convEntityValues() []any {
	vals := []any{nil, true, false, int(7), int(-1 << 40), int8(1), uint(1), float32(1), struct{}{}, []string{"x"},
		GUID{1, 2, 3}, myUUID{4, 5, 6}, [16]byte{7}, [15]byte{}, strings.Repeat("é", limits.PropertyBytes)}
	for _, s := range convStrings {
		vals = append(vals, s)
	}
	for _, i := range convInts {
		if i >= math.MinInt32 && i <= math.MaxInt32 {
			vals = append(vals, int32(i))
		}
		vals = append(vals, i)
	}
	for _, f := range convFloats {
		vals = append(vals, f)
	}
	vals = append(vals, 300.0, 5.0, 1e20, -0.5)
	for _, t := range convTimes {
		vals = append(vals, t)
	}
	for _, b := range convBytes {
		vals = append(vals, b)
	}
	return vals
}

// sameValue is reflect.DeepEqual with floats compared by their bits, so
// that NaNs compare and must be the same NaN.
func sameValue(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		if a.Type().Elem() == reflect.TypeFor[time.Location]() {
			return a.Pointer() == b.Pointer()
		}
		return sameValue(a.Elem(), b.Elem())
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameValue(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !sameValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		fallthrough
	case reflect.Array:
		for i := 0; i < a.Len(); i++ {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			if bv := b.MapIndex(k); !bv.IsValid() || !sameValue(a.MapIndex(k), bv) {
				return false
			}
		}
		return true
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return a.Pointer() == b.Pointer()
	}
	panic("sameValue: " + a.Kind().String())
}

var convSentinels = []error{ErrInvalidInput, ErrTooLarge, ErrInvalidKey, ErrDecrypt, ErrKeyNotFound}

// sameErrorClass reports how got and want differ in class: nil-ness,
// concrete type, the sentinels they match and the operation (not which
// property: with several faulty ones, map order picks it in both routes).
func sameErrorClass(got, want error) string {
	if (got == nil) != (want == nil) {
		return fmt.Sprintf("error %v, want %v", got, want)
	}
	if got == nil {
		return ""
	}
	if reflect.TypeOf(got) != reflect.TypeOf(want) {
		return fmt.Sprintf("error type %T (%v), want %T (%v)", got, got, want, want)
	}
	for _, s := range convSentinels {
		if errors.Is(got, s) != errors.Is(want, s) {
			return fmt.Sprintf("errors.Is(%v, %v) = %v, want %v", got, s, errors.Is(got, s), errors.Is(want, s))
		}
	}
	var gv, wv *ValidationError
	if errors.As(got, &gv) && errors.As(want, &wv) && gv.Op != wv.Op {
		return fmt.Sprintf("ValidationError op %q, want %q", gv.Op, wv.Op)
	}
	var gd, wd *DecodeError
	if errors.As(got, &gd) && errors.As(want, &wd) && gd.Op != wd.Op {
		return fmt.Sprintf("DecodeError op %q, want %q", gd.Op, wd.Op)
	}
	return ""
}

// sameError is sameErrorClass plus the same message.
func sameError(got, want error) string {
	if d := sameErrorClass(got, want); d != "" || got == nil {
		return d
	}
	if got.Error() != want.Error() {
		return fmt.Sprintf("error %q, want %q", got, want)
	}
	return ""
}

// checkEncode compares ToEntity with the JSON route for v, and the JSON
// encoder with its frozen copy; exact says whether error messages must be
// equal. It returns the entity when both succeeded.
func checkEncode[T any](t testing.TB, what string, v T, exact bool) (Entity, bool) {
	t.Helper()
	got, gotErr := ToEntity(v)
	want, wantErr := refEncodeEntity(v)
	diff := sameErrorClass
	if exact {
		diff = sameError
	}
	if d := diff(gotErr, wantErr); d != "" {
		t.Fatalf("%s: ToEntity: %s", what, d)
	}
	if gotErr == nil && !sameValue(reflect.ValueOf(got), reflect.ValueOf(want)) {
		t.Fatalf("%s: ToEntity differs:\n got  %#v\n want %#v", what, got, want)
	}
	plan, err := planFor(reflect.TypeFor[T]())
	if err != nil {
		return got, gotErr == nil
	}
	rv := reflect.ValueOf(&v).Elem()
	gj, gjErr := plan.encodeStruct(nil, rv, &encodeState{table: "T"})
	wj, wjErr := plan.refEncodeStruct(nil, rv, &encodeState{table: "T"})
	if d := diff(gjErr, wjErr); d != "" {
		t.Fatalf("%s: encodeStruct: %s", what, d)
	}
	if gjErr == nil && !bytes.Equal(gj, wj) {
		t.Fatalf("%s: encodeStruct JSON differs:\n got  %s\n want %s", what, gj, wj)
	}
	return got, gotErr == nil
}

// checkDecode compares Decode with the JSON route for e. Unless exact, e
// may have several faulty properties, of which map order picks one in
// each route: the errors must then be of the same type (a property that
// cannot be stored wins over one that cannot be decoded), and Decode's
// must be the very error the JSON route gives for its property alone.
func checkDecode[T any](t testing.TB, what string, e Entity, exact bool) {
	t.Helper()
	got, gotErr := FromEntity[T](e)
	want, wantErr := refDecode[T](e)
	if exact {
		if d := sameError(gotErr, wantErr); d != "" {
			t.Fatalf("%s: Decode: %s\n entity %#v", what, d, e)
		}
	} else if gotErr != nil || wantErr != nil {
		if (gotErr == nil) != (wantErr == nil) || reflect.TypeOf(gotErr) != reflect.TypeOf(wantErr) {
			t.Fatalf("%s: Decode: error %v, want %v\n entity %#v", what, gotErr, wantErr, e)
		}
		var ve *ValidationError
		var de *DecodeError
		prop := ""
		if errors.As(gotErr, &ve) {
			prop = ve.Property
		} else if errors.As(gotErr, &de) {
			prop = de.Property
		}
		if v, ok := e.Properties[prop]; ok {
			one := e
			one.Properties = map[string]any{prop: v}
			if _, wantOne := refDecode[T](one); sameError(gotErr, wantOne) != "" {
				t.Fatalf("%s: Decode: %s (for property %q alone)\n entity %#v", what, sameError(gotErr, wantOne), prop, e)
			}
		} else {
			t.Fatalf("%s: Decode: error %v names no property of the entity %#v", what, gotErr, e)
		}
	}
	if gotErr == nil && !sameValue(reflect.ValueOf(got), reflect.ValueOf(want)) {
		t.Fatalf("%s: Decode differs:\n got  %#v\n want %#v\n entity %#v", what, got, want, e)
	}
}

// checkDecodeJSON compares the JSON decoder with its frozen copy.
func checkDecodeJSON[T any](t testing.TB, what string, data []byte) {
	t.Helper()
	plan, err := planFor(reflect.TypeFor[T]())
	if err != nil {
		t.Fatal(err)
	}
	var got, want T
	gotErr := plan.decodeStruct(data, reflect.ValueOf(&got).Elem(), &decodeState{op: "Get", table: "T"})
	wantErr := plan.refDecodeStruct(data, reflect.ValueOf(&want).Elem(), &decodeState{op: "Get", table: "T"})
	if d := sameError(gotErr, wantErr); d != "" {
		t.Fatalf("%s: decodeStruct: %s\n%s", what, d, data)
	}
	if !sameValue(reflect.ValueOf(got), reflect.ValueOf(want)) {
		t.Fatalf("%s: decodeStruct differs:\n got  %#v\n want %#v\n%s", what, got, want, data)
	}
}

// forEachFieldSample calls fn with v with one field set to each of its
// samples, for every field (the keys, ETag and Timestamp included).
func forEachFieldSample[T any](v T, fn func(what string, v T)) {
	rv := reflect.ValueOf(&v).Elem()
	var walk func(t reflect.Type, path []int)
	walk = func(t reflect.Type, path []int) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			p := append(append([]int(nil), path...), i)
			if sf.Anonymous {
				walk(sf.Type, p)
				continue
			}
			if !sf.IsExported() {
				continue
			}
			for j, s := range convSamples(sf.Type) {
				c := reflect.New(rv.Type()).Elem()
				c.Set(rv)
				fieldByPath(c, p).Set(s)
				fn(fmt.Sprintf("%s=sample %d", sf.Name, j), c.Interface().(T))
			}
		}
	}
	walk(rv.Type(), nil)
}

func TestConvertEquivalenceFields(t *testing.T) {
	n := 0
	for _, base := range []convKinds{{PK: "p", RK: "r"}, sampleConvKinds()} {
		forEachFieldSample(base, func(what string, v convKinds) {
			n++
			if e, ok := checkEncode(t, what, v, true); ok {
				checkDecode[convKinds](t, what, e, true)
				checkDecode[allTypes](t, what, e, true)
				data, err := plan0[convKinds]().encodeStruct(nil, reflect.ValueOf(&v).Elem(), &encodeState{})
				if err != nil {
					t.Fatal(err)
				}
				checkDecodeJSON[convKinds](t, what, data)
			}
		})
	}
	forEachFieldSample(sampleAllTypes(), func(what string, v allTypes) {
		n++
		if e, ok := checkEncode(t, what, v, true); ok {
			checkDecode[allTypes](t, what, e, true)
		}
	})
	t.Logf("%d struct values", n)
}

func plan0[T any]() *typePlan {
	p, err := planFor(reflect.TypeFor[T]())
	if err != nil {
		panic(err)
	}
	return p
}

// Every property name of the struct (and some it lacks) with every value
// an Entity can hold, alone in an entity.
func TestConvertEquivalenceDecodeValues(t *testing.T) {
	vals := convEntityValues()
	names := []string{"Unknown", "1bad", "Timestamp", "a-b", ""}
	for _, fp := range plan0[convKinds]().fields {
		names = append(names, fp.name)
	}
	for _, fp := range plan0[allTypes]().fields {
		names = append(names, fp.name)
	}
	n := 0
	for _, name := range names {
		for i, v := range vals {
			e := Entity{PartitionKey: "p'k", RowKey: "r", ETag: "W/x", Timestamp: time.Date(2020, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 60)),
				Properties: map[string]any{name: v}}
			what := fmt.Sprintf("%s=%T value %d", name, v, i)
			checkDecode[convKinds](t, what, e, true)
			checkDecode[allTypes](t, what, e, true)
			n++
		}
	}
	t.Logf("%d entities", n)
}

// With several faulty properties the first found depends on map order in
// both routes, but a property that cannot be stored always wins over one
// that cannot be decoded into its field.
func TestConvertEquivalenceErrorPrecedence(t *testing.T) {
	e := Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{
		"S": int32(5), "I8": int32(300), "B": "x", "T": time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC), "Z": "ok",
	}}
	for range 50 {
		checkDecode[convKinds](t, "mixed", e, false)
	}
	delete(e.Properties, "T")
	for range 50 {
		checkDecode[convKinds](t, "decode errors only", e, false)
	}
	e.Properties = map[string]any{"S": "ok", "X": uint8(1), "Bad-Name": 1.0}
	for range 50 {
		checkDecode[convKinds](t, "validation errors only", e, false)
	}
}

// bigDoc has 17 binary properties to reach the 1 MiB entity limit.
type bigDoc struct {
	PK                                                string `table:",pk"`
	RK                                                string `table:",rk"`
	A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q []byte
	S                                                 string `table:",omitempty"`
}

// The storage limits, each met exactly and exceeded by one.
func TestConvertEquivalenceLimits(t *testing.T) {
	full := func(extra int) bigDoc {
		d := bigDoc{PK: "p", RK: "r"}
		rv := reflect.ValueOf(&d).Elem()
		// 4 + 2 + 2 for the keys; each property 8 + 2*1 + 4 + len.
		content := limits.EntityBytes - 8 - 17*14 + extra
		for i := 2; i < 2+17; i++ {
			n := min(limits.PropertyBytes, content)
			rv.Field(i).SetBytes(make([]byte, n))
			content -= n
		}
		if content != 0 || EntitySize(Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{}})+17*14 > limits.EntityBytes {
			panic(content)
		}
		return d
	}
	for _, extra := range []int{0, 1} {
		d := full(extra)
		if _, ok := checkEncode(t, fmt.Sprintf("entity size limit%+d", extra), d, true); ok != (extra == 0) {
			t.Fatalf("entity limit %+d: ok=%v", extra, ok)
		}
	}
	// A Decode checks no limits: an entity over 1 MiB with oversized values.
	e, _ := ToEntity(full(0))
	e.Properties["S"] = strings.Repeat("x", limits.PropertyBytes)
	e.Properties["A"] = bigBytes(1)
	checkDecode[bigDoc](t, "oversized", e, true)
	// Per-property limits, strings in UTF-16 units.
	for _, s := range []string{strings.Repeat("a", limits.PropertyBytes/2), strings.Repeat("a", limits.PropertyBytes/2+1),
		strings.Repeat("😀", limits.PropertyBytes/4), strings.Repeat("😀", limits.PropertyBytes/4) + "a",
		strings.Repeat("é", limits.PropertyBytes/2), strings.Repeat("é", limits.PropertyBytes/2+1)} {
		checkEncode(t, fmt.Sprintf("string of %d bytes", len(s)), bigDoc{PK: "p", RK: "r", S: s}, true)
	}
	for _, n := range []int{0, 1} {
		checkEncode(t, fmt.Sprintf("binary limit%+d", n), bigDoc{PK: "p", RK: "r", A: make([]byte, limits.PropertyBytes+n)}, true)
	}
	// Keys: 1 KiB (512 UTF-16 units), reserved and control characters.
	for _, k := range []string{strings.Repeat("k", 512), strings.Repeat("k", 513), strings.Repeat("😀", 256), strings.Repeat("😀", 256) + "k", "a/b", "a\\b", "#", "?", "\x01", "\u0085", "\xff", ""} {
		checkEncode(t, fmt.Sprintf("pk %q", k), bigDoc{PK: k, RK: "r"}, true)
		checkEncode(t, fmt.Sprintf("rk %q", k), bigDoc{PK: "p", RK: k}, true)
	}
}

// Plan errors (a type that is not a table struct) are the same.
func TestConvertEquivalencePlanErrors(t *testing.T) {
	type noKeys struct{ A string }
	type badTag struct {
		PK string `table:",pk"`
		RK string `table:",rk"`
		A  string `table:",bogus"`
	}
	checkEncode(t, "noKeys", noKeys{}, true)
	checkEncode(t, "badTag", badTag{}, true)
	checkEncode(t, "not a struct", 5, true)
	checkDecode[noKeys](t, "noKeys", Entity{}, true)
	checkDecode[badTag](t, "badTag", Entity{}, true)
	checkDecode[int](t, "not a struct", Entity{}, true)
	// A plan error is cached; each caller gets its own copy to name its
	// operation in (withOp), so one call's Op never shows in another's.
	_, _ = ToEntity(5)
	var ve *ValidationError
	if _, err := FromEntity[int](Entity{}); !errors.As(err, &ve) || ve.Op != "FromEntity" {
		t.Errorf("FromEntity[int] after ToEntity(int): %v, want Op Decode", err)
	}
	// An Entity converts to itself both ways.
	e := Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"A": uint8(1)}}
	checkEncode(t, "Entity", e, true)
	checkDecode[Entity](t, "Entity", e, true)
}

// The values in an Entity from ToEntity, and in a struct from Decode,
// are their own: changing one side's slices leaves the other alone.
func TestConvertDoesNotAlias(t *testing.T) {
	v := convKinds{PK: "p", RK: "r", X: []byte{1, 2}}
	e, err := ToEntity(v)
	if err != nil {
		t.Fatal(err)
	}
	v.X[0] = 9
	if e.Properties["X"].([]byte)[0] != 1 {
		t.Fatal("ToEntity's []byte aliases the struct's")
	}
	out, err := FromEntity[convKinds](e)
	if err != nil {
		t.Fatal(err)
	}
	e.Properties["X"].([]byte)[1] = 9
	if out.X[1] != 2 {
		t.Fatal("Decode's []byte aliases the entity's")
	}
}

// The one difference from the JSON route: an Entity's keys are copied as
// they are. The JSON route wrote them as JSON strings, which replaced each
// byte of invalid UTF-8 with U+FFFD (Decode checks no keys, so it took
// them); a Table never reads such keys, and ToEntity refuses them.
func TestDecodeKeepsKeysVerbatim(t *testing.T) {
	e := Entity{PartitionKey: "p\xff", RowKey: "r\xfe\xfd", Properties: map[string]any{"S": "s"}}
	got, err := FromEntity[convKinds](e)
	if err != nil || got.PK != e.PartitionKey || got.RK != e.RowKey || got.S != "s" {
		t.Fatalf("got %q %q %q, %v", got.PK, got.RK, got.S, err)
	}
	old, err := refDecode[convKinds](e)
	if err != nil || old.PK != "p\ufffd" || old.RK != "r\ufffd\ufffd" {
		t.Fatalf("the JSON route gave %q %q, %v", old.PK, old.RK, err)
	}
}
