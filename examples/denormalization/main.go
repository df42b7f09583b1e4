// Command denormalization runs the denormalization example: a department
// keeps a copy of its manager's details, updated with the manager in one
// entity group transaction. See package demo for where it connects and its
// flags.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.Denormalization()) }
