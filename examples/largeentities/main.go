// Command largeentities runs the large entities example: property values
// too large for a table stored in blobs, referenced from the entity, with
// crash-safe updates and a sweep of orphaned blobs. See package demo for
// where it connects and its flags.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.LargeEntities()) }
