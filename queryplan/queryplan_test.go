package queryplan_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/queryplan"
)

// explainCase is one filter and the plan Explain must give.
type explainCase struct {
	name    string
	filter  tablekit.Filter
	class   queryplan.Class
	pk, rk  string // for point, range, partition scan
	keys    string // KeyRange.String of RowKeys (range) or PartitionKeys (partition range)
	props   []string
	reasons []string
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
		class: queryplan.Point, pk: "Sales", rk: "2",
	},
	{
		// "Second best is a Range Query that uses the PartitionKey and
		// filters on a range of RowKey values ..."
		name: "guide range query", filter: raw("PartitionKey eq 'Sales' and RowKey ge 'S' and RowKey lt 'T'"),
		class: queryplan.Range, pk: "Sales", keys: `prefix "S"`,
	},
	{
		// "Third best is a Partition Scan that uses the PartitionKey and
		// filters on another non-key property ..."
		name: "guide partition scan", filter: raw("PartitionKey eq 'Sales' and LastName eq 'Smith'"),
		class: queryplan.PartitionScan, pk: "Sales", props: []string{"LastName"},
		reasons: []string{queryplan.ReasonNoRowKey},
	},
	{
		// "A Table Scan does not include the PartitionKey and is very
		// inefficient ..."
		name: "guide table scan", filter: raw("LastName eq 'Jones'"),
		class: queryplan.TableScan, props: []string{"LastName"},
		reasons: []string{queryplan.ReasonPropertiesOnly},
	},
	{
		// "It will perform a table scan regardless of whether or not your
		// filter uses the RowKey."
		name: "guide table scan with RowKey", filter: raw("RowKey eq '2'"),
		class:   queryplan.TableScan,
		reasons: []string{queryplan.ReasonRowKeyOnly},
	},
	{
		// "using an "or" to specify a filter based on RowKey values
		// results in a partition scan and is not treated as a range query"
		name: "guide or over RowKeys", filter: raw("PartitionKey eq 'Sales' and (RowKey eq '121' or RowKey eq '322')"),
		class: queryplan.PartitionScan, pk: "Sales",
		reasons: []string{queryplan.ReasonOrRowKeys},
	},
}

