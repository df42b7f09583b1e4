// Command indexentities runs the index entities pattern example: all
// employees named Jones through an index entity in their partition (one
// transaction), an index entity in another table (queue worker), or a blob.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.IndexEntities()) }
