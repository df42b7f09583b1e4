// Package props uses Where filters on a table whose type is visible.
package props

import (
	"context"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
)

type Audit struct {
	CreatedBy string
}

type Employee struct {
	Audit                  // embedded: its fields are properties
	Department string      `table:",pk"`
	ID         string      `table:",rk"`
	ETag       azcore.ETag `table:",etag"`
	Email      string      `table:"EmailAddress"`
	LastName   string
	Age        int       `table:"Age,omitempty"`
	SSN        string    `table:"SSN,encrypt"`
	Hired      time.Time `table:"Hired"`
	Secret     string    `table:"-"`
	internal   string
}

func queries(ctx context.Context, emp *tablekit.Table[Employee], bag *tablekit.Table[tablekit.Entity]) {
	pk := "Sales"
	_ = emp.Query(ctx, tablekit.Where("PartitionKey eq ? and LastName eq ? and Age gt ?", pk, "Smith", 30), nil)
	_ = emp.Query(ctx, tablekit.Where("PartitionKey eq ? and Timestamp ge ? and CreatedBy eq ?", pk, time.Now(), "me"), nil)
	_ = emp.Query(ctx, tablekit.Where("PartitionKey eq ? and Lastname eq ?", pk, "Smith"), nil)            // want `Employee has no property "Lastname"; did you mean LastName\?`
	_ = emp.Query(ctx, tablekit.Where("PartitionKey eq ? and Email eq ?", pk, "a@b.c"), nil)               // want `Employee has no property "Email"; the field Email is stored as EmailAddress`
	_ = emp.Query(ctx, tablekit.Where("Department eq ? and RowKey eq ?", pk, "1"), nil)                    // want `Employee has no property "Department"; the field Department is stored as PartitionKey` `table scan: filters Department; RowKey without PartitionKey`
	_ = emp.Query(ctx, tablekit.Where("PartitionKey eq ? and SSN eq ?", pk, "123-45-6789"), nil)           // want `property "SSN" of Employee is tagged encrypt`
	_ = emp.Query(ctx, tablekit.Where("PartitionKey eq ? and Secret eq ? and internal eq 1", pk, ""), nil) // want `no property "Secret"` `no property "internal"`
	_, _ = emp.QueryPage(ctx, tablekit.Where("PartitionKey eq ? and ETag eq ?", pk, "x"), nil)             // want `"ETag" of Employee is the ETag`

	_ = emp.Query(ctx, tablekit.Where("PartitionKey eq ? and Zzz eq ?", pk, 1), nil) // want `no property "Zzz" \(it stores PartitionKey, RowKey, Timestamp, CreatedBy, EmailAddress, LastName, Age, SSN, Hired\)`

	// Through And, Or and Not, and through a local variable set once.
	_, _ = emp.Top(ctx, tablekit.And(tablekit.PartitionEq(pk), tablekit.Where("Agee gt ?", 3)), 5, nil) // want `no property "Agee"; did you mean Age\?`
	f := tablekit.Where("PartitionKey eq ? and Hire lt ?", pk, time.Now())                              // want `no property "Hire"; did you mean Hired\?`
	_ = emp.Query(ctx, f, nil)

	// Not checked: a variable assigned twice, and a table of Entity.
	g := tablekit.Where("PartitionKey eq ? and Nope eq ?", pk, 1)
	g = tablekit.Where("PartitionKey eq ? and Nope2 eq ?", pk, 1)
	_ = emp.Query(ctx, g, nil)
	_ = bag.Query(ctx, tablekit.Where("PartitionKey eq ? and Anything eq ?", pk, 1), nil)
	// Not checked: a Where call not passed to a table.
	_ = tablekit.Where("PartitionKey eq ? and Whatever eq ?", pk, 1)
}
