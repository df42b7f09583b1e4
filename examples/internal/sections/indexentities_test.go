package sections_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
	"github.com/tablekit/tablekit/internal/testenv"
)

func TestIndexEntitiesSection(t *testing.T) {
	var buf bytes.Buffer
	err := demo.RunSection(context.Background(), demo.NewEnv(testenv.Account(t, nil), &buf), sections.IndexEntities())
	t.Log("\n" + buf.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"the Joneses of Sales: one point query for the index entity gives [000123 000200 000223]",
		`stores IDs="000123\n000200\n000223" and Count=3`,
		"moves her id: Jones [000200 000223], Hall [000123 000152]",
		"once caught up, the Jones index entity of Sales lists [000123 000200 000223]",
		"the blob surname/Jones lists every Jones: [Marketing/000150 Sales/000123 Sales/000200 Sales/000223]",
		"after the worker ran, Jones [000200 000223] and Hall [000123 000152]",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("narration lacks %q", want)
		}
	}
}
