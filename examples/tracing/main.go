// Command tracing shows tablekit's spans: the span tree of one archive move,
// from an in-process OpenTelemetry exporter.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.Tracing()) }
