// Command archive runs the eventually consistent transactions example of
// the design guide: when an employee leaves, a queue message asks a worker
// to move the employee from the Current table to the Archive table.
//
//	go run ./examples/archive
//
// It uses the account in AZURE_STORAGE_CONNECTION_STRING, the one named by
// AZURE_STORAGE_ACCOUNT, or an Azurite it starts.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.Archive()) }
