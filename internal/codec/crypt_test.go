package codec

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/cryptkey"
	"github.com/tablekit/tablekit/internal/limits"
)

type secretDoc struct {
	PK    string    `table:",pk"`
	RK    string    `table:",rk"`
	Name  string    // plain
	S     string    `table:",encrypt"`
	I     int64     `table:",encrypt"`
	J     int32     `table:",encrypt"`
	F     float64   `table:",encrypt"`
	B     bool      `table:",encrypt"`
	T     time.Time `table:",encrypt"`
	X     []byte    `table:",encrypt"`
	G     GUID      `table:",encrypt"`
	GS    string    `table:",guid,encrypt"`
	Tags  []string  `table:",json,encrypt"`
	P     *int      `table:",encrypt"`
	Empty string    `table:",omitempty,encrypt"`
}

func testRing(t testing.TB, ids ...string) *testKeys {
	t.Helper()
	r := newTestKeys()
	for _, id := range ids {
		if err := r.Add(id, generateKey()); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// testKeys is a KeyResolver for this package's internal tests, which
// cannot import package keyring (it imports this package): keys by id, the
// first added current until Rotate.
type testKeys struct {
	mu      sync.Mutex
	keys    map[string][]byte
	current string
}

func newTestKeys() *testKeys { return &testKeys{keys: map[string][]byte{}} }

func generateKey() []byte {
	k := make([]byte, cryptkey.Size)
	rand.Read(k)
	return k
}

func (r *testKeys) Add(id string, key []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keys[id]; ok {
		return fmt.Errorf("key %q added twice", id)
	}
	r.keys[id] = bytes.Clone(key)
	if r.current == "" {
		r.current = id
	}
	return nil
}

func (r *testKeys) Rotate(id string, key []byte) error {
	if err := r.Add(id, key); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.current = id
	return nil
}

func (r *testKeys) CurrentKey(ctx context.Context) (string, []byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current == "" {
		return "", nil, fmt.Errorf("no current key: %w", ErrKeyNotFound)
	}
	return r.current, bytes.Clone(r.keys[r.current]), nil
}

func (r *testKeys) ResolveKey(ctx context.Context, id string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.keys[id]
	if !ok {
		return nil, fmt.Errorf("no key %q: %w", id, ErrKeyNotFound)
	}
	return bytes.Clone(k), nil
}

func testCrypt(t testing.TB, keys KeyResolver, plan *typePlan, props ...string) *cryptContext {
	t.Helper()
	c, err := newCryptContext(&Encryption{Keys: keys, Properties: props}, plan)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCryptStructRoundTrip(t *testing.T) {
	plan, err := planFor(reflect.TypeFor[secretDoc]())
	if err != nil {
		t.Fatal(err)
	}
	c := testCrypt(t, testRing(t, "k1"), plan)
	seven := 7
	in := secretDoc{
		PK: "p", RK: "r", Name: "visible", S: "sécret \"quoted\" \\ \u2028 \x01", I: math.MinInt64, J: math.MaxInt32,
		F: 1.0, B: true, T: time.Date(2024, 2, 29, 12, 0, 0, 1234500, time.UTC), X: []byte{0, 1, 2, 255},
		G: GUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, GS: "01234567-89ab-cdef-0123-456789abcdef",
		Tags: []string{"a", "b"}, P: &seven,
	}
	data, err := plan.encodeStruct(nil, reflect.ValueOf(&in).Elem(), &encodeState{crypt: c})
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"sécret", "quoted", "01234567-89ab", `"a"`} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("encoded entity contains plaintext %q: %s", secret, data)
		}
	}
	if !bytes.Contains(data, []byte(`"Name":"visible"`)) {
		t.Errorf("plain property missing: %s", data)
	}
	if bytes.Contains(data, []byte(`"Empty"`)) {
		t.Errorf("omitempty encrypted property was written: %s", data)
	}
	var out secretDoc
	if err := plan.decodeStruct(data, reflect.ValueOf(&out).Elem(), &decodeState{crypt: c}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n in %+v\nout %+v", in, out)
	}

	// The same data as an Entity with the same keys: the types come back.
	var e Entity
	if err := decodeEntity(data, &e, &decodeState{crypt: c}); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"Name": "visible", "S": in.S, "I": in.I, "J": in.J, "F": 1.0, "B": true, "T": in.T,
		"X": in.X, "G": in.G, "GS": GUID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef},
		"Tags": `["a","b"]`, "P": int64(7)}
	if !reflect.DeepEqual(e.Properties, want) {
		t.Fatalf("entity:\n got %#v\nwant %#v", e.Properties, want)
	}
	if _, ok := e.Properties["F"].(float64); !ok {
		t.Errorf("whole-number double came back as %T", e.Properties["F"])
	}
}

