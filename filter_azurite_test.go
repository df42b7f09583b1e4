package tablekit_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

// filterTestRow is one entity of TestFilterAzurite, written with explicit
// @odata.type annotations (not aztables.EDMEntity).
type filterTestRow struct {
	pk, rk string
	name   string
	big    int64
	small  int32
	dbl    float64
	when   time.Time
	id     [16]byte
	blob   []byte
	flag   bool
}

func (r filterTestRow) json(t *testing.T) []byte {
	t.Helper()
	g := r.id
	guid := filterHex(g[0:4]) + "-" + filterHex(g[4:6]) + "-" + filterHex(g[6:8]) + "-" + filterHex(g[8:10]) + "-" + filterHex(g[10:16])
	m := map[string]any{
		"PartitionKey":        r.pk,
		"RowKey":              r.rk,
		"Name":                r.name,
		"Big":                 strconv.FormatInt(r.big, 10),
		"Big@odata.type":      "Edm.Int64",
		"Small":               r.small,
		"Small@odata.type":    "Edm.Int32",
		"Dbl":                 r.dbl,
		"Dbl@odata.type":      "Edm.Double",
		"When":                r.when.UTC().Format("2006-01-02T15:04:05.0000000Z"),
		"When@odata.type":     "Edm.DateTime",
		"Uid":                 guid,
		"Uid@odata.type":      "Edm.Guid",
		"Blob":                base64.StdEncoding.EncodeToString(r.blob),
		"Blob@odata.type":     "Edm.Binary",
		"Flag":                r.flag,
		"Flag@odata.type":     "Edm.Boolean",
		"Comment":             `say "hi", it's fine`,
		"Comment@odata.type":  "Edm.String",
		"Injected":            "x' or PartitionKey ne '",
		"Injected@odata.type": "Edm.String",
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func filterHex(p []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(p))
	for _, c := range p {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestFilterAzurite runs filters built by Where and the helpers against a
// real table service: hostile strings stay values, and every literal type
// selects exactly the entity holding that value.
func TestFilterAzurite(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	tableName := testenv.CreateTable(t, acct)
	client := acct.Tables().NewClient(tableName)

	base := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	const hostile = "x' or PartitionKey ne '"
	rows := []filterTestRow{
		{pk: "p", rk: "a1", name: hostile, big: 1<<53 + 1, small: -5, dbl: 2.0, when: base.Add(1 * time.Millisecond),
			id: [16]byte{0x1b, 0x4e, 0x28, 0xba, 0x2f, 0xa1, 0x11, 0xd2, 0x88, 0x3f, 0x00, 0x16, 0xd3, 0xcc, 0x42, 0x7e}, blob: []byte{0x00, 0xff}, flag: true},
		{pk: "p", rk: "a2", name: "x", big: 1 << 53, small: 7, dbl: 0.1, when: base.Add(2 * time.Millisecond),
			id: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, blob: []byte("hello"), flag: false},
		{pk: "p", rk: "b1", name: "x' or 'a' eq 'a", big: -3, small: 2147483647, dbl: -2.5e-7, when: base.Add(3 * time.Millisecond),
			id: [16]byte{0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00}, blob: []byte{0xca, 0xfe}, flag: false},
		{pk: "p'q", rk: "b2", name: "it's \"quoted\" ? & + % # 東京 🎉", big: 42, small: 0, dbl: 1e21, when: base.Add(4 * time.Millisecond),
			id: [16]byte{9}, blob: []byte{}, flag: false},
		{pk: "q", rk: "a1", name: "y", big: 0, small: 1, dbl: 3.25, when: base.Add(5 * time.Millisecond),
			id: [16]byte{8}, blob: []byte{1}, flag: false},
	}
	for _, r := range rows {
		if _, err := client.AddEntity(ctx, r.json(t), nil); err != nil {
			t.Fatalf("AddEntity %s/%s: %v", r.pk, r.rk, err)
		}
	}

	tests := []struct {
		name string
		f    tablekit.Filter
		want []string // "pk/rk", sorted
	}{
		{"hostile string is a value", tablekit.Where("PartitionKey eq ? and Name eq ?", "p", hostile), []string{"p/a1"}},
		// The control: the same value pasted into the text would match every entity.
		{"control: concatenated text is injectable", tablekit.Where("PartitionKey eq 'p' and Name eq '" + hostile + "'"), []string{"p'q/b2", "p/a1", "p/a2", "p/b1", "q/a1"}},
		{"hostile string in any partition", tablekit.Where("Name eq ?", hostile), []string{"p/a1"}},
		{"second hostile string", tablekit.Where("Name eq ?", "x' or 'a' eq 'a"), []string{"p/b1"}},
		{"punctuation and unicode string", tablekit.Where("Name eq ?", rows[3].name), []string{"p'q/b2"}},
		{"quote in key", tablekit.PartitionEq("p'q"), []string{"p'q/b2"}},
		{"int64 beyond 2^53", tablekit.Where("Big eq ?", int64(1<<53+1)), []string{"p/a1"}},
		{"int64 as int", tablekit.Where("Big eq ?", 1<<53), []string{"p/a2"}},
		{"int64 negative", tablekit.Where("Big eq ?", int64(-3)), []string{"p/b1"}},
		{"int32", tablekit.Where("Small eq ?", int32(7)), []string{"p/a2"}},
		{"int32 max", tablekit.Where("Small eq ?", int32(2147483647)), []string{"p/b1"}},
		{"int32 negative from int8", tablekit.Where("Small eq ?", int8(-5)), []string{"p/a1"}},
		{"double whole", tablekit.Where("Dbl eq ?", 2.0), []string{"p/a1"}},
		{"double fraction", tablekit.Where("Dbl eq ?", 0.1), []string{"p/a2"}},
		{"double tiny negative", tablekit.Where("Dbl eq ?", -2.5e-7), []string{"p/b1"}},
		{"double huge", tablekit.Where("Dbl eq ?", 1e21), []string{"p'q/b2"}},
		{"double range", tablekit.Where("Dbl gt ? and Dbl lt ?", 0.0, 2.5), []string{"p/a1", "p/a2"}},
		{"datetime eq", tablekit.Where("When eq ?", base.Add(3*time.Millisecond)), []string{"p/b1"}},
		{"datetime range", tablekit.Where("When ge ? and When lt ?", base.Add(2*time.Millisecond), base.Add(4*time.Millisecond)), []string{"p/a2", "p/b1"}},
		{"datetime other zone", tablekit.Where("When eq ?", base.Add(time.Millisecond).In(time.FixedZone("UTC-8", -8*3600))), []string{"p/a1"}},
		{"guid", tablekit.Where("Uid eq ?", rows[2].id), []string{"p/b1"}},
		{"guid pointer", tablekit.Where("Uid eq ?", &rows[1].id), []string{"p/a2"}},
		{"binary", tablekit.Where("Blob eq ?", []byte{0xca, 0xfe}), []string{"p/b1"}},
		{"binary text", tablekit.Where("Blob eq ?", []byte("hello")), []string{"p/a2"}},
		{"bool true", tablekit.Where("Flag eq ?", true), []string{"p/a1"}},
		{"bool false in partition", tablekit.Where("PartitionKey eq ? and Flag eq ?", "p", false), []string{"p/a2", "p/b1"}},
		{"literal in expr kept", tablekit.Where(`Comment eq 'say "hi", it''s fine' and RowKey eq ?`, "a2"), []string{"p/a2"}},
		{"point query", tablekit.PointQuery("p", "b1"), []string{"p/b1"}},
		{"point query hostile key matches nothing", tablekit.PointQuery("p", hostile), nil},
		{"row key prefix", tablekit.RowKeyPrefix("p", "a"), []string{"p/a1", "p/a2"}},
		{"row key range", tablekit.RowKeyRange("p", "a2", "b2"), []string{"p/a2", "p/b1"}},
		{"row key range open", tablekit.RowKeyRange("p", "a2", ""), []string{"p/a2", "p/b1"}},
		{"partition range", tablekit.PartitionRange("p'", "q"), []string{"p'q/b2"}},
		{"and or not", tablekit.And(tablekit.Or(tablekit.PartitionEq("p"), tablekit.PartitionEq("q")), tablekit.Not(tablekit.Where("Flag eq ?", false))), []string{"p/a1"}},
		{"zero filter is a scan", tablekit.Filter{}, []string{"p'q/b2", "p/a1", "p/a2", "p/b1", "q/a1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := filterQuery(t, client, tt.f)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("filter %s\nmatched %q\nwant    %q", tt.f, got, tt.want)
			}
		})
	}
}

// filterQuery returns the "pk/rk" of every entity f matches, sorted.
func filterQuery(t *testing.T, client *aztables.Client, f tablekit.Filter) []string {
	t.Helper()
	if err := f.Err(); err != nil {
		t.Fatalf("filter: %v", err)
	}
	text := f.String()
	opts := &aztables.ListEntitiesOptions{Select: filterPtr("PartitionKey,RowKey")}
	if text != "" {
		opts.Filter = &text
	}
	var got []string
	pager := client.NewListEntitiesPager(opts)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatalf("query %q: %v", text, err)
		}
		for _, raw := range page.Entities {
			var e struct{ PartitionKey, RowKey string }
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			got = append(got, e.PartitionKey+"/"+e.RowKey)
		}
	}
	slices.Sort(got)
	return got
}

func filterPtr[T any](v T) *T { return &v }
