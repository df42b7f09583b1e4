package sections_test

import (
	"testing"

	"github.com/tablekit/tablekit/examples/internal/sections"
)

func TestHighVolumeDeleteSection(t *testing.T) {
	runPatternSection(t, sections.HighVolumeDelete(),
		`DeleteTable=2 QueryTables=1`,
		`reads 901 logins`,
	)
}
