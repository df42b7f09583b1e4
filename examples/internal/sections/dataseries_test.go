package sections_test

import (
	"testing"

	"github.com/tablekit/tablekit/examples/internal/sections"
)

func TestDataSeriesSection(t *testing.T) {
	runPatternSection(t, sections.DataSeries(),
		`H09=100, H17=42 (1 request (table: GetEntity=1))`,
		`does not fit one entity`,
	)
}
