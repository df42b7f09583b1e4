// Command sas runs the scoped shared access signature example: a table
// token limited to one customer's partition, used by a client without the
// account key, and blob upload/download tokens.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.SAS()) }
