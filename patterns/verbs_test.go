package patterns_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/spantest"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keyring"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// versionedYear is a typed wide entity with a version field.
type versionedYear struct {
	Meter string           `table:",pk"`
	Year  string           `table:",rk"`
	Unit  string           `table:"Unit"`
	Days  map[string]int64 `table:"-" wide:"D"`
	ETag  azcore.ETag      `table:",etag"`
}

// TestWideVersions: the version of a logical entity is part 0's ETag; Get
// fills the etag field with it, every write returns the new one without
// reading again, and Update and Delete are conditional on it.
func TestWideVersions(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	w, err := patterns.NewWide(typed[versionedYear](t, tbl), &patterns.WideOptions{PropertiesPerPart: 100})
	if err != nil {
		t.Fatal(err)
	}
	part0 := func() azcore.ETag {
		t.Helper()
		rk0, _ := patterns.WidePartKey("2025", 0)
		e, err := tbl.Get(ctx, "m1", rk0)
		if err != nil {
			t.Fatal(err)
		}
		return e.ETag
	}
	y := versionedYear{Meter: "m1", Year: "2025", Unit: "kWh", Days: map[string]int64{}}
	for d := 1; d <= 250; d++ {
		y.Days[fmt.Sprintf("%03d", d)] = int64(d)
	}

	before := acct.Meter().Snapshot()
	v1, err := w.Insert(ctx, y)
	if err != nil {
		t.Fatal(err)
	}
	if cost := acct.Meter().Snapshot().Sub(before); cost.Total() != 1 || cost.Count("table", "Transaction") != 1 {
		t.Fatalf("Insert cost %v; want one transaction and no read", cost)
	}
	if v1 == "" || v1 != part0() {
		t.Fatalf("Insert returned version %q; part 0's ETag is %q", v1, part0())
	}
	got, err := w.Get(ctx, "m1", "2025")
	if err != nil || got.ETag != v1 {
		t.Fatalf("Get: version %q, %v; want %q", got.ETag, err, v1)
	}

	// Update with the version read succeeds and returns the next one.
	got.Unit = "MWh"
	before = acct.Meter().Snapshot()
	v2, err := w.Update(ctx, got, got.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if cost := acct.Meter().Snapshot().Sub(before); cost.Total() != 2 || cost.Count("table", "Transaction") != 1 {
		t.Fatalf("Update cost %v; want one range query and one transaction", cost)
	}
	if v2 == v1 || v2 != part0() {
		t.Fatalf("Update returned version %q (before %q); part 0's ETag is %q", v2, v1, part0())
	}
	// A stale version: ErrPreconditionFailed, nothing written.
	got.Unit = "GWh"
	if _, err := w.Update(ctx, got, v1); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Fatalf("Update with a stale version: %v", err)
	}
	if now, _ := w.Get(ctx, "m1", "2025"); now.Unit != "MWh" || now.ETag != v2 {
		t.Fatalf("after a refused Update: %q at %q", now.Unit, now.ETag)
	}
	// An empty version is refused before sending, naming the operation.
	var ve *tablekit.ValidationError
	if _, err := w.Update(ctx, got, ""); !errors.As(err, &ve) || ve.Op != "patterns.Wide.Update" {
		t.Fatalf("Update with an empty ETag: %v", err)
	}
	// Any version; a missing entity is ErrNotFound.
	v3, err := w.Update(ctx, got, azcore.ETagAny)
	if err != nil || v3 != part0() {
		t.Fatalf("Update with ETagAny: %q, %v", v3, err)
	}
	missing := got
	missing.Year = "2024"
	if _, err := w.Update(ctx, missing, azcore.ETagAny); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("Update of a missing entity: %v", err)
	}

	// Upsert and Merge return the version too, with no read after.
	got.Unit = "TWh"
	before = acct.Meter().Snapshot()
	v4, err := w.Upsert(ctx, got)
	if cost := acct.Meter().Snapshot().Sub(before); cost.Total() != 2 {
		t.Fatalf("Upsert cost %v; want one range query and one transaction", cost)
	}
	if err != nil || v4 == v3 || v4 != part0() {
		t.Fatalf("Upsert: %q, %v; part 0's ETag is %q", v4, err, part0())
	}
	// Merge writes the properties v has (Unit, and one day of the map)
	// and keeps the others, on the version given.
	change := versionedYear{Meter: "m1", Year: "2025", Unit: "TWh", Days: map[string]int64{"100": -1}}
	if _, err := w.Merge(ctx, change, v3); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Fatalf("Merge on a stale version: %v", err)
	}
	if _, err := w.Merge(ctx, versionedYear{Meter: "m1", Year: "1999", Days: map[string]int64{"001": 1}}, azcore.ETagAny); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("Merge with ETagAny into a missing entity: %v", err)
	}
	v5, err := w.Merge(ctx, change, v4)
	if err != nil || v5 == v4 || v5 != part0() {
		t.Fatalf("Merge: %q, %v", v5, err)
	}
	if now, err := w.Get(ctx, "m1", "2025"); err != nil || len(now.Days) != 250 || now.Days["100"] != -1 || now.Days["101"] != y.Days["101"] {
		t.Fatalf("after Merge: %d days, day 100 = %d, %v", len(now.Days), now.Days["100"], err)
	}

	// Modify returns the value stored, with its version.
	stored, err := w.Modify(ctx, "m1", "2025", func(v *versionedYear) error {
		if v.ETag != v5 {
			return fmt.Errorf("Modify's function saw version %q, want %q", v.ETag, v5)
		}
		v.Days["200"] += 1000
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Days["200"] != 1200 || stored.Days["100"] != -1 || stored.ETag != part0() || stored.ETag == v5 {
		t.Fatalf("Modify returned day 200 = %d, day 100 = %d at %q; part 0 is at %q", stored.Days["200"], stored.Days["100"], stored.ETag, part0())
	}
	// fn's error is returned as it is, and nothing is written.
	stop := errors.New("stop")
	if _, err := w.Modify(ctx, "m1", "2025", func(*versionedYear) error { return stop }); err != stop {
		t.Fatalf("Modify with a failing function: %v", err)
	}
	// Modify creates a missing entity, as tablekit.Table.Modify does.
	created, err := w.Modify(ctx, "m1", "2026", func(v *versionedYear) error {
		if v.ETag != "" || v.Meter != "m1" || v.Year != "2026" {
			return fmt.Errorf("a new entity: %+v", v)
		}
		v.Unit = "kWh"
		v.Days = map[string]int64{"001": 1}
		return nil
	})
	if err != nil || created.ETag == "" || created.Days["001"] != 1 {
		t.Fatalf("Modify of a missing entity: %+v, %v", created, err)
	}

	// Delete is conditional on the version; DeleteIfExists is not.
	if err := w.Delete(ctx, "m1", "2025", v5); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Fatalf("Delete with a stale version: %v", err)
	}
	if err := w.Delete(ctx, "m1", "2025", ""); !errors.As(err, &ve) || ve.Op != "patterns.Wide.Delete" {
		t.Fatalf("Delete with an empty ETag: %v", err)
	}
	if err := w.Delete(ctx, "m1", "2025", stored.ETag); err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(ctx, "m1", "2025", azcore.ETagAny); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("Delete of a missing entity: %v", err)
	}
	if existed, err := w.DeleteIfExists(ctx, "m1", "2025"); existed || err != nil {
		t.Fatalf("DeleteIfExists of a missing entity: %v, %v", existed, err)
	}
	if existed, err := w.DeleteIfExists(ctx, "m1", "2026"); !existed || err != nil {
		t.Fatalf("DeleteIfExists: %v, %v", existed, err)
	}
	if n := len(rawEntities(t, ctx, tbl, tablekit.PartitionEq("m1"))); n != 0 {
		t.Fatalf("%d physical entities left", n)
	}
}

