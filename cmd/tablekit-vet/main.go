// Command tablekit-vet checks tablekit.Where calls at build time with the
// analyzer of package [github.com/tablekit/tablekit/cmd/tablekit-vet/wherecheck]:
// placeholder counts, argument types (those Where refuses, and those of
// another EDM type than the property they are compared with), property
// names against the table's struct tags, filters on encrypted properties,
// and table scans.
//
//	go run github.com/tablekit/tablekit/cmd/tablekit-vet ./...
//	go run github.com/tablekit/tablekit/cmd/tablekit-vet -scan=false ./...
//
// It takes the flags of any go/analysis single checker (-fix, -json, -c,
// -test=false, ...) and exits with status 3 when it reports a diagnostic.
// It also runs under go vet: go vet -vettool=$(which tablekit-vet) ./...
package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/tablekit/tablekit/cmd/tablekit-vet/wherecheck"
)

func main() { singlechecker.Main(wherecheck.Analyzer) }