func TestCryptEntityRoundTrip(t *testing.T) {
	ring := testRing(t, "k1")
	c := testCrypt(t, ring, nil, "S", "N", "D", "X", "T")
	in := &Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{
		"S": "secret", "N": int32(-5), "D": math.Inf(-1), "X": []byte{}, "T": time.Time{}, "Plain": "hello",
	}}
	data, err := encodeEntity(nil, in, &encodeState{crypt: c})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("secret")) || bytes.Contains(data, []byte("Infinity")) {
		t.Fatalf("plaintext in %s", data)
	}
	if bytes.Contains(data, []byte(`"T"`)) {
		t.Fatalf("zero time (absent) was written: %s", data)
	}
	var out Entity
	if err := decodeEntity(data, &out, &decodeState{crypt: c}); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"S": "secret", "N": int32(-5), "D": math.Inf(-1), "X": []byte{}, "Plain": "hello"}
	if !reflect.DeepEqual(out.Properties, want) {
		t.Fatalf("got %#v\nwant %#v", out.Properties, want)
	}

	// A listed property stored in clear is refused, without echoing it.
	plain := []byte(`{"PartitionKey":"p","RowKey":"r","S":"my password"}`)
	err = decodeEntity(plain, &out, &decodeState{crypt: c})
	if !errors.Is(err, ErrDecrypt) || strings.Contains(err.Error(), "my password") {
		t.Fatalf("plain value of an encrypted property: %v", err)
	}
}

// sealedValue encrypts one string property and returns the raw ciphertext.
func sealedValue(t *testing.T, c *cryptContext, pk, rk, name, value string) []byte {
	t.Helper()
	data, err := encodeEntity(nil, &Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]any{name: value}}, &encodeState{crypt: c})
	if err != nil {
		t.Fatal(err)
	}
	var r rawEntity
	if err := r.parse(data); err != nil {
		t.Fatal(err)
	}
	raw, err := decodeBase64(r.props[0].val)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func entityWith(pk, rk, name string, raw []byte) []byte {
	return []byte(`{"PartitionKey":"` + pk + `","RowKey":"` + rk + `","` + name + `":"` + base64.StdEncoding.EncodeToString(raw) + `","` + name + `@odata.type":"Edm.Binary"}`)
}

func TestCryptBinding(t *testing.T) {
	c := testCrypt(t, testRing(t, "k1"), nil, "A", "B")
	raw := sealedValue(t, c, "p", "r", "A", "top secret")
	var e Entity
	if err := decodeEntity(entityWith("p", "r", "A", raw), &e, &decodeState{crypt: c}); err != nil || e.Properties["A"] != "top secret" {
		t.Fatalf("original place: %v %v", err, e.Properties)
	}
	for _, tc := range []struct{ what, pk, rk, name string }{
		{"other row", "p", "r2", "A"},
		{"other partition", "p2", "r", "A"},
		{"other property", "p", "r", "B"},
		{"keys shifted between pk and rk", "pr", "", "A"},
	} {
		err := decodeEntity(entityWith(tc.pk, tc.rk, tc.name, raw), &e, &decodeState{crypt: c, table: "T"})
		if !errors.Is(err, ErrDecrypt) {
			t.Fatalf("%s: want ErrDecrypt, got %v", tc.what, err)
		}
		if !isDecodeError(err, tc.name) || !strings.Contains(err.Error(), "cannot decrypt") || !strings.Contains(err.Error(), "copied from another entity or property") {
			t.Fatalf("%s: unclear error %v", tc.what, err)
		}
		if strings.Contains(err.Error(), "top secret") {
			t.Fatalf("%s: error shows plaintext", tc.what)
		}
	}
}