// The filters of tablekit's helpers and combinators.
var helperCases = []explainCase{
	{
		name: "PointQuery", filter: tablekit.PointQuery("Sales", "000223"),
		class: queryplan.Point, pk: "Sales", rk: "000223",
	},
	{
		name: "PointQuery with quotes and empty keys", filter: tablekit.PointQuery("o'k", ""),
		class: queryplan.Point, pk: "o'k", rk: "",
	},
	{
		name: "PartitionEq", filter: tablekit.PartitionEq("Sales"),
		class: queryplan.PartitionScan, pk: "Sales",
		reasons: []string{queryplan.ReasonNoRowKey},
	},
	{
		name: "RowKeyRange", filter: tablekit.RowKeyRange("Sales", "000100", "000200"),
		class: queryplan.Range, pk: "Sales", keys: `["000100", "000200")`,
	},
	{
		name: "RowKeyRange open above", filter: tablekit.RowKeyRange("Sales", "000100", ""),
		class: queryplan.Range, pk: "Sales", keys: `["000100", …)`,
	},
	{
		name: "RowKeyRange open below", filter: tablekit.RowKeyRange("Sales", "", "000200"),
		class: queryplan.Range, pk: "Sales", keys: `(…, "000200")`,
	},
	{
		name: "RowKeyRange unbounded", filter: tablekit.RowKeyRange("Sales", "", ""),
		class: queryplan.PartitionScan, pk: "Sales",
		reasons: []string{queryplan.ReasonNoRowKey},
	},
	{
		name: "RowKeyPrefix", filter: tablekit.RowKeyPrefix("Sales", "emp_"),
		class: queryplan.Range, pk: "Sales", keys: `prefix "emp_"`,
	},
	{
		name: "RowKeyPrefix without an end", filter: tablekit.RowKeyPrefix("Sales", "\U0010FFFF"),
		class: queryplan.Range, pk: "Sales", keys: `prefix "\U0010ffff"`,
	},
	{
		name: "PartitionRange", filter: tablekit.PartitionRange("2024-01", "2024-04"),
		class: queryplan.PartitionRange, keys: `["2024-01", "2024-04")`,
		reasons: []string{queryplan.ReasonPartitionRange},
	},
	{
		name: "PartitionRange open", filter: tablekit.PartitionRange("", "m"),
		class: queryplan.PartitionRange, keys: `(…, "m")`,
		reasons: []string{queryplan.ReasonPartitionRange},
	},
	{
		name: "zero Filter", filter: tablekit.Filter{},
		class:   queryplan.TableScan,
		reasons: []string{queryplan.ReasonNoFilter},
	},
	{
		name: "Where with placeholders", filter: tablekit.Where("PartitionKey eq ? and RowKey ge ? and Age gt ?", "Sales", "000100", 30),
		class: queryplan.Range, pk: "Sales", keys: `["000100", …)`, props: []string{"Age"},
	},
	{
		name: "And of helpers and Where", filter: tablekit.And(tablekit.PartitionEq("Sales"), tablekit.Where("Age gt ? and Active eq ?", 30, true)),
		class: queryplan.PartitionScan, pk: "Sales", props: []string{"Age", "Active"},
		reasons: []string{queryplan.ReasonNoRowKey},
	},
	{
		name: "Or of two points in one partition", filter: tablekit.Or(tablekit.PointQuery("Sales", "1"), tablekit.PointQuery("Sales", "2")),
		class: queryplan.PartitionScan, pk: "Sales",
		reasons: []string{queryplan.ReasonOrRowKeys},
	},
	{
		name: "Or of two partitions", filter: tablekit.Or(tablekit.PartitionEq("Sales"), tablekit.PartitionEq("HR")),
		class:   queryplan.TableScan,
		reasons: []string{queryplan.ReasonOrPartitionKeys, queryplan.ReasonNoPartitionKey},
	},
	{
		name: "Or of two points in two partitions", filter: tablekit.Or(tablekit.PointQuery("Sales", "1"), tablekit.PointQuery("HR", "2")),
		class:   queryplan.TableScan,
		reasons: []string{queryplan.ReasonOrPartitionKeys, queryplan.ReasonNoPartitionKey},
	},
	{
		name: "Not of a partition", filter: tablekit.Not(tablekit.PartitionEq("Sales")),
		class:   queryplan.TableScan,
		reasons: []string{queryplan.ReasonNotOverKey, queryplan.ReasonNoPartitionKey},
	},
	{
		name: "And with Not of a point", filter: tablekit.And(tablekit.PartitionEq("Sales"), tablekit.Not(tablekit.Where("RowKey eq ?", "x"))),
		class: queryplan.PartitionScan, pk: "Sales",
		reasons: []string{queryplan.ReasonNotOverKey},
	},
}

