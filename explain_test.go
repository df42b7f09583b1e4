package tablekit_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
)

// explainCase is one filter and the plan Explain must give.
type explainCase struct {
	name    string
	filter  tablekit.Filter
	class   tablekit.QueryClass
	pk, rk  string // for point, range, partition scan
	keys    string // KeyRange.String of RowKeys (range) or PartitionKeys (partition range)
	props   []string
	reasons []tablekit.Reason
}

func raw(text string) tablekit.Filter { return tablekit.Where(text) }

// The design guide's examples, verbatim. Source: Microsoft Learn, "Design
// for querying" (Azure Table storage table design guide),
// https://learn.microsoft.com/azure/storage/tables/table-storage-design-for-query
// section "How your choice of PartitionKey and RowKey impacts query
// performance" (MicrosoftDocs/azure-docs,
// articles/storage/tables/table-storage-design-for-query.md; the same list
// is in table-storage-design-guide.md, "Design for querying").
var guideCases = []explainCase{
	{
		// "A Point Query is the most efficient lookup ..."
		name: "guide point query", filter: raw("(PartitionKey eq 'Sales') and (RowKey eq '2')"),
		class: tablekit.ClassPoint, pk: "Sales", rk: "2",
	},
	{
		// "Second best is a Range Query that uses the PartitionKey and
		// filters on a range of RowKey values ..."
		name: "guide range query", filter: raw("PartitionKey eq 'Sales' and RowKey ge 'S' and RowKey lt 'T'"),
		class: tablekit.ClassRange, pk: "Sales", keys: `prefix "S"`,
	},
	{
		// "Third best is a Partition Scan that uses the PartitionKey and
		// filters on another non-key property ..."
		name: "guide partition scan", filter: raw("PartitionKey eq 'Sales' and LastName eq 'Smith'"),
		class: tablekit.ClassPartitionScan, pk: "Sales", props: []string{"LastName"},
		reasons: []tablekit.Reason{tablekit.ReasonNoRowKey},
	},
	{
		// "A Table Scan does not include the PartitionKey and is very
		// inefficient ..."
		name: "guide table scan", filter: raw("LastName eq 'Jones'"),
		class: tablekit.ClassTableScan, props: []string{"LastName"},
		reasons: []tablekit.Reason{tablekit.ReasonPropertiesOnly},
	},
	{
		// "It will perform a table scan regardless of whether or not your
		// filter uses the RowKey."
		name: "guide table scan with RowKey", filter: raw("RowKey eq '2'"),
		class:   tablekit.ClassTableScan,
		reasons: []tablekit.Reason{tablekit.ReasonRowKeyOnly},
	},
	{
		// "using an "or" to specify a filter based on RowKey values
		// results in a partition scan and is not treated as a range query"
		name: "guide or over RowKeys", filter: raw("PartitionKey eq 'Sales' and (RowKey eq '121' or RowKey eq '322')"),
		class: tablekit.ClassPartitionScan, pk: "Sales",
		reasons: []tablekit.Reason{tablekit.ReasonOrRowKeys},
	},
}

