package codec

import (
	"errors"
	"testing"
)

// TestWithOpNamesOnlyErrorsWithoutAnOperation: WithOp names the operation
// in a ValidationError or DecodeError, also wrapped, that names none yet,
// and keeps an operation's own name (the innermost exported call names
// itself).
func TestWithOpNamesOnlyErrorsWithoutAnOperation(t *testing.T) {
	if WithOp("X", nil) != nil {
		t.Fatal("WithOp of nil is not nil")
	}
	bare := &ValidationError{Err: ErrInvalidInput}
	wrapped := errors.Join(errors.New("context"), bare)
	if err := WithOp("patterns.Wide.Upsert", wrapped); err != wrapped || bare.Op != "patterns.Wide.Upsert" {
		t.Errorf("a wrapped error without an operation: %q, %v", bare.Op, err)
	}
	if got := bare.Error(); got != "patterns: Wide.Upsert: invalid input" {
		t.Errorf("message %q", got)
	}
	named := &ValidationError{Op: "Where", Err: ErrInvalidInput}
	if WithOp("index.Intra.By", named); named.Op != "Where" {
		t.Errorf("an operation's own name was replaced: %q", named.Op)
	}
	de := &DecodeError{}
	if WithOp("Get", de); de.Op != "Get" {
		t.Errorf("a DecodeError without an operation: %q", de.Op)
	}
}
