package sections_test

import (
	"testing"

	"github.com/tablekit/tablekit/examples/internal/sections"
)

func TestWideEntitiesSection(t *testing.T) {
	runPatternSection(t, sections.WideEntities(),
		`"emp000223!002"`,
		`Get reassembled 600 properties: 1 request (table: QueryEntities=1)`,
		`rewrites only the one holding it: 2 requests (table: QueryEntities=1 Transaction=1)`,
		`D001..D365: 2 physical entities`,
		`nothing is sent`,
	)
}
