package tablekit_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
)

// Explain sorts filters into the design guide's query classes before
// anything is sent.
func ExampleFilter_Explain() {
	for _, f := range []tablekit.Filter{
		tablekit.PointQuery("Sales", "2"),
		tablekit.RowKeyPrefix("Sales", "S"),
		tablekit.Where("PartitionKey eq ? and LastName eq ?", "Sales", "Smith"),
		tablekit.Where("PartitionKey eq ? and (RowKey eq ? or RowKey eq ?)", "Sales", "121", "322"),
		tablekit.Where("LastName eq ?", "Jones"),
	} {
		fmt.Println(f.Explain())
	}
	// Output:
	// point query: PartitionKey "Sales", RowKey "2"
	// range query: PartitionKey "Sales", RowKey prefix "S"
	// partition scan: PartitionKey "Sales"; filters LastName; no usable RowKey condition: the whole partition is read
	// partition scan: PartitionKey "Sales"; or over RowKeys (a partition scan; run one point query per RowKey)
	// table scan: filters LastName; filters only on properties, which have no index
}

// A table that refuses table scans returns an error before anything is
// sent; one that logs them (the default) warns through its logger.
func ExampleRefuseTableScans() {
	type Employee struct {
		Department string `table:",pk"`
		ID         string `table:",rk"`
		LastName   string
	}
	ctx := context.Background()
	acct := exampleAccount(nil)
	name := fmt.Sprintf("ExampleScans%d", time.Now().UnixNano()%1e9)
	strict, err := tablekit.OpenTable[Employee](acct, name, &tablekit.TableOptions{TableScans: tablekit.RefuseTableScans})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := strict.CreateIfNotExists(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer strict.DeleteTable(ctx)
	if _, err := strict.Insert(ctx, Employee{"Sales", "1", "Jones"}); err != nil {
		fmt.Println(err)
		return
	}

	before := acct.Meter().Snapshot()
	_, err = strict.Top(ctx, tablekit.Where("LastName eq ?", "Jones"), 10, nil)
	fmt.Println(errors.Is(err, tablekit.ErrTableScan), "- requests sent:", acct.Meter().Snapshot().Sub(before).Total())
	fmt.Println(strings.ReplaceAll(err.Error(), name, "Employees"))

	// The same query on a table that logs table scans (a text handler
	// without the time and with a fixed table name, for a stable output).
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey:
				return slog.Attr{}
			case "table":
				return slog.String("table", "Employees")
			}
			return a
		},
	}))
	logAcct := exampleAccount(&tablekit.Options{Logger: logger})
	logged, err := tablekit.OpenTable[Employee](logAcct, name, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	found, err := logged.Top(ctx, tablekit.Where("LastName eq ?", "Jones"), 10, nil)
	fmt.Println(len(found), err)
	// Output:
	// true - requests sent: 0
	// tablekit: Query: invalid input for "Employees": filter "LastName eq 'Jones'": table scan: filters LastName; filters only on properties, which have no index; limit: TableOptions.TableScans is RefuseTableScans
	// level=WARN msg="tablekit: table scan" table=Employees op=Query filter="LastName eq 'Jones'" class="table scan" reason="filters only on properties, which have no index"
	// 1 <nil>
}
