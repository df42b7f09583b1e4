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

func TestBlobLogSection(t *testing.T) {
	var buf bytes.Buffer
	err := demo.RunSection(context.Background(), demo.NewEnv(testenv.Account(t, nil), &buf), sections.BlobLog())
	t.Log("\n" + buf.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"web/2024/05/06/1500/000000.log",
		"window 15:04-15:06: 120 records from both writers in time order",
		"came back intact",
		"3 records cost 6 transactions",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("narration lacks %q", want)
		}
	}
}
