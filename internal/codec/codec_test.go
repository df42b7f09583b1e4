package codec

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

type status string

type allTypes struct {
	PK        string      `table:",pk"`
	RK        string      `table:",rk"`
	ETag      azcore.ETag `table:",etag"`
	Stamp     time.Time   `table:",timestamp"`
	Str       string
	Empty     string
	Int32     int32
	Int64     int64
	Int       int
	Small     int8
	U16       uint16
	U32       uint32
	Float     float64
	Whole     float64
	F32       float32
	Bool      bool
	When      time.Time
	ID        GUID
	IDStr     string `table:"IDStr,guid"`
	Blob      []byte
	EmptyBlob []byte
	Tags      []string       `table:"Tags,json"`
	Meta      map[string]int `table:"Meta,json"`
	Ptr       *int64
	NilPtr    *string
	Renamed   string `table:"Other"`
	Omitted   string `table:"Omitted,omitempty"`
	Skip      string `table:"-"`
	Narrow    int    `table:"Narrow,int32"`
	Wide      int32  `table:"Wide,int64"`
	Status    status
	Dur       time.Duration
	NaN       float64
	Inf       float64
	unexp     int
}

func sampleAllTypes() allTypes {
	p := int64(-42)
	return allTypes{
		PK: "o'k Ünïcode ✓", RK: "r'1 \"quoted\" 😀",
		Str: "hello \"world\"\n\t\\ é 😀", Int32: math.MinInt32, Int64: math.MaxInt64, Int: -1 << 40,
		Small: -8, U16: 65535, U32: math.MaxUint32, Float: 3.141592653589793, Whole: 2.0, F32: 1.5, Bool: true,
		When:  time.Date(2012, 3, 4, 5, 6, 7, 123456700, time.UTC),
		ID:    GUID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef},
		IDStr: "0f8fad5b-d9cb-469f-a165-70867728950e", Blob: []byte{0, 1, 2, 255}, EmptyBlob: []byte{},
		Tags: []string{"a", "b"}, Meta: map[string]int{"x": 1}, Ptr: &p, Renamed: "r", Narrow: 7, Wide: 9,
		Status: "active", Dur: 90 * time.Second, NaN: math.NaN(), Inf: math.Inf(-1),
	}
}

func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	plan, err := planFor(reflect.TypeFor[T]())
	if err != nil {
		t.Fatal(err)
	}
	data, err := plan.encodeStruct(nil, reflect.ValueOf(&v).Elem(), &encodeState{})
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if !json.Valid(data) {
		t.Fatalf("encoded JSON is invalid: %s", data)
	}
	var out T
	if err := plan.decodeStruct(data, reflect.ValueOf(&out).Elem(), &decodeState{}); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return out
}

func TestCodecRoundTripAllTypes(t *testing.T) {
	in := sampleAllTypes()
	out := roundTrip(t, in)
	if !math.IsNaN(out.NaN) || !math.IsInf(out.Inf, -1) {
		t.Errorf("special doubles: got %v %v", out.NaN, out.Inf)
	}
	in.NaN, out.NaN = 0, 0
	in.Skip, in.unexp = "", 0
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip differs:\n in  %+v\n out %+v", in, out)
	}
}

// The SDK-side JSON of a whole double must keep its Edm.Double annotation:
// aztables re-encodes entities through map[string]any, so an unannotated
// 2.0 would reach the service as 2 and be stored as Int32.
func TestCodecWholeDoubleIsAnnotated(t *testing.T) {
	type d2 struct {
		PK string `table:",pk"`
		RK string `table:",rk"`
		X  float64
	}
	plan, _ := planFor(reflect.TypeFor[d2]())
	data, err := plan.encodeStruct(nil, reflect.ValueOf(d2{PK: "p", RK: "r", X: 2}), &encodeState{})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m["X@odata.type"] != "Edm.Double" || m["X"] != 2.0 {
		t.Errorf("whole double encoded as %s", data)
	}
}

func TestEntityRoundTrip(t *testing.T) {
	g, _ := parseGUID("0f8fad5b-d9cb-469f-a165-70867728950e")
	in := Entity{PartitionKey: "p'1", RowKey: "", Properties: map[string]any{
		"S": "x", "E": "", "I32": int32(-5), "I64": int64(1) << 53, "D": 1.0, "D2": -0.5, "B": false,
		"T": time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC), "G": g, "Bin": []byte("bytes"),
	}}
	data, err := encodeEntity(nil, &in, &encodeState{})
	if err != nil {
		t.Fatal(err)
	}
	var out Entity
	if err := decodeEntity(data, &out, &decodeState{}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip differs:\n in  %#v\n out %#v", in, out)
	}
}