// The filters of tablekit's helpers and combinators.
var helperCases = []explainCase{
	{
		name: "PointQuery", filter: tablekit.PointQuery("Sales", "000223"),
		class: tablekit.ClassPoint, pk: "Sales", rk: "000223",
	},
	{
		name: "PointQuery with quotes and empty keys", filter: tablekit.PointQuery("o'k", ""),
		class: tablekit.ClassPoint, pk: "o'k", rk: "",
	},
	{
		name: "PartitionEq", filter: tablekit.PartitionEq("Sales"),
		class: tablekit.ClassPartitionScan, pk: "Sales",
		reasons: []tablekit.Reason{tablekit.ReasonNoRowKey},
	},
	{
		name: "RowKeyRange", filter: tablekit.RowKeyRange("Sales", "000100", "000200"),
		class: tablekit.ClassRange, pk: "Sales", keys: `["000100", "000200")`,
	},
	{
		name: "RowKeyRange open above", filter: tablekit.RowKeyRange("Sales", "000100", ""),
		class: tablekit.ClassRange, pk: "Sales", keys: `["000100", …)`,
	},
	{
		name: "RowKeyRange open below", filter: tablekit.RowKeyRange("Sales", "", "000200"),
		class: tablekit.ClassRange, pk: "Sales", keys: `(…, "000200")`,
	},
	{
		name: "RowKeyRange unbounded", filter: tablekit.RowKeyRange("Sales", "", ""),
		class: tablekit.ClassPartitionScan, pk: "Sales",
		reasons: []tablekit.Reason{tablekit.ReasonNoRowKey},
	},
	{
		name: "RowKeyPrefix", filter: tablekit.RowKeyPrefix("Sales", "emp_"),
		class: tablekit.ClassRange, pk: "Sales", keys: `prefix "emp_"`,
	},
	{
		name: "RowKeyPrefix without an end", filter: tablekit.RowKeyPrefix("Sales", "\U0010FFFF"),
		class: tablekit.ClassRange, pk: "Sales", keys: `prefix "\U0010ffff"`,
	},
	{
		name: "PartitionRange", filter: tablekit.PartitionRange("2024-01", "2024-04"),
		class: tablekit.ClassPartitionRange, keys: `["2024-01", "2024-04")`,
		reasons: []tablekit.Reason{tablekit.ReasonPartitionRange},
	},
	{
		name: "PartitionRange open", filter: tablekit.PartitionRange("", "m"),
		class: tablekit.ClassPartitionRange, keys: `(…, "m")`,
		reasons: []tablekit.Reason{tablekit.ReasonPartitionRange},
	},
	{
		name: "zero Filter", filter: tablekit.Filter{},
		class:   tablekit.ClassTableScan,
		reasons: []tablekit.Reason{tablekit.ReasonNoFilter},
	},
	{
		name: "Where with placeholders", filter: tablekit.Where("PartitionKey eq ? and RowKey ge ? and Age gt ?", "Sales", "000100", 30),
		class: tablekit.ClassRange, pk: "Sales", keys: `["000100", …)`, props: []string{"Age"},
	},
	{
		name: "And of helpers and Where", filter: tablekit.And(tablekit.PartitionEq("Sales"), tablekit.Where("Age gt ? and Active eq ?", 30, true)),
		class: tablekit.ClassPartitionScan, pk: "Sales", props: []string{"Age", "Active"},
		reasons: []tablekit.Reason{tablekit.ReasonNoRowKey},
	},
	{
		name: "Or of two points in one partition", filter: tablekit.Or(tablekit.PointQuery("Sales", "1"), tablekit.PointQuery("Sales", "2")),
		class: tablekit.ClassPartitionScan, pk: "Sales",
		reasons: []tablekit.Reason{tablekit.ReasonOrRowKeys},
	},
	{
		name: "Or of two partitions", filter: tablekit.Or(tablekit.PartitionEq("Sales"), tablekit.PartitionEq("HR")),
		class:   tablekit.ClassTableScan,
		reasons: []tablekit.Reason{tablekit.ReasonOrPartitionKeys, tablekit.ReasonNoPartitionKey},
	},
	{
		name: "Or of two points in two partitions", filter: tablekit.Or(tablekit.PointQuery("Sales", "1"), tablekit.PointQuery("HR", "2")),
		class:   tablekit.ClassTableScan,
		reasons: []tablekit.Reason{tablekit.ReasonOrPartitionKeys, tablekit.ReasonNoPartitionKey},
	},
	{
		name: "Not of a partition", filter: tablekit.Not(tablekit.PartitionEq("Sales")),
		class:   tablekit.ClassTableScan,
		reasons: []tablekit.Reason{tablekit.ReasonNotOverKey, tablekit.ReasonNoPartitionKey},
	},
	{
		name: "And with Not of a point", filter: tablekit.And(tablekit.PartitionEq("Sales"), tablekit.Not(tablekit.Where("RowKey eq ?", "x"))),
		class: tablekit.ClassPartitionScan, pk: "Sales",
		reasons: []tablekit.Reason{tablekit.ReasonNotOverKey},
	},
}

