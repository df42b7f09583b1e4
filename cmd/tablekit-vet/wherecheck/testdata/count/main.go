// Command count is a sample program with Where calls whose placeholders and
// arguments disagree.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/tablekit/tablekit"
)

type Employee struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	Email      string
	Age        int
}

type level int32

type ids map[string]int

func main() {
	ctx := context.Background()
	acct, err := tablekit.Open(os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	emp, err := tablekit.OpenTable[Employee](acct, "Employees", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	dept := os.Args[1]

	// The mistake this analyzer exists for: two placeholders, one argument.
	for e, err := range emp.Query(ctx, tablekit.Where("PartitionKey eq ? and RowKey eq ?", dept), nil) { // want `tablekit.Where: filter "PartitionKey eq \? and RowKey eq \?": 2 placeholders, 1 arguments`
		fmt.Println(e, err)
	}

	_ = tablekit.Where("PartitionKey eq ?", dept, "extra") // want `1 placeholders, 2 arguments`
	_ = tablekit.Where("Age gt ?")                         // want `1 placeholders, 0 arguments`
	_ = tablekit.Where("Email eq '?'", dept)               // want `is inside a quoted literal`
	_ = tablekit.Where("Age gt ?1", 3)                     // want `must be separated from its neighbours`
	_ = tablekit.Where("Email eq 'x", dept)                // want `unterminated quoted literal`
	_ = tablekit.Where("Email eq ?", nil)                  // want `argument 1: nil`
	_ = tablekit.Where("Email eq ?", ids{})                // want `argument 1: unsupported type ids`
	_ = tablekit.Where("Email eq ?", &dept)
	_ = tablekit.Where("Age eq ? and Level eq ?", 30, level(2))
	_ = tablekit.Where("PartitionKey eq ? and RowKey ge ?", dept, "000100")

	// Not checked: a format that is not a constant, and args... of unknown length.
	format := "PartitionKey eq ? and RowKey eq ?"
	_ = tablekit.Where(format, dept)
	args := []any{dept}
	_ = tablekit.Where("PartitionKey eq ? and RowKey eq ?", args...)
}