func TestDecodeServiceShapes(t *testing.T) {
	// As the service sends them: annotations before or after the value,
	// system properties, a whole double written 1.0.
	body := `{"odata.metadata":"x","value":[` +
		`{"odata.etag":"W/\"datetime'2026'\"","PartitionKey":"p","RowKey":"r","D":1.0,"I":3,"L@odata.type":"Edm.Int64","L":"4","N@odata.type":"Edm.Double","N":"NaN","Timestamp":"2026-11-21T20:10:40.8668351Z"},` +
		`{"PartitionKey":"p","RowKey":"r2","Big":3000000000,"T":"2020-01-02T03:04:05.1234567Z","T@odata.type":"Edm.DateTime"}]}`
	var got []Entity
	err := ForEachObject([]byte(body), func(obj []byte) error {
		var e Entity
		if err := decodeEntity(obj, &e, &decodeState{}); err != nil {
			return err
		}
		got = append(got, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d entities", len(got))
	}
	e := got[0]
	if e.ETag != `W/"datetime'2026'"` || e.Properties["D"] != 1.0 || e.Properties["I"] != int32(3) || e.Properties["L"] != int64(4) {
		t.Errorf("entity 0: %#v", e)
	}
	if _, ok := e.Properties["D"].(float64); !ok {
		t.Errorf("1.0 must decode as a Double, got %T", e.Properties["D"])
	}
	if e.Timestamp.IsZero() {
		t.Error("Timestamp not decoded")
	}
	if got[1].Properties["Big"] != 3e9 || got[1].Properties["T"] != time.Date(2020, 1, 2, 3, 4, 5, 123456700, time.UTC) {
		t.Errorf("entity 1: %#v", got[1])
	}
}

func TestCodecLimits(t *testing.T) {
	type doc struct {
		PK string `table:",pk"`
		RK string `table:",rk"`
		S  string
		B  []byte
	}
	plan, _ := planFor(reflect.TypeFor[doc]())
	enc := func(d doc) error {
		_, err := plan.encodeStruct(nil, reflect.ValueOf(d), &encodeState{table: "T"})
		return err
	}
	cases := []struct {
		name     string
		doc      doc
		sentinel error
		prop     string
	}{
		{"string over 32K UTF-16 units", doc{PK: "p", RK: "r", S: strings.Repeat("a", 32*1024+1)}, ErrTooLarge, "S"},
		{"string of 32K units fits", doc{PK: "p", RK: "r", S: strings.Repeat("a", 32*1024)}, nil, ""},
		{"surrogate pairs count twice", doc{PK: "p", RK: "r", S: strings.Repeat("😀", 16*1024+1)}, ErrTooLarge, "S"},
		{"binary over 64 KiB", doc{PK: "p", RK: "r", B: make([]byte, 64*1024+1)}, ErrTooLarge, "B"},
		{"slash in key", doc{PK: "a/b", RK: "r"}, ErrInvalidKey, "PartitionKey"},
		{"control char in key", doc{PK: "p", RK: "r\x01"}, ErrInvalidKey, "RowKey"},
		{"key over 1 KiB", doc{PK: strings.Repeat("k", 513), RK: "r"}, ErrInvalidKey, "PartitionKey"},
		{"invalid UTF-8", doc{PK: "p", RK: "r", S: "\xff"}, ErrInvalidInput, "S"},
	}
	for _, c := range cases {
		err := enc(c.doc)
		if c.sentinel == nil {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var ve *ValidationError
		if !errors.Is(err, c.sentinel) || !errors.As(err, &ve) || ve.Property != c.prop {
			t.Errorf("%s: got %v, want %v on %s", c.name, err, c.sentinel, c.prop)
		}
	}

	// Entity size and property count.
	big := Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{}}
	for i := range 20 {
		big.Properties["P"+string(rune('a'+i))] = make([]byte, 60*1024)
	}
	if _, err := encodeEntity(nil, &big, &encodeState{}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("1.2 MiB entity: %v", err)
	}
	many := Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{}}
	for i := range 253 {
		many.Properties["P"+strconv.Itoa(i)] = int32(i)
	}
	if _, err := encodeEntity(nil, &many, &encodeState{}); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "252") {
		t.Errorf("253 properties: %v", err)
	}
}

