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

func TestSASSection(t *testing.T) {
	var buf bytes.Buffer
	err := demo.RunSection(context.Background(), demo.NewEnv(testenv.Account(t, nil), &buf), sections.SAS())
	t.Log("\n" + buf.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"spk=alice", "epk=alice", "2 orders", "not delete", "is refused", "scones 6.00"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("narration lacks %q", want)
		}
	}
}
