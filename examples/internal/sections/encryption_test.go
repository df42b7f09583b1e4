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

func TestEncryptionSection(t *testing.T) {
	var buf bytes.Buffer
	err := demo.RunSection(context.Background(), demo.NewEnv(testenv.Account(t, nil), &buf), sections.Encryption())
	t.Log("\n" + buf.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Edm.Binary", "does not decrypt", "filtering on SSN is refused", "still decrypts", "2025-q1 removed"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("narration lacks %q", want)
		}
	}
	if strings.Contains(buf.String(), "FAILED") {
		t.Error("section reported a failure")
	}
}
