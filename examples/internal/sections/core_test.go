package sections_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/tablekit/tablekit/examples/internal/demo"
	"github.com/tablekit/tablekit/examples/internal/sections"
	"github.com/tablekit/tablekit/internal/testenv"
)

func TestCoreSections(t *testing.T) {
	for _, s := range []demo.Section{sections.Basics(), sections.Queries(), sections.CompoundKey()} {
		t.Run(s.Name, func(t *testing.T) {
			var out bytes.Buffer
			if err := demo.RunSection(context.Background(), demo.NewEnv(testenv.Account(t, nil), &out), s); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if out.Len() == 0 {
				t.Error("section narrated nothing")
			}
		})
	}
}
