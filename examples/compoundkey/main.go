// Command compoundkey runs tablekit's compoundkey example against Azurite or the account
// in AZURE_STORAGE_CONNECTION_STRING.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.CompoundKey()) }