func TestNewTablePlanErrors(t *testing.T) {
	type noKeys struct{ A string }
	type badField struct {
		PK string `table:",pk"`
		RK string `table:",rk"`
		C  chan int
	}
	type badTag struct {
		PK string `table:",pk"`
		RK string `table:",rk"`
		A  string `table:"A,bogus"`
	}
	type badName struct {
		PK string `table:",pk"`
		RK string `table:",rk"`
		A  string `table:"1abc"`
	}
	check := func(err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to mention %q", err, want)
		}
	}
	_, err := For[noKeys]("Items", nil)
	check(err, "pk")
	_, err = planFor(reflect.TypeFor[badField]())
	check(err, `"C"`)
	_, err = planFor(reflect.TypeFor[badTag]())
	check(err, "bogus")
	_, err = planFor(reflect.TypeFor[badName]())
	check(err, "1abc")
}

func TestDecodeTypeMismatchIsAnError(t *testing.T) {
	type doc struct {
		PK string `table:",pk"`
		RK string `table:",rk"`
		N  int8
	}
	plan, _ := planFor(reflect.TypeFor[doc]())
	var d doc
	for _, body := range []string{
		`{"PartitionKey":"p","RowKey":"r","N":300}`,
		`{"PartitionKey":"p","RowKey":"r","N":"x"}`,
		`{"PartitionKey":"p","RowKey":"r","N":1.5}`,
	} {
		if err := plan.decodeStruct([]byte(body), reflect.ValueOf(&d).Elem(), &decodeState{op: "Get"}); !isDecodeError(err, "N") || errors.Is(err, ErrDecrypt) || !strings.Contains(err.Error(), `Get: cannot read entity "p/r" property "N"`) {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func TestEncodeEntityAndDecode(t *testing.T) {
	in := sampleAllTypes()
	in.NaN = 0
	in.Skip, in.unexp = "", 0
	in.ETag = "W/\"x\""
	in.Stamp = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	e, err := ToEntity(in)
	if err != nil {
		t.Fatal(err)
	}
	if e.PartitionKey != in.PK || e.ETag != in.ETag || e.Properties["Int"] != int64(in.Int) || e.Properties["Other"] != "r" {
		t.Errorf("entity: %#v", e)
	}
	out, err := FromEntity[allTypes](e)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip differs:\n in  %+v\n out %+v", in, out)
	}
	if _, err := FromEntity[struct{ A string }](e); err == nil {
		t.Error("Decode into a struct without keys must fail")
	}
}

func TestDecodeSkipsStorageLimits(t *testing.T) {
	type doc struct {
		PK   string `table:",pk"`
		RK   string `table:",rk"`
		Blob []byte
	}
	big := make([]byte, 5<<20)
	out, err := FromEntity[doc](Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"Blob": big}})
	if err != nil || len(out.Blob) != len(big) {
		t.Fatalf("Decode of a 5 MiB property: %d bytes, %v", len(out.Blob), err)
	}
	if _, err := ToEntity(out); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ToEntity still checks limits: %v", err)
	}
}

// Inputs fuzzing found panicking; they must be plain errors.
func TestDecodeFuzzRegressions(t *testing.T) {
	if _, err := parseGUID("00000000-0000-0000-0000-0000-0000000"); err == nil {
		t.Error("a GUID with a fifth hyphen parsed")
	}
	var e Entity
	if err := decodeEntity([]byte(`{"a":["\`), &e, &decodeState{}); err == nil {
		t.Error("a string ending in a backslash decoded")
	}
}

// EntitySize is the size the encoder checks against the 1 MiB limit.
func TestEntitySizeMatchesEncoder(t *testing.T) {
	g, _ := parseGUID("0f8fad5b-d9cb-469f-a165-70867728950e")
	e := Entity{PartitionKey: "pk😀", RowKey: "r", Properties: map[string]any{
		"S": "héllo😀", "B": []byte{1, 2, 3}, "T": true, "I": int32(1), "L": int64(2), "D": 1.5,
		"W": time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), "G": g,
	}}
	s := encodeState{}
	if _, err := encodeEntity(nil, &e, &s); err != nil {
		t.Fatal(err)
	}
	if got := EntitySize(e); got != s.size {
		t.Errorf("EntitySize = %d, encoder counted %d", got, s.size)
	}
}

// isDecodeError reports whether err is a *DecodeError about prop.
func isDecodeError(err error, prop string) bool {
	var de *DecodeError
	return errors.As(err, &de) && de.Property == prop
}

// parseGUID parses a GUID's text for the tests.
func parseGUID(s string) (GUID, error) {
	g, ok := parseGUIDBytes([]byte(s))
	if !ok {
		return GUID{}, fmt.Errorf("%q is not a GUID", s)
	}
	return g, nil
}
