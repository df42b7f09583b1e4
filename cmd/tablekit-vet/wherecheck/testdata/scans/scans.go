// Package scans makes table scans, meant and unmeant.
package scans

import (
	"context"

	"github.com/tablekit/tablekit"
)

type Employee struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	LastName   string
	Age        int
}

func queries(ctx context.Context, emp *tablekit.Table[Employee], opts *tablekit.QueryOptions) {
	_ = emp.Query(ctx, tablekit.Where("LastName eq ?", "Jones"), nil)                                  // want `tablekit.Where: table scan: filters LastName; filters only on properties, which have no index`
	_ = emp.Query(ctx, tablekit.Where("RowKey eq ?", "7"), &tablekit.QueryOptions{Limit: 3})           // want `table scan: RowKey without PartitionKey`
	_, _ = emp.QueryPage(ctx, tablekit.Where("PartitionKey eq ? or PartitionKey eq ?", "a", "b"), nil) // want `table scan: or over PartitionKeys`
	f := tablekit.Where("PartitionKey ne ?", "Sales")                                                  // want `table scan: ne on a key`
	_, _ = emp.Top(ctx, f, 10, nil)
	_ = emp.Query(ctx, tablekit.Where("PartitionKey eq ? and RowKey eq ?", 5, "x"), nil) // want `table scan: key compared with a value that is not a string` `argument 1: PartitionKey of Employee is an Edm.String property \(a key\), but the argument is int`

	// The service can use these.
	_ = emp.Query(ctx, tablekit.Where("PartitionKey eq ? and LastName eq ?", "Sales", "Smith"), nil)
	_ = emp.Query(ctx, tablekit.Where("PartitionKey eq ? and (RowKey eq ? or RowKey eq ?)", "Sales", "1", "2"), nil)
	_ = emp.Query(ctx, tablekit.Where("PartitionKey ge ? and PartitionKey lt ?", "a", "m"), nil)
	// A fragment joined with a PartitionKey condition is not judged alone.
	_ = emp.Query(ctx, tablekit.And(tablekit.PartitionEq("Sales"), tablekit.Where("Age gt ?", 30)), nil)

	// Meant: the caller says so, or passes options the analyzer cannot read.
	_ = emp.Query(ctx, tablekit.Where("LastName eq ?", "Jones"), &tablekit.QueryOptions{AllowTableScan: true})
	_ = emp.Query(ctx, tablekit.Where("LastName eq ?", "Jones"), opts)

	// Text Explain cannot parse is reported wherever it is.
	_ = tablekit.Where("PartitionKey == ?", "Sales") // want `filter "PartitionKey == \?" is not understood: byte 13: unexpected "=="`
}
