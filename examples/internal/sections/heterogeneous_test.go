package sections_test

import (
	"testing"

	"github.com/tablekit/tablekit/examples/internal/sections"
)

func TestHeterogeneousSection(t *testing.T) {
	runPatternSection(t, sections.Heterogeneous(),
		`Employee v2 000101: Bob Smith`,
		`unregistered kind Goal.v1`,
		`one query decoded the mixed partition, each row into its own type: 1 request`,
		`one entity group transaction: 1 request (table: Transaction=1)`,
		`prefix range query: [Employee!000100=Ann Jones`,
	)
}