// Hand-written filters, including what the service accepts but cannot use.
var handCases = []explainCase{
	{
		name: "Timestamp only", filter: raw("Timestamp ge datetime'2024-01-01T00:00:00Z'"),
		class: queryplan.TableScan, props: []string{"Timestamp"},
		reasons: []string{queryplan.ReasonTimestamp},
	},
	{
		name: "Timestamp and a property", filter: raw("Timestamp ge datetime'2024-01-01T00:00:00Z' and Age gt 3"),
		class: queryplan.TableScan, props: []string{"Timestamp", "Age"},
		reasons: []string{queryplan.ReasonPropertiesOnly, queryplan.ReasonTimestamp},
	},
	{
		name: "Timestamp in a partition", filter: raw("PartitionKey eq 'p' and Timestamp lt datetime'2024-01-01T00:00:00.0000000Z'"),
		class: queryplan.PartitionScan, pk: "p", props: []string{"Timestamp"},
		reasons: []string{queryplan.ReasonNoRowKey, queryplan.ReasonTimestamp},
	},
	{
		name: "ne on PartitionKey", filter: raw("PartitionKey ne 'Sales'"),
		class:   queryplan.TableScan,
		reasons: []string{queryplan.ReasonKeyNotEqual, queryplan.ReasonNoPartitionKey},
	},
	{
		name: "PartitionKey against a number", filter: raw("PartitionKey eq 5 and RowKey eq '1'"),
		class:   queryplan.TableScan,
		reasons: []string{queryplan.ReasonKeyNotString, queryplan.ReasonNoPartitionKey},
	},
	{
		name: "PartitionKey against a property", filter: raw("PartitionKey eq RowKey"),
		class:   queryplan.TableScan,
		reasons: []string{queryplan.ReasonKeyNotLiteral, queryplan.ReasonNoPartitionKey},
	},
	{
		name: "literal first", filter: raw("'Sales' eq PartitionKey and 'a' le RowKey and 'c' gt RowKey"),
		class: queryplan.Range, pk: "Sales", keys: `["a", "c")`,
	},
	{
		name: "tightest bounds win", filter: raw("PartitionKey eq 'p' and RowKey gt 'a' and RowKey ge 'c' and RowKey le 'x' and RowKey lt 'x'"),
		class: queryplan.Range, pk: "p", keys: `["c", "x")`,
	},
	{
		name: "contradiction", filter: raw("PartitionKey eq 'a' and PartitionKey eq 'b'"),
		class: queryplan.PartitionScan, pk: "a",
		reasons: []string{queryplan.ReasonNoRowKey, queryplan.ReasonContradiction},
	},
	{
		name: "or of same partition keeps it", filter: raw("(PartitionKey eq 'p' and Age gt 1) or (PartitionKey eq 'p' and Age lt 0)"),
		class: queryplan.PartitionScan, pk: "p", props: []string{"Age"},
		reasons: []string{queryplan.ReasonNoRowKey},
	},
	{
		name: "or over properties inside a partition", filter: raw("PartitionKey eq 'p' and (A eq 1 or B eq 2)"),
		class: queryplan.PartitionScan, pk: "p", props: []string{"A", "B"},
		reasons: []string{queryplan.ReasonNoRowKey},
	},
	{
		name: "or that drops the partition", filter: raw("PartitionKey eq 'p' or Age gt 3"),
		class: queryplan.TableScan, props: []string{"Age"},
		reasons: []string{queryplan.ReasonOrPartitionKeys, queryplan.ReasonNoPartitionKey},
	},
	{
		name: "point and an or elsewhere", filter: raw("PartitionKey eq 'p' and RowKey eq 'r' and (A eq 1 or B eq 'x')"),
		class: queryplan.Point, pk: "p", rk: "r", props: []string{"A", "B"},
	},
	{
		name: "typed literals and doubled quotes", filter: raw("PartitionKey eq 'it''s' and RowKey eq \"say \"\"hi\"\"\" and G eq guid'0f8fad5b-d9cb-469f-a165-70867728950e' and B eq X'0a1b' and N eq 5L and D eq -0.5 and F eq false and Z eq null"),
		class: queryplan.Point, pk: "it's", rk: `say "hi"`, props: []string{"G", "B", "N", "D", "F", "Z"},
	},
	{
		name: "bare boolean property", filter: raw("PartitionKey eq 'p' and Active"),
		class: queryplan.PartitionScan, pk: "p", props: []string{"Active"},
		reasons: []string{queryplan.ReasonNoRowKey},
	},
	{
		name: "white space of all kinds", filter: raw("\tPartitionKey\neq 'p'\r\nand  RowKey eq  'r' "),
		class: queryplan.Point, pk: "p", rk: "r",
	},
	{
		name: "lowercase key names are properties", filter: raw("partitionkey eq 'p'"),
		class: queryplan.TableScan, props: []string{"partitionkey"},
		reasons: []string{queryplan.ReasonPropertiesOnly},
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
				case queryplan.Point:
					if p.PartitionKey != c.pk || p.RowKey != c.rk {
						t.Errorf("keys %q/%q, want %q/%q", p.PartitionKey, p.RowKey, c.pk, c.rk)
					}
				case queryplan.Range:
					if p.PartitionKey != c.pk || p.RowKeys.String() != c.keys {
						t.Errorf("PartitionKey %q RowKeys %s, want %q %s", p.PartitionKey, p.RowKeys, c.pk, c.keys)
					}
				case queryplan.PartitionScan:
					if p.PartitionKey != c.pk {
						t.Errorf("PartitionKey %q, want %q", p.PartitionKey, c.pk)
					}
				case queryplan.PartitionRange:
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
				wantScan := c.class == queryplan.TableScan
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
		if p.Class != queryplan.Unknown || p.Err == nil || !p.IsTableScan() || len(p.Reasons) != 0 || queryplan.Explain(text).Err == nil {
			t.Errorf("Explain(%.40q) = %s, want unknown with an error", text, p)
		}
	}
	// Deep but allowed nesting still parses.
	deep := strings.Repeat("(", 400) + "PartitionKey eq 'a'" + strings.Repeat(")", 400)
	if p := raw(deep).Explain(); p.Class != queryplan.PartitionScan {
		t.Errorf("400 parentheses: %s", p)
	}
	// A Filter carrying an error explains as unknown with that error.
	bad := tablekit.Where("PartitionKey eq ?")
	if p := bad.Explain(); p.Class != queryplan.Unknown || !errors.Is(p.Err, tablekit.ErrInvalidInput) {
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
