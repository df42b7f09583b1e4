// Command shardedstream runs the example against the prepend/append
// anti-pattern: a time-ordered stream spread over shard partitions and read
// back in time order. See package demo for where it connects and its flags.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.ShardedStream()) }