// secretYear is a wide entity with an encrypted property.
type secretYear struct {
	Meter string           `table:",pk"`
	Year  string           `table:",rk"`
	Owner string           `table:"Owner,encrypt"`
	Days  map[string]int64 `table:"-" wide:"D"`
}

// secretClick is the type of a table whose Owner property is encrypted.
type secretClick struct {
	PK    string `table:",pk"`
	RK    string `table:",rk"`
	Owner string `table:"Owner,encrypt"`
}

// encryptedTable returns a Table[T] with client-side encryption over the
// same table as tbl (which has none, and so reads the stored bytes); for
// a Table[tablekit.Entity], of the properties named.
func encryptedTable[T any](t *testing.T, tbl *tablekit.Table[tablekit.Entity], properties ...string) *tablekit.Table[T] {
	t.Helper()
	ring := new(keyring.KeyRing)
	if err := ring.Add("k1", keyring.GenerateKey()); err != nil {
		t.Fatal(err)
	}
	return typed[T](t, tbl, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: ring, Properties: properties}})
}

// isCiphertext reports whether a stored value is tablekit's ciphertext.
func isCiphertext(v any) bool {
	b, ok := v.([]byte)
	return ok && bytes.HasPrefix(b, []byte("TKE"))
}

// TestEncryptedTables: a pattern built on a table with client-side
// encryption writes through the table's property-bag view, which keeps
// the encryption: the encrypted properties are stored encrypted, in
// whatever physical entity holds them, and read back in plain text. A
// typed table passes its encryption on (Timeline over a Table[secretClick]),
// and Wide of a struct with fields tagged encrypt stores them encrypted
// (Table.ToEntity gives the view their plaintext to encrypt).
func TestEncryptedTables(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)

	t.Run("Wide", func(t *testing.T) {
		t.Parallel()
		tbl := entityTable(t, acct)
		w, err := patterns.NewWide(encryptedTable[tablekit.Entity](t, tbl, "Owner"), &patterns.WideOptions{PropertiesPerPart: 100})
		if err != nil {
			t.Fatal(err)
		}
		props := map[string]any{"Owner": "Ada Lovelace"}
		for d := 1; d <= 300; d++ {
			props[fmt.Sprintf("D%03d", d)] = int64(d)
		}
		if _, err := w.Upsert(ctx, tablekit.Entity{PartitionKey: "m1", RowKey: "2025", Properties: props}); err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, e := range rawEntities(t, ctx, tbl, tablekit.PartitionEq("m1")) {
			if v, ok := e.Properties["Owner"]; ok {
				found++
				if !isCiphertext(v) {
					t.Fatalf("Owner is stored as %T %v, not encrypted", v, v)
				}
			}
		}
		if found != 1 {
			t.Fatalf("Owner is in %d physical entities, want 1", found)
		}
		got, err := w.Get(ctx, "m1", "2025")
		if err != nil || got.Properties["Owner"] != "Ada Lovelace" || len(got.Properties) != 301 {
			t.Fatalf("Get: Owner %v, %d properties, %v", got.Properties["Owner"], len(got.Properties), err)
		}
		// A change of another part leaves Owner readable; a change of
		// Owner re-encrypts it, bound to its part's keys.
		if _, err := w.Merge(ctx, tablekit.Entity{PartitionKey: "m1", RowKey: "2025", Properties: map[string]any{"D250": int64(0), "Owner": "Ada King"}}, ""); err != nil {
			t.Fatal(err)
		}
		if got, err := w.Get(ctx, "m1", "2025"); err != nil || got.Properties["Owner"] != "Ada King" {
			t.Fatalf("after Merge: %v, %v", got.Properties["Owner"], err)
		}

		// A struct with encrypted fields: its Owner is encrypted in
		// whichever part holds it, and read back in clear.
		sw, err := patterns.NewWide(encryptedTable[secretYear](t, tbl), &patterns.WideOptions{PropertiesPerPart: 100})
		if err != nil {
			t.Fatalf("NewWide of a struct with encrypted fields: %v", err)
		}
		year := secretYear{Meter: "m2", Year: "2025", Owner: "Grace Hopper", Days: map[string]int64{}}
		for d := 1; d <= 250; d++ {
			year.Days[fmt.Sprintf("%03d", d)] = int64(d)
		}
		if _, err := sw.Upsert(ctx, year); err != nil {
			t.Fatal(err)
		}
		for _, e := range rawEntities(t, ctx, tbl, tablekit.PartitionEq("m2")) {
			if v, ok := e.Properties["Owner"]; ok && !isCiphertext(v) {
				t.Fatalf("the struct's Owner is stored as %T %v, not encrypted", v, v)
			}
		}
		gotYear, err := sw.Get(ctx, "m2", "2025")
		if err != nil || gotYear.Owner != "Grace Hopper" || len(gotYear.Days) != 250 {
			t.Fatalf("Get of the struct: Owner %q, %d days, %v", gotYear.Owner, len(gotYear.Days), err)
		}
	})

	t.Run("Large", func(t *testing.T) {
		t.Parallel()
		tbl := entityTable(t, acct)
		cont := testenv.NewContainer(t, acct)
		l, err := patterns.NewLarge(encryptedTable[tablekit.Entity](t, tbl, "SSN", "Notes"), cont, &patterns.LargeOptions{Threshold: 1024})
		if err != nil {
			t.Fatal(err)
		}
		props := map[string]any{"SSN": "123-45-6789", "Notes": strings.Repeat("private ", 1000), "Scan": bytes.Repeat([]byte{7}, 200000)}
		if _, err := l.Upsert(ctx, tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: props}); err != nil {
			t.Fatal(err)
		}
		refs, err := l.Refs(ctx, "p", "r")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := refs["Scan"]; !ok || len(refs) != 1 {
			t.Fatalf("blob references %v; want Scan only (encrypted properties stay in the entity)", refs)
		}
		raw := rawEntities(t, ctx, tbl, tablekit.PointQuery("p", "r"))
		if len(raw) != 1 || !isCiphertext(raw[0].Properties["SSN"]) || !isCiphertext(raw[0].Properties["Notes"]) {
			t.Fatalf("stored entity %v: SSN and Notes not encrypted", raw)
		}
		got, err := l.Get(ctx, "p", "r")
		if err != nil || got.Properties["SSN"] != props["SSN"] || got.Properties["Notes"] != props["Notes"] || !bytes.Equal(got.Properties["Scan"].([]byte), props["Scan"].([]byte)) {
			t.Fatalf("Get: %d properties, %v", len(got.Properties), err)
		}
	})

	t.Run("Timeline over a typed table", func(t *testing.T) {
		t.Parallel()
		tbl := entityTable(t, acct)
		// The table's type says Owner is encrypted; the timeline's entries
		// are property bags, encrypted by the view as the typed table
		// would.
		s, err := patterns.NewTimeline[tablekit.Entity](encryptedTable[secretClick](t, tbl).AsEntities(), "clicks", 2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, patterns.TimelineEntry[tablekit.Entity]{Time: s0, ID: "e1", Value: tablekit.Entity{Properties: map[string]any{"Owner": "ada"}}}); err != nil {
			t.Fatal(err)
		}
		raw := rawEntities(t, ctx, tbl, tablekit.Filter{})
		if len(raw) != 1 || !isCiphertext(raw[0].Properties["Owner"]) {
			t.Fatalf("stored entries %v: Owner not encrypted", raw)
		}
		for en, err := range s.Query(ctx, time.Time{}, time.Time{}, nil) {
			if err != nil || en.Value.Properties["Owner"] != "ada" {
				t.Fatalf("Query: %v, %v", en.Value.Properties, err)
			}
		}
	})
}

