package transfer

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
)

// TestFormatRoundTrip: every EDM type, including values the service may
// not keep (-0), survives AppendEntity and the Reader exactly.
func TestFormatRoundTrip(t *testing.T) {
	g := tablekit.GUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	type uuidLike [16]byte
	in := tablekit.Entity{PartitionKey: "o'k \"q\" \\ 日本 🎉", RowKey: "\u2028line\nnext", Timestamp: time.Date(2020, 1, 2, 3, 4, 5, 600, time.UTC),
		Properties: map[string]any{
			"S": "x\x01y", "I32": int32(-7), "I64": int64(math.MaxInt64), "Int": 42,
			"D": 0.1, "DWhole": 3.0, "DNeg0": math.Copysign(0, -1), "NaN": math.NaN(), "Inf": math.Inf(1), "NInf": math.Inf(-1),
			"B": true, "T": time.Date(2021, 5, 6, 7, 8, 9, 123456700, time.FixedZone("x", 3600)),
			"G": g, "U": uuidLike(g), "Bin": []byte{0xff, 0}, "Nil": nil,
		}}
	var buf []byte
	buf = appendHeader(buf, Header{Version: formatVersion, Table: "T", Created: time.Unix(0, 0)})
	line, err := AppendEntity(nil, &in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
		t.Fatalf("not one line: %q", line)
	}
	buf = append(buf, line...)
	buf = appendTrailer(buf, trailer{Entities: 1})
	rd, err := NewReader(bytes.NewReader(buf))
	if err != nil {
		t.Fatal(err)
	}
	if h := rd.Header(); h.Table != "T" || h.Version != 1 {
		t.Errorf("header %+v", h)
	}
	out, err := rd.Next()
	if err != nil {
		t.Fatal(err)
	}
	if out.PartitionKey != in.PartitionKey || out.RowKey != in.RowKey || !out.Timestamp.Equal(in.Timestamp) {
		t.Errorf("keys %q/%q %v", out.PartitionKey, out.RowKey, out.Timestamp)
	}
	want := map[string]any{
		"S": "x\x01y", "I32": int32(-7), "I64": int64(math.MaxInt64), "Int": int64(42),
		"D": 0.1, "DWhole": 3.0, "DNeg0": math.Copysign(0, -1), "NaN": math.NaN(), "Inf": math.Inf(1), "NInf": math.Inf(-1),
		"B": true, "T": time.Date(2021, 5, 6, 6, 8, 9, 123456700, time.UTC), "G": g, "U": g, "Bin": []byte{0xff, 0},
	}
	if len(out.Properties) != len(want) {
		t.Errorf("%d properties, want %d: %v", len(out.Properties), len(want), out.Properties)
	}
	for k, w := range want {
		got := out.Properties[k]
		switch wv := w.(type) {
		case float64:
			gv, ok := got.(float64)
			if !ok || !(gv == wv && math.Signbit(gv) == math.Signbit(wv) || math.IsNaN(gv) && math.IsNaN(wv)) {
				t.Errorf("%s = %#v, want %#v", k, got, w)
			}
		case []byte:
			if gv, ok := got.([]byte); !ok || !bytes.Equal(gv, wv) {
				t.Errorf("%s = %#v, want %#v", k, got, w)
			}
		case time.Time:
			if gv, ok := got.(time.Time); !ok || !gv.Equal(wv) || gv.Location() != time.UTC {
				t.Errorf("%s = %#v, want %#v", k, got, w)
			}
		default:
			if got != w {
				t.Errorf("%s = %#v (%T), want %#v (%T)", k, got, got, w, w)
			}
		}
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Errorf("after the trailer: %v, want io.EOF", err)
	}
	if rd.trailer == nil || rd.trailer.Entities != 1 {
		t.Errorf("trailer %+v", rd.trailer)
	}
}

