package tablekit_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/tablekit/tablekit"
)

// Values go in arguments, never into the expression text: each is rendered
// as a typed literal, so a hostile value stays a value.
func ExampleWhere() {
	f := tablekit.Where("PartitionKey eq ? and Name eq ?", "Sales", "x' or PartitionKey ne '")
	fmt.Println(f, f.Err())
	// Output: PartitionKey eq 'Sales' and Name eq 'x'' or PartitionKey ne ''' <nil>
}

// Each Go type becomes the literal of the EDM type tablekit stores it as.
func ExampleWhere_typedLiterals() {
	hired := time.Date(2024, 5, 6, 7, 8, 9, 123456700, time.UTC)
	id := [16]byte{0x1b, 0x4e, 0x28, 0xba, 0x2f, 0xa1, 0x11, 0xd2, 0x88, 0x3f, 0x00, 0x16, 0xd3, 0xcc, 0x42, 0x7e}
	fmt.Println(tablekit.Where("Age ge ? and Level eq ?", 30, int32(2)))
	fmt.Println(tablekit.Where("Score gt ? and Active eq ?", 2.0, true))
	fmt.Println(tablekit.Where("Hired lt ?", hired))
	fmt.Println(tablekit.Where("Id eq ? and Photo eq ?", id, []byte{0xca, 0xfe}))
	// Output:
	// Age ge 30L and Level eq 2
	// Score gt 2.0 and Active eq true
	// Hired lt datetime'2024-05-06T07:08:09.1234567Z'
	// Id eq guid'1b4e28ba-2fa1-11d2-883f-0016d3cc427e' and Photo eq X'cafe'
}

// A mistake is an error carried by the Filter, never a malformed query.
func ExampleWhere_error() {
	f := tablekit.Where("PartitionKey eq ? and RowKey eq ?", "Sales")
	fmt.Println(errors.Is(f.Err(), tablekit.ErrInvalidInput))
	fmt.Println(f.Err())
	// Output:
	// true
	// tablekit: Where: invalid input: filter "PartitionKey eq ? and RowKey eq ?": 2 placeholders, 1 arguments; limit: one supported argument per '?' placeholder outside quoted literals
}

func ExampleAnd() {
	f := tablekit.And(
		tablekit.PartitionEq("Sales"),
		tablekit.Or(tablekit.Where("Age lt ?", 25), tablekit.Where("Age gt ?", 60)),
		tablekit.Not(tablekit.Where("Email eq ?", "")),
	)
	fmt.Println(f)
	// Output: (PartitionKey eq 'Sales') and ((Age lt 25L) or (Age gt 60L)) and (not (Email eq ''))
}

// The query shapes of the table design guide.
func ExamplePointQuery() {
	fmt.Println(tablekit.PointQuery("Sales", "000223"))
	fmt.Println(tablekit.PartitionEq("Sales"))
	fmt.Println(tablekit.RowKeyRange("Sales", "000100", "000200"))
	fmt.Println(tablekit.RowKeyPrefix("Sales", "empid_"))
	fmt.Println(tablekit.PartitionRange("A", "M"))
	// Output:
	// PartitionKey eq 'Sales' and RowKey eq '000223'
	// PartitionKey eq 'Sales'
	// PartitionKey eq 'Sales' and RowKey ge '000100' and RowKey lt '000200'
	// PartitionKey eq 'Sales' and RowKey ge 'empid_' and RowKey lt 'empid`'
	// PartitionKey ge 'A' and PartitionKey lt 'M'
}

func ExampleFilter_Properties() {
	f := tablekit.And(tablekit.PartitionEq("Sales"), tablekit.Where("SSN eq ? or Name eq 'SSN'", "123"))
	fmt.Println(f.Properties())
	// Output: [PartitionKey SSN Name]
}

// The zero Filter matches everything.
func ExampleFilter_IsZero() {
	var f tablekit.Filter
	fmt.Println(f.IsZero(), tablekit.And().IsZero(), tablekit.PartitionEq("x").IsZero())
	// Output: true true false
}
