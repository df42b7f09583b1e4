// Command highvolumedelete runs the high-volume delete example: a table
// per day, writes routed by time, queries across days, and retention that
// deletes whole tables. See package demo for where it connects and its
// flags.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.HighVolumeDelete()) }