// TestFormatLine pins the exact text of a line: the format is a contract.
func TestFormatLine(t *testing.T) {
	e := tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{
		"a": int32(1), "b": int64(2), "c": 2.0, "d": "s", "e": false,
		"f": time.Date(2000, 1, 1, 0, 0, 0, 100, time.UTC), "g": tablekit.GUID{}, "h": []byte("hi"),
	}}
	line, err := AppendEntity(nil, &e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"PartitionKey":"p","RowKey":"r","Properties":{"a":["Edm.Int32",1],"b":["Edm.Int64","2"],"c":["Edm.Double","2"],"d":["Edm.String","s"],"e":["Edm.Boolean",false],"f":["Edm.DateTime","2000-01-01T00:00:00.0000001Z"],"g":["Edm.Guid","00000000-0000-0000-0000-000000000000"],"h":["Edm.Binary","aGk="]}}` + "\n"
	if string(line) != want {
		t.Errorf("line\n%s\nwant\n%s", line, want)
	}
	if got := string(appendHeader(nil, Header{Version: 1, Table: "T", Filter: "PartitionKey eq 'x'", Created: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)})); got != `{"tablekit":"export","version":1,"table":"T","filter":"PartitionKey eq 'x'","created":"2024-01-02T03:04:05Z"}`+"\n" {
		t.Errorf("header %s", got)
	}
}

// TestReaderErrors: bad lines are reported per line; a bad stream is
// refused whole.
func TestReaderErrors(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         error
	}{
		{"empty", "", ErrCorrupt},
		{"no header", `{"PartitionKey":"p","RowKey":"r","Properties":{}}` + "\n", ErrCorrupt},
		{"future version", `{"tablekit":"export","version":2}` + "\n", ErrCorrupt},
		{"no trailer", `{"tablekit":"export","version":1}` + "\n", ErrTruncated},
		{"cut line", `{"tablekit":"export","version":1}` + "\n" + `{"PartitionKey":"p"`, ErrTruncated},
		{"wrong count", `{"tablekit":"export","version":1}` + "\n" + `{"tablekit":"end","entities":3}` + "\n", ErrCorrupt},
		{"after trailer", `{"tablekit":"export","version":1}` + "\n" + `{"tablekit":"end","entities":0}` + "\n{}\n", ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd, err := NewReader(strings.NewReader(tc.stream))
			for err == nil {
				_, err = rd.Next()
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
	bad := []string{
		`{"PartitionKey":"p","RowKey":"r","Properties":{"x":["Edm.Int32",1.5]}}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":{"x":["Edm.Int32",3000000000]}}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":{"x":["Edm.Int64",3]}}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":{"x":["Edm.Double",1.5]}}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":{"x":["Edm.Double","1e999"]}}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":{"x":["Edm.Guid","nope"]}}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":{"x":["Edm.Binary","!!"]}}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":{"x":["Edm.DateTime","yesterday"]}}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":{"x":["Edm.Boolean","true"]}}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":{"x":["Edm.Decimal","1"]}}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":{"x":["Edm.String"]}}`,
		`{"PartitionKey":"p","Properties":{}}`,
		`[1,2]`,
	}
	stream := `{"tablekit":"export","version":1}` + "\n" + strings.Join(bad, "\n") + "\n" + `{"PartitionKey":"ok","RowKey":"r","Properties":{}}` + "\n" + `{"tablekit":"end","entities":14}` + "\n"
	rd, err := NewReader(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	for i := range bad {
		_, err := rd.Next()
		var le *EntityError
		if !errors.As(err, &le) || le.Line != i+2 {
			t.Errorf("line %d (%s): %v, want a EntityError", i+2, bad[i], err)
		}
	}
	if e, err := rd.Next(); err != nil || e.PartitionKey != "ok" {
		t.Errorf("good line after bad ones: %v, %v", e, err)
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Errorf("end: %v", err)
	}
}

// TestAppendEntityRefuses values without an EDM type.
func TestAppendEntityRefuses(t *testing.T) {
	for _, v := range []any{uint8(1), []string{"a"}, struct{}{}, "\xff"} {
		e := tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"x": v}}
		if _, err := AppendEntity(nil, &e); !errors.Is(err, tablekit.ErrInvalidInput) {
			t.Errorf("%T: err = %v", v, err)
		}
	}
	e := tablekit.Entity{PartitionKey: "\xff", RowKey: "r"}
	if _, err := AppendEntity(nil, &e); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("bad key: %v", err)
	}
}

// TestCompareKeys follows UTF-16 order, where a supplementary character
// sorts before U+E000..U+FFFF (UTF-8 byte order says the opposite).
func TestCompareKeys(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"a", "b", -1}, {"ab", "a", 1}, {"", "", 0}, {"é", "z", 1},
		{"🎉", "\uffff", -1}, {"\uffff", "🎉", 1}, {"x🎉", "x\ue000", -1},
	} {
		got := compareKeys(tc.a, tc.b)
		if got < 0 {
			got = -1
		} else if got > 0 {
			got = 1
		}
		if got != tc.want {
			t.Errorf("compareKeys(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte(`{"tablekit":"export","version":1}` + "\n" + `{"PartitionKey":"p","RowKey":"r","Properties":{"x":["Edm.Int64","1"]}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd, err := NewReader(bytes.NewReader(data))
		for i := 0; err == nil && i < 1000; i++ {
			var e tablekit.Entity
			e, err = rd.Next()
			var le *EntityError
			if errors.As(err, &le) {
				err = nil
				continue
			}
			if err == nil {
				// What was read writes back and reads the same.
				if _, werr := AppendEntity(nil, &e); werr != nil {
					t.Fatalf("read %v but cannot write it: %v", e, werr)
				}
			}
		}
	})
}
