// Command dataseries runs the data series example: a whole series in one
// entity, read with one point query and updated with optimistic
// concurrency. See package demo for where it connects and its flags.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.DataSeries()) }
