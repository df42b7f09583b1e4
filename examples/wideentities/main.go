// Command wideentities runs the wide entities example: a logical entity
// with more than 252 properties, stored as several physical entities of
// one partition written in one transaction. See package demo for where it
// connects and its flags.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.WideEntities()) }
