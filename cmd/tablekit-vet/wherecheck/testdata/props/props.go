// Package props uses Where filters on a table whose type is visible.
package props

import (
	"context"
	"net/netip"
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

type level int32

// Typed holds a field of each kind the codec stores, for the argument type
// checks: a Where argument must render as a literal of the property's EDM
// type, or the comparison matches nothing.
type Typed struct {
	PK     string `table:",pk"`
	RK     string `table:",rk"`
	Name   string
	Count  int        // Edm.Int64
	Small  int32      // Edm.Int32
	Short  int64      `table:",int32"` // Edm.Int32 by tag
	Level  level      // Edm.Int32
	Score  float64    // Edm.Double
	Active bool       // Edm.Boolean
	When   time.Time  // Edm.DateTime
	Photo  []byte     // Edm.Binary
	ID     [16]byte   // Edm.Guid
	IDText string     `table:",guid"` // Edm.Guid by tag
	Tags   []string   `table:",json"` // Edm.String (JSON text)
	Addr   netip.Addr // Edm.String (encoding.TextMarshaler)
	Maybe  *int       // Edm.Int64
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

	// The trap: the filter is sent, accepted, and matches nothing.
	_ = emp.Query(ctx, tablekit.Where("PartitionKey eq ? and LastName eq ?", pk, 3), nil) // want `argument 2: LastName of Employee is an Edm.String property \(field LastName string\), but the argument is int, rendered as an Edm.Int64 literal: the service compares a property only with values of its own type, so the comparison matches nothing; pass a string`
}

func types(ctx context.Context, t *tablekit.Table[Typed], anything any, n int, addr netip.Addr) {
	const pk = "p"
	// Matching types: nothing to report.
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and Name eq ? and Count gt ? and Small lt ? and Short eq ? and Level eq ?", pk, "x", 3, int32(4), int32(5), level(6)), nil)
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and Score ge ? and Active eq ? and When lt ? and Photo eq ? and ID eq ?", pk, 1.5, true, time.Now(), []byte("x"), tablekit.GUID{}), nil)
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and IDText eq ? and Tags eq ? and Addr eq ? and Addr eq ? and Maybe eq ?", pk, [16]byte{}, `["a"]`, "10.0.0.1", addr, &n), nil)
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and RowKey ge ? and Timestamp gt ?", pk, "r", time.Now()), nil)
	// Unknown until run time: not checked.
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and Count eq ?", pk, anything), nil)
	// Not next to a property: not checked.
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and (? eq ?)", pk, 1, "x"), nil)

	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and Count eq ?", pk, "3"), nil)                                     // want `argument 2: Count of Typed is an Edm.Int64 property \(field Count int\), but the argument is string, rendered as an Edm.String literal.*; pass an int or int64`
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and Count eq ?", pk, int32(3)), nil)                                // want `Count of Typed is an Edm.Int64 property .* the argument is int32, rendered as an Edm.Int32 literal`
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and Small eq ?", pk, 3), nil)                                       // want `Small of Typed is an Edm.Int32 property \(field Small int32\), but the argument is int, rendered as an Edm.Int64 literal.*; pass an int32`
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and Short eq ?", pk, n), nil)                                       // want `Short of Typed is an Edm.Int32 property \(field Short int64, tagged int32\)`
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and Score gt ?", pk, 1), nil)                                       // want `Score of Typed is an Edm.Double property .* rendered as an Edm.Int64 literal.*; pass a float64`
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and Active eq ?", pk, "true"), nil)                                 // want `Active of Typed is an Edm.Boolean property`
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and When gt ?", pk, "2024-01-01"), nil)                             // want `When of Typed is an Edm.DateTime property .*; pass a time.Time`
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and Photo eq ?", pk, "abc"), nil)                                   // want `Photo of Typed is an Edm.Binary property`
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and IDText eq ?", pk, "0f8fad5b-d9cb-469f-a165-70867728950e"), nil) // want `IDText of Typed is an Edm.Guid property \(field IDText string, tagged guid\).*; pass a \[16\]byte such as tablekit.GUID`
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and Tags eq ?", pk, 1), nil)                                        // want `Tags of Typed is an Edm.String property`
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and Timestamp gt ?", pk, "yesterday"), nil)                         // want `Timestamp of Typed is an Edm.DateTime property \(the service's timestamp\)`
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ?", 5), nil)                                                          // want `PartitionKey of Typed is an Edm.String property \(a key\)` `table scan`
	_ = t.Query(ctx, tablekit.Where("PartitionKey eq ? and ? lt Count", pk, 2.5), nil)                                     // want `argument 2: Count of Typed is an Edm.Int64 property .* float64, rendered as an Edm.Double literal`
	_ = t.Query(ctx, tablekit.And(tablekit.PartitionEq(pk), tablekit.Where("Name eq ? or Count eq ?", 1, 2)), nil)         // want `argument 1: Name of Typed is an Edm.String property`
}
