// Command bloblog runs the log-data-in-blobs example: records buffered into
// block blobs named <source>/YYYY/MM/DD/hhmm/NNNNNN.log, first/last times
// in metadata, and time-window reads that touch only the window's blobs.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.BlobLog()) }
