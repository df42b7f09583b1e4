// Command secondaryindex runs the secondary index patterns example:
// employees looked up by id, email and email prefix through an
// intra-partition index kept consistent in one entity group transaction,
// and through an inter-partition index kept eventually consistent by a
// queue worker.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.SecondaryIndex()) }
