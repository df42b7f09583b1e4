package opname

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tablekit/tablekit"
)

func TestSet(t *testing.T) {
	if Set("X", nil) != nil {
		t.Fatal("Set of nil is not nil")
	}
	conv := &tablekit.ValidationError{Op: "EncodeEntity", Err: tablekit.ErrInvalidInput}
	if err := Set("Wide.Upsert", fmt.Errorf("wrapped: %w", conv)); conv.Op != "Wide.Upsert" || !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Errorf("a conversion's Op: %q", conv.Op)
	}
	named := &tablekit.ValidationError{Op: "Where", Err: tablekit.ErrInvalidInput}
	if Set("Intra.By", named); named.Op != "Where" {
		t.Errorf("an operation's own name was replaced: %q", named.Op)
	}
	de := &tablekit.DecodeError{Op: "Table.FromEntity"}
	if Set("Large.Get", de); de.Op != "Large.Get" {
		t.Errorf("a decode error's Op: %q", de.Op)
	}
}
