package sections_test

import (
	"testing"

	"github.com/tablekit/tablekit/examples/internal/sections"
)

func TestLargeEntitiesSection(t *testing.T) {
	runPatternSection(t, sections.LargeEntities(),
		`PutBlob=2`,
		`Get read the entity and both blobs, concurrently: 3 requests (table: GetEntity=1; blob: GetBlob=2)`,
		`Get with SkipBlobs reads only the entity (Name "Ada", Bio 0 chars): 1 request`,
		`deleted the orphan`,
		`DeleteBlob=2`,
	)
}
