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

func TestArchiveSection(t *testing.T) {
	var buf bytes.Buffer
	err := demo.RunSection(context.Background(), demo.NewEnv(testenv.Account(t, nil), &buf), sections.Archive())
	t.Log("\n" + buf.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`a message is base64 JSON, as Azure Functions expects: {"kind":"archive.move","payload":{"pk":"Sales","rk":"000123"}}`,
		"then deleted each message: Current: [000223 000224 000301], Archive: [000123 000124]",
		"for a moment it is in Current and Archive",
		"finished the move: it is in Archive",
		`a message of unknown kind "archive.purge" failed permanently and went to <queue>-poison after 1 attempt(s)`,
		"5 received, 3 handled, 2 failed attempts, 1 poisoned; Current: [000224 000301], Archive: [000123 000124 000223]",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("narration lacks %q", want)
		}
	}
}