func TestCryptTamper(t *testing.T) {
	c := testCrypt(t, testRing(t, "k1"), nil, "A")
	raw := sealedValue(t, c, "p", "r", "A", "abc")
	for i := range raw {
		for _, flip := range []byte{0x01, 0x80} {
			bad := bytes.Clone(raw)
			bad[i] ^= flip
			var e Entity
			err := decodeEntity(entityWith("p", "r", "A", bad), &e, &decodeState{crypt: c})
			if !errors.Is(err, ErrDecrypt) {
				t.Fatalf("byte %d ^ %#x: want ErrDecrypt, got %v (%v)", i, flip, err, e.Properties)
			}
		}
	}
	// Truncated and extended values.
	for _, bad := range [][]byte{raw[:len(raw)-1], append(bytes.Clone(raw), 0), raw[:encMinSize-1]} {
		var e Entity
		if err := decodeEntity(entityWith("p", "r", "A", bad), &e, &decodeState{crypt: c}); !errors.Is(err, ErrDecrypt) {
			t.Fatalf("len %d: want ErrDecrypt, got %v", len(bad), err)
		}
	}
}

func TestCryptKeys(t *testing.T) {
	ring := testRing(t, "k1")
	c := testCrypt(t, ring, nil, "A")
	raw1 := sealedValue(t, c, "p", "r", "A", "one")
	if id, err := CiphertextKeyID(raw1); err != nil || id != "k1" {
		t.Fatalf("CiphertextKeyID = %q, %v", id, err)
	}
	if err := ring.Rotate("k2", generateKey()); err != nil {
		t.Fatal(err)
	}
	raw2 := sealedValue(t, c, "p", "r", "A", "two")
	if id, _ := CiphertextKeyID(raw2); id != "k2" {
		t.Fatalf("after rotation the key id is %q", id)
	}
	for _, raw := range [][]byte{raw1, raw2} {
		var e Entity
		if err := decodeEntity(entityWith("p", "r", "A", raw), &e, &decodeState{crypt: c}); err != nil {
			t.Fatal(err)
		}
	}

	// A reader without k1 (a fresh context: nothing cached).
	ring2 := newTestKeys()
	k2, _ := ring.ResolveKey(t.Context(), "k2")
	ring2.Add("k2", k2)
	c2 := testCrypt(t, ring2, nil, "A")
	var e Entity
	err := decodeEntity(entityWith("p", "r", "A", raw1), &e, &decodeState{crypt: c2})
	if !errors.Is(err, ErrKeyNotFound) || !errors.Is(err, ErrDecrypt) || !strings.Contains(err.Error(), `"k1"`) {
		t.Fatalf("missing key: %v", err)
	}
	// Same id, different key: authentication fails.
	ring3 := newTestKeys()
	ring3.Add("k1", generateKey())
	c3 := testCrypt(t, ring3, nil, "A")
	err = decodeEntity(entityWith("p", "r", "A", raw1), &e, &decodeState{crypt: c3})
	if !errors.Is(err, ErrDecrypt) || errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("wrong key: %v", err)
	}
	// No key at all: writing fails with ErrKeyNotFound.
	c4 := testCrypt(t, newTestKeys(), nil, "A")
	_, err = encodeEntity(nil, &Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"A": "x"}}, &encodeState{crypt: c4})
	if !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("empty ring: %v", err)
	}
}

// changingResolver returns a different key for the same id on each call.
type changingResolver struct{}

func (changingResolver) CurrentKey(ctx context.Context) (string, []byte, error) {
	return "k", generateKey(), nil
}
func (changingResolver) ResolveKey(ctx context.Context, id string) ([]byte, error) {
	return generateKey(), nil
}

