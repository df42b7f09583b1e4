package codec

import (
	"encoding/base64"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

type fuzzDoc struct {
	PK string `table:",pk"`
	RK string `table:",rk"`
	S  string
	I  int64
	J  int32
	F  float64
	B  bool
	T  time.Time
	X  []byte
	G  GUID
}

// FuzzDecode: decoding arbitrary bytes, as a struct or an Entity, never
// panics.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"PartitionKey":"p","RowKey":"r","S":"x","I":"5","I@odata.type":"Edm.Int64","F":1.0}`))
	f.Add([]byte(`{"value":[{"PartitionKey":"p"},{}]}`))
	f.Add([]byte(`{"S":"\ud83d\ude00\u0041","X":"AAE=","X@odata.type":"Edm.Binary"}`))
	plan, err := planFor(reflect.TypeFor[fuzzDoc]())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d fuzzDoc
		_ = plan.decodeStruct(data, reflect.ValueOf(&d).Elem(), &decodeState{})
		var e Entity
		_ = decodeEntity(data, &e, &decodeState{})
		_ = ForEachObject(data, func(obj []byte) error { return decodeEntity(obj, &e, &decodeState{}) })
	})
}

// FuzzRoundTrip: whatever encodes decodes back to the same value.
func FuzzRoundTrip(f *testing.F) {
	f.Add("p", "r", "s", int64(1), int32(2), 1.0, true, int64(0), []byte{1}, []byte("0123456789abcdef"))
	f.Add("o'k", "", "\u2028\"\\", int64(math.MinInt64), int32(math.MaxInt32), math.Copysign(0, -1), false, int64(1e17), []byte{}, []byte{})
	plan, err := planFor(reflect.TypeFor[fuzzDoc]())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, pk, rk, s string, i int64, j int32, fl float64, b bool, ns int64, x, g []byte) {
		in := fuzzDoc{PK: pk, RK: rk, S: s, I: i, J: j, F: fl, B: b, X: x}
		if ns != 0 {
			in.T = time.Unix(0, ns).UTC().Truncate(100 * time.Nanosecond)
		}
		copy(in.G[:], g)
		data, err := plan.encodeStruct(nil, reflect.ValueOf(&in).Elem(), &encodeState{})
		if err != nil {
			return // refused with an error: fine
		}
		var out fuzzDoc
		if err := plan.decodeStruct(data, reflect.ValueOf(&out).Elem(), &decodeState{}); err != nil {
			t.Fatalf("decode of our own encoding failed: %v\n%s", err, data)
		}
		if math.IsNaN(in.F) && math.IsNaN(out.F) {
			in.F, out.F = 0, 0
		}
		if math.Signbit(in.F) != math.Signbit(out.F) { // DeepEqual has -0 == 0
			t.Fatalf("round trip of %v gave %v\n%s", in.F, out.F, data)
		}
		if in.X == nil {
			out.X = nil
		}
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("round trip differs:\n in  %#v\n out %#v\n%s", in, out, data)
		}
	})
}

