package sections_test

import (
	"testing"

	"github.com/tablekit/tablekit/examples/internal/sections"
)

func TestDenormalizationSection(t *testing.T) {
	runPatternSection(t, sections.Denormalization(),
		`managed by Ann Jones <ann.jones@contoso.com> (1 request (table: GetEntity=1))`,
		`in one entity group transaction, so no reader sees them disagree: 1 request (table: Transaction=1)`,
		`ResourceNotFound`,
	)
}