// TestTimelineShardLayout: a timeline's PartitionKeys are keys.ShardedKey of
// its name, the bucket first, and the name may hold any character.
func TestTimelineShardLayout(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	tbl := entityTable(t, testenv.Account(t, nil))
	s, err := patterns.NewTimeline[Click](tbl.AsEntities(), "clicks", 12)
	if err != nil {
		t.Fatal(err)
	}
	for b, pk := range s.Partitions() {
		if want := fmt.Sprintf("%02d!clicks", b); pk != want {
			t.Fatalf("partition %d is %q, want %q", b, pk, want)
		}
		if bucket, key, err := keys.ParseShardedKey(pk, 12); err != nil || bucket != b || key != "clicks" {
			t.Fatalf("ParseShardedKey(%q) = %d, %q, %v", pk, bucket, key, err)
		}
	}
	pk, _, err := s.Keys(s0, "evt-1")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := keys.Shard("evt-1", 12); pk != s.Partitions()[b] {
		t.Fatalf("entry evt-1 is in %q, want bucket %d", pk, b)
	}

	// A name holding / \ # ? and a control character.
	odd := "web/a\\b#c?d\x01!"
	s2, err := patterns.NewTimeline[tablekit.Entity](tbl.AsEntities(), odd, 4)
	if err != nil {
		t.Fatal(err)
	}
	for b, pk := range s2.Partitions() {
		comps, err := keys.Split(pk)
		if err != nil || len(comps) != 2 || comps[0] != fmt.Sprint(b) || comps[1] != odd {
			t.Fatalf("partition %q splits into %q, %v", pk, comps, err)
		}
	}
	if _, err := s2.Append(ctx, patterns.TimelineEntry[tablekit.Entity]{Time: s0, ID: "e1", Value: tablekit.Entity{Properties: map[string]any{"A": "x"}}}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for en, err := range s2.Query(ctx, s0, s0.Add(time.Second), nil) {
		if err != nil || en.ID != "e1" || en.Value.Properties["A"] != "x" {
			t.Fatalf("Query: %+v, %v", en, err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("Query found %d entries, want 1", n)
	}
}

// TestRefusalsNameTheirOperation: every refusal names the operation in
// ValidationError.Op, not in its Detail.
func TestRefusalsNameTheirOperation(t *testing.T) {
	t.Parallel()
	var nilEntities *tablekit.Table[tablekit.Entity]
	_, errWide := patterns.NewWide(nilEntities, nil)
	_, errLarge := patterns.NewLarge(nilEntities, nil, nil)
	_, errSeries := patterns.NewSeries(nilEntities, nil)
	_, errTimeline := patterns.NewTimeline[tablekit.Entity](nilEntities, "s", 8)
	_, errMixed := patterns.NewMixed(nilEntities, &tablekit.Registry{})
	_, errDenorm := patterns.NewDenormalizer[tablekit.Entity](nilEntities, map[string]string{"A": "B"}, nil)
	_, errPeriods := patterns.NewPeriodTables[tablekit.Entity](nil, "Logins", patterns.Daily(), nil)
	_, errEvery := patterns.Every(0)
	for _, c := range []struct {
		op  string
		err error
	}{
		{"patterns.NewWide", errWide},
		{"patterns.NewLarge", errLarge},
		{"patterns.NewSeries", errSeries},
		{"patterns.NewTimeline", errTimeline},
		{"patterns.NewMixed", errMixed},
		{"patterns.NewDenormalizer", errDenorm},
		{"patterns.NewPeriodTables", errPeriods},
		{"patterns.Every", errEvery},
	} {
		var ve *tablekit.ValidationError
		if !errors.As(c.err, &ve) || ve.Op != c.op || strings.Contains(ve.Detail, c.op) || !errors.Is(c.err, tablekit.ErrInvalidInput) || !strings.HasPrefix(c.err.Error(), "patterns: ") {
			t.Errorf("%s: %v (Op %q)", c.op, c.err, opOf(c.err))
		}
	}

	ctx := testContext(t)
	tbl := entityTable(t, testenv.Account(t, nil))
	s, err := patterns.NewSeries(tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(ctx, "p", "r", 24, 1); opOf(err) != "patterns.Series.Add" {
		t.Errorf("Series.Add of slot 24: %v", err)
	}
	w, err := patterns.NewWide(tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Upsert(ctx, tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{patterns.WideStampProperty: "x"}}); opOf(err) != "patterns.Wide.Upsert" {
		t.Errorf("Wide.Upsert of a reserved property: %v", err)
	}
}

func opOf(err error) string {
	var ve *tablekit.ValidationError
	if errors.As(err, &ve) {
		return ve.Op
	}
	return fmt.Sprintf("(not a ValidationError: %T)", err)
}

// s0 is a time for timeline entries.
var s0 = time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)

// TestLargeSpillSpan: each blob a write spills is uploaded inside a
// Large.Spill span naming the property, the blob and its size. The Azure
// SDK's blob client makes no spans of its own (azblob v1.8.0), so the test
// looks at the requests: every try of a blob upload carries, in its
// context, the open Large.Spill span of that blob, and the entity write
// carries none.
func TestLargeSpillSpan(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	rec := &spantest.Recorder{}
	type sent struct {
		method, path string
		span         *spantest.Span
		open         bool
	}
	var mu sync.Mutex
	var requests []sent
	watch := policyFunc(func(req *policy.Request) (*http.Response, error) {
		s := spantest.FromContext(req.Raw().Context())
		open := s != nil && !s.Ended()
		mu.Lock()
		requests = append(requests, sent{req.Raw().Method, req.Raw().URL.Path, s, open})
		mu.Unlock()
		return req.Next()
	})
	acct := testenv.Account(t, &tablekit.Options{ClientOptions: azcore.ClientOptions{TracingProvider: rec.Provider(), PerRetryPolicies: []policy.Policy{watch}}})
	docs, err := tablekit.OpenTable[Doc](acct, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := docs.CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = docs.DeleteTable(context.Background()) })
	cont := testenv.NewContainer(t, acct)
	l, err := patterns.NewLarge(docs, acct.Blobs().ServiceClient().NewContainerClient(containerName(cont.URL())), &patterns.LargeOptions{Threshold: 1024})
	if err != nil {
		t.Fatal(err)
	}
	d := Doc{Folder: "f", Name: "d", Title: "spans", Body: strings.Repeat("b", 5000), Scan: bytes.Repeat([]byte{1}, 100000)}
	if _, err := l.Upsert(ctx, d); err != nil {
		t.Fatal(err)
	}
	refs, err := l.Refs(ctx, "f", "d")
	if err != nil {
		t.Fatal(err)
	}

	spills := map[string]*spantest.Span{}
	for _, s := range rec.Spans() {
		if s.Name == "Large.Spill" {
			spills[fmt.Sprint(s.Attrs["tablekit.blob"])] = s
		}
	}
	if len(spills) != 2 || len(refs) != 2 {
		t.Fatalf("%d Large.Spill spans for %d blobs (%v)", len(spills), len(refs), refs)
	}
	for prop, ref := range refs {
		s := spills[ref.Blob]
		if s == nil {
			t.Fatalf("no Large.Spill span for blob %s", ref.Blob)
		}
		if !s.Ended() || s.Failed() || s.Attrs["tablekit.property"] != prop || s.Attrs["tablekit.bytes"] != int(ref.Size) {
			t.Errorf("span of %s: ended %v, error %v, attributes %v", prop, s.Ended(), s.Failed(), s.Attrs)
		}
		uploads := 0
		for _, r := range requests {
			if r.method == http.MethodPut && strings.HasSuffix(r.path, "/"+ref.Blob) {
				uploads++
				if r.span != s || !r.open {
					t.Errorf("the upload of %s was sent in span %q (open %v), not in its open Large.Spill span", ref.Blob, r.span.Path(), r.open)
				}
			}
		}
		if uploads == 0 {
			t.Errorf("no upload of %s was seen", ref.Blob)
		}
	}
	for _, r := range requests {
		if r.method == http.MethodPost && r.span != nil && strings.Contains(r.span.Path(), "Large.Spill") {
			t.Errorf("the entity write was sent inside %s", r.span.Path())
		}
	}
}

// TestServiceErrorsNameTheirOperation: an error the service answered, or a
// conflict a pattern found, starts with the operation the caller made and
// still matches tablekit's sentinel.
func TestServiceErrorsNameTheirOperation(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	acct := testenv.Account(t, nil)
	tbl := entityTable(t, acct)
	w, err := patterns.NewWide(tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"A": "a"}}
	v1, err := w.Insert(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Upsert(ctx, tablekit.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"A": "b"}}); err != nil {
		t.Fatal(err)
	}
	m, err := patterns.NewMixed(tbl, &tablekit.Registry{})
	if err != nil {
		t.Fatal(err)
	}
	_, errInsert := w.Insert(ctx, e)
	_, errUpdate := w.Update(ctx, e, v1)
	_, errMerge := w.Merge(ctx, e, v1)
	_, errGet := w.Get(ctx, "p", "missing")
	errDelete := w.Delete(ctx, "p", "missing", azcore.ETagAny)
	_, errMixed := m.Get(ctx, "p", "missing")
	for _, c := range []struct {
		prefix string
		err    error
		want   error
	}{
		{"patterns: Wide.Insert: ", errInsert, tablekit.ErrAlreadyExists},
		{"patterns: Wide.Update: ", errUpdate, tablekit.ErrPreconditionFailed},
		{"patterns: Wide.Merge: ", errMerge, tablekit.ErrPreconditionFailed},
		{"patterns: Wide.Get: ", errGet, tablekit.ErrNotFound},
		{"patterns: Wide.Delete: ", errDelete, tablekit.ErrNotFound},
		{"patterns: Mixed.Get: ", errMixed, tablekit.ErrNotFound},
	} {
		if !errors.Is(c.err, c.want) || !strings.HasPrefix(fmt.Sprint(c.err), c.prefix) {
			t.Errorf("want an error starting %q matching %v, got %v", c.prefix, c.want, c.err)
		}
	}
}

