package queryplan_test

import (
	"fmt"

	"github.com/tablekit/tablekit/queryplan"
)

// Explain reads a filter's OData text, hand-written or built by
// tablekit.Where (tablekit.Filter.Explain does this for a Filter).
func ExampleExplain() {
	for _, text := range []string{
		"PartitionKey eq 'Sales' and RowKey eq '2'",
		"PartitionKey eq 'Sales' and RowKey ge 'S' and RowKey lt 'T'",
		"PartitionKey eq 'Sales' and LastName eq 'Smith'",
		"LastName eq 'Jones'",
		"PartitionKey eq",
	} {
		fmt.Println(queryplan.Explain(text))
	}
	// Output:
	// point query: PartitionKey "Sales", RowKey "2"
	// range query: PartitionKey "Sales", RowKey prefix "S"
	// partition scan: PartitionKey "Sales"; filters LastName; no usable RowKey condition: the whole partition is read
	// table scan: filters LastName; filters only on properties, which have no index
	// unknown: filter not understood; byte 15: expected a property or a value after eq, found end of filter
}

// A Plan's fields say what the service can use.
func ExamplePlan() {
	p := queryplan.Explain("PartitionKey eq 'Sales' and RowKey eq '1' or PartitionKey eq 'HR' and RowKey eq '7'")
	fmt.Println(p.Class, p.IsTableScan(), p.Class == queryplan.TableScan)
	r := queryplan.Explain("PartitionKey eq 'Sales' and RowKey ge '000100' and RowKey lt '000200'")
	fmt.Println(r.Class, r.PartitionKey, r.RowKeys.Lower.Key, r.RowKeys.Upper.Key, r.RowKeys)
	// Output:
	// table scan true true
	// range query Sales 000100 000200 ["000100", "000200")
}
