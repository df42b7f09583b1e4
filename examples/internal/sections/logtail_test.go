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

func TestLogTailSection(t *testing.T) {
	var buf bytes.Buffer
	err := demo.RunSection(context.Background(), demo.NewEnv(testenv.Account(t, nil), &buf), sections.LogTail())
	t.Log("\n" + buf.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Latest(5) = [reading 59, reading 58, reading 57, reading 56, reading 55]",
		"still returns 5",
		"Window(15:10, 15:14) is one RowKey range query, newest first: [reading 13, reading 12, reading 11, reading 10]",
		"Latest(5) = [reading 59, reading 58, reading 57, written by .NET, reading 56]",
		"61 entries in 3 pages",
		"Latest(3) = [busy 39, busy 38, busy 37], 4 queries",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("narration lacks %q", want)
		}
	}
}
