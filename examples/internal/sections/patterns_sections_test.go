package sections_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/internal/testenv"
)

// runPatternSection runs a section of package patterns and checks its
// narration.
func runPatternSection(t *testing.T, s demo.Section, wants ...string) {
	t.Helper()
	t.Parallel()
	var buf bytes.Buffer
	err := demo.RunSection(context.Background(), demo.NewEnv(testenv.Account(t, nil), &buf), s)
	t.Log("\n" + buf.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range wants {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("narration lacks %q", want)
		}
	}
}