func TestCryptResolverMustBeStable(t *testing.T) {
	c := testCrypt(t, changingResolver{}, nil, "A")
	e := &Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"A": "x"}}
	if _, err := encodeEntity(nil, e, &encodeState{crypt: c}); err != nil {
		t.Fatal(err)
	}
	_, err := encodeEntity(nil, e, &encodeState{crypt: c})
	if err == nil || !strings.Contains(err.Error(), "must always name the same key") {
		t.Fatalf("want a stable-key error, got %v", err)
	}
}

func TestCryptLimits(t *testing.T) {
	c := testCrypt(t, testRing(t, "k1"), nil, "X", "S")
	overhead := len(encMagic) + 2 + len("k1") + encNonceSize + 1 + encTagSize
	fits := make([]byte, limits.PropertyBytes-overhead)
	e := &Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"X": fits}}
	if _, err := encodeEntity(nil, e, &encodeState{crypt: c}); err != nil {
		t.Fatalf("%d bytes should fit: %v", len(fits), err)
	}
	e.Properties["X"] = append(fits, 0)
	_, err := encodeEntity(nil, e, &encodeState{crypt: c})
	var ve *ValidationError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &ve) || ve.Property != "X" || ve.Size != limits.PropertyBytes+1 {
		t.Fatalf("one byte more: %v", err)
	}
	// Plain-value checks still apply before encryption.
	e.Properties = map[string]any{"S": "bad \xff utf-8"}
	if _, err := encodeEntity(nil, e, &encodeState{crypt: c}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("invalid UTF-8: %v", err)
	}
}

func TestNewCryptContext(t *testing.T) {
	plan, err := planFor(reflect.TypeFor[secretDoc]())
	if err != nil {
		t.Fatal(err)
	}
	ring := testRing(t, "k1")
	for _, tc := range []struct {
		enc  *Encryption
		plan *typePlan
		want string
	}{
		{&Encryption{}, nil, "KeyResolver"},
		{&Encryption{Keys: ring, Properties: []string{"PartitionKey"}}, nil, "never encrypted"},
		{&Encryption{Keys: ring, Properties: []string{"RowKey"}}, plan, "never encrypted"},
		{&Encryption{Keys: ring, Properties: []string{"1bad"}}, nil, "not a valid identifier"},
		{&Encryption{Keys: ring, Properties: []string{"Name"}}, plan, "not a field tagged encrypt"},
	} {
		_, err := newCryptContext(tc.enc, tc.plan)
		if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.enc.Properties, err, tc.want)
		}
	}
	c, err := newCryptContext(&Encryption{Keys: ring, Properties: []string{"S"}}, plan)
	if err != nil || !c.encrypts("S") || !c.encrypts("Tags") || c.encrypts("Name") {
		t.Fatalf("struct context: %v %v", err, c)
	}
}

func TestCryptCheckFilter(t *testing.T) {
	// The filters themselves are the root's (crypt_filter_test.go there):
	// here, the properties a filter compares.
	c := testCrypt(t, testRing(t, "k1"), nil, "SSN")
	for _, props := range [][]string{{"SSN"}, {"PartitionKey", "SSN", "Age"}} {
		if err := c.checkFilter(props); !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "SSN") {
			t.Errorf("%v: %v", props, err)
		}
	}
	for _, props := range [][]string{nil, {"PartitionKey"}, {"Name"}, {"PartitionKey", "RowKey"}} {
		if err := c.checkFilter(props); err != nil {
			t.Errorf("%v: %v", props, err)
		}
	}
}