// Hand-written filters, including what the service accepts but cannot use.
var handCases = []explainCase{
	{
		name: "Timestamp only", filter: raw("Timestamp ge datetime'2024-01-01T00:00:00Z'"),
		class: tablekit.ClassTableScan, props: []string{"Timestamp"},
		reasons: []tablekit.Reason{tablekit.ReasonTimestamp},
	},
	{
		name: "Timestamp and a property", filter: raw("Timestamp ge datetime'2024-01-01T00:00:00Z' and Age gt 3"),
		class: tablekit.ClassTableScan, props: []string{"Timestamp", "Age"},
		reasons: []tablekit.Reason{tablekit.ReasonPropertiesOnly, tablekit.ReasonTimestamp},
	},
	{
		name: "Timestamp in a partition", filter: raw("PartitionKey eq 'p' and Timestamp lt datetime'2024-01-01T00:00:00.0000000Z'"),
		class: tablekit.ClassPartitionScan, pk: "p", props: []string{"Timestamp"},
		reasons: []tablekit.Reason{tablekit.ReasonNoRowKey, tablekit.ReasonTimestamp},
	},
	{
		name: "ne on PartitionKey", filter: raw("PartitionKey ne 'Sales'"),
		class:   tablekit.ClassTableScan,
		reasons: []tablekit.Reason{tablekit.ReasonKeyNotEqual, tablekit.ReasonNoPartitionKey},
	},
	{
		name: "PartitionKey against a number", filter: raw("PartitionKey eq 5 and RowKey eq '1'"),
		class:   tablekit.ClassTableScan,
		reasons: []tablekit.Reason{tablekit.ReasonKeyNotString, tablekit.ReasonNoPartitionKey},
	},
	{
		name: "PartitionKey against a property", filter: raw("PartitionKey eq RowKey"),
		class:   tablekit.ClassTableScan,
		reasons: []tablekit.Reason{tablekit.ReasonKeyNotLiteral, tablekit.ReasonNoPartitionKey},
	},
	{
		name: "literal first", filter: raw("'Sales' eq PartitionKey and 'a' le RowKey and 'c' gt RowKey"),
		class: tablekit.ClassRange, pk: "Sales", keys: `["a", "c")`,
	},
	{
		name: "tightest bounds win", filter: raw("PartitionKey eq 'p' and RowKey gt 'a' and RowKey ge 'c' and RowKey le 'x' and RowKey lt 'x'"),
		class: tablekit.ClassRange, pk: "p", keys: `["c", "x")`,
	},
	{
		name: "contradiction", filter: raw("PartitionKey eq 'a' and PartitionKey eq 'b'"),
		class: tablekit.ClassPartitionScan, pk: "a",
		reasons: []tablekit.Reason{tablekit.ReasonNoRowKey, tablekit.ReasonContradiction},
	},
	{
		name: "or of same partition keeps it", filter: raw("(PartitionKey eq 'p' and Age gt 1) or (PartitionKey eq 'p' and Age lt 0)"),
		class: tablekit.ClassPartitionScan, pk: "p", props: []string{"Age"},
		reasons: []tablekit.Reason{tablekit.ReasonNoRowKey},
	},
	{
		name: "or over properties inside a partition", filter: raw("PartitionKey eq 'p' and (A eq 1 or B eq 2)"),
		class: tablekit.ClassPartitionScan, pk: "p", props: []string{"A", "B"},
		reasons: []tablekit.Reason{tablekit.ReasonNoRowKey},
	},
	{
		name: "or that drops the partition", filter: raw("PartitionKey eq 'p' or Age gt 3"),
		class: tablekit.ClassTableScan, props: []string{"Age"},
		reasons: []tablekit.Reason{tablekit.ReasonOrPartitionKeys, tablekit.ReasonNoPartitionKey},
	},
	{
		name: "point and an or elsewhere", filter: raw("PartitionKey eq 'p' and RowKey eq 'r' and (A eq 1 or B eq 'x')"),
		class: tablekit.ClassPoint, pk: "p", rk: "r", props: []string{"A", "B"},
	},
	{
		name: "typed literals and doubled quotes", filter: raw("PartitionKey eq 'it''s' and RowKey eq \"say \"\"hi\"\"\" and G eq guid'0f8fad5b-d9cb-469f-a165-70867728950e' and B eq X'0a1b' and N eq 5L and D eq -0.5 and F eq false and Z eq null"),
		class: tablekit.ClassPoint, pk: "it's", rk: `say "hi"`, props: []string{"G", "B", "N", "D", "F", "Z"},
	},
	{
		name: "bare boolean property", filter: raw("PartitionKey eq 'p' and Active"),
		class: tablekit.ClassPartitionScan, pk: "p", props: []string{"Active"},
		reasons: []tablekit.Reason{tablekit.ReasonNoRowKey},
	},
	{
		name: "white space of all kinds", filter: raw("\tPartitionKey\neq 'p'\r\nand  RowKey eq  'r' "),
		class: tablekit.ClassPoint, pk: "p", rk: "r",
	},
	{
		name: "lowercase key names are properties", filter: raw("partitionkey eq 'p'"),
		class: tablekit.ClassTableScan, props: []string{"partitionkey"},
		reasons: []tablekit.Reason{tablekit.ReasonPropertiesOnly},
	},
}

