// Command heterogeneous runs the heterogeneous entity types example:
// departments and employees in one partition, typed by an EntityType
// property or a RowKey prefix and decoded into their own Go types. See
// package demo for where it connects and its flags.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.Heterogeneous()) }