func TestLooksEncrypted(t *testing.T) {
	c := testCrypt(t, testRing(t, "k1"), nil, "A")
	raw := sealedValue(t, c, "p", "r", "A", "x")
	rp := &rawProp{val: []byte(base64.StdEncoding.EncodeToString(raw)), kind: tokString, edm: edmBinary}
	if !c.looksEncrypted(rp) {
		t.Fatal("ciphertext not recognised")
	}
	for _, b := range [][]byte{nil, []byte("TKE"), bytes.Repeat([]byte{0}, 64), append([]byte("TKE\x00\x02"), make([]byte, 60)...)} {
		rp := &rawProp{val: []byte(base64.StdEncoding.EncodeToString(b)), kind: tokString, edm: edmBinary}
		if c.looksEncrypted(rp) {
			t.Errorf("%q recognised as ciphertext", b)
		}
	}
	if _, err := CiphertextKeyID([]byte("plain bytes")); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("CiphertextKeyID of plain bytes: %v", err)
	}
}

// FuzzDecrypt: decrypting arbitrary bytes never panics, and arbitrary
// plaintexts that do authenticate never panic the decoder either.
func FuzzDecrypt(f *testing.F) {
	ring := newTestKeys()
	ring.Add("k1", bytes.Repeat([]byte{7}, cryptkey.Size))
	c, err := newCryptContext(&Encryption{Keys: ring, Properties: []string{"A"}}, nil)
	if err != nil {
		f.Fatal(err)
	}
	plan, err := planFor(reflect.TypeFor[secretDoc]())
	if err != nil {
		f.Fatal(err)
	}
	sc := testCrypt(f, ring, plan)
	f.Add([]byte("TKE\x01\x02k1............"))
	f.Add([]byte("Sabc"))
	f.Add([]byte(`L"12"`))
	f.Add([]byte(`D"NaN"`))
	f.Add([]byte("TKE\x01\x02k10123456789abSx0123456789abcdef"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := &decodeState{crypt: c, pk: "p", rk: "r"}
		// Arbitrary bytes as a stored value.
		rp := &rawProp{name: []byte("A"), val: []byte(base64.StdEncoding.EncodeToString(data)), kind: tokString, edm: edmBinary}
		c.looksEncrypted(rp)
		if _, err := d.decrypt("A", rp); err == nil {
			t.Fatalf("arbitrary bytes decrypted: %q", data)
		}
		rp.val = data // not even base64
		c.looksEncrypted(rp)
		d.decrypt("A", rp)
		CiphertextKeyID(data)
		// Arbitrary bytes as an authenticated plaintext, through every
		// decode path.
		sealed, err := c.seal("k1", nil, "p", "r", "A", data)
		if err != nil {
			t.Fatal(err)
		}
		obj := entityWith("p", "r", "A", sealed)
		var e Entity
		decodeEntity(obj, &e, &decodeState{crypt: c})
		for _, name := range []string{"S", "I", "J", "F", "B", "T", "X", "G", "GS", "Tags", "P"} {
			sealed, _ := sc.seal("k1", nil, "p", "r", name, data)
			var doc secretDoc
			plan.decodeStruct(entityWith("p", "r", name, sealed), reflect.ValueOf(&doc).Elem(), &decodeState{crypt: sc})
		}
	})
}

// BenchmarkEncryptedProperty measures encoding and decoding one entity with
// two encrypted properties (a 32-byte string and an int64).
func BenchmarkEncryptedProperty(b *testing.B) {
	type doc struct {
		PK  string `table:",pk"`
		RK  string `table:",rk"`
		SSN string `table:",encrypt"`
		N   int64  `table:",encrypt"`
	}
	plan, err := planFor(reflect.TypeFor[doc]())
	if err != nil {
		b.Fatal(err)
	}
	c := testCrypt(b, testRing(b, "k1"), plan)
	in := doc{PK: "p", RK: "r", SSN: strings.Repeat("x", 32), N: 42}
	data, err := plan.encodeStruct(nil, reflect.ValueOf(&in).Elem(), &encodeState{crypt: c})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = plan.encodeStruct(buf[:0], reflect.ValueOf(&in).Elem(), &encodeState{crypt: c})
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		var out doc
		for b.Loop() {
			if err := plan.decodeStruct(data, reflect.ValueOf(&out).Elem(), &decodeState{crypt: c}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
