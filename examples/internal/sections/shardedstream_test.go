package sections_test

import (
	"testing"

	"github.com/tablekit/tablekit/examples/internal/sections"
)

func TestShardedStreamSection(t *testing.T) {
	runPatternSection(t, sections.ShardedStream(),
		`appended 2000 events`,
		`merges them: 40 events, click-00400`,
		`QueryEntities=8`,
	)
}
