// Command encryption runs the client-side property encryption example:
// sensitive properties are stored as AES-256-GCM ciphertext bound to their
// entity and property, filters on them are refused, merges work, and keys
// rotate.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.Encryption()) }