func TestExplain(t *testing.T) {
	for _, group := range [][]explainCase{guideCases, helperCases, handCases} {
		for _, c := range group {
			t.Run(c.name, func(t *testing.T) {
				if err := c.filter.Err(); err != nil {
					t.Fatalf("bad test filter: %v", err)
				}
				p := c.filter.Explain()
				if p.Err != nil {
					t.Fatalf("Explain(%q): %v", c.filter, p.Err)
				}
				if p.Class != c.class {
					t.Errorf("Explain(%q).Class = %v, want %v (plan: %s)", c.filter, p.Class, c.class, p)
				}
				switch c.class {
				case tablekit.ClassPoint:
					if p.PartitionKey != c.pk || p.RowKey != c.rk {
						t.Errorf("keys %q/%q, want %q/%q", p.PartitionKey, p.RowKey, c.pk, c.rk)
					}
				case tablekit.ClassRange:
					if p.PartitionKey != c.pk || p.RowKeys.String() != c.keys {
						t.Errorf("PartitionKey %q RowKeys %s, want %q %s", p.PartitionKey, p.RowKeys, c.pk, c.keys)
					}
				case tablekit.ClassPartitionScan:
					if p.PartitionKey != c.pk {
						t.Errorf("PartitionKey %q, want %q", p.PartitionKey, c.pk)
					}
				case tablekit.ClassPartitionRange:
					if got := p.PartitionKeys.String(); got != c.keys {
						t.Errorf("PartitionKeys %s, want %s", got, c.keys)
					}
				}
				if !reflect.DeepEqual(p.Properties, c.props) {
					t.Errorf("Properties %q, want %q", p.Properties, c.props)
				}
				if !reflect.DeepEqual(p.Reasons, c.reasons) {
					t.Errorf("Reasons %q, want %q", p.Reasons, c.reasons)
				}
				wantScan := c.class == tablekit.ClassTableScan
				if p.IsTableScan() != wantScan {
					t.Errorf("IsTableScan() = %v", p.IsTableScan())
				}
			})
		}
	}
}

func TestExplainString(t *testing.T) {
	for _, c := range []struct {
		f    tablekit.Filter
		want string
	}{
		{guideCases[0].filter, `point query: PartitionKey "Sales", RowKey "2"`},
		{guideCases[1].filter, `range query: PartitionKey "Sales", RowKey prefix "S"`},
		{guideCases[2].filter, `partition scan: PartitionKey "Sales"; filters LastName; no usable RowKey condition: the whole partition is read`},
		{guideCases[3].filter, `table scan: filters LastName; filters only on properties, which have no index`},
		{tablekit.Filter{}, `table scan: no filter: every entity is read`},
		{tablekit.PartitionRange("a", ""), `partition range scan: PartitionKey ["a", …); PartitionKey range: every partition in it is read`},
		{raw("PartitionKey eq"), `unknown: filter not understood; byte 15: expected a property or a value after eq, found end of filter`},
	} {
		if got := c.f.Explain().String(); got != c.want {
			t.Errorf("Explain(%q).String()\n got  %s\n want %s", c.f, got, c.want)
		}
	}
}

func TestExplainUnparsable(t *testing.T) {
	for _, text := range []string{
		"PartitionKey eq",
		"PartitionKey == 'a'",
		"PartitionKey eq 'a' and",
		"(PartitionKey eq 'a'",
		"PartitionKey eq 'a')",
		"PartitionKey eq 'a' RowKey eq 'b'",
		"PartitionKey EQ 'a'",
		"substringof('a', Name)",
		"Name eq 'unterminated",
		"foo'bar'",
		"and",
		"()",
		"1abc eq 2",
		strings.Repeat("(", 10000) + "A eq 1" + strings.Repeat(")", 10000),
		strings.Repeat("not ", 10000) + "A eq 1",
	} {
		p := raw(text).Explain()
		if p.Class != tablekit.ClassUnknown || p.Err == nil || !p.IsTableScan() || !p.HasReason(tablekit.ReasonUnparsed) {
			t.Errorf("Explain(%.40q) = %s, want unknown with an error", text, p)
		}
	}
	// Deep but allowed nesting still parses.
	deep := strings.Repeat("(", 400) + "PartitionKey eq 'a'" + strings.Repeat(")", 400)
	if p := raw(deep).Explain(); p.Class != tablekit.ClassPartitionScan {
		t.Errorf("400 parentheses: %s", p)
	}
	// A Filter carrying an error explains as unknown with that error.
	bad := tablekit.Where("PartitionKey eq ?")
	if p := bad.Explain(); p.Class != tablekit.ClassUnknown || !errors.Is(p.Err, tablekit.ErrInvalidInput) {
		t.Errorf("Explain of a bad filter: %s", p)
	}
}

func BenchmarkExplain(b *testing.B) {
	f := tablekit.And(tablekit.RowKeyRange("Sales", "000100", "000200"), tablekit.Where("Age gt ? and Email ne ?", 30, "x@example.com"))
	b.ReportAllocs()
	for b.Loop() {
		_ = f.Explain()
	}
}
