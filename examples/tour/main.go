// Command tour walks through tablekit's patterns against a real storage
// account, narrating each step and what it cost in storage transactions.
//
// It connects to, in order of preference:
//
//  1. the account in AZURE_STORAGE_CONNECTION_STRING,
//  2. the account named by AZURE_STORAGE_ACCOUNT, signed in with
//     azidentity's DefaultAzureCredential (az login, managed identity, ...),
//  3. an Azurite it starts itself (installed with npm on first use: needs
//     Node.js 18+).
//
// Usage:
//
//	go run ./examples/tour             # run every section
//	go run ./examples/tour -list       # list the sections
//	go run ./examples/tour -run basics # run some sections (comma-separated)
//
// Each section creates what it needs under names unique to the run and
// deletes it again, so the tour can run against a shared account. Every
// section is also a program of its own: examples/<pattern>/main.go.
package main

import (
	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
)

func main() { demo.Main(sections.All()...) }