// TestAnnotatedRefusals: a refusal about one of several inputs says which,
// after the operation's name and once: "patterns: Timeline.Append: invalid
// input ... entry 1: ...".
func TestAnnotatedRefusals(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	tbl := entityTable(t, testenv.Account(t, nil))
	s, err := patterns.NewTimeline[tablekit.Entity](tbl, "clicks", 2)
	if err != nil {
		t.Fatal(err)
	}
	_, errAppend := s.Append(ctx, patterns.TimelineEntry[tablekit.Entity]{Time: s0, ID: "a"}, patterns.TimelineEntry[tablekit.Entity]{Time: s0, ID: "bad\xffid"})
	m, err := patterns.NewMixed(tbl, &tablekit.Registry{})
	if err != nil {
		t.Fatal(err)
	}
	_, errTx := m.Transaction(ctx, tablekit.InsertAction[any](tablekit.Entity{PartitionKey: "p", RowKey: "r"}), tablekit.InsertAction[any](Employee{Department: "p", Key: "e"}))
	for _, c := range []struct {
		op, context string
		err         error
	}{
		{"patterns.Timeline.Append", "entry 1: ", errAppend},
		{"patterns.Mixed.Transaction", "action 1: ", errTx},
	} {
		msg := fmt.Sprint(c.err)
		if opOf(c.err) != c.op || !strings.HasPrefix(msg, opname(c.op)) || strings.Count(msg, opname(c.op)) != 1 || !strings.Contains(msg, c.context) {
			t.Errorf("%s: %v (Op %q)", c.op, c.err, opOf(c.err))
		}
	}
}

// opname is how an error of op starts: "patterns: Timeline.Append: ".
func opname(op string) string { return "patterns: " + strings.TrimPrefix(op, "patterns.") + ": " }