// FuzzConvertEquivalence: ToEntity and Decode give what the JSON route
// gave (convert_ref_test.go), in values and error classes, for structs of
// every field kind built from the inputs and for entities holding any mix
// of values under the struct's property names; and the JSON codec writes
// the same bytes and reads the same values as before.
func FuzzConvertEquivalence(f *testing.F) {
	f.Add("p", "r", "s", int64(1), 1.5, true, int64(0), int64(0), []byte{1}, uint64(0))
	f.Add("o'k", "r", "\xff", int64(math.MinInt64), math.NaN(), false, int64(-1e11), int64(999), []byte("0123456789abcdef"), uint64(math.MaxUint64))
	f.Add("p", "r", "0f8fad5b-d9cb-469f-a165-70867728950e", int64(300), 5.0, true, int64(253402300800), int64(1), []byte("Infinity"), uint64(0x5555555555555555))
	f.Add("p", "r", "2012-03-04T05:06:07Z", int64(-1), math.Inf(-1), false, int64(-11644473601), int64(-1), []byte(`{"PartitionKey":"p","RowKey":"r","S":"x","I8":300,"F":"NaN","F@odata.type":"Edm.Double"}`), uint64(0xaaaaaaaaaaaaaaaa))
	f.Fuzz(func(t *testing.T, pk, rk, s string, i int64, fl float64, b bool, sec, nsec int64, raw []byte, sel uint64) {
		bit := func(n uint) bool { return sel>>n&1 == 1 }
		var g GUID
		copy(g[:], raw)
		tm := time.Unix(sec, nsec)
		if bit(0) {
			tm = tm.In(time.FixedZone("F", int(i%86400)))
		}
		if bit(1) {
			tm = time.Time{}
		}
		gs, x, n32, u64 := s, raw, int(i), uint64(i)
		if bit(2) {
			gs = g.String()
		}
		if bit(3) {
			x = nil
		}
		if bit(4) {
			n32 = int(int32(i))
		}
		if bit(5) {
			u64 &= math.MaxInt64
		}
		i32, js := int32(i), strings.Fields(s)
		v := convKinds{PK: pk, RK: rk, Tag: s, TS: tm, convEmbedded: convEmbedded{E: s, E16: int16(i)},
			S: s, Named: status(s), G: g, GA: myUUID(g), GS: gs, B: b,
			I: int(i), I8: int8(i), I16: int16(i), I32: i32, I64: i, N32: n32, UN32: u64 >> (sel % 64), W64: int16(i),
			U: uint(u64), U8: uint8(i), U16: uint16(i), U32: uint32(i), U64: u64, F: fl, F32: float32(fl),
			T: tm, D: time.Duration(i), X: x, Txt: textVal{s}, TxtR: ptrText{s}}
		if bit(6) {
			v.SO, v.BO, v.IO, v.FO, v.TO, v.XO, v.GSO = s, b, i, fl, tm, x, gs
		}
		if bit(7) {
			v.SP, v.GP, v.GSP, v.BP, v.IP, v.UP, v.FP, v.TP, v.XP, v.TxtP = &s, &g, &gs, &b, &i32, &u64, &fl, &tm, &x, &textVal{s}
		}
		if bit(8) {
			v.J, v.JP, v.JM = js, &n32, map[string]int{s: int(i)}
		}
		switch sel >> 9 & 3 {
		case 1:
			v.JI = s
		case 2:
			v.JI = fl // NaN and infinities are json errors
		case 3:
			v.JI = raw
		}
		if bit(11) {
			v.Sec = s
		}
		if e, ok := checkEncode(t, "struct", v, true); ok {
			checkDecode[convKinds](t, "encoded", e, false)
			checkDecode[allTypes](t, "encoded", e, false)
		}

		// Any mix of values, the names of both structs and a bad one. The
		// keys are valid UTF-8 (see TestDecodeKeepsKeysVerbatim).
		pool := []any{nil, s, i32, i, int(i), fl, b, tm, g, myUUID(g), raw, []byte(nil), time.Time{}, int8(i), gs,
			strconv.FormatInt(i, 10), strconv.FormatFloat(fl, 'g', -1, 64), "NaN", float64(i), base64.StdEncoding.EncodeToString(raw),
			tm.UTC().Format(time.RFC3339Nano), float64(i32)}
		e := Entity{PartitionKey: strings.ToValidUTF8(pk, "?"), RowKey: strings.ToValidUTF8(rk, "?"), ETag: azcore.ETag(s), Timestamp: tm,
			Properties: map[string]any{}}
		names := []string{"1bad", "Other", "Str", "Int32", "Small", "U16", "Whole", "When", "IDStr", "Tags", "Ptr", "Narrow"}
		for _, fp := range plan0[convKinds]().fields {
			names = append(names, fp.name)
		}
		rnd := sel
		for j, name := range names {
			rnd = rnd*6364136223846793005 + 1442695040888963407
			pick := int(rnd>>33) % (len(pool) + 4)
			if j == 0 && pick != 0 {
				continue // a bad name only now and then
			}
			if pick < len(pool) {
				e.Properties[name] = pool[pick]
			}
		}
		checkDecode[convKinds](t, "mix", e, false)
		checkDecode[allTypes](t, "mix", e, false)

		// The JSON decoder, on the input as JSON.
		checkDecodeJSON[convKinds](t, "json", raw)
		checkDecodeJSON[allTypes](t, "json", raw)
	})
}
