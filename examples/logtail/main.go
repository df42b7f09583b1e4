// Command logtail runs the log tail pattern example: RowKeys that sort
// newest first (inverted ticks), the latest N entries, time windows, paging
// with continuation tokens, and shard buckets for a busy log.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.LogTail()) }
